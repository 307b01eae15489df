// uint8 table family contract: y[i] = table[x[i]] for n bytes (x and y may be the same
// buffer). A table is what any element-wise function of one quantized tensor becomes between
// two uint8 grids (passes/int8_tables.cc): 256 inputs, so 256 answers computed once at
// compile time. Layout-blind; the work is split over the pool in blocks of kQLutBlock bytes.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"

namespace systolic::kernels {

constexpr int64_t kQLutBlock = 1 << 16;

struct QLutKernel {
  const char* name;
  bool (*accepts)(const CpuFeatures&, std::string* why);
  void (*apply)(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n, pthreadpool_t);
  // On the calling thread: row r of n bytes at y + r * ys from the one at x + r * xs (x == y and
  // xs == ys: in place). An int8 conv's epilogue calls it on the rows it has just written
  // (QRequant::lut), still in cache; qlut_parts on a Concat's inputs.
  void (*rows)(const uint8_t* table, const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t n, int64_t rows);
};

// One input of qlut_parts: `rows` rows of n bytes through `table`, x and y row strides apart.
struct QLutPart {
  const uint8_t* table = nullptr;
  const uint8_t* x = nullptr;
  uint8_t* y = nullptr;
  int64_t n = 0, xs = 0, ys = 0;
};

// Every part's rows 0..rows through k.rows, the rows split over the pool in blocks of about
// 16 KB of output: a uint8 Concat whose inputs are requantized into their channel slices (a
// requantization of one byte is a table of its 256 values), all inputs in one dispatch.
void qlut_parts(const QLutKernel& k, const QLutPart* parts, int count, int64_t rows, pthreadpool_t pool);

const QLutKernel* qlut_kernels(std::size_t* count);
const QLutKernel* qlut_select(const CpuFeatures&, std::string* log = nullptr);

// The scalar form (the reference; the vector kernels' tails).
void qlut_n(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n);

}  // namespace systolic::kernels

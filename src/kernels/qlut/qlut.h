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
  // In place, on the calling thread: `rows` runs of n bytes, `stride` bytes apart. An int8
  // conv's epilogue calls it on the rows it has just written (QRequant::lut), still in L1.
  void (*rows)(const uint8_t* table, uint8_t* y, int64_t n, int64_t rows, int64_t stride);
};

const QLutKernel* qlut_kernels(std::size_t* count);
const QLutKernel* qlut_select(const CpuFeatures&, std::string* log = nullptr);

// The scalar form (the reference; the vector kernels' tails).
void qlut_n(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n);

}  // namespace systolic::kernels

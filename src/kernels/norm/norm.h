// Row normalization family contract (fp32): softmax and layer normalization over the last axis,
// `rows` contiguous rows of `n` values each.
//
//   softmax:    y[r,j] = exp(x[r,j] - max_j x[r,.]) / sum_j exp(x[r,j] - max_j x[r,.])
//   layer_norm: y[r,j] = (x[r,j] - mean_r) / sqrt(var_r + epsilon) * scale[j] + bias[j]
//               mean_r = sum_j x[r,j] / n,  var_r = sum_j (x[r,j] - mean_r)^2 / n,
//               bias null: 0 (scale is required for layer_norm, unused by softmax).
// y may alias x (in place). Kernels never allocate. norm_ref is the oracle.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"

namespace systolic::kernels {

enum class NormKind : unsigned char { softmax, layer_norm };

struct NormParams {
  NormKind kind = NormKind::softmax;
  int64_t rows = 1, n = 1;
  float epsilon = 1e-5f;
};

struct NormKernel {
  const char* name;
  bool (*accepts)(const NormParams&, const CpuFeatures&, std::string* why);
  void (*run)(const NormParams&, const float* x, const float* scale, const float* bias, float* y, pthreadpool_t);
};

const NormKernel* norm_kernels(std::size_t* count);
const NormKernel* norm_select(const NormParams&, const CpuFeatures&, std::string* log = nullptr);
const NormKernel* norm_find(const std::string& name);

// The oracle: per-row loops with double sums and std::exp.
void norm_ref(const NormParams&, const float* x, const float* scale, const float* bias, float* y);

}  // namespace systolic::kernels

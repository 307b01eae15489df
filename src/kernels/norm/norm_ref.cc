// Reference softmax / layer normalization: the test oracle and "norm_f32_ref" (last fallback).
#include <cmath>

#include "kernels/norm/norm.h"
#include "kernels/norm/norm_util.h"

namespace systolic::kernels {

void norm_ref(const NormParams& p, const float* x, const float* scale, const float* bias, float* y) {
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* xr = x + r * p.n;
    float* yr = y + r * p.n;
    if (p.kind == NormKind::softmax) {
      float mx = xr[0];
      for (int64_t j = 1; j < p.n; ++j) mx = std::fmax(mx, xr[j]);
      double sum = 0;
      for (int64_t j = 0; j < p.n; ++j) sum += std::exp(double(xr[j]) - mx);
      for (int64_t j = 0; j < p.n; ++j) yr[j] = float(std::exp(double(xr[j]) - mx) / sum);
      continue;
    }
    double mean = 0, var = 0;
    for (int64_t j = 0; j < p.n; ++j) mean += xr[j];
    mean /= double(p.n);
    for (int64_t j = 0; j < p.n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= double(p.n);
    const double inv = 1.0 / std::sqrt(var + p.epsilon);
    for (int64_t j = 0; j < p.n; ++j) yr[j] = float((xr[j] - mean) * inv * scale[j] + (bias ? bias[j] : 0.f));
  }
}

namespace {

bool accepts_ref(const NormParams& p, const CpuFeatures&, std::string* why) { return norm_well_formed(p, why); }

void run_ref(const NormParams& p, const float* x, const float* scale, const float* bias, float* y, pthreadpool_t) {
  norm_ref(p, x, scale, bias, y);
}

}  // namespace

extern const NormKernel norm_f32_ref = {"norm_f32_ref", accepts_ref, run_ref};

}  // namespace systolic::kernels

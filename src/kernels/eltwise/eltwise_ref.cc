// The reference element-wise kernel: one scalar loop, the contract read literally.
#include "kernels/eltwise/eltwise.h"
#include "kernels/eltwise/eltwise_util.h"

namespace systolic::kernels {

void eltwise_ref(const EltwiseParams& p, const float* a, const float* b, float* y) {
  for (int64_t i = 0; i < p.n; ++i) {
    float v = a[i];
    if (p.binary) {
      const int64_t j = p.b_mode == 0 ? i
                        : p.b_mode == 1 ? 0
                        : p.b_mode == 2 ? i % p.channels
                        : p.b_mode == 3 ? (i / p.inner) % p.channels
                                        : (i / (p.inner * p.channels)) * p.channels + i % p.channels;
      const float w = b[j];
      switch (p.op) {
        case BinaryOp::add: v = v + w; break;
        case BinaryOp::sub: v = v - w; break;
        case BinaryOp::mul: v = v * w; break;
        case BinaryOp::div: v = v / w; break;
        case BinaryOp::prelu: v = v < 0.f ? v * w : v; break;
      }
    }
    y[i] = apply_act(p.act, v);
  }
}

namespace {

bool accepts_ref(const EltwiseParams& p, const CpuFeatures&, std::string* why) {
  return eltwise_well_formed(p, why);
}

void run_ref(const EltwiseParams& p, const float* a, const float* b, float* y, pthreadpool_t) {
  eltwise_ref(p, a, b, y);
}

}  // namespace

extern const EltwiseKernel eltwise_f32_ref = {"eltwise_f32_ref", accepts_ref, run_ref};

}  // namespace systolic::kernels

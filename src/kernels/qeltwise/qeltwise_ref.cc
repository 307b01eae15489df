// Reference uint8 add, requantizing copy and channel scale (scalar), and the kernel list with
// its dispatch.
#include <algorithm>
#include <cmath>
#include <span>

#include "base/threadpool.h"
#include "kernels/qeltwise/qeltwise.h"

namespace systolic::kernels {

void qadd_n(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float t = (static_cast<float>(a[i]) - static_cast<float>(p.a_zp)) * p.a_scale +
              (static_cast<float>(b[i]) - static_cast<float>(p.b_zp)) * p.b_scale;
    t = std::fmin(std::fmax(t, p.lo), p.hi);
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + p.y_zp);
  }
}

void qrequant_n(const QRequantParams& p, const uint8_t* x, uint8_t* y, int64_t n) {
  const float lo = static_cast<float>(-p.y_zp), hi = static_cast<float>(255 - p.y_zp);
  for (int64_t i = 0; i < n; ++i) {
    const float t = std::fmin(std::fmax((static_cast<float>(x[i]) - static_cast<float>(p.x_zp)) * p.scale, lo), hi);
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + p.y_zp);
  }
}

float qscale_multiplier(const QScaleParams& p, const uint8_t* g, int64_t i, int64_t c) {
  const uint8_t v = g[(p.gate_per_image ? i * p.c : 0) + c];
  return ((static_cast<float>(v) - static_cast<float>(p.g_zp)) * p.g_scale) * p.ratio;
}

void qscale_n(const QScaleParams& p, const uint8_t* x, const float* m, float m0, uint8_t* y, int64_t n) {
  const float lo = static_cast<float>(-p.y_zp), hi = static_cast<float>(255 - p.y_zp);
  for (int64_t k = 0; k < n; ++k) {
    const float t = (static_cast<float>(x[k]) - static_cast<float>(p.x_zp)) * (m ? m[k] : m0);
    y[k] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(std::fmin(std::fmax(t, lo), hi))) + p.y_zp);
  }
}

void qscale_rows(const QScaleParams& p, const uint8_t* x, const uint8_t* g, float* m, uint8_t* y, pthreadpool_t pool,
                 void (*row)(const QScaleParams&, const uint8_t* x, const float* m, float m0, uint8_t* y, int64_t n)) {
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t c = 0; c < p.c; ++c) m[i * p.c + c] = qscale_multiplier(p, g, i, c);
  // A pool task takes about 16K bytes of rows (one pixel's channels are a short row).
  const int64_t cols = p.nhwc ? p.c : p.hw, rows = p.nhwc ? p.n * p.hw : p.n * p.c;
  const int64_t per_task = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(cols, 1));
  pthreadpool_parallelize_1d(pool, [&](std::size_t t) {
    const int64_t r1 = std::min(rows, (int64_t(t) + 1) * per_task);
    for (int64_t r = int64_t(t) * per_task; r < r1; ++r) {
      const int64_t at = r * cols;
      if (p.nhwc) row(p, x + at, m + (r / p.hw) * p.c, 0.f, y + at, cols);
      else row(p, x + at, nullptr, m[r], y + at, cols);
    }
  }, std::size_t((rows + per_task - 1) / per_task), kPoolFlags);
}

namespace {

constexpr int64_t kBlock = 1 << 16;

bool ref_accepts(const CpuFeatures&, std::string*) { return true; }

void ref_add(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t blk) {
    const int64_t i = int64_t(blk) * kBlock;
    qadd_n(p, a + i, b + i, y + i, std::min(kBlock, p.n - i));
  }, std::size_t((p.n + kBlock - 1) / kBlock), kPoolFlags);
}

void ref_scale(const QScaleParams& p, const uint8_t* x, const uint8_t* g, float* m, uint8_t* y, pthreadpool_t pool) {
  qscale_rows(p, x, g, m, y, pool, qscale_n);
}

}  // namespace

extern const QEltwiseKernel qeltwise_u8_ref = {"qeltwise_u8_ref", ref_accepts, ref_add, ref_scale};

#define SYSTOLIC_QELTWISE_KERNEL(k) extern const QEltwiseKernel k;
#include "kernels/qeltwise/qeltwise.inc"
#undef SYSTOLIC_QELTWISE_KERNEL

const QEltwiseKernel* qeltwise_kernels(std::size_t* count) {
  static const QEltwiseKernel kKernels[] = {
#define SYSTOLIC_QELTWISE_KERNEL(k) k,
#include "kernels/qeltwise/qeltwise.inc"
#undef SYSTOLIC_QELTWISE_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const QEltwiseKernel* qeltwise_select(const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const QEltwiseKernel* all = qeltwise_kernels(&n);
  for (const QEltwiseKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

}  // namespace systolic::kernels

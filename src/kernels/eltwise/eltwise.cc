// The vector element-wise kernels' table entries and the plain parts they share: checks, the
// broadcast segment walk and pool chunking. Only the segment loops are compiled per ISA.
#include <algorithm>

#include "base/threadpool.h"
#include "kernels/eltwise/eltwise.h"
#include "kernels/eltwise/eltwise_util.h"

namespace systolic::kernels {

void eltwise_avx2_run(const EltwiseParams&, const float*, const float*, float*, pthreadpool_t);
void eltwise_avx512_run(const EltwiseParams&, const float*, const float*, float*, pthreadpool_t);

bool eltwise_reject(std::string* why, const char* reason) {
  if (why) *why = reason;
  return false;
}

bool eltwise_well_formed(const EltwiseParams& p, std::string* why) {
  if (p.n < 0) return eltwise_reject(why, "negative n");
  if (uint8_t(p.op) > uint8_t(BinaryOp::prelu)) return eltwise_reject(why, "unknown binary op");
  if (uint8_t(p.act.act) > uint8_t(Act::silu)) return eltwise_reject(why, "unknown activation");
  if (p.binary && (p.b_mode < 0 || p.b_mode > 4)) return eltwise_reject(why, "b_mode not in 0..4");
  if (p.binary && (p.channels < 1 || p.inner < 1)) return eltwise_reject(why, "channels/inner < 1");
  return true;
}

namespace {

constexpr int64_t kParallelMin = 64 * 1024;  // below this one thread is faster than waking more
constexpr int64_t kChunk = 4096;             // 16 KiB of a per task

struct Drive {
  const float *a, *b;
  float* y;
  EltwiseSegFn vec, scalar;
  Epilogue act;
  bool binary;
  int mode;
  int64_t channels, inner;
};

void drive_range(const Drive& d, int64_t i, int64_t len) {
  if (!d.binary || d.mode == 0) return d.vec(d.a + i, d.binary ? d.b + i : nullptr, d.y + i, len, d.act);
  if (d.mode == 1) return d.scalar(d.a + i, d.b, d.y + i, len, d.act);
  if (d.mode == 2 || d.mode == 4) {
    // Runs of one pixel's channels; mode 4 takes them from the pixel's image's row of b.
    const int64_t image = d.inner * d.channels;
    for (int64_t j = i % d.channels; len > 0; j = 0) {
      const int64_t l = std::min(d.channels - j, len);
      d.vec(d.a + i, d.b + (d.mode == 4 ? i / image * d.channels : 0) + j, d.y + i, l, d.act);
      i += l, len -= l;
    }
    return;
  }
  int64_t q = i / d.inner;
  for (int64_t off = i % d.inner; len > 0; off = 0, ++q) {
    const int64_t l = std::min(d.inner - off, len);
    d.scalar(d.a + i, d.b + q % d.channels, d.y + i, l, d.act);
    i += l, len -= l;
  }
}

void drive_task(void* ctx, size_t start, size_t len) {
  drive_range(*static_cast<const Drive*>(ctx), int64_t(start), int64_t(len));
}

bool accepts_avx2(const EltwiseParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return eltwise_reject(why, "needs avx2+fma");
  return eltwise_well_formed(p, why);
}

bool accepts_avx512(const EltwiseParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return eltwise_reject(why, "needs avx512f/bw/vl/dq");
  return eltwise_well_formed(p, why);
}

}  // namespace

void eltwise_drive(const EltwiseParams& p, const float* a, const float* b, float* y, pthreadpool_t pool,
                   EltwiseSegFn vec, EltwiseSegFn scalar) {
  Drive d{a, b, y, vec, scalar, p.act, p.binary, p.b_mode, p.channels, p.inner};
  // Broadcasts that degenerate to simpler ones: one channel is a scalar; inner 1 is innermost.
  // Per image with one channel: a value per image, b[i / inner].
  if (d.binary && d.mode == 4 && d.channels == 1) d.mode = 3, d.channels = (p.n + d.inner - 1) / d.inner;
  if (d.binary && (d.mode == 2 || d.mode == 3) && d.channels == 1) d.mode = 1;
  if (d.binary && d.mode == 3 && d.inner == 1) d.mode = 2;
  if (p.n <= 0) return;
  if (pool && p.n > kParallelMin)
    pthreadpool_parallelize_1d_tile_1d(pool, drive_task, &d, size_t(p.n), size_t(kChunk), kPoolFlags);
  else
    drive_range(d, 0, p.n);
}

extern const EltwiseKernel eltwise_f32_avx2 = {"eltwise_f32_avx2", accepts_avx2, eltwise_avx2_run};
extern const EltwiseKernel eltwise_f32_avx512 = {"eltwise_f32_avx512", accepts_avx512, eltwise_avx512_run};

}  // namespace systolic::kernels

// Reference pooling: plain NCHW (the test oracle) and NHWC "pool_f32_ref" (last fallback).
#include <limits>

#include "base/threadpool.h"
#include "kernels/pool/pool.h"
#include "kernels/pool/pool_util.h"

namespace systolic::kernels {
namespace {

// One output value from a window reader get(iy, ix) (called for in-image positions only);
// seen(iy, ix, larger) hears of each in-image position and whether it raised the maximum.
template <class Get, class Seen = void (*)(int, int, bool)>
float pool_one(const PoolParams& p, int oy, int ox, Get&& get, Seen&& seen = [](int, int, bool) {}) {
  double sum = 0.0;
  float mx = -std::numeric_limits<float>::infinity();
  int inside = 0, padded = 0;
  for (int ky = 0; ky < p.kh; ++ky)
    for (int kx = 0; kx < p.kw; ++kx) {
      const int iy = oy * p.sh - p.pad_t + ky * p.dh, ix = ox * p.sw - p.pad_l + kx * p.dw;
      if (iy >= -p.pad_t && iy < p.ih + p.pad_b && ix >= -p.pad_l && ix < p.iw + p.pad_r)
        ++padded;
      if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
      ++inside;
      const float v = get(iy, ix);
      sum += v;
      seen(iy, ix, v > mx);
      mx = v > mx ? v : mx;
    }
  if (p.kind == PoolKind::max) return mx;
  const int div = p.count_include_pad ? padded : inside;
  return div ? float(sum / div) : 0.f;
}

}  // namespace

void pool_ref_nchw(const PoolParams& p, const float* src, float* dst) {
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c) {
      const float* s = src + (long(n) * p.c + c) * p.ih * p.iw;
      float* d = dst + (long(n) * p.c + c) * p.oh * p.ow;
      for (int oy = 0; oy < p.oh; ++oy)
        for (int ox = 0; ox < p.ow; ++ox)
          d[oy * p.ow + ox] =
              pool_one(p, oy, ox, [&](int iy, int ix) { return s[long(iy) * p.iw + ix]; });
    }
}

void pool_max_indices_ref_nchw(const PoolParams& p, const float* src, float* dst, int64_t* indices,
                               bool column_major) {
  const long plane = long(p.ih) * p.iw;
  for (long nc = 0; nc < long(p.n) * p.c; ++nc)
    for (int oy = 0; oy < p.oh; ++oy)
      for (int ox = 0; ox < p.ow; ++ox) {
        // pool_one's maximum (a NaN never wins) and where it was; the index starts at the
        // window's first pixel so that a window of NaN or -inf still names one it read.
        long at = -1;
        const long o = (nc * p.oh + oy) * p.ow + ox;
        dst[o] = pool_one(
            p, oy, ox, [&](int iy, int ix) { return src[nc * plane + long(iy) * p.iw + ix]; },
            [&](int iy, int ix, bool larger) {
              if (at < 0 || larger) at = column_major ? long(ix) * p.ih + iy : long(iy) * p.iw + ix;
            });
        indices[o] = at < 0 ? 0 : nc * plane + at;
      }
}

namespace {

bool ref_accepts(const PoolParams& p, const CpuFeatures&, std::string* why) {
  return pool_storage(p, false, why) && pool_well_formed(p, why);
}

void ref_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  const long ss = p.src_stride ? p.src_stride : p.c, ds = p.dst_stride ? p.dst_stride : p.c;
  auto row = [&](std::size_t r) {
    const int n = int(r / p.oh), oy = int(r % p.oh);
    for (int ox = 0; ox < p.ow; ++ox)
      for (int c = 0; c < p.c; ++c)
        dst[((long(n) * p.oh + oy) * p.ow + ox) * ds + c] = pool_one(p, oy, ox, [&](int iy, int ix) {
          return src[((long(n) * p.ih + iy) * p.iw + ix) * ss + c];
        });
  };
  pthreadpool_parallelize_1d(pool, row, std::size_t(p.n) * p.oh, kPoolFlags);
}

}  // namespace

extern const PoolKernel pool_f32_ref = {"pool_f32_ref", ref_accepts, ref_run};

}  // namespace systolic::kernels

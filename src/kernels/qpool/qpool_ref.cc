// Reference uint8 pooling: NCHW (the test oracle) and NHWC "qpool_u8_ref" (last fallback).
#include <cmath>

#include "base/threadpool.h"
#include "kernels/pool/pool_util.h"
#include "kernels/qpool/qpool.h"

namespace systolic::kernels {

uint8_t qpool_avg_requant(int32_t sum, int inside, int divisor, const QPoolArgs& a) {
  if (divisor == 0) return static_cast<uint8_t>(a.out_zp);
  const int32_t s = sum - inside * a.in_zp;
  float t = static_cast<float>(s) * (a.scale / static_cast<float>(divisor));
  t = std::fmin(std::fmax(t, static_cast<float>(-a.out_zp)), static_cast<float>(255 - a.out_zp));
  return static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + a.out_zp);
}

namespace {

// One output byte from a window reader get(iy, ix) (called for in-image positions only).
template <class Get>
uint8_t pool_one(const PoolParams& p, const QPoolArgs& a, int oy, int ox, Get&& get) {
  int32_t sum = 0;
  int mx = 0, inside = 0, padded = 0;
  for (int ky = 0; ky < p.kh; ++ky)
    for (int kx = 0; kx < p.kw; ++kx) {
      const int iy = oy * p.sh - p.pad_t + ky * p.dh, ix = ox * p.sw - p.pad_l + kx * p.dw;
      if (iy >= -p.pad_t && iy < p.ih + p.pad_b && ix >= -p.pad_l && ix < p.iw + p.pad_r) ++padded;
      if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
      ++inside;
      const int v = get(iy, ix);
      sum += v;
      mx = v > mx ? v : mx;
    }
  if (p.kind == PoolKind::max) return static_cast<uint8_t>(mx);
  return qpool_avg_requant(sum, inside, p.count_include_pad ? padded : inside, a);
}

}  // namespace

void qpool_ref_nchw(const PoolParams& p, const QPoolArgs& a) {
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c) {
      const uint8_t* s = a.src + (long(n) * p.c + c) * p.ih * p.iw;
      uint8_t* d = a.dst + (long(n) * p.c + c) * p.oh * p.ow;
      for (int oy = 0; oy < p.oh; ++oy)
        for (int ox = 0; ox < p.ow; ++ox)
          d[oy * p.ow + ox] = pool_one(p, a, oy, ox, [&](int iy, int ix) { return s[long(iy) * p.iw + ix]; });
    }
}

namespace {

bool ref_accepts(const PoolParams& p, const CpuFeatures&, std::string* why) { return pool_well_formed(p, why); }

void ref_run(const PoolParams& p, const QPoolArgs& a, pthreadpool_t pool) {
  const long ss = p.src_stride ? p.src_stride : p.c, ds = p.dst_stride ? p.dst_stride : p.c;
  auto row = [&](std::size_t r) {
    const int n = int(r / p.oh), oy = int(r % p.oh);
    for (int ox = 0; ox < p.ow; ++ox)
      for (int c = 0; c < p.c; ++c)
        a.dst[((long(n) * p.oh + oy) * p.ow + ox) * ds + c] = pool_one(p, a, oy, ox, [&](int iy, int ix) {
          return a.src[((long(n) * p.ih + iy) * p.iw + ix) * ss + c];
        });
  };
  pthreadpool_parallelize_1d(pool, row, std::size_t(p.n) * p.oh, kPoolFlags);
}

}  // namespace

extern const QPoolKernel qpool_u8_ref = {"qpool_u8_ref", ref_accepts, ref_run};

}  // namespace systolic::kernels

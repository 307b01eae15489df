// The reference bf16 conv kernel "conv_bf16_ref": plain loops over NHWC, weights kept as bf16
// in OIHW order, src rounded as it is read, fp32 sums; the oracle of the K2 packing's kernels.
#include "base/threadpool.h"
#include "kernels/bconv/bconv.h"
#include "kernels/conv/conv_util.h"

namespace systolic::kernels {
namespace {

bool ref_accepts(const ConvParams& p, const CpuFeatures&, std::string* why) {
  if (p.src_u8) return conv_reject(why, "a uint8 image source is the fp32 family's");
  return conv_well_formed(p, why);
}

std::size_t ref_weights(const ConvParams& p) { return std::size_t(p.oc) * (p.ic / p.groups) * p.kh * p.kw; }

std::size_t ref_packed_floats(const ConvParams& p) { return (ref_weights(p) + 1) / 2; }

void ref_pack(const ConvParams& p, const float* w, float* packed) {
  uint16_t* out = reinterpret_cast<uint16_t*>(packed);
  const std::size_t n = ref_weights(p);
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_bits(w[i]);
  if (n % 2) out[n] = 0;
}

std::size_t ref_workspace(const ConvParams&) { return 0; }

// One output row (n, oy) per task.
void ref_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  const uint16_t* wb = reinterpret_cast<const uint16_t*>(a.weights);
  auto row = [&](std::size_t r) {
    const int n = int(r / p.oh), oy = int(r % p.oh);
    for (int ox = 0; ox < p.ow; ++ox) {
      const long pix = (long(n) * p.oh + oy) * p.ow + ox;
      for (int k = 0; k < p.oc; ++k) {
        const int g = k / ocg;
        float acc = 0.f;
        for (int ky = 0; ky < p.kh; ++ky)
          for (int kx = 0; kx < p.kw; ++kx) {
            const int iy = oy * p.sh - p.pad_t + ky * p.dh;
            const int ix = ox * p.sw - p.pad_l + kx * p.dw;
            if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
            const float* s = a.src + ((long(n) * p.ih + iy) * p.iw + ix) * ss + g * icg;
            const uint16_t* w = wb + long(k) * icg * p.kh * p.kw + ky * p.kw + kx;
            for (int c = 0; c < icg; ++c) acc += round_bf16(s[c]) * bf16_value(w[long(c) * p.kh * p.kw]);
          }
        if (a.bias) acc += a.bias[k];
        if (a.residual) acc += a.residual[pix * rs + k];
        a.dst[pix * ds + k] = apply_act(a.epilogue, acc);
      }
    }
  };
  pthreadpool_parallelize_1d(pool, row, std::size_t(p.n) * p.oh, kPoolFlags);
}

}  // namespace

extern const ConvKernel conv_bf16_ref = {"conv_bf16_ref", ref_accepts, ref_packed_floats, ref_pack, ref_workspace,
                                         ref_run};

}  // namespace systolic::kernels

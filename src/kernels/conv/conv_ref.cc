// Reference convolutions: plain NCHW (the test oracles, fp32 and bf16) and NHWC "conv_f32_ref"
// (last fallback).
#include <cstring>

#include "base/threadpool.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

namespace {

template <bool BF16>
void ref_nchw(const ConvParams& p, const float* src, const float* w, const float* bias,
              const float* residual, const Epilogue& ep, float* dst) {
  auto in = [](float v) { return BF16 ? round_bf16(v) : v; };
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.oc; ++k) {
      const int g = k / ocg;
      for (int oy = 0; oy < p.oh; ++oy)
        for (int ox = 0; ox < p.ow; ++ox) {
          double acc = bias ? bias[k] : 0.0;
          for (int c = 0; c < icg; ++c)
            for (int ky = 0; ky < p.kh; ++ky)
              for (int kx = 0; kx < p.kw; ++kx) {
                const int iy = oy * p.sh - p.pad_t + ky * p.dh;
                const int ix = ox * p.sw - p.pad_l + kx * p.dw;
                if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
                acc += double(in(src[((long(n) * p.ic + g * icg + c) * p.ih + iy) * p.iw + ix])) *
                       in(w[((long(k) * icg + c) * p.kh + ky) * p.kw + kx]);
              }
          const long o = ((long(n) * p.oc + k) * p.oh + oy) * p.ow + ox;
          if (residual) acc += residual[o];
          dst[o] = apply_act(ep, float(acc));
        }
    }
}

}  // namespace

void conv_ref_nchw(const ConvParams& p, const float* src, const float* w, const float* bias,
                   const float* residual, const Epilogue& ep, float* dst) {
  ref_nchw<false>(p, src, w, bias, residual, ep, dst);
}

void conv_ref_bf16_nchw(const ConvParams& p, const float* src, const float* w, const float* bias,
                        const float* residual, const Epilogue& ep, float* dst) {
  ref_nchw<true>(p, src, w, bias, residual, ep, dst);
}

namespace {

bool ref_accepts(const ConvParams& p, const CpuFeatures&, std::string* why) {
  return conv_well_formed(p, why);
}

std::size_t ref_packed_floats(const ConvParams& p) {
  return std::size_t(p.oc) * (p.ic / p.groups) * p.kh * p.kw;
}

void ref_pack(const ConvParams& p, const float* w, float* packed) {
  std::memcpy(packed, w, ref_packed_floats(p) * sizeof(float));
}

std::size_t ref_workspace(const ConvParams&) { return 0; }

// One output row (n, oy) per task; weights OIHW, activations NHWC with pixel strides.
void ref_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  auto row = [&](std::size_t r) {
    const int n = int(r / p.oh), oy = int(r % p.oh);
    for (int ox = 0; ox < p.ow; ++ox) {
      const long pix = (long(n) * p.oh + oy) * p.ow + ox;
      for (int k = 0; k < p.oc; ++k) {
        const int g = k / ocg;
        float acc = a.bias ? a.bias[k] : 0.f;
        for (int ky = 0; ky < p.kh; ++ky)
          for (int kx = 0; kx < p.kw; ++kx) {
            const int iy = oy * p.sh - p.pad_t + ky * p.dh;
            const int ix = ox * p.sw - p.pad_l + kx * p.dw;
            if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
            const long at = ((long(n) * p.ih + iy) * p.iw + ix) * ss + g * icg;
            const float* w = a.weights + long(k) * icg * p.kh * p.kw + ky * p.kw + kx;
            if (p.src_u8) {
              for (int c = 0; c < icg; ++c)
                acc += (float(a.src_u8[at + c]) - a.src_offset[g * icg + c]) * w[long(c) * p.kh * p.kw];
            } else {
              for (int c = 0; c < icg; ++c) acc += a.src[at + c] * w[long(c) * p.kh * p.kw];
            }
          }
        if (a.residual) acc += a.residual[pix * rs + k];
        a.dst[pix * ds + k] = apply_act(a.epilogue, acc);
      }
    }
  };
  pthreadpool_parallelize_1d(pool, row, std::size_t(p.n) * p.oh, kPoolFlags);
}

}  // namespace

extern const ConvKernel conv_f32_ref = {"conv_f32_ref", ref_accepts, ref_packed_floats, ref_pack,
                                        ref_workspace, ref_run};

}  // namespace systolic::kernels

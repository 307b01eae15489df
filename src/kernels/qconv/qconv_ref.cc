// Reference int8 convolutions: the NCHW oracle with explicit zero points, the zero-point
// folding, and the NHWC "qconv_u8s8_ref" (the last fallback of the list).
#include <cmath>
#include <cstring>

#include "base/threadpool.h"
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv.h"

namespace systolic::kernels {

void qconv_fold_bias(const ConvParams& p, const int8_t* w, const int32_t* bias, const uint8_t* zx, int32_t* out) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups, taps = p.kh * p.kw;
  for (int k = 0; k < p.oc; ++k) {
    const int g = k / ocg;
    int64_t s = 0;
    for (int c = 0; c < icg; ++c)
      for (int t = 0; t < taps; ++t) s += int64_t{zx[g * icg + c]} * w[(long(k) * icg + c) * taps + t];
    out[k] = static_cast<int32_t>((bias ? bias[k] : 0) - s);
  }
}

void qconv_requant_n(const int32_t* acc, int n, const float* scale, const uint8_t* res, const QRequant& rq,
                     uint8_t* dst) {
  auto clamp = [&](float t, int m) { return std::fmin(std::fmax(t, rq.mid_lo[m]), rq.mid_hi[m]); };
  const float off = res ? res_off(rq) : 0.f;
  for (int i = 0; i < n; ++i) {
    float t = static_cast<float>(acc[i]);
    if (rq.mid & 1) t = std::fma(std::nearbyint(clamp(t * scale[i], 0)), rq.mid_scale[0], off);
    else t = std::fma(t, scale[i], off);
    if (res) t = std::fma(static_cast<float>(res[i]), rq.res_scale, t);
    if (rq.mid & 2) t = std::nearbyint(clamp(t, 1)) * rq.mid_scale[1];
    t = std::fmin(std::fmax(t, rq.lo), rq.hi);
    dst[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + rq.zp);
  }
}

bool qconv_tail_table(const QRequant& rq, uint8_t table[256]) {
  const float lo1 = rq.mid_lo[1], hi1 = rq.mid_hi[1];
  if (!(rq.mid & 2) || !(lo1 <= hi1) || hi1 - lo1 > 255.f || std::nearbyint(lo1) != lo1 || std::nearbyint(hi1) != hi1)
    return false;
  std::memset(table, 0, 256);
  for (int i = 0; i <= int(hi1 - lo1); ++i) {
    float t = (lo1 + float(i)) * rq.mid_scale[1];  // qconv_requant_n from mid 2's rounding on
    t = std::fmin(std::fmax(t, rq.lo), rq.hi);
    table[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + rq.zp);
  }
  return true;
}

void qconv_dequant_n(const int32_t* acc, int n, const float* scale, const float* res, const Epilogue& ep,
                     float* dst) {
  for (int i = 0; i < n; ++i) {
    float t = static_cast<float>(acc[i]) * scale[i];
    if (res) t = t + res[i];
    dst[i] = apply_act(ep, t);
  }
}

void qconv_ref_nchw(const QConvParams& qp, const uint8_t* src, const uint8_t* zx, const int8_t* w,
                    const int32_t* bias, const float* scale, const void* residual, const QRequant& rq,
                    const Epilogue& ep, void* dst) {
  const ConvParams& p = qp.conv;
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.oc; ++k) {
      const int g = k / ocg;
      for (int oy = 0; oy < p.oh; ++oy)
        for (int ox = 0; ox < p.ow; ++ox) {
          int64_t acc = bias ? bias[k] : 0;
          for (int c = 0; c < icg; ++c)
            for (int ky = 0; ky < p.kh; ++ky)
              for (int kx = 0; kx < p.kw; ++kx) {
                const int iy = oy * p.sh - p.pad_t + ky * p.dh;
                const int ix = ox * p.sw - p.pad_l + kx * p.dw;
                if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;  // the real value 0
                const int ch = g * icg + c;
                acc += (int64_t{src[((long(n) * p.ic + ch) * p.ih + iy) * p.iw + ix]} - zx[ch]) *
                       w[((long(k) * icg + c) * p.kh + ky) * p.kw + kx];
              }
          const long o = ((long(n) * p.oc + k) * p.oh + oy) * p.ow + ox;
          const int32_t a = static_cast<int32_t>(acc);
          if (qp.out_f32) {
            const float* r = residual ? static_cast<const float*>(residual) + o : nullptr;
            qconv_dequant_n(&a, 1, scale + k, r, ep, static_cast<float*>(dst) + o);
          } else {
            const uint8_t* r = residual ? static_cast<const uint8_t*>(residual) + o : nullptr;
            uint8_t* d = static_cast<uint8_t*>(dst) + o;
            qconv_requant_n(&a, 1, scale + k, r, rq, d);
            if (rq.lut) *d = rq.lut[*d];
          }
        }
    }
}

namespace {

bool ref_accepts(const QConvParams& p, const CpuFeatures&, std::string* why) {
  if (p.conv.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  return conv_well_formed(p.conv, why);
}

std::size_t ref_packed_bytes(const QConvParams& p) {
  return std::size_t(p.conv.oc) * (p.conv.ic / p.conv.groups) * p.conv.kh * p.conv.kw;
}

void ref_pack(const QConvParams& p, const int8_t* w, void* packed) { std::memcpy(packed, w, ref_packed_bytes(p)); }

std::size_t ref_workspace(const QConvParams&) { return 0; }

// One output row (n, oy) per task; weights OIHW, activations NHWC with pixel strides.
void ref_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  const ConvParams& p = qp.conv;
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  const auto* w0 = static_cast<const int8_t*>(a.weights);
  auto row = [&](std::size_t r) {
    const int n = int(r / p.oh), oy = int(r % p.oh);
    for (int ox = 0; ox < p.ow; ++ox) {
      const long pix = (long(n) * p.oh + oy) * p.ow + ox;
      for (int k = 0; k < p.oc; ++k) {
        const int g = k / ocg;
        int32_t acc = a.bias[k];
        for (int ky = 0; ky < p.kh; ++ky)
          for (int kx = 0; kx < p.kw; ++kx) {
            const int iy = oy * p.sh - p.pad_t + ky * p.dh;
            const int ix = ox * p.sw - p.pad_l + kx * p.dw;
            const bool in = iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw;
            const uint8_t* x = in ? a.src + ((long(n) * p.ih + iy) * p.iw + ix) * ss + g * icg : a.pad + g * icg;
            const int8_t* w = w0 + long(k) * icg * p.kh * p.kw + ky * p.kw + kx;
            for (int c = 0; c < icg; ++c) acc += int32_t{x[c]} * w[long(c) * p.kh * p.kw];
          }
        if (qp.out_f32) {
          const float* res = a.residual ? static_cast<const float*>(a.residual) + pix * rs + k : nullptr;
          qconv_dequant_n(&acc, 1, a.scale + k, res, a.ep, static_cast<float*>(a.dst) + pix * ds + k);
        } else {
          const uint8_t* res = a.residual ? static_cast<const uint8_t*>(a.residual) + pix * rs + k : nullptr;
          qconv_requant_n(&acc, 1, a.scale + k, res, a.rq, static_cast<uint8_t*>(a.dst) + pix * ds + k);
        }
      }
      if (!qp.out_f32 && a.rq.lut) {
        uint8_t* d = static_cast<uint8_t*>(a.dst) + pix * ds;
        for (int k = 0; k < p.oc; ++k) d[k] = a.rq.lut[d[k]];
      }
    }
  };
  pthreadpool_parallelize_1d(pool, row, std::size_t(p.n) * p.oh, kPoolFlags);
}

}  // namespace

extern const QConvKernel qconv_u8s8_ref = {"qconv_u8s8_ref", ref_accepts, ref_packed_bytes, ref_pack, ref_workspace,
                                           ref_run};

}  // namespace systolic::kernels

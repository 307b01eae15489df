// Reference quantization ops: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul. Integer products accumulate exactly
// (int64, wrapped to int32 as the spec's int32 accumulator); requantization follows ONNX Runtime:
// multiplier = x_scale * w_scale / y_scale in float, y = saturate(round_half_even(acc * multiplier) + y_zp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "interp/eval.h"
#include "interp/nn_geometry.h"
#include "interp/quant_geometry.h"
#include "interp/rounding.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;


// Integer values of a u8/i8/i32 tensor; an absent zero point reads as one 0.
std::vector<int32_t> ints32(const std::vector<TensorRef>& in, std::size_t i) {
  if (!present(in, i)) return {0};
  const TensorRef& t = in[i];
  std::vector<int32_t> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t k = 0; k < v.size(); ++k) {
    switch (t.dtype) {
      case DType::u8: v[k] = t.as<uint8_t>()[k]; break;
      case DType::i8: v[k] = t.as<int8_t>()[k]; break;
      default: v[k] = t.as<int32_t>()[k]; break;
    }
  }
  return v;
}

std::vector<float> floats(const TensorRef& t) { return std::vector<float>(t.as<float>(), t.as<float>() + t.numel()); }

struct QRange {
  int32_t lo, hi;
};

QRange range_of(DType t) {
  if (t == DType::i8) return {-128, 127};
  if (t == DType::u8) return {0, 255};
  return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
}

void store(const TensorRef& y, int64_t i, int32_t q) {
  switch (y.dtype) {
    case DType::u8: y.as<uint8_t>()[i] = static_cast<uint8_t>(q); break;
    case DType::i8: y.as<int8_t>()[i] = static_cast<int8_t>(q); break;
    default: y.as<int32_t>()[i] = q; break;
  }
}

// Splits x around the quantization axis: outer x len x inner (len 1, inner numel per tensor).
void axis_split(const ir::Shape& s, int64_t axis, int64_t* outer, int64_t* len, int64_t* inner) {
  *outer = 1;
  *len = 1;
  *inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (axis < 0 || d > axis) *inner *= s[d];
    else if (d < axis) *outer *= s[d];
    else *len = s[d];
  }
}

Status eval_quantize(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  int64_t axis = -1, outer, len, inner;
  SYSTOLIC_RETURN_IF_ERROR(linear_quant_axis(n, in[0], in[1], in.size() > 2 ? in[2] : TensorRef{}, &axis));
  axis_split(in[0].shape, axis, &outer, &len, &inner);
  const std::vector<float> scale = floats(in[1]);
  const std::vector<int32_t> zp = ints32(in, 2);
  const QRange r = range_of(y.dtype);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < len; ++c) {
      const float s = scale[c];
      const int32_t z = zp[zp.size() == 1 ? 0 : c];
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * len + c) * inner + i;
        // float / float as ONNX Runtime divides; int32 inputs divide in double, as numpy's reference does.
        const double v = in[0].dtype == DType::f32 ? static_cast<double>(in[0].as<float>()[at] / s)
                                                    : static_cast<double>(in[0].as<int32_t>()[at]) / s;
        store(y, at, quantize_value(v, z, r.lo, r.hi));
      }
    }
  return Status::Ok();
}

Status eval_dequantize(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  int64_t axis = -1, outer, len, inner;
  SYSTOLIC_RETURN_IF_ERROR(linear_quant_axis(n, in[0], in[1], in.size() > 2 ? in[2] : TensorRef{}, &axis));
  axis_split(in[0].shape, axis, &outer, &len, &inner);
  const std::vector<float> scale = floats(in[1]);
  const std::vector<int32_t> zp = ints32(in, 2);
  const std::vector<int32_t> x = ints32(in, 0);
  if (in[0].dtype == DType::i32)
    for (int32_t z : zp)
      if (z != 0) return Err("DequantizeLinear %s: an int32 input's zero point must be 0", n.name.c_str());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < len; ++c) {
      const float s = scale[c];
      const int32_t z = zp[zp.size() == 1 ? 0 : c];
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * len + c) * inner + i;
        y.as<float>()[at] = static_cast<float>(static_cast<int64_t>(x[at]) - z) * s;
      }
    }
  return Status::Ok();
}

// The range, widened to include 0, mapped onto [0, 255]: scale = (max - min) / 255,
// zero point = round(clamp(-min / scale)), then QuantizeLinear. A range of 0 (all zeros)
// takes scale 1, as ONNX Runtime does, where the formula would divide 0 by 0.
Status eval_dynamic_quantize(const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const float* x = in[0].as<float>();
  const int64_t count = in[0].numel();
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  const float zp_real = std::clamp(0.f - lo / scale, 0.f, 255.f);
  const int32_t zp = static_cast<int32_t>(round_half_even(zp_real));
  for (int64_t i = 0; i < count; ++i)
    out[0].as<uint8_t>()[i] = static_cast<uint8_t>(quantize_value(static_cast<double>(x[i] / scale), zp, 0, 255));
  if (out.size() > 1 && out[1].data) out[1].as<float>()[0] = scale;
  if (out.size() > 2 && out[2].data) out[2].as<uint8_t>()[0] = static_cast<uint8_t>(zp);
  return Status::Ok();
}

// acc[n][oc][oh][ow] = sum over the group's input channels and the taps inside the image of
// (x - x_zp) * (w - w_zp[oc]); a tap in the padding reads x_zp (the real value 0) and adds 0.
std::vector<int32_t> conv_acc(const kernels::ConvParams& p, const std::vector<int32_t>& x, int32_t xzp,
                              const std::vector<int32_t>& w, const std::vector<int32_t>& wzp) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  std::vector<int32_t> acc(static_cast<std::size_t>(p.n) * p.oc * p.oh * p.ow);
  std::size_t at = 0;
  for (int b = 0; b < p.n; ++b)
    for (int o = 0; o < p.oc; ++o) {
      const int g = o / ocg;
      const int32_t wz = wzp[wzp.size() == 1 ? 0 : o];
      for (int oy = 0; oy < p.oh; ++oy)
        for (int ox = 0; ox < p.ow; ++ox) {
          int64_t s = 0;
          for (int c = 0; c < icg; ++c) {
            const int32_t* xc = x.data() + (static_cast<int64_t>(b) * p.ic + g * icg + c) * p.ih * p.iw;
            const int32_t* wc = w.data() + (static_cast<int64_t>(o) * icg + c) * p.kh * p.kw;
            for (int ky = 0; ky < p.kh; ++ky) {
              const int iy = oy * p.sh - p.pad_t + ky * p.dh;
              if (iy < 0 || iy >= p.ih) continue;
              for (int kx = 0; kx < p.kw; ++kx) {
                const int ix = ox * p.sw - p.pad_l + kx * p.dw;
                if (ix < 0 || ix >= p.iw) continue;
                s += static_cast<int64_t>(xc[iy * p.iw + ix] - xzp) * (wc[ky * p.kw + kx] - wz);
              }
            }
          }
          acc[at++] = static_cast<int32_t>(s);  // the int32 accumulator wraps
        }
    }
  return acc;
}

// ConvInteger (x 0, w 1, zero points 2, 3) and QLinearConv (x 0, w 3, zero points 2, 5).
Status eval_conv(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const bool ql = n.op == Op::QLinearConv;
  const std::size_t wi = ql ? 3 : 1, wzi = ql ? 5 : 3;
  kernels::ConvParams p;
  SYSTOLIC_RETURN_IF_ERROR(conv_geometry(n, in[0].shape, in[wi].shape, &p));
  const std::vector<int32_t> acc = conv_acc(p, ints32(in, 0), ints32(in, 2)[0], ints32(in, wi), ints32(in, wzi));
  const int64_t plane = static_cast<int64_t>(p.oh) * p.ow;
  if (!ql) {
    std::copy(acc.begin(), acc.end(), y.as<int32_t>());
    return Status::Ok();
  }
  const float x_scale = in[1].as<float>()[0], y_scale = in[6].as<float>()[0];
  const std::vector<float> w_scale = floats(in[4]);
  const int32_t yzp = ints32(in, 7)[0];
  const std::vector<int32_t> bias = present(in, 8) ? ints32(in, 8) : std::vector<int32_t>(p.oc, 0);
  const QRange r = range_of(y.dtype);
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const int o = static_cast<int>((static_cast<int64_t>(i) / plane) % p.oc);
    const float mult = x_scale * w_scale[w_scale.size() == 1 ? 0 : o] / y_scale;
    const int32_t a = static_cast<int32_t>(static_cast<int64_t>(acc[i]) + bias[o]);
    store(y, static_cast<int64_t>(i), quantize_value(static_cast<float>(a) * mult, yzp, r.lo, r.hi));
  }
  return Status::Ok();
}

// MatMulInteger (a 0, b 1, zero points 2, 3) and QLinearMatMul (a 0, b 3, scales 1, 4, 6, zero
// points 2, 5, 7), numpy-style batched; zero points and scales per tensor, per row of a, per
// column of b.
Status eval_matmul(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const bool ql = n.op == Op::QLinearMatMul;
  const std::size_t bi = ql ? 3 : 1, azi = 2, bzi = ql ? 5 : 3;
  // The parameters of each operand, written at its rank ([.., M, 1] / [.., 1, N]).
  ir::Shape pa, pb;
  SYSTOLIC_RETURN_IF_ERROR(matmul_quant_shape(n, "a_zero_point", in[0].shape, true,
                                              present(in, azi) ? in[azi].shape : ir::Shape{}, &pa));
  SYSTOLIC_RETURN_IF_ERROR(matmul_quant_shape(n, "b_zero_point", in[bi].shape, false,
                                              present(in, bzi) ? in[bzi].shape : ir::Shape{}, &pb));
  if (ql) {  // the scales vary like the zero points, or not at all
    ir::Shape sa, sb;
    SYSTOLIC_RETURN_IF_ERROR(matmul_quant_shape(n, "a_scale", in[0].shape, true, in[1].shape, &sa));
    SYSTOLIC_RETURN_IF_ERROR(matmul_quant_shape(n, "b_scale", in[bi].shape, false, in[4].shape, &sb));
    if (sa != pa || sb != pb)
      return Err("QLinearMatMul %s: scales and zero points are shaped differently", n.name.c_str());
  }
  ir::Shape as = in[0].shape, bs = in[bi].shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  const ir::Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  auto batch = broadcast_shapes(abatch, bbatch);
  if (!batch.ok()) return batch.status();
  const auto ast = broadcast_strides(abatch, *batch), bst = broadcast_strides(bbatch, *batch);
  const auto past = broadcast_strides(ir::Shape(pa.begin(), pa.end() - 2), *batch);
  const auto pbst = broadcast_strides(ir::Shape(pb.begin(), pb.end() - 2), *batch);
  const int64_t pa_mat = pa[pa.size() - 2], pa_row = pa_mat == 1 ? 0 : 1;
  const int64_t pb_mat = pb.back(), pb_col = pb_mat == 1 ? 0 : 1;

  const std::vector<int32_t> A = ints32(in, 0), B = ints32(in, bi), AZ = ints32(in, azi), BZ = ints32(in, bzi);
  std::vector<float> a_scale, b_scale;
  float y_scale = 1.f;
  int32_t yzp = 0;
  if (ql) {
    a_scale = floats(in[1]);
    b_scale = floats(in[4]);
    y_scale = in[6].as<float>()[0];
    yzp = ints32(in, 7)[0];
  }
  const QRange r = range_of(y.dtype);
  const int64_t nb = ir::num_elements(*batch);
  std::vector<int64_t> idx(batch->size(), 0);
  for (int64_t e = 0; e < nb; ++e) {
    int64_t ao = 0, bo = 0, pao = 0, pbo = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) {
      ao += idx[d] * ast[d];
      bo += idx[d] * bst[d];
      pao += idx[d] * past[d];
      pbo += idx[d] * pbst[d];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t ia = pao * pa_mat + m * pa_row, ib = pbo * pb_mat + j * pb_col;
        const int32_t za = AZ[AZ.size() == 1 ? 0 : ia], zb = BZ[BZ.size() == 1 ? 0 : ib];
        int64_t s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<int64_t>(A[(ao * M + m) * K + k] - za) * (B[(bo * K + k) * N + j] - zb);
        const int64_t at = (e * M + m) * N + j;
        const int32_t acc = static_cast<int32_t>(s);  // the int32 accumulator wraps
        if (!ql) {
          y.as<int32_t>()[at] = acc;
          continue;
        }
        const float mult = a_scale[a_scale.size() == 1 ? 0 : ia] * b_scale[b_scale.size() == 1 ? 0 : ib] / y_scale;
        store(y, at, quantize_value(static_cast<float>(acc) * mult, yzp, r.lo, r.hi));
      }
    for (int d = static_cast<int>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < (*batch)[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

Status eval_quant(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  // The interpreter may be called on tensors no pass has checked: the same rules first.
  std::vector<ir::Shape> shapes;
  std::vector<DType> dtypes;
  SYSTOLIC_RETURN_IF_ERROR(infer_quant(n, in, &shapes, &dtypes));
  if (out.size() > shapes.size())
    return Err("%s %s has %zu outputs; it has at most %zu", ir::op_name(n.op), n.name.c_str(), out.size(),
               shapes.size());
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].data && (out[k].dtype != dtypes[k] || out[k].shape != shapes[k]))
      return Err("%s %s: output %zu is %s%s, expected %s%s", ir::op_name(n.op), n.name.c_str(), k,
                 ir::dtype_name(out[k].dtype), ir::shape_str(out[k].shape).c_str(), ir::dtype_name(dtypes[k]),
                 ir::shape_str(shapes[k]).c_str());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i].dtype != DType::undefined && !in[i].data && in[i].numel() > 0)
      return Err("%s %s: input %zu has no data", ir::op_name(n.op), n.name.c_str(), i);
  if (out.empty() || !out[0].data) return Err("%s %s: output 0 has no buffer", ir::op_name(n.op), n.name.c_str());
  switch (n.op) {
    case Op::QuantizeLinear: return eval_quantize(n, in, out[0]);
    case Op::DequantizeLinear: return eval_dequantize(n, in, out[0]);
    case Op::DynamicQuantizeLinear: return eval_dynamic_quantize(in, out);
    case Op::ConvInteger: case Op::QLinearConv: return eval_conv(n, in, out[0]);
    case Op::MatMulInteger: case Op::QLinearMatMul: return eval_matmul(n, in, out[0]);
    default: return Err("no reference implementation for %s", ir::op_name(n.op));
  }
}

}  // namespace systolic::interp

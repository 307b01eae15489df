// Reference kernels and shape rules of the spatial family (ops.inc lists its ops): Resize,
// Upsample, ConvTranspose, GridSample, RoiAlign, MaxUnpool, NonMaxSuppression.
#include <algorithm>
#include <map>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "interp/dispatch.h"
#include "interp/eval.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;

const char* opn(const ir::Node& n) { return ir::op_name(n.op); }

// Input i when the node has it (an omitted optional input has no dtype).
const TensorRef* opt_in(const std::vector<TensorRef>& in, std::size_t i) {
  return i < in.size() && in[i].dtype != DType::undefined ? &in[i] : nullptr;
}

std::vector<double> read_doubles(const TensorRef& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype) {
      case DType::f32: v[i] = t.as<float>()[i]; break;
      case DType::f64: v[i] = t.as<double>()[i]; break;
      case DType::i64: v[i] = static_cast<double>(t.as<int64_t>()[i]); break;
      case DType::i32: v[i] = t.as<int32_t>()[i]; break;
      default: v[i] = 0;
    }
  }
  return v;
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }

Status need_float(const ir::Node& n, const TensorRef& t, const char* what) {
  if (!is_float(t.dtype))
    return Err("%s %s: %s of element type %s is not supported (float32/float64 only)", opn(n), n.name.c_str(), what,
               ir::dtype_name(t.dtype));
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// Resize and Upsample.

struct ResizeAttrs {
  bool legacy = false;  // Upsample and Resize-10: asymmetric coordinates, floor (ceil when shrinking) nearest
  std::string mode, ctm, nearest_mode, keep_policy;
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;
  std::vector<int64_t> axes;  // the dims scales/sizes/roi name (opset 18), all when empty
  int roi_in = -1, scales_in = -1, sizes_in = -1;
};

Status resize_attrs(const ir::Node& n, int64_t rank, ResizeAttrs* a) {
  const int opset = node_opset(n);
  a->mode = n.s("mode", "nearest");
  if (a->mode == "bilinear" || a->mode == "trilinear") a->mode = "linear";
  if (a->mode == "bicubic") a->mode = "cubic";
  if (n.op == Op::Upsample || opset < 11) {
    a->legacy = true;
    a->ctm = "asymmetric";
    if (n.op == Op::Resize || opset >= 9) a->scales_in = 1;
    if (a->mode != "nearest" && a->mode != "linear")
      return Err("%s %s: mode %s is not supported", opn(n), n.name.c_str(), a->mode.c_str());
  } else {
    a->ctm = n.s("coordinate_transformation_mode", "half_pixel");
    a->nearest_mode = n.s("nearest_mode", "round_prefer_floor");
    a->cubic_a = n.f("cubic_coeff_a", -0.75f);
    a->exclude_outside = n.i("exclude_outside", 0) != 0;
    a->extrapolation = n.f("extrapolation_value", 0.f);
    a->antialias = n.i("antialias", 0) != 0;
    a->keep_policy = n.s("keep_aspect_ratio_policy", "stretch");
    a->roi_in = 1;
    a->scales_in = 2;
    a->sizes_in = 3;
    static const char* kModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                   "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    if (std::find_if(std::begin(kModes), std::end(kModes), [&](const char* m) { return a->ctm == m; }) ==
        std::end(kModes))
      return Err("%s %s: coordinate_transformation_mode %s is not supported", opn(n), n.name.c_str(), a->ctm.c_str());
    if (a->mode != "nearest" && a->mode != "linear" && a->mode != "cubic")
      return Err("%s %s: mode %s is not supported", opn(n), n.name.c_str(), a->mode.c_str());
    if (a->nearest_mode != "round_prefer_floor" && a->nearest_mode != "round_prefer_ceil" &&
        a->nearest_mode != "floor" && a->nearest_mode != "ceil")
      return Err("%s %s: nearest_mode %s is not supported", opn(n), n.name.c_str(), a->nearest_mode.c_str());
    if (a->keep_policy != "stretch" && a->keep_policy != "not_larger" && a->keep_policy != "not_smaller")
      return Err("%s %s: keep_aspect_ratio_policy %s is not supported", opn(n), n.name.c_str(), a->keep_policy.c_str());
    for (int64_t ax : n.ints("axes")) {
      if (ax < -rank || ax >= rank) return Err("%s %s: axis %lld out of range", opn(n), n.name.c_str(), (long long)ax);
      const int64_t v = ax < 0 ? ax + rank : ax;
      if (std::find(a->axes.begin(), a->axes.end(), v) != a->axes.end())
        return Err("%s %s: axis %lld repeated", opn(n), n.name.c_str(), (long long)ax);
      a->axes.push_back(v);
    }
  }
  if (a->axes.empty())
    for (int64_t d = 0; d < rank; ++d) a->axes.push_back(d);
  return Status::Ok();
}

// Output shape and per-dim scale from the (constant) scales or sizes.
Status resize_shape(const ir::Node& n, const std::vector<TensorRef>& in, const ResizeAttrs& a, ir::Shape* out,
                    std::vector<double>* scale) {
  const ir::Shape& xs = in[0].shape;
  const std::size_t na = a.axes.size();
  *out = xs;
  scale->assign(xs.size(), 1.0);
  const TensorRef* sizes = a.sizes_in >= 0 ? opt_in(in, a.sizes_in) : nullptr;
  const TensorRef* scales = a.scales_in >= 0 ? opt_in(in, a.scales_in) : nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if (scales && scales->numel() == 0) scales = nullptr;
  std::vector<double> sc;
  if (n.op == Op::Upsample && a.scales_in < 0) {
    if (!n.has("scales")) return Err("%s %s: scales attribute is missing", opn(n), n.name.c_str());
    for (float f : n.attrs.at("scales").floats_v) sc.push_back(f);
  } else if (sizes) {
    if (scales) return Err("%s %s: both scales and sizes are given", opn(n), n.name.c_str());
    if (!sizes->data)
      return Err("%s %s: sizes computed at run time is not supported", opn(n), n.name.c_str());
    std::vector<int64_t> sz = read_ints(*sizes);
    if (sz.size() != na)
      return Err("%s %s: sizes has %zu values for %zu axes", opn(n), n.name.c_str(), sz.size(), na);
    for (int64_t s : sz)
      if (s <= 0) return Err("%s %s: sizes must be positive", opn(n), n.name.c_str());
    if (a.keep_policy == "stretch" || a.keep_policy.empty()) {
      for (std::size_t k = 0; k < na; ++k) {
        (*out)[a.axes[k]] = sz[k];
        (*scale)[a.axes[k]] = xs[a.axes[k]] ? static_cast<double>(sz[k]) / xs[a.axes[k]] : 1.0;
      }
    } else {
      double s = a.keep_policy == "not_larger" ? INFINITY : 0;
      for (std::size_t k = 0; k < na; ++k) {
        if (xs[a.axes[k]] == 0) continue;
        const double r = static_cast<double>(sz[k]) / xs[a.axes[k]];
        s = a.keep_policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      if (!std::isfinite(s) || s <= 0) s = 1;
      for (std::size_t k = 0; k < na; ++k) {
        const double len = std::round(s * xs[a.axes[k]]);
        if (len > 1e12) return Err("%s %s: sizes give an output dim of %g", opn(n), n.name.c_str(), len);
        (*out)[a.axes[k]] = static_cast<int64_t>(len);
        (*scale)[a.axes[k]] = s;
      }
    }
    return Status::Ok();
  } else if (scales) {
    if (!scales->data)
      return Err("%s %s: scales computed at run time is not supported", opn(n), n.name.c_str());
    if (!is_float(scales->dtype))
      return Err("%s %s: scales of element type %s is not supported", opn(n), n.name.c_str(),
                 ir::dtype_name(scales->dtype));
    sc = read_doubles(*scales);
  } else {
    return Err("%s %s: neither scales nor sizes is given", opn(n), n.name.c_str());
  }
  if (sc.size() != na)
    return Err("%s %s: scales has %zu values for %zu axes", opn(n), n.name.c_str(), sc.size(), na);
  for (std::size_t k = 0; k < na; ++k) {
    if (!(sc[k] > 0) || !std::isfinite(sc[k]))
      return Err("%s %s: scales must be positive", opn(n), n.name.c_str());
    (*scale)[a.axes[k]] = sc[k];
    const double len = std::floor(xs[a.axes[k]] * sc[k]);
    if (len > 1e12) return Err("%s %s: scales give an output dim of %g", opn(n), n.name.c_str(), len);
    (*out)[a.axes[k]] = static_cast<int64_t>(len);
  }
  return Status::Ok();
}

// One dim's resampling: for each output coordinate, `ntaps` source indices (clamped) and
// weights, or `outside` (tf_crop_and_resize past the input: the extrapolation value).
struct AxisTaps {
  int64_t in_len = 0, out_len = 0;
  int ntaps = 1;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;
  bool identity = false;
};

double cubic_kernel(double t, double A) {
  t = std::fabs(t);
  if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
  if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
  return 0;
}

AxisTaps axis_taps(const ResizeAttrs& a, int64_t in_len, int64_t out_len, double scale, double roi_start,
                   double roi_end) {
  AxisTaps t;
  t.in_len = in_len;
  t.out_len = out_len;
  const bool nearest = a.mode == "nearest";
  const double R = a.mode == "cubic" ? 2 : 1;
  // Antialiasing stretches the filter by 1/scale when shrinking.
  const double fs = !nearest && a.antialias && scale < 1 ? scale : 1;
  const int64_t start = nearest ? 0 : static_cast<int64_t>(std::floor(-R / fs)) + 1;
  t.ntaps = nearest ? 1 : static_cast<int>(2 - 2 * start);
  t.idx.resize(out_len * t.ntaps);
  t.w.resize(out_len * t.ntaps);
  t.outside.assign(out_len, 0);
  // The resized length as the scale gives it, before flooring to out_len: align_corners,
  // tf_crop_and_resize and half_pixel_symmetric divide by it (ONNX's reference does).
  const double L = static_cast<double>(in_len), O = static_cast<double>(out_len), Lr = scale * L;
  for (int64_t o = 0; o < out_len; ++o) {
    const double xr = static_cast<double>(o);
    double x;
    if (a.ctm == "half_pixel") {
      x = (xr + 0.5) / scale - 0.5;
    } else if (a.ctm == "half_pixel_symmetric") {
      const double adj = O / Lr;
      x = L / 2 * (1 - adj) + (xr + 0.5) / scale - 0.5;
    } else if (a.ctm == "pytorch_half_pixel") {
      x = out_len > 1 ? (xr + 0.5) / scale - 0.5 : 0;
    } else if (a.ctm == "align_corners") {
      x = Lr != 1 ? xr * (L - 1) / (Lr - 1) : 0;
    } else if (a.ctm == "tf_half_pixel_for_nn") {
      x = (xr + 0.5) / scale;
    } else if (a.ctm == "tf_crop_and_resize") {
      x = Lr != 1 ? roi_start * (L - 1) + xr * (roi_end - roi_start) * (L - 1) / (Lr - 1)
                      : 0.5 * (roi_start + roi_end) * (L - 1);
      if (!(x >= 0 && x <= L - 1)) {  // also a NaN roi
        t.outside[o] = 1;
        x = 0;
      }
    } else {
      x = xr / scale;  // asymmetric
    }
    int64_t* idx = &t.idx[o * t.ntaps];
    double* w = &t.w[o * t.ntaps];
    if (nearest) {
      int64_t i;
      const double fl = std::floor(x);
      if (a.legacy) i = scale < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(fl);
      else if (a.nearest_mode == "floor") i = static_cast<int64_t>(fl);
      else if (a.nearest_mode == "ceil") i = static_cast<int64_t>(std::ceil(x));
      else if (x - fl == 0.5) i = static_cast<int64_t>(a.nearest_mode == "round_prefer_ceil" ? fl + 1 : fl);
      else i = static_cast<int64_t>(std::round(x));
      idx[0] = std::clamp<int64_t>(i, 0, in_len - 1);
      w[0] = 1;
      continue;
    }
    const double fl = std::floor(x), r = x - fl;
    double sum = 0;
    for (int k = 0; k < t.ntaps; ++k) {
      const int64_t i = static_cast<int64_t>(fl) + start + k;
      const double arg = fs * (static_cast<double>(start + k) - r);
      double wk = a.mode == "cubic" ? cubic_kernel(arg, a.cubic_a) : std::max(0.0, 1 - std::fabs(arg));
      if (a.exclude_outside && (i < 0 || i >= in_len)) wk = 0;
      idx[k] = std::clamp<int64_t>(i, 0, in_len - 1);
      w[k] = wk;
      sum += wk;
    }
    if ((a.antialias || a.exclude_outside) && sum != 0)
      for (int k = 0; k < t.ntaps; ++k) w[k] /= sum;
  }
  // An axis that maps every coordinate to itself is skipped.
  t.identity = in_len == out_len;
  for (int64_t o = 0; o < out_len && t.identity; ++o) {
    double at_o = 0, elsewhere = 0;
    for (int k = 0; k < t.ntaps; ++k)
      (t.idx[o * t.ntaps + k] == o ? at_o : elsewhere) += std::fabs(t.w[o * t.ntaps + k]);
    if (t.outside[o] || at_o != 1 || elsewhere != 0) t.identity = false;
  }
  return t;
}

// Nearest: a gather, exact for every element type.
template <typename T>
void resize_nearest(const std::vector<AxisTaps>& ax, const TensorRef& x, const TensorRef& y, T extrap) {
  const int r = static_cast<int>(x.shape.size());
  std::vector<int64_t> xst(r, 1);
  for (int d = r - 2; d >= 0; --d) xst[d] = xst[d + 1] * x.shape[d + 1];
  // Per dim and output coordinate: the source offset, or -1 outside.
  std::vector<std::vector<int64_t>> off(r);
  for (int d = 0; d < r; ++d) {
    off[d].resize(y.shape[d]);
    for (int64_t o = 0; o < y.shape[d]; ++o) off[d][o] = ax[d].outside[o] ? -1 : ax[d].idx[o] * xst[d];
  }
  const T* X = x.as<T>();
  T* Y = y.as<T>();
  const int64_t total = y.numel();
  if (total == 0) return;
  if (r == 0) {
    Y[0] = X[0];
    return;
  }
  const int64_t last = y.shape[r - 1];
  std::vector<int64_t> idx(r, 0);
  for (int64_t e = 0; e < total; e += last) {
    int64_t base = 0;
    bool out = false;
    for (int d = 0; d < r - 1; ++d) {
      if (off[d][idx[d]] < 0) out = true;
      base += off[d][idx[d]];
    }
    T* yr = Y + e;
    const std::vector<int64_t>& lo = off[r - 1];
    for (int64_t o = 0; o < last; ++o) yr[o] = out || lo[o] < 0 ? extrap : X[base + lo[o]];
    for (int d = r - 2; d >= 0; --d) {
      if (++idx[d] < y.shape[d]) break;
      idx[d] = 0;
    }
  }
}

// y[i] += w * x[i]: the rows of x and y never overlap (x is the pass's input), which the
// compiler may only vectorize knowing (the interpreter's files build with the cheap vector cost
// model, CMakeLists.txt). DeepLabV3's final 14x14 -> 224x224 upsample ran 1.3 ms scalar.
template <typename C>
void blend_row(C* __restrict y, const C* __restrict x, C w, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
}

// The same for two taps at once, in the same order: y = (0 + w0 * x0) + w1 * x1.
template <typename C>
void blend2_row(C* __restrict y, const C* __restrict x0, C w0, const C* __restrict x1, C w1, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (C(0) + w0 * x0[i]) + w1 * x1[i];
}

// Linear/cubic along one dim of a [outer, in_len, inner] tensor.
template <typename C>
void resize_pass(const C* x, C* y, int64_t outer, int64_t inner, const AxisTaps& t, C extrap) {
  const int64_t il = t.in_len, ol = t.out_len;
  const int nt = t.ntaps;
  std::vector<C> w(t.w.begin(), t.w.end());
  for (int64_t b = 0; b < outer; ++b) {
    const C* xb = x + b * il * inner;
    C* yb = y + b * ol * inner;
    for (int64_t o = 0; o < ol; ++o) {
      C* yr = yb + o * inner;
      const int64_t* id = &t.idx[o * nt];
      const C* wo = &w[o * nt];
      if (t.outside[o]) {
        std::fill(yr, yr + inner, extrap);
      } else if (inner == 1) {
        C acc = 0;
        for (int k = 0; k < nt; ++k) acc += wo[k] * xb[id[k]];
        *yr = acc;
      } else if (nt == 2 && wo[0] != 0 && wo[1] != 0) {  // linear: both taps in one pass
        blend2_row(yr, xb + id[0] * inner, wo[0], xb + id[1] * inner, wo[1], inner);
      } else {
        std::fill(yr, yr + inner, C(0));
        for (int k = 0; k < nt; ++k) {
          const C wk = wo[k];
          if (wk == 0) continue;
          blend_row(yr, xb + id[k] * inner, wk, inner);
        }
      }
    }
  }
}

// Linear/cubic: one separable pass per resized dim, in C (float, or double for float64),
// shrinking dims first so later passes touch fewer elements; among dims scaled alike the
// innermost first, since its pass gathers element by element while the others blend whole
// rows (an NCHW upsample's W pass then runs before H multiplies the rows).
template <typename T>
void resize_interp(const std::vector<AxisTaps>& ax, const TensorRef& x, const TensorRef& y, double extrap) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const int r = static_cast<int>(x.shape.size());
  std::vector<int> order;
  for (int d = 0; d < r; ++d)
    if (!ax[d].identity) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const double ra = static_cast<double>(ax[a].out_len) / std::max<int64_t>(1, ax[a].in_len);
    const double rb = static_cast<double>(ax[b].out_len) / std::max<int64_t>(1, ax[b].in_len);
    return ra != rb ? ra < rb : a > b;
  });
  const int64_t n_in = x.numel();
  std::vector<C> cur, next;
  const C* src;
  if constexpr (std::is_same_v<T, C>) {
    src = x.as<T>();
  } else {
    cur.assign(x.as<T>(), x.as<T>() + n_in);
    src = cur.data();
  }
  ir::Shape shape = x.shape;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int d = order[k];
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < d; ++i) outer *= shape[i];
    for (int i = d + 1; i < r; ++i) inner *= shape[i];
    shape[d] = ax[d].out_len;
    C* dst;
    const bool last = k + 1 == order.size();
    if constexpr (std::is_same_v<T, C>) {
      if (last) {
        dst = y.as<T>();
      } else {
        next.resize(ir::num_elements(shape));
        dst = next.data();
      }
    } else {
      next.resize(ir::num_elements(shape));
      dst = next.data();
    }
    resize_pass<C>(src, dst, outer, inner, ax[d], static_cast<C>(extrap));
    if (dst == next.data()) {
      std::swap(cur, next);
      src = cur.data();
    }
  }
  const int64_t n_out = y.numel();
  if constexpr (std::is_same_v<T, C>) {
    if (order.empty()) std::copy(src, src + n_out, y.as<T>());
  } else {
    T* Y = y.as<T>();
    for (int64_t i = 0; i < n_out; ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        Y[i] = static_cast<T>(src[i]);
      } else {
        // Integer outputs round to nearest and saturate.
        const double v = std::nearbyint(static_cast<double>(src[i]));
        const double lo = static_cast<double>(std::numeric_limits<T>::lowest());
        const double hi = static_cast<double>(std::numeric_limits<T>::max());
        Y[i] = v <= lo ? std::numeric_limits<T>::lowest() : v >= hi ? std::numeric_limits<T>::max() : static_cast<T>(v);
      }
    }
  }
}

Status infer_resize(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                    std::vector<ir::DType>* types) {
  if (in.empty() || !opt_in(in, 0)) return Err("%s %s: missing input X", opn(n), n.name.c_str());
  ResizeAttrs a;
  SYSTOLIC_RETURN_IF_ERROR(resize_attrs(n, static_cast<int64_t>(in[0].shape.size()), &a));
  if (a.mode != "nearest" && !is_float(in[0].dtype) && in[0].dtype != DType::u8 && in[0].dtype != DType::i8 &&
      in[0].dtype != DType::i32 && in[0].dtype != DType::i16 && in[0].dtype != DType::u16)
    return Err("%s %s: mode %s on element type %s is not supported", opn(n), n.name.c_str(), a.mode.c_str(),
               ir::dtype_name(in[0].dtype));
  if (!ir::dtype_supported(in[0].dtype))
    return Err("%s %s: element type %s is not supported", opn(n), n.name.c_str(), ir::dtype_name(in[0].dtype));
  ir::Shape out;
  std::vector<double> scale;
  SYSTOLIC_RETURN_IF_ERROR(resize_shape(n, in, a, &out, &scale));
  shapes->push_back(out);
  types->push_back(in[0].dtype);
  return Status::Ok();
}

Status eval_resize(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef& x = in[0];
  const int64_t r = static_cast<int64_t>(x.shape.size());
  ResizeAttrs a;
  SYSTOLIC_RETURN_IF_ERROR(resize_attrs(n, r, &a));
  ir::Shape out;
  std::vector<double> scale;
  SYSTOLIC_RETURN_IF_ERROR(resize_shape(n, in, a, &out, &scale));
  if (out != y.shape)
    return Err("%s %s: output shape %s differs from the planned %s", opn(n), n.name.c_str(), ir::shape_str(out).c_str(),
               ir::shape_str(y.shape).c_str());
  std::vector<double> roi_start(r, 0), roi_end(r, 1);
  if (a.ctm == "tf_crop_and_resize") {
    const TensorRef* roi = a.roi_in >= 0 ? opt_in(in, a.roi_in) : nullptr;
    if (!roi || !roi->data || roi->numel() == 0)
      return Err("%s %s: tf_crop_and_resize needs roi", opn(n), n.name.c_str());
    std::vector<double> rv = read_doubles(*roi);
    if (rv.size() != 2 * a.axes.size())
      return Err("%s %s: roi has %zu values for %zu axes", opn(n), n.name.c_str(), rv.size(), a.axes.size());
    for (std::size_t k = 0; k < a.axes.size(); ++k) {
      roi_start[a.axes[k]] = rv[k];
      roi_end[a.axes[k]] = rv[k + a.axes.size()];
    }
  }
  if (y.numel() == 0) return Status::Ok();
  if (x.numel() == 0) return Err("%s %s: resizing an empty tensor to a non-empty one", opn(n), n.name.c_str());
  std::vector<AxisTaps> ax;
  for (int64_t d = 0; d < r; ++d)
    ax.push_back(axis_taps(a, x.shape[d], y.shape[d], scale[d], roi_start[d], roi_end[d]));
  return dispatch(x.dtype, [&]<typename T>() -> Status {
    if (a.mode == "nearest") {
      resize_nearest<T>(ax, x, y, static_cast<T>(a.extrapolation));
    } else {
      resize_interp<T>(ax, x, y, a.extrapolation);
    }
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose: Y[n, m, o] += X[n, c, i] * W[c, m, k] where o = i * stride + k * dilation - pad.

struct ConvTGeom {
  int64_t N = 0, C = 0, M = 0, G = 1;
  ir::Shape in, k, stride, dil, pad_begin, out;  // spatial
};

Status convt_geometry(const ir::Node& n, const ir::Shape& xs, const ir::Shape& ws, ConvTGeom* g) {
  const char* op = opn(n);
  if (xs.size() < 3) return Err("%s %s: X must have rank >= 3, got %s", op, n.name.c_str(), ir::shape_str(xs).c_str());
  if (ws.size() != xs.size())
    return Err("%s %s: W %s and X %s ranks differ", op, n.name.c_str(), ir::shape_str(ws).c_str(),
               ir::shape_str(xs).c_str());
  const std::size_t sd = xs.size() - 2;
  g->N = xs[0];
  g->C = xs[1];
  g->G = n.i("group", 1);
  if (g->G <= 0 || g->C % g->G != 0) return Err("%s %s: group %lld does not divide %lld channels", op, n.name.c_str(), (long long)g->G, (long long)g->C);
  if (ws[0] != g->C)
    return Err("%s %s: W has %lld input channels, X %lld", op, n.name.c_str(), (long long)ws[0], (long long)g->C);
  g->M = ws[1] * g->G;
  g->in.assign(xs.begin() + 2, xs.end());
  g->k.assign(ws.begin() + 2, ws.end());
  if (n.has("kernel_shape") && n.ints("kernel_shape") != g->k)
    return Err("%s %s: kernel_shape differs from W's shape", op, n.name.c_str());
  auto list = [&](const char* name, int64_t def, std::size_t len, ir::Shape* v) -> Status {
    *v = n.ints(name, std::vector<int64_t>(len, def));
    if (v->size() != len) return Err("%s %s: %s has %zu values, want %zu", op, n.name.c_str(), name, v->size(), len);
    return Status::Ok();
  };
  ir::Shape outpad, pads, oshape;
  SYSTOLIC_RETURN_IF_ERROR(list("strides", 1, sd, &g->stride));
  SYSTOLIC_RETURN_IF_ERROR(list("dilations", 1, sd, &g->dil));
  SYSTOLIC_RETURN_IF_ERROR(list("output_padding", 0, sd, &outpad));
  SYSTOLIC_RETURN_IF_ERROR(list("pads", 0, 2 * sd, &pads));
  for (std::size_t d = 0; d < sd; ++d)
    if (g->stride[d] <= 0 || g->dil[d] <= 0 || g->k[d] <= 0)
      return Err("%s %s: strides, dilations and kernel must be positive", op, n.name.c_str());
  const std::string auto_pad = n.s("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID")
    return Err("%s %s: auto_pad %s is not supported", op, n.name.c_str(), auto_pad.c_str());
  if (n.has("output_shape")) {
    oshape = n.ints("output_shape");
    if (oshape.size() == sd + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
    if (oshape.size() != sd) return Err("%s %s: output_shape has %zu values", op, n.name.c_str(), oshape.size());
  }
  g->pad_begin.resize(sd);
  g->out.resize(sd);
  for (std::size_t d = 0; d < sd; ++d) {
    const int64_t span = g->stride[d] * (g->in[d] - 1) + outpad[d] + (g->k[d] - 1) * g->dil[d] + 1;
    if (!oshape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t o = !oshape.empty() ? oshape[d] : g->in[d] * g->stride[d];
      const int64_t total = span - o;
      // The odd unit of padding goes at the end for SAME_UPPER, at the start otherwise (halves
      // rounded down, also when the total is negative: output_shape past the natural size).
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      g->pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      g->out[d] = o;
    } else if (auto_pad == "VALID") {
      g->pad_begin[d] = 0;
      g->out[d] = span;
    } else {
      g->pad_begin[d] = pads[d];
      g->out[d] = span - pads[d] - pads[d + sd];
    }
    if (g->out[d] <= 0) return Err("%s %s: output size %lld is not positive", op, n.name.c_str(), (long long)g->out[d]);
  }
  return Status::Ok();
}

template <typename T>
void convt_run(const ConvTGeom& g, const T* X, const T* W, const T* B, T* Y) {
  // Treat 1-D and 2-D as 3-D with leading unit dims.
  const std::size_t sd = g.in.size();
  int64_t I[3] = {1, 1, 1}, K[3] = {1, 1, 1}, O[3] = {1, 1, 1}, S[3] = {1, 1, 1}, D[3] = {1, 1, 1}, P[3] = {0, 0, 0};
  for (std::size_t d = 0; d < sd; ++d) {
    const std::size_t t = 3 - sd + d;
    I[t] = g.in[d];
    K[t] = g.k[d];
    O[t] = g.out[d];
    S[t] = g.stride[d];
    D[t] = g.dil[d];
    P[t] = g.pad_begin[d];
  }
  // tab[a][k * I + i]: output coordinate of input i under kernel tap k, or -1.
  std::vector<int64_t> tab[3];
  for (int a = 0; a < 3; ++a) {
    tab[a].resize(K[a] * I[a]);
    for (int64_t k = 0; k < K[a]; ++k)
      for (int64_t i = 0; i < I[a]; ++i) {
        const int64_t o = i * S[a] + k * D[a] - P[a];
        tab[a][k * I[a] + i] = o >= 0 && o < O[a] ? o : -1;
      }
  }
  const int64_t IS = I[0] * I[1] * I[2], KS = K[0] * K[1] * K[2], OS = O[0] * O[1] * O[2];
  const int64_t Cg = g.C / g.G, Mg = g.M / g.G;
  std::vector<T> col(KS * IS);
  for (int64_t b = 0; b < g.N; ++b)
    for (int64_t gr = 0; gr < g.G; ++gr)
      for (int64_t m = 0; m < Mg; ++m) {
        // col[k, i] = sum over the group's input channels of W[c, m, k] * X[c, i].
        std::fill(col.begin(), col.end(), T(0));
        for (int64_t c = 0; c < Cg; ++c) {
          const T* xr = X + (b * g.C + gr * Cg + c) * IS;
          const T* wr = W + ((gr * Cg + c) * Mg + m) * KS;
          for (int64_t k = 0; k < KS; ++k) {
            const T w = wr[k];
            if (w == 0) continue;
            T* cr = col.data() + k * IS;
            for (int64_t i = 0; i < IS; ++i) cr[i] += w * xr[i];
          }
        }
        T* yc = Y + (b * g.M + gr * Mg + m) * OS;
        std::fill(yc, yc + OS, B ? B[gr * Mg + m] : T(0));
        for (int64_t k0 = 0; k0 < K[0]; ++k0)
          for (int64_t k1 = 0; k1 < K[1]; ++k1)
            for (int64_t k2 = 0; k2 < K[2]; ++k2) {
              const T* cr = col.data() + ((k0 * K[1] + k1) * K[2] + k2) * IS;
              const int64_t* t2 = &tab[2][k2 * I[2]];
              for (int64_t i0 = 0; i0 < I[0]; ++i0) {
                const int64_t o0 = tab[0][k0 * I[0] + i0];
                if (o0 < 0) continue;
                for (int64_t i1 = 0; i1 < I[1]; ++i1) {
                  const int64_t o1 = tab[1][k1 * I[1] + i1];
                  if (o1 < 0) continue;
                  T* yr = yc + (o0 * O[1] + o1) * O[2];
                  const T* cx = cr + (i0 * I[1] + i1) * I[2];
                  for (int64_t i2 = 0; i2 < I[2]; ++i2)
                    if (t2[i2] >= 0) yr[t2[i2]] += cx[i2];
                }
              }
            }
      }
}

Status infer_convt(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                   std::vector<ir::DType>* types) {
  if (!opt_in(in, 0) || !opt_in(in, 1)) return Err("%s %s: needs X and W", opn(n), n.name.c_str());
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[0], "X"));
  if (in[1].dtype != in[0].dtype) return Err("%s %s: X and W element types differ", opn(n), n.name.c_str());
  ConvTGeom g;
  SYSTOLIC_RETURN_IF_ERROR(convt_geometry(n, in[0].shape, in[1].shape, &g));
  if (const TensorRef* b = opt_in(in, 2)) {
    if (b->dtype != in[0].dtype) return Err("%s %s: B's element type differs from X's", opn(n), n.name.c_str());
    if (b->shape != ir::Shape{g.M})
      return Err("%s %s: B has shape %s, want [%lld]", opn(n), n.name.c_str(), ir::shape_str(b->shape).c_str(),
                 (long long)g.M);
  }
  ir::Shape out = {g.N, g.M};
  out.insert(out.end(), g.out.begin(), g.out.end());
  shapes->push_back(out);
  types->push_back(in[0].dtype);
  return Status::Ok();
}

Status eval_convt(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  ConvTGeom g;
  SYSTOLIC_RETURN_IF_ERROR(convt_geometry(n, in[0].shape, in[1].shape, &g));
  const TensorRef* b = opt_in(in, 2);
  if (in[0].dtype == DType::f32) {
    convt_run<float>(g, in[0].as<float>(), in[1].as<float>(), b ? b->as<float>() : nullptr, y.as<float>());
  } else if (in[0].dtype == DType::f64) {
    convt_run<double>(g, in[0].as<double>(), in[1].as<double>(), b ? b->as<double>() : nullptr, y.as<double>());
  } else {
    return need_float(n, in[0], "X");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// GridSample: Y[n, c, h, w] samples X[n, c] at grid[n, h, w] = (x, y) in [-1, 1] (1 to 3
// spatial dims, as opset 20 allows; accepted at any opset).

struct GridSampleAttrs {
  int mode = 1;  // 0 nearest, 1 linear, 2 cubic
  int pad = 0;   // 0 zeros, 1 border, 2 reflection
  bool align = false;
};

Status grid_sample_attrs(const ir::Node& n, GridSampleAttrs* a) {
  const std::string mode = n.s("mode", node_opset(n) >= 20 ? "linear" : "bilinear");
  const std::string pad = n.s("padding_mode", "zeros");
  if (mode == "nearest") a->mode = 0;
  else if (mode == "bilinear" || mode == "linear") a->mode = 1;
  else if (mode == "bicubic" || mode == "cubic") a->mode = 2;
  else return Err("%s %s: mode %s is not supported", opn(n), n.name.c_str(), mode.c_str());
  if (pad == "zeros") a->pad = 0;
  else if (pad == "border") a->pad = 1;
  else if (pad == "reflection") a->pad = 2;
  else return Err("%s %s: padding_mode %s is not supported", opn(n), n.name.c_str(), pad.c_str());
  a->align = n.i("align_corners", 0) != 0;
  return Status::Ok();
}

// Reflects x into [lo, hi] (repeatedly, as a mirror).
double gs_reflect(double x, double lo, double hi) {
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo || x > hi) {
    const double dx = x < lo ? lo - x : x - hi;
    const double k = std::floor(dx / rng), r = dx - k * rng;
    const bool even = std::fmod(k, 2.0) == 0;
    return x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  }
  return x;
}

// The source index of integer coordinate i along a dim of `len` under the padding mode, or -1
// (zeros padding, outside).
int64_t gs_index(int64_t i, int64_t len, const GridSampleAttrs& a) {
  if (a.pad == 0) return i >= 0 && i < len ? i : -1;
  if (a.pad == 1) return std::clamp<int64_t>(i, 0, len - 1);
  const double lo = a.align ? 0 : -0.5, hi = a.align ? len - 1 : len - 0.5;
  return std::clamp<int64_t>(static_cast<int64_t>(gs_reflect(static_cast<double>(i), lo, hi)), 0, len - 1);
}

// Per dim: the taps (index or -1, weight) that sample coordinate g (normalized).
void gs_taps(double g, int64_t len, const GridSampleAttrs& a, int64_t* idx, double* w, int* nt) {
  double x = a.align ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
  if (a.mode == 0) x = std::nearbyint(x);
  const double lo = a.align ? 0 : -0.5, hi = a.align ? len - 1 : len - 0.5;
  if (x < lo || x > hi) {
    if (a.pad == 1) x = std::clamp(x, 0.0, static_cast<double>(len - 1));
    else if (a.pad == 2) x = gs_reflect(x, lo, hi);
  }
  if (!(std::fabs(x) < 1e15)) {  // NaN or far outside: reads nothing
    *nt = 1;
    idx[0] = -1;
    w[0] = 0;
    return;
  }
  if (a.mode == 0) {
    *nt = 1;
    idx[0] = gs_index(static_cast<int64_t>(x), len, a);
    w[0] = 1;
    return;
  }
  const double fl = std::floor(x), r = x - fl;
  const int64_t i0 = static_cast<int64_t>(fl);
  if (a.mode == 1) {
    *nt = 2;
    idx[0] = gs_index(i0, len, a);
    idx[1] = gs_index(i0 + 1, len, a);
    w[0] = 1 - r;
    w[1] = r;
    return;
  }
  *nt = 4;
  for (int k = 0; k < 4; ++k) {
    idx[k] = gs_index(i0 - 1 + k, len, a);
    w[k] = cubic_kernel(static_cast<double>(k - 1) - r, -0.75);
  }
}

Status infer_grid_sample(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                         std::vector<ir::DType>* types) {
  if (!opt_in(in, 0) || !opt_in(in, 1)) return Err("%s %s: needs X and grid", opn(n), n.name.c_str());
  GridSampleAttrs a;
  SYSTOLIC_RETURN_IF_ERROR(grid_sample_attrs(n, &a));
  const ir::Shape& xs = in[0].shape;
  const ir::Shape& gs = in[1].shape;
  if (xs.size() < 3 || xs.size() > 5)
    return Err("%s %s: X of rank %zu is not supported (1 to 3 spatial dims)", opn(n), n.name.c_str(), xs.size());
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[0], "X"));
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[1], "grid"));
  const std::size_t sd = xs.size() - 2;
  if (gs.size() != xs.size() || gs[0] != xs[0] || gs.back() != static_cast<int64_t>(sd))
    return Err("%s %s: grid %s does not fit X %s", opn(n), n.name.c_str(), ir::shape_str(gs).c_str(),
               ir::shape_str(xs).c_str());
  ir::Shape out = {xs[0], xs[1]};
  out.insert(out.end(), gs.begin() + 1, gs.end() - 1);
  shapes->push_back(out);
  types->push_back(in[0].dtype);
  return Status::Ok();
}

template <typename T, typename G>
void grid_sample_run(const GridSampleAttrs& a, const TensorRef& x, const TensorRef& grid, const TensorRef& y) {
  const int sd = static_cast<int>(x.shape.size()) - 2;
  const int64_t N = x.shape[0], C = x.shape[1];
  int64_t in_sz = 1, out_sz = 1;
  for (int d = 0; d < sd; ++d) {
    in_sz *= x.shape[d + 2];
    out_sz *= y.shape[d + 2];
  }
  const T* X = x.as<T>();
  const G* Gd = grid.as<G>();
  T* Y = y.as<T>();
  // Per spatial dim d: up to 4 taps; the grid lists coordinates innermost dim first (x, y, z).
  int64_t idx[3][4];
  double w[3][4];
  int nt[3];
  std::vector<int64_t> offs, o2;
  std::vector<double> wts, w2;
  for (int64_t b = 0; b < N; ++b)
    for (int64_t p = 0; p < out_sz; ++p) {
      for (int d = 0; d < sd; ++d)
        gs_taps(Gd[(b * out_sz + p) * sd + (sd - 1 - d)], x.shape[d + 2], a, idx[d], w[d], &nt[d]);
      // Every combination of taps: flat source offset (or -1) and weight.
      offs.assign(1, 0);
      wts.assign(1, 1.0);
      for (int d = 0; d < sd; ++d) {
        o2.clear();
        w2.clear();
        for (std::size_t c = 0; c < offs.size(); ++c)
          for (int k = 0; k < nt[d]; ++k) {
            o2.push_back(offs[c] < 0 || idx[d][k] < 0 ? -1 : offs[c] * x.shape[d + 2] + idx[d][k]);
            w2.push_back(wts[c] * w[d][k]);
          }
        offs.swap(o2);
        wts.swap(w2);
      }
      for (int64_t c = 0; c < C; ++c) {
        const T* xc = X + (b * C + c) * in_sz;
        double acc = 0;
        for (std::size_t k = 0; k < offs.size(); ++k)
          if (offs[k] >= 0) acc += wts[k] * xc[offs[k]];
        Y[(b * C + c) * out_sz + p] = static_cast<T>(acc);
      }
    }
}

Status eval_grid_sample(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  GridSampleAttrs a;
  SYSTOLIC_RETURN_IF_ERROR(grid_sample_attrs(n, &a));
  const bool xf = in[0].dtype == DType::f32, gf = in[1].dtype == DType::f32;
  if (xf && gf) grid_sample_run<float, float>(a, in[0], in[1], y);
  else if (xf) grid_sample_run<float, double>(a, in[0], in[1], y);
  else if (gf) grid_sample_run<double, float>(a, in[0], in[1], y);
  else grid_sample_run<double, double>(a, in[0], in[1], y);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// RoiAlign: average (or max) of bilinear samples over each output bin of each region.

Status infer_roi_align(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                       std::vector<ir::DType>* types) {
  if (!opt_in(in, 0) || !opt_in(in, 1) || !opt_in(in, 2))
    return Err("%s %s: needs X, rois and batch_indices", opn(n), n.name.c_str());
  const ir::Shape& xs = in[0].shape;
  if (xs.size() != 4) return Err("%s %s: X must be 4-D, got %s", opn(n), n.name.c_str(), ir::shape_str(xs).c_str());
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[0], "X"));
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[1], "rois"));
  if (in[1].shape.size() != 2 || in[1].shape[1] != 4)
    return Err("%s %s: rois must be [num_rois, 4], got %s", opn(n), n.name.c_str(), ir::shape_str(in[1].shape).c_str());
  if (in[2].shape != ir::Shape{in[1].shape[0]})
    return Err("%s %s: batch_indices must be [num_rois]", opn(n), n.name.c_str());
  if (in[2].dtype != DType::i64 && in[2].dtype != DType::i32)
    return Err("%s %s: batch_indices must be int64", opn(n), n.name.c_str());
  const std::string mode = n.s("mode", "avg");
  if (mode != "avg" && mode != "max") return Err("%s %s: mode %s is not supported", opn(n), n.name.c_str(), mode.c_str());
  const std::string ctm = n.s("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return Err("%s %s: coordinate_transformation_mode %s is not supported", opn(n), n.name.c_str(), ctm.c_str());
  const int64_t oh = n.i("output_height", 1), ow = n.i("output_width", 1);
  if (oh <= 0 || ow <= 0) return Err("%s %s: output size must be positive", opn(n), n.name.c_str());
  shapes->push_back({in[1].shape[0], xs[1], oh, ow});
  types->push_back(in[0].dtype);
  return Status::Ok();
}

template <typename T, typename R>
Status roi_align_run(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const int64_t N = in[0].shape[0], C = in[0].shape[1], H = in[0].shape[2], W = in[0].shape[3];
  const int64_t nr = in[1].shape[0], oh = y.shape[2], ow = y.shape[3];
  const bool max_mode = n.s("mode", "avg") == "max";
  const double sc = n.f("spatial_scale", 1.f);
  const int64_t sr = n.i("sampling_ratio", 0);
  // Opset 10 had no attribute and behaved as output_half_pixel.
  const std::string ctm =
      n.s("coordinate_transformation_mode", node_opset(n) >= 16 ? "half_pixel" : "output_half_pixel");
  const double off = ctm == "half_pixel" ? 0.5 : 0;
  const std::vector<int64_t> bidx = read_ints(in[2]);
  const T* X = in[0].as<T>();
  const R* rois = in[1].as<R>();
  T* Y = y.as<T>();
  for (int64_t r = 0; r < nr; ++r) {
    const int64_t b = bidx[r];
    if (b < 0 || b >= N)
      return Err("%s %s: batch index %lld out of range [0, %lld)", opn(n), n.name.c_str(), (long long)b, (long long)N);
    const double x0 = rois[r * 4] * sc - off, y0 = rois[r * 4 + 1] * sc - off;
    const double x1 = rois[r * 4 + 2] * sc - off, y1 = rois[r * 4 + 3] * sc - off;
    if (!std::isfinite(x0) || !std::isfinite(y0) || !std::isfinite(x1) || !std::isfinite(y1))
      return Err("%s %s: region %lld is not finite", opn(n), n.name.c_str(), (long long)r);
    double rw = x1 - x0, rh = y1 - y0;
    if (off == 0) {  // output_half_pixel forces regions of at least one pixel
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / oh, bw = rw / ow;
    if (std::fabs(rh / oh) > 1e6 || std::fabs(rw / ow) > 1e6)
      return Err("%s %s: region %lld is too large", opn(n), n.name.c_str(), (long long)r);
    const int64_t gh = sr > 0 ? sr : static_cast<int64_t>(std::ceil(rh / oh));
    const int64_t gw = sr > 0 ? sr : static_cast<int64_t>(std::ceil(rw / ow));
    if (gh * gw > 100000000)
      return Err("%s %s: %lld samples per bin is not supported", opn(n), n.name.c_str(), (long long)(gh * gw));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    // Sample positions of one bin: (4 source offsets, 4 weights) each, shared by channels.
    struct Sample {
      int64_t o[4];
      double w[4];
    };
    std::vector<Sample> samples;
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw) {
        samples.clear();
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
            double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
            Sample s{{0, 0, 0, 0}, {0, 0, 0, 0}};
            if (!(yy >= -1.0 && yy <= H && xx >= -1.0 && xx <= W)) {
              samples.push_back(s);
              continue;
            }
            yy = std::max(yy, 0.0);
            xx = std::max(xx, 0.0);
            int64_t yl = static_cast<int64_t>(yy), xl = static_cast<int64_t>(xx), yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              yy = static_cast<double>(yl);
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xx = static_cast<double>(xl);
            } else {
              xh = xl + 1;
            }
            const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;
            s = Sample{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
            samples.push_back(s);
          }
        for (int64_t c = 0; c < C; ++c) {
          const T* xc = X + (b * C + c) * H * W;
          double acc = 0;
          for (std::size_t k = 0; k < samples.size(); ++k) {
            const Sample& s = samples[k];
            if (max_mode) {
              const double v = std::max(std::max(s.w[0] * xc[s.o[0]], s.w[1] * xc[s.o[1]]),
                                        std::max(s.w[2] * xc[s.o[2]], s.w[3] * xc[s.o[3]]));
              acc = k == 0 ? v : std::max(acc, v);
            } else {
              acc += s.w[0] * xc[s.o[0]] + s.w[1] * xc[s.o[1]] + s.w[2] * xc[s.o[2]] + s.w[3] * xc[s.o[3]];
            }
          }
          Y[((r * C + c) * oh + ph) * ow + pw] = static_cast<T>(max_mode ? acc : acc / count);
        }
      }
  }
  return Status::Ok();
}

Status eval_roi_align(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const bool xf = in[0].dtype == DType::f32, rf = in[1].dtype == DType::f32;
  if (xf && rf) return roi_align_run<float, float>(n, in, y);
  if (xf) return roi_align_run<float, double>(n, in, y);
  if (rf) return roi_align_run<double, float>(n, in, y);
  return roi_align_run<double, double>(n, in, y);
}

// ---------------------------------------------------------------------------------------------
// MaxUnpool: zeros, with X[i] written at flat index I[i] of the unpooled shape (from kernel,
// strides, pads); an output_shape input enlarges that with zeros at the end of each dim.

Status max_unpool_shapes(const ir::Node& n, const std::vector<TensorRef>& in, ir::Shape* unpooled, ir::Shape* out) {
  if (!opt_in(in, 0) || !opt_in(in, 1)) return Err("%s %s: needs X and I", opn(n), n.name.c_str());
  const ir::Shape& xs = in[0].shape;
  if (xs.size() < 3) return Err("%s %s: X must have rank >= 3", opn(n), n.name.c_str());
  if (in[1].shape != xs) return Err("%s %s: I's shape differs from X's", opn(n), n.name.c_str());
  if (in[1].dtype != DType::i64) return Err("%s %s: I must be int64", opn(n), n.name.c_str());
  if (!ir::dtype_supported(in[0].dtype))
    return Err("%s %s: element type %s is not supported", opn(n), n.name.c_str(), ir::dtype_name(in[0].dtype));
  const std::size_t sd = xs.size() - 2;
  const TensorRef* os = opt_in(in, 2);
  const std::vector<int64_t> k = n.ints("kernel_shape");
  const std::vector<int64_t> s = n.ints("strides", std::vector<int64_t>(sd, 1));
  // output_shape replaces the pads.
  const std::vector<int64_t> p = os ? std::vector<int64_t>(2 * sd, 0) : n.ints("pads", std::vector<int64_t>(2 * sd, 0));
  if (k.size() != sd || s.size() != sd || p.size() != 2 * sd)
    return Err("%s %s: kernel_shape/strides/pads do not match rank %zu", opn(n), n.name.c_str(), xs.size());
  *unpooled = {xs[0], xs[1]};
  for (std::size_t d = 0; d < sd; ++d) {
    if (k[d] <= 0 || s[d] <= 0 || p[d] < 0 || p[d + sd] < 0)
      return Err("%s %s: kernel_shape and strides must be positive, pads not negative", opn(n), n.name.c_str());
    const int64_t o = (xs[d + 2] - 1) * s[d] + k[d] - p[d] - p[d + sd];
    if (o < 0) return Err("%s %s: output size %lld is negative", opn(n), n.name.c_str(), (long long)o);
    unpooled->push_back(o);
  }
  *out = *unpooled;
  if (os) {
    if (!os->data) return Err("%s %s: output_shape computed at run time is not supported", opn(n), n.name.c_str());
    *out = read_ints(*os);
    if (out->size() != xs.size())
      return Err("%s %s: output_shape has %zu values for rank %zu", opn(n), n.name.c_str(), out->size(), xs.size());
    for (std::size_t d = 0; d < xs.size(); ++d)
      if ((*out)[d] < (*unpooled)[d])
        return Err("%s %s: output_shape %s is smaller than the unpooled shape %s", opn(n), n.name.c_str(),
                   ir::shape_str(*out).c_str(), ir::shape_str(*unpooled).c_str());
  }
  return Status::Ok();
}

Status infer_max_unpool(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                        std::vector<ir::DType>* types) {
  ir::Shape unpooled, out;
  SYSTOLIC_RETURN_IF_ERROR(max_unpool_shapes(n, in, &unpooled, &out));
  shapes->push_back(out);
  types->push_back(in[0].dtype);
  return Status::Ok();
}

Status eval_max_unpool(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  ir::Shape up, out;
  SYSTOLIC_RETURN_IF_ERROR(max_unpool_shapes(n, in, &up, &out));
  const std::size_t es = ir::dtype_size(in[0].dtype);
  const int r = static_cast<int>(up.size());
  const int64_t total = ir::num_elements(up), cnt = in[0].numel();
  const int64_t* I = in[1].as<int64_t>();
  std::memset(y.data, 0, static_cast<std::size_t>(y.numel()) * es);
  for (int64_t i = 0; i < cnt; ++i) {
    if (I[i] < 0 || I[i] >= total)
      return Err("%s %s: index %lld out of range [0, %lld)", opn(n), n.name.c_str(), (long long)I[i], (long long)total);
    // The same coordinates in the (possibly larger) output.
    int64_t rem = I[i], at = 0, stride = 1;
    for (int d = r - 1; d >= 0; --d) {
      at += (rem % up[d]) * stride;
      rem /= up[d];
      stride *= out[d];
    }
    std::memcpy(static_cast<uint8_t*>(y.data) + at * es, static_cast<const uint8_t*>(in[0].data) + i * es, es);
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// NonMaxSuppression: per batch and class, greedy selection by score, dropping boxes that
// overlap a selected one by more than iou_threshold. Output rows (batch, class, box).

Status nms_run(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<int64_t>* sel) {
  const TensorRef &boxes = in[0], &scores = in[1];
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4)
    return Err("%s %s: boxes must be [batches, boxes, 4], got %s", opn(n), n.name.c_str(),
               ir::shape_str(boxes.shape).c_str());
  if (scores.shape.size() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
    return Err("%s %s: scores %s does not fit boxes %s", opn(n), n.name.c_str(), ir::shape_str(scores.shape).c_str(),
               ir::shape_str(boxes.shape).c_str());
  const int64_t B = boxes.shape[0], NB = boxes.shape[1], NC = scores.shape[1];
  int64_t max_out = 0;
  double iou_th = 0, score_th = -INFINITY;
  bool has_score_th = false;
  if (const TensorRef* t = opt_in(in, 2); t && t->numel() > 0) max_out = read_ints(*t)[0];
  if (const TensorRef* t = opt_in(in, 3); t && t->numel() > 0) iou_th = read_scalar(*t);
  if (const TensorRef* t = opt_in(in, 4); t && t->numel() > 0) {
    score_th = read_scalar(*t);
    has_score_th = true;
  }
  const bool center = n.i("center_point_box", 0) != 0;
  const std::vector<double> bx = read_doubles(boxes), sc = read_doubles(scores);
  sel->clear();
  if (max_out <= 0 || NB == 0 || NC == 0) return Status::Ok();  // nothing to select
  // Corners (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
  auto corners = [&](int64_t b, int64_t i, double* c) {
    const double* v = &bx[(b * NB + i) * 4];
    if (center) {
      c[0] = v[1] - v[3] / 2;
      c[1] = v[0] - v[2] / 2;
      c[2] = v[1] + v[3] / 2;
      c[3] = v[0] + v[2] / 2;
    } else {
      c[0] = std::min(v[0], v[2]);
      c[1] = std::min(v[1], v[3]);
      c[2] = std::max(v[0], v[2]);
      c[3] = std::max(v[1], v[3]);
    }
  };
  std::vector<double> cb(NB * 4);
  std::vector<int64_t> cand;
  // The kept boxes, found by their top edge: a box can overlap the candidate only if its top
  // lies within the tallest kept box's height above the candidate's top and below its bottom,
  // so each candidate checks those alone (SSDlite's batched NMS offsets every class's boxes
  // apart and keeps thousands; checking all of them was most of its run). Whether a candidate
  // is dropped does not depend on the order the kept boxes are checked in.
  std::multimap<double, std::size_t> by_top;
  std::vector<double> kept_box;  // 4 per kept box: y1, x1, y2, x2
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < NB; ++i) corners(b, i, &cb[i * 4]);
    for (int64_t c = 0; c < NC; ++c) {
      const double* s = &sc[(b * NC + c) * NB];
      cand.clear();
      for (int64_t i = 0; i < NB; ++i)
        if (!std::isnan(s[i]) && (!has_score_th || s[i] > score_th)) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return s[p] > s[q]; });
      by_top.clear();
      kept_box.clear();
      double tallest = 0;
      int64_t kept = 0;
      for (int64_t i : cand) {
        if (kept >= max_out) break;
        const double* p = &cb[i * 4];
        const double ap = (p[2] - p[0]) * (p[3] - p[1]);
        bool drop = false;
        if (ap > 0) {  // a box of no area overlaps nothing
          double lo = p[0] - tallest;
          lo -= std::abs(lo) * 1e-9 + 1e-300;  // below any rounding of the subtraction
          for (auto it = by_top.lower_bound(lo); it != by_top.end() && it->first < p[2]; ++it) {
            const double* q = &kept_box[it->second * 4];
            const double aq = (q[2] - q[0]) * (q[3] - q[1]);
            if (aq <= 0) continue;
            const double ih = std::min(p[2], q[2]) - std::max(p[0], q[0]);
            const double iw = std::min(p[3], q[3]) - std::max(p[1], q[1]);
            if (ih <= 0 || iw <= 0) continue;
            const double inter = ih * iw;
            if (inter / (ap + aq - inter) > iou_th) {
              drop = true;
              break;
            }
          }
        }
        if (drop) continue;
        ++kept;
        sel->insert(sel->end(), {b, c, i});
        // A box with a NaN edge suppresses nothing (every comparison with it is false) and
        // would break the map's order: it is kept but not indexed.
        if (std::isnan(p[0]) || std::isnan(p[1]) || std::isnan(p[2]) || std::isnan(p[3])) continue;
        by_top.emplace(p[0], kept_box.size() / 4);
        kept_box.insert(kept_box.end(), p, p + 4);
        tallest = std::max(tallest, p[2] - p[0]);
      }
    }
  }
  return Status::Ok();
}

Status infer_nms(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                 std::vector<ir::DType>* types) {
  if (!opt_in(in, 0) || !opt_in(in, 1)) return Err("%s %s: needs boxes and scores", opn(n), n.name.c_str());
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[0], "boxes"));
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[1], "scores"));
  for (std::size_t i = 0; i < in.size() && i < 5; ++i)
    if (opt_in(in, i) && !in[i].data)
      return Err("%s %s: data-dependent output shape is not supported yet", opn(n), n.name.c_str());
  std::vector<int64_t> sel;
  SYSTOLIC_RETURN_IF_ERROR(nms_run(n, in, &sel));
  shapes->push_back({static_cast<int64_t>(sel.size() / 3), 3});
  types->push_back(DType::i64);
  return Status::Ok();
}

Status eval_nms(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  std::vector<int64_t> sel;
  SYSTOLIC_RETURN_IF_ERROR(nms_run(n, in, &sel));
  if (y.shape != ir::Shape{static_cast<int64_t>(sel.size() / 3), 3})
    return Err("%s %s: %zu boxes selected, the output holds %s", opn(n), n.name.c_str(), sel.size() / 3,
               ir::shape_str(y.shape).c_str());
  std::copy(sel.begin(), sel.end(), y.as<int64_t>());
  return Status::Ok();
}

}  // namespace

Status nms_select(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<int64_t>* selected) {
  if (!opt_in(in, 0) || !opt_in(in, 1)) return Err("%s %s: needs boxes and scores", opn(n), n.name.c_str());
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[0], "boxes"));
  SYSTOLIC_RETURN_IF_ERROR(need_float(n, in[1], "scores"));
  return nms_run(n, in, selected);
}

Status infer_spatial(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                     std::vector<ir::DType>* types) {
  switch (n.op) {
    case Op::Resize: case Op::Upsample: return infer_resize(n, in, shapes, types);
    case Op::ConvTranspose: return infer_convt(n, in, shapes, types);
    case Op::GridSample: return infer_grid_sample(n, in, shapes, types);
    case Op::RoiAlign: return infer_roi_align(n, in, shapes, types);
    case Op::MaxUnpool: return infer_max_unpool(n, in, shapes, types);
    case Op::NonMaxSuppression: return infer_nms(n, in, shapes, types);
    default: return Err("%s %s: not supported", opn(n), n.name.c_str());
  }
}

Status eval_spatial(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  if (out.empty() || !out[0].data) return Err("%s %s: missing output", opn(n), n.name.c_str());
  // Re-check what the shape rule checked: eval may run on refs shape inference never saw.
  std::vector<ir::Shape> shapes;
  std::vector<ir::DType> types;
  if (n.op == Op::NonMaxSuppression) {
    if (in.size() < 2) return Err("%s %s: needs boxes and scores", opn(n), n.name.c_str());
  } else {
    SYSTOLIC_RETURN_IF_ERROR(infer_spatial(n, in, &shapes, &types));
    if (shapes[0] != out[0].shape || types[0] != out[0].dtype)
      return Err("%s %s: output is %s, the shape rule gives %s", opn(n), n.name.c_str(),
                 ir::shape_str(out[0].shape).c_str(), ir::shape_str(shapes[0]).c_str());
  }
  switch (n.op) {
    case Op::Resize: case Op::Upsample: return eval_resize(n, in, out[0]);
    case Op::ConvTranspose: return eval_convt(n, in, out[0]);
    case Op::GridSample: return eval_grid_sample(n, in, out[0]);
    case Op::RoiAlign: return eval_roi_align(n, in, out[0]);
    case Op::MaxUnpool: return eval_max_unpool(n, in, out[0]);
    case Op::NonMaxSuppression: return eval_nms(n, in, out[0]);
    default: return Err("%s %s: not supported", opn(n), n.name.c_str());
  }
}

}  // namespace systolic::interp

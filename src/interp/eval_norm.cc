// Reference kernels and shape rules of the norm family: LayerNormalization, GroupNormalization,
// InstanceNormalization, MeanVarianceNormalization, LogSoftmax, Hardmax, SoftmaxCrossEntropyLoss
// and NegativeLogLikelihoodLoss, on float32 and float64. Statistics accumulate in double; the
// normalized rows the transformer models run ([tokens, hidden], last axis) take a contiguous
// per-row loop.
#include <algorithm>
#include <cmath>
#include <string>

#include "interp/dispatch.h"
#include "interp/eval.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;


bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }

int64_t prod(const ir::Shape& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t d = from; d < to && d < s.size(); ++d) p *= s[d];
  return p;
}

// Mean and (biased) variance of one contiguous row, two passes in double; four partial sums
// so the adds are not one serial chain.
template <typename T>
void row_stats(const T* x, int64_t d, double* mean, double* var) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t j = 0;
  for (; j + 4 <= d; j += 4) {
    s0 += x[j];
    s1 += x[j + 1];
    s2 += x[j + 2];
    s3 += x[j + 3];
  }
  for (; j < d; ++j) s0 += x[j];
  const double m = (s0 + s1 + s2 + s3) / static_cast<double>(d);
  s0 = s1 = s2 = s3 = 0;
  for (j = 0; j + 4 <= d; j += 4) {
    const double a = x[j] - m, b = x[j + 1] - m, c = x[j + 2] - m, e = x[j + 3] - m;
    s0 += a * a;
    s1 += b * b;
    s2 += c * c;
    s3 += e * e;
  }
  for (; j < d; ++j) s0 += (x[j] - m) * (x[j] - m);
  *mean = m;
  *var = (s0 + s1 + s2 + s3) / static_cast<double>(d);
}

// `s` broadcast (numpy, right-aligned) to `target`, flattened: LayerNormalization's Scale and B
// over the normalized dims.
template <typename T>
Status expand_to(const ir::Node& n, const char* what, const TensorRef& s, const ir::Shape& target,
                 std::vector<T>* out) {
  auto b = broadcast_shapes(s.shape, target);
  if (!b.ok() || *b != target)
    return Err("%s %s: %s of shape %s does not broadcast to the normalized shape %s", ir::op_name(n.op),
               n.name.c_str(), what, ir::shape_str(s.shape).c_str(), ir::shape_str(target).c_str());
  out->resize(static_cast<std::size_t>(ir::num_elements(target)));
  const T* p = s.as<T>();
  for_each_broadcast(target, {&s.shape}, [&](int64_t e, const std::vector<int64_t>& off) { (*out)[e] = p[off[0]]; });
  return Status::Ok();
}

void store(const TensorRef& t, int64_t i, double v) {
  if (!t.data) return;
  if (t.dtype == DType::f64) t.as<double>()[i] = v;
  else t.as<float>()[i] = static_cast<float>(v);
}

template <typename T>
Status layer_norm(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const TensorRef& x = in[0];
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", -1);
  if (axis < 0) axis += r;
  const ir::Shape norm_shape(x.shape.begin() + axis, x.shape.end());
  const int64_t rows = prod(x.shape, 0, axis), d = ir::num_elements(norm_shape);
  std::vector<T> scale, bias(static_cast<std::size_t>(d), T(0));
  SYSTOLIC_RETURN_IF_ERROR(expand_to<T>(n, "Scale", in[1], norm_shape, &scale));
  if (present(in, 2)) SYSTOLIC_RETURN_IF_ERROR(expand_to<T>(n, "B", in[2], norm_shape, &bias));
  const double eps = n.f("epsilon", 1e-5f);
  const T* X = x.as<T>();
  T* Y = out[0].as<T>();
  const T* sc = scale.data();
  const T* bi = bias.data();
  for (int64_t row = 0; row < rows; ++row) {
    const T* xr = X + row * d;
    T* yr = Y + row * d;
    double mean, var;
    row_stats(xr, d, &mean, &var);
    const double inv = 1.0 / std::sqrt(var + eps);
    const T m = static_cast<T>(mean), s = static_cast<T>(inv);
    for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - m) * s * sc[j] + bi[j];
    if (out.size() > 1) store(out[1], row, mean);
    if (out.size() > 2) store(out[2], row, inv);
  }
  return Status::Ok();
}

// Group and instance normalization: each (n, group) is one contiguous row of C/G channels.
template <typename T>
Status group_norm(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out,
                  int64_t groups, bool scale_per_channel) {
  const TensorRef& x = in[0];
  const int64_t N = x.shape[0], C = x.shape[1], spatial = prod(x.shape, 2, x.shape.size());
  if (groups <= 0 || C % groups != 0)
    return Err("%s %s: %lld channels do not split into %lld groups", ir::op_name(n.op), n.name.c_str(),
               static_cast<long long>(C), static_cast<long long>(groups));
  const int64_t want = scale_per_channel ? C : groups;
  for (std::size_t k = 1; k <= 2; ++k)
    if (in[k].numel() != want || in[k].dtype != x.dtype)
      return Err("%s %s: %s must hold %lld %s values", ir::op_name(n.op), n.name.c_str(), k == 1 ? "scale" : "bias",
                 static_cast<long long>(want), ir::dtype_name(x.dtype));
  const int64_t cpg = C / groups, d = cpg * spatial;
  const double eps = n.f("epsilon", 1e-5f);
  const T* X = x.as<T>();
  const T* sc = in[1].as<T>();
  const T* bi = in[2].as<T>();
  T* Y = out[0].as<T>();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t off = (b * groups + g) * d;
      double mean, var;
      row_stats(X + off, d, &mean, &var);
      const T m = static_cast<T>(mean), s = static_cast<T>(1.0 / std::sqrt(var + eps));
      for (int64_t c = 0; c < cpg; ++c) {
        const int64_t k = scale_per_channel ? g * cpg + c : g;
        const T a = s * sc[k], o = bi[k];
        const T* xr = X + off + c * spatial;
        T* yr = Y + off + c * spatial;
        for (int64_t j = 0; j < spatial; ++j) yr[j] = (xr[j] - m) * a + o;
      }
    }
  return Status::Ok();
}

// MeanVarianceNormalization over arbitrary axes: (x - mean) / (std + 1e-9), as ONNX's function.
template <typename T>
Status mvn(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  const std::vector<int64_t> axes = n.has("axes") ? n.ints("axes") : std::vector<int64_t>{0, 2, 3};
  std::vector<char> red(r, 0);
  for (int64_t a : axes) {
    if (a < -r || a >= r)
      return Err("MeanVarianceNormalization %s: axis %lld is out of range for a rank-%lld input", n.name.c_str(),
                 static_cast<long long>(a), static_cast<long long>(r));
    red[a < 0 ? a + r : a] = 1;
  }
  // Offset of each element's statistics (the reduced dims squeezed to 1).
  ir::Shape kept(r);
  for (int64_t d = 0; d < r; ++d) kept[d] = red[d] ? 1 : x.shape[d];
  const int64_t m = ir::num_elements(kept), total = x.numel();
  std::vector<int64_t> so(static_cast<std::size_t>(total));
  for_each_broadcast(x.shape, {&kept}, [&](int64_t e, const std::vector<int64_t>& off) { so[e] = off[0]; });
  std::vector<double> sum(m, 0.0), sq(m, 0.0);
  const T* X = x.as<T>();
  for (int64_t e = 0; e < total; ++e) sum[so[e]] += X[e];
  const double cnt = m ? static_cast<double>(total) / static_cast<double>(m) : 0.0;
  for (double& s : sum) s /= cnt;
  for (int64_t e = 0; e < total; ++e) sq[so[e]] += (X[e] - sum[so[e]]) * (X[e] - sum[so[e]]);
  for (double& s : sq) s = 1.0 / (std::sqrt(s / cnt) + 1e-9);
  T* Y = y.as<T>();
  for (int64_t e = 0; e < total; ++e) Y[e] = static_cast<T>((X[e] - sum[so[e]]) * sq[so[e]]);
  return Status::Ok();
}

// Softmax-like ops see x as outer x len x inner, reducing over len: opset < 13 flattens the dims
// from axis on into len (default axis 1), opset 13 takes the one axis (default -1).
struct Axis3 {
  int64_t outer = 1, len = 1, inner = 1;
};

Status softmax_axes(const ir::Node& n, const ir::Shape& s, Axis3* a) {
  const int64_t r = static_cast<int64_t>(s.size());
  const bool legacy = node_opset(n) < 13;
  int64_t axis = n.i("axis", legacy ? 1 : -1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= std::max<int64_t>(r, 1) || (r == 0 && !legacy))
    return Err("%s %s: axis %lld is out of range for a rank-%lld input", ir::op_name(n.op), n.name.c_str(),
               static_cast<long long>(n.i("axis", legacy ? 1 : -1)), static_cast<long long>(r));
  a->outer = prod(s, 0, axis);
  if (legacy) {
    a->len = prod(s, axis, s.size());
    a->inner = 1;
  } else {
    a->len = s[axis];
    a->inner = prod(s, axis + 1, s.size());
  }
  return Status::Ok();
}

// y = x - max - log(sum(exp(x - max))) along len.
template <typename T>
void log_softmax(const T* X, T* Y, const Axis3& a) {
  const int64_t len = a.len, inner = a.inner;
  if (inner == 1) {
    for (int64_t o = 0; o < a.outer; ++o) {
      const T* x = X + o * len;
      T* y = Y + o * len;
      T mx = -INFINITY;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, x[k]);
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x[k] - mx);
      const T shift = mx + static_cast<T>(std::log(sum));
      for (int64_t k = 0; k < len; ++k) y[k] = x[k] - shift;
    }
    return;
  }
  std::vector<T> mx(inner);
  std::vector<double> sum(inner);
  for (int64_t o = 0; o < a.outer; ++o) {
    const T* x = X + o * len * inner;
    T* y = Y + o * len * inner;
    std::fill(mx.begin(), mx.end(), static_cast<T>(-INFINITY));
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t k = 0; k < len; ++k)
      for (int64_t i = 0; i < inner; ++i) mx[i] = std::max(mx[i], x[k * inner + i]);
    for (int64_t k = 0; k < len; ++k)
      for (int64_t i = 0; i < inner; ++i) sum[i] += std::exp(x[k * inner + i] - mx[i]);
    for (int64_t i = 0; i < inner; ++i) mx[i] += static_cast<T>(std::log(sum[i]));
    for (int64_t k = 0; k < len; ++k)
      for (int64_t i = 0; i < inner; ++i) y[k * inner + i] = x[k * inner + i] - mx[i];
  }
}

// 1 at the first maximum along len, 0 elsewhere.
template <typename T>
void hardmax(const T* X, T* Y, const Axis3& a) {
  std::fill(Y, Y + a.outer * a.len * a.inner, T(0));
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      const T* x = X + o * a.len * a.inner + i;
      int64_t best = 0;
      for (int64_t k = 1; k < a.len; ++k)
        if (x[k * a.inner] > x[best * a.inner]) best = k;
      if (a.len > 0) Y[o * a.len * a.inner + best * a.inner + i] = T(1);
    }
}

Status loss_reduction(const ir::Node& n, int* mode) {
  const std::string red = n.s("reduction", "mean");
  if (red == "none") *mode = 0;
  else if (red == "sum") *mode = 1;
  else if (red == "mean") *mode = 2;
  else return Err("%s %s: reduction '%s' is not supported", ir::op_name(n.op), n.name.c_str(), red.c_str());
  return Status::Ok();
}

// Negative log-likelihood of log-probabilities lp [N, C, D...] at the labels [N, D...], weighted
// per class; labels equal to ignore_index weigh 0. mean divides by the total weight.
template <typename T>
Status nll(const ir::Node& n, const T* lp, const ir::Shape& xs, const TensorRef& labels, const TensorRef* weight,
           const TensorRef& y) {
  int mode;
  SYSTOLIC_RETURN_IF_ERROR(loss_reduction(n, &mode));
  const int64_t N = xs[0], C = xs[1], D = prod(xs, 2, xs.size());
  const std::vector<int64_t> t = read_ints(labels);
  const bool has_ii = n.has("ignore_index");
  const int64_t ii = n.i("ignore_index", 0);
  const T* w = weight ? weight->as<T>() : nullptr;
  double total = 0, wsum = 0;
  T* Y = y.as<T>();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t j = 0; j < D; ++j) {
      const int64_t k = t[b * D + j];
      double l = 0, wt = 0;
      if (!(has_ii && k == ii)) {
        if (k < 0 || k >= C)
          return Err("%s %s: label %lld is out of range for %lld classes", ir::op_name(n.op), n.name.c_str(),
                     static_cast<long long>(k), static_cast<long long>(C));
        wt = w ? static_cast<double>(w[k]) : 1.0;
        l = -static_cast<double>(lp[(b * C + k) * D + j]) * wt;
      }
      if (mode == 0) Y[b * D + j] = static_cast<T>(l);
      total += l;
      wsum += wt;
    }
  if (mode == 1) Y[0] = static_cast<T>(total);
  if (mode == 2) Y[0] = static_cast<T>(total / wsum);
  return Status::Ok();
}

template <typename T>
Status eval_typed(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const TensorRef& x = in[0];
  switch (n.op) {
    case Op::LayerNormalization: return layer_norm<T>(n, in, out);
    case Op::GroupNormalization:
      return group_norm<T>(n, in, out, n.i("num_groups", 0), node_opset(n) >= 21);
    case Op::InstanceNormalization: return group_norm<T>(n, in, out, x.shape[1], true);
    case Op::MeanVarianceNormalization: return mvn<T>(n, x, out[0]);
    case Op::LogSoftmax: case Op::Hardmax: {
      Axis3 a;
      SYSTOLIC_RETURN_IF_ERROR(softmax_axes(n, x.shape, &a));
      if (n.op == Op::LogSoftmax) log_softmax(x.as<T>(), out[0].as<T>(), a);
      else hardmax(x.as<T>(), out[0].as<T>(), a);
      return Status::Ok();
    }
    case Op::SoftmaxCrossEntropyLoss: {
      const Axis3 a{x.shape[0], x.shape[1], prod(x.shape, 2, x.shape.size())};
      std::vector<T> tmp;
      T* lp = out.size() > 1 && out[1].data ? out[1].as<T>() : nullptr;
      if (!lp) {
        tmp.resize(static_cast<std::size_t>(x.numel()));
        lp = tmp.data();
      }
      log_softmax(x.as<T>(), lp, a);
      return nll<T>(n, lp, x.shape, in[1], present(in, 2) ? &in[2] : nullptr, out[0]);
    }
    case Op::NegativeLogLikelihoodLoss:
      return nll<T>(n, x.as<T>(), x.shape, in[1], present(in, 2) ? &in[2] : nullptr, out[0]);
    default: return Err("%s %s: no reference kernel", ir::op_name(n.op), n.name.c_str());
  }
}

// The input count each op needs at least, and at most.
void input_counts(Op op, std::size_t* lo, std::size_t* hi) {
  switch (op) {
    case Op::LayerNormalization: *lo = 2; *hi = 3; return;
    case Op::GroupNormalization: case Op::InstanceNormalization: *lo = 3; *hi = 3; return;
    case Op::SoftmaxCrossEntropyLoss: case Op::NegativeLogLikelihoodLoss: *lo = 2; *hi = 3; return;
    default: *lo = 1; *hi = 1; return;
  }
}

}  // namespace

Status infer_norm(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                  std::vector<ir::DType>* types) {
  const char* op = ir::op_name(n.op);
  std::size_t lo, hi;
  input_counts(n.op, &lo, &hi);
  for (std::size_t i = 0; i < lo; ++i)
    if (!present(in, i)) return Err("%s %s: input %zu is missing", op, n.name.c_str(), i);
  if (in.size() > hi) return Err("%s %s: has %zu inputs; it takes at most %zu", op, n.name.c_str(), in.size(), hi);
  const TensorRef& x = in[0];
  const ir::Shape& xs = x.shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  if (!is_float(x.dtype))
    return Err("%s %s: element type %s is not supported (float32 or float64)", op, n.name.c_str(),
               ir::dtype_name(x.dtype));
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (!present(in, i)) continue;
    const bool label = (n.op == Op::SoftmaxCrossEntropyLoss || n.op == Op::NegativeLogLikelihoodLoss) && i == 1;
    if (label ? in[i].dtype != DType::i32 && in[i].dtype != DType::i64 : in[i].dtype != x.dtype)
      return Err("%s %s: input %zu has element type %s, expected %s", op, n.name.c_str(), i,
                 ir::dtype_name(in[i].dtype), label ? "int32 or int64" : ir::dtype_name(x.dtype));
  }
  switch (n.op) {
    case Op::LayerNormalization: {
      int64_t axis = n.i("axis", -1);
      if (axis < 0) axis += r;
      if (axis < 0 || axis >= r)
        return Err("%s %s: axis %lld is out of range for a rank-%lld input", op, n.name.c_str(),
                   static_cast<long long>(n.i("axis", -1)), static_cast<long long>(r));
      const int64_t stash = n.i("stash_type", 1);
      if (stash != 1 && stash != 11)
        return Err("%s %s: stash_type %lld is not supported (float32 or float64)", op, n.name.c_str(),
                   static_cast<long long>(stash));
      ir::Shape stat = xs;
      for (int64_t d = axis; d < r; ++d) stat[d] = 1;
      const DType st = stash == 11 ? DType::f64 : DType::f32;
      *shapes = {xs, stat, stat};
      *types = {x.dtype, st, st};
      return Status::Ok();
    }
    case Op::GroupNormalization: case Op::InstanceNormalization:
      if (r < 2) return Err("%s %s: input must have rank >= 2 (N, C, ...)", op, n.name.c_str());
      break;
    case Op::LogSoftmax: case Op::Hardmax: {
      Axis3 a;
      SYSTOLIC_RETURN_IF_ERROR(softmax_axes(n, xs, &a));
      break;
    }
    case Op::SoftmaxCrossEntropyLoss: case Op::NegativeLogLikelihoodLoss: {
      if (r < 2) return Err("%s %s: input must have rank >= 2 (N, C, ...)", op, n.name.c_str());
      ir::Shape ls = xs;
      ls.erase(ls.begin() + 1);
      if (in[1].shape != ls)
        return Err("%s %s: labels of shape %s do not match the input %s", op, n.name.c_str(),
                   ir::shape_str(in[1].shape).c_str(), ir::shape_str(xs).c_str());
      if (present(in, 2) && in[2].shape != ir::Shape{xs[1]})
        return Err("%s %s: weight must have shape [%lld]", op, n.name.c_str(), static_cast<long long>(xs[1]));
      int mode;
      SYSTOLIC_RETURN_IF_ERROR(loss_reduction(n, &mode));
      *shapes = {mode == 0 ? ls : ir::Shape{}, xs};
      *types = {x.dtype, x.dtype};
      if (n.op == Op::NegativeLogLikelihoodLoss) {
        shapes->pop_back();
        types->pop_back();
      }
      return Status::Ok();
    }
    default: break;
  }
  *shapes = {xs};
  *types = {x.dtype};
  return Status::Ok();
}

Status eval_norm(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  std::vector<ir::Shape> shapes;
  std::vector<ir::DType> types;
  SYSTOLIC_RETURN_IF_ERROR(infer_norm(n, in, &shapes, &types));
  if (out.empty() || out.size() > shapes.size())
    return Err("%s %s: has %zu outputs; it has at most %zu", ir::op_name(n.op), n.name.c_str(), out.size(),
               shapes.size());
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].data && (out[k].shape != shapes[k] || out[k].dtype != types[k]))
      return Err("%s %s: output %zu does not fit the inputs", ir::op_name(n.op), n.name.c_str(), k);
  for (std::size_t i = 0; i < in.size(); ++i)
    if (present(in, i) && !in[i].data && in[i].numel() > 0)
      return Err("%s %s: input %zu has no data", ir::op_name(n.op), n.name.c_str(), i);
  if (!out[0].data) return Err("%s %s: output 0 is missing", ir::op_name(n.op), n.name.c_str());
  if (in[0].dtype == DType::f64) return eval_typed<double>(n, in, out);
  return eval_typed<float>(n, in, out);
}

}  // namespace systolic::interp

// Reference kernels and shape rules of the index family: triangle masks, gathers and scatters,
// TopK, CumSum, Tile, depth/space rearrangements, OneHot, EyeLike, Size, ReverseSequence, Einsum,
// and the ops whose output shape depends on values (Compress, NonZero, Unique: shaped here only
// when those values are constants). Movement ops copy elements byte-wise by element size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>

#include "interp/dispatch.h"
#include "interp/eval.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;
using ir::Shape;

// An error naming the op and node (expects a `const ir::Node& n` in scope).
#define NERR(fmt, ...) Err("%s %s: " fmt, ir::op_name(n.op), n.name.c_str() __VA_OPT__(, ) __VA_ARGS__)

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Row-major odometer step over `shape`.
void next_index(std::vector<int64_t>& idx, const Shape& shape) {
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (++idx[d] < shape[d]) return;
    idx[d] = 0;
  }
}

int64_t prod(const Shape& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

// Wraps a negative index; false when it is outside [-dim, dim).
bool wrap(int64_t& i, int64_t dim) {
  if (i < 0) i += dim;
  return i >= 0 && i < dim;
}


template <typename T>
int64_t to_i64(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    // Casting NaN or huge values is undefined; map them to a value every range check rejects.
    if (!(std::fabs(static_cast<double>(v)) < 9.0e18)) return INT64_MIN;
  }
  return static_cast<int64_t>(v);
}

// Any supported tensor's values as int64 (floats truncate toward zero).
std::vector<int64_t> values_i64(const TensorRef& t) {
  std::vector<int64_t> v(static_cast<std::size_t>(t.numel()));
  (void)dispatch(t.dtype, [&]<typename T>() {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = to_i64(t.as<T>()[i]);
    return Status::Ok();
  });
  return v;
}

// Total order for sorting: NaN above every number (as numpy sorts).
template <typename T>
bool lt(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

enum class Red { none, add, mul, max, min };

// Scatter reductions by opset: add/mul from 16, max/min from 18.
Status parse_reduction(const ir::Node& n, DType dt, Red* red) {
  const std::string s = n.s("reduction", "none");
  const int opset = node_opset(n);
  if (s == "none") *red = Red::none;
  else if (s == "add" && opset >= 16) *red = Red::add;
  else if (s == "mul" && opset >= 16) *red = Red::mul;
  else if (s == "max" && opset >= 18) *red = Red::max;
  else if (s == "min" && opset >= 18) *red = Red::min;
  else return NERR("reduction '%s' is not supported in opset %d", s.c_str(), opset);
  if (*red != Red::none && dt == DType::boolean) return NERR("reduction '%s' on bool is not supported", s.c_str());
  return Status::Ok();
}

template <typename T>
void apply(T& dst, T v, Red r) {
  switch (r) {
    case Red::none: dst = v; break;
    case Red::add: dst = static_cast<T>(dst + v); break;
    case Red::mul: dst = static_cast<T>(dst * v); break;
    case Red::max: dst = lt(dst, v) ? v : dst; break;
    case Red::min: dst = lt(v, dst) ? v : dst; break;
  }
}

// ---- Einsum -------------------------------------------------------------------------------
// Labels: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (numpy's implicit output order is by
// character), the ellipsis dims -> 52.. right-aligned across inputs.
constexpr int kEllipsisLabel = 52;

struct EinsumPlan {
  std::vector<std::vector<int>> in_labels;  // one label per dim of each input
  std::vector<int> out_labels;
  std::vector<int> sum_labels;  // contracted
  std::vector<int64_t> size;    // per label id
};

// One term of the equation: its letters as labels, with -1 where "..." stands.
Status einsum_term(const ir::Node& n, const std::string& t, std::vector<int>* labels) {
  bool ell = false;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c >= 'A' && c <= 'Z') labels->push_back(c - 'A');
    else if (c >= 'a' && c <= 'z') labels->push_back(c - 'a' + 26);
    else if (c == '.' && t.compare(i, 3, "...") == 0 && !ell) {
      ell = true;
      labels->push_back(-1);
      i += 2;
    } else {
      return NERR("equation term '%s' is malformed", t.c_str());
    }
  }
  return Status::Ok();
}

Status einsum_plan(const ir::Node& n, const std::vector<Shape>& shapes, EinsumPlan* p) {
  std::string eq;
  for (char c : n.s("equation", "")) if (c != ' ') eq += c;
  const std::size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  if (terms.size() != shapes.size())
    return NERR("equation '%s' has %zu operands, the node %zu inputs", eq.c_str(), terms.size(), shapes.size());
  // Ellipsis ranks first: they fix the ellipsis labels.
  std::vector<std::vector<int>> raw(terms.size());
  int64_t ell_rank = 0;
  std::vector<int64_t> ell_of(terms.size(), 0);
  for (std::size_t k = 0; k < terms.size(); ++k) {
    SYSTOLIC_RETURN_IF_ERROR(einsum_term(n, terms[k], &raw[k]));
    const bool has_ell = std::count(raw[k].begin(), raw[k].end(), -1) > 0;
    const int64_t letters = static_cast<int64_t>(raw[k].size()) - (has_ell ? 1 : 0);
    const int64_t r = static_cast<int64_t>(shapes[k].size());
    if (has_ell ? r < letters : r != letters)
      return NERR("operand %zu ('%s') does not match its rank %lld", k, terms[k].c_str(), static_cast<long long>(r));
    ell_of[k] = has_ell ? r - letters : 0;
    ell_rank = std::max(ell_rank, ell_of[k]);
  }
  p->size.assign(kEllipsisLabel + ell_rank, -1);
  std::vector<int> uses(p->size.size(), 0);
  p->in_labels.assign(terms.size(), {});
  for (std::size_t k = 0; k < terms.size(); ++k) {
    for (int l : raw[k]) {
      if (l >= 0) {
        p->in_labels[k].push_back(l);
      } else {
        for (int64_t j = 0; j < ell_of[k]; ++j)
          p->in_labels[k].push_back(static_cast<int>(kEllipsisLabel + ell_rank - ell_of[k] + j));
      }
    }
    for (std::size_t d = 0; d < shapes[k].size(); ++d) {
      const int l = p->in_labels[k][d];
      const int64_t s = shapes[k][d];
      ++uses[l];
      int64_t& cur = p->size[l];
      if (cur < 0) cur = s;
      else if (cur != s) {
        if (l >= kEllipsisLabel && (cur == 1 || s == 1)) cur = std::max(cur, s);  // broadcast
        else return NERR("label sizes disagree in '%s'", eq.c_str());
      }
    }
  }
  p->out_labels.clear();
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < ell_rank; ++j) p->out_labels.push_back(static_cast<int>(kEllipsisLabel + j));
    for (int l = 0; l < kEllipsisLabel; ++l)
      if (uses[l] == 1) p->out_labels.push_back(l);
  } else {
    std::vector<int> raw_out;
    SYSTOLIC_RETURN_IF_ERROR(einsum_term(n, eq.substr(arrow + 2), &raw_out));
    bool out_ell = false;
    for (int l : raw_out) {
      if (l < 0) {
        out_ell = true;
        for (int64_t j = 0; j < ell_rank; ++j) p->out_labels.push_back(static_cast<int>(kEllipsisLabel + j));
      } else {
        if (uses[l] == 0) return NERR("output label of '%s' is in no operand", eq.c_str());
        if (std::count(raw_out.begin(), raw_out.end(), l) > 1) return NERR("output label repeats in '%s'", eq.c_str());
        p->out_labels.push_back(l);
      }
    }
    if (!out_ell && ell_rank > 0)
      return NERR("ellipsis in the operands but not in the output of '%s' is not supported", eq.c_str());
  }
  p->sum_labels.clear();
  for (int l = 0; l < static_cast<int>(uses.size()); ++l)
    if (uses[l] > 0 && std::find(p->out_labels.begin(), p->out_labels.end(), l) == p->out_labels.end())
      p->sum_labels.push_back(l);
  return Status::Ok();
}

template <typename T>
Status einsum_eval(const EinsumPlan& p, const std::vector<TensorRef>& in, const TensorRef& y) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const std::size_t L = p.size.size(), K = in.size();
  // Per input, per label: the summed strides of its dims with that label (repeated labels walk a
  // diagonal; a size-1 dim broadcast over a larger label does not move).
  std::vector<std::vector<int64_t>> ls(K, std::vector<int64_t>(L, 0));
  for (std::size_t k = 0; k < K; ++k) {
    const auto st = strides_of(in[k].shape);
    for (std::size_t d = 0; d < in[k].shape.size(); ++d)
      if (in[k].shape[d] != 1 || p.size[p.in_labels[k][d]] == 1) ls[k][p.in_labels[k][d]] += st[d];
  }
  Shape osz, ssz;
  for (int l : p.out_labels) osz.push_back(p.size[l]);
  for (int l : p.sum_labels) ssz.push_back(p.size[l]);
  const int64_t on = ir::num_elements(osz), sn = ir::num_elements(ssz);
  std::vector<int64_t> oi(osz.size(), 0), si(ssz.size(), 0), base(K), off(K);
  T* out = y.as<T>();
  for (int64_t e = 0; e < on; ++e) {
    for (std::size_t k = 0; k < K; ++k) {
      base[k] = 0;
      for (std::size_t j = 0; j < osz.size(); ++j) base[k] += oi[j] * ls[k][p.out_labels[j]];
    }
    Acc acc = 0;
    std::fill(si.begin(), si.end(), 0);
    for (int64_t s = 0; s < sn; ++s) {
      Acc v = 1;
      for (std::size_t k = 0; k < K; ++k) {
        int64_t o = base[k];
        for (std::size_t j = 0; j < ssz.size(); ++j) o += si[j] * ls[k][p.sum_labels[j]];
        v *= static_cast<Acc>(in[k].as<T>()[o]);
      }
      acc += v;
      next_index(si, ssz);
    }
    out[e] = static_cast<T>(acc);
    next_index(oi, osz);
  }
  return Status::Ok();
}

// ---- Unique -------------------------------------------------------------------------------
// The slices along the axis (elements in order (outer, inner)), grouped by equal value.
struct UniquePlan {
  std::vector<int64_t> first;    // per group, in output order: its first slice
  std::vector<int64_t> counts;   // per group
  std::vector<int64_t> inverse;  // per slice: its group
};

template <typename T>
UniquePlan unique_plan(const T* x, int64_t outer, int64_t len, int64_t inner, bool sorted) {
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T va = x[(o * len + a) * inner + i], vb = x[(o * len + b) * inner + i];
        if (lt(va, vb)) return true;
        if (lt(vb, va)) return false;
      }
    return false;
  };
  std::vector<int64_t> order(static_cast<std::size_t>(len));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);  // equal slices keep index order
  std::vector<int64_t> group_of(order.size());
  UniquePlan p;
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || less(order[k - 1], order[k])) {
      p.first.push_back(order[k]);
      p.counts.push_back(0);
    }
    group_of[order[k]] = static_cast<int64_t>(p.first.size()) - 1;
    ++p.counts.back();
  }
  // Unsorted: groups in order of first occurrence.
  std::vector<int64_t> pos(p.first.size());
  std::iota(pos.begin(), pos.end(), 0);
  if (!sorted) {
    std::vector<int64_t> g(p.first.size());
    std::iota(g.begin(), g.end(), 0);
    std::sort(g.begin(), g.end(), [&](int64_t a, int64_t b) { return p.first[a] < p.first[b]; });
    UniquePlan q;
    for (std::size_t k = 0; k < g.size(); ++k) {
      q.first.push_back(p.first[g[k]]);
      q.counts.push_back(p.counts[g[k]]);
      pos[g[k]] = static_cast<int64_t>(k);
    }
    p.first = std::move(q.first);
    p.counts = std::move(q.counts);
  }
  p.inverse.resize(order.size());
  for (std::size_t s = 0; s < order.size(); ++s) p.inverse[s] = pos[group_of[s]];
  return p;
}

// Unique's view of X as (outer, len, inner) slices; axis -1 (absent): flattened.
Status unique_view(const ir::Node& n, const Shape& xs, int64_t* axis, int64_t* outer, int64_t* len, int64_t* inner) {
  const int64_t r = static_cast<int64_t>(xs.size());
  if (!n.has("axis")) {
    *axis = -1;
    *outer = *inner = 1;
    *len = ir::num_elements(xs);
    return Status::Ok();
  }
  *axis = n.i("axis", 0);
  if (*axis < 0) *axis += r;
  if (*axis < 0 || *axis >= r) return NERR("axis %lld out of range", static_cast<long long>(n.i("axis", 0)));
  *outer = prod(xs, 0, *axis);
  *len = xs[*axis];
  *inner = prod(xs, *axis + 1, xs.size());
  return Status::Ok();
}

Status unique_groups(const ir::Node& n, const TensorRef& x, UniquePlan* p) {
  int64_t axis, outer, len, inner;
  SYSTOLIC_RETURN_IF_ERROR(unique_view(n, x.shape, &axis, &outer, &len, &inner));
  const bool sorted = n.i("sorted", 1) != 0;
  return dispatch(x.dtype, [&]<typename T>() {
    *p = unique_plan(x.as<T>(), outer, len, inner, sorted);
    return Status::Ok();
  });
}

// ---- Compress -----------------------------------------------------------------------------
// The kept positions along the axis (or of the flattened input without one).
Status compress_keep(const ir::Node& n, const Shape& xs, const TensorRef& cond, std::vector<int64_t>* keep) {
  if (cond.shape.size() != 1) return NERR("condition must be 1-D");
  int64_t len = ir::num_elements(xs);
  if (n.has("axis")) {
    const int64_t r = static_cast<int64_t>(xs.size());
    int64_t a = n.i("axis", 0);
    if (a < 0) a += r;
    if (a < 0 || a >= r) return NERR("axis %lld out of range", static_cast<long long>(n.i("axis", 0)));
    len = xs[a];
  }
  const std::vector<int64_t> c = values_i64(cond);
  keep->clear();
  for (std::size_t j = 0; j < c.size(); ++j) {
    if (!c[j]) continue;
    if (static_cast<int64_t>(j) >= len) return NERR("condition selects position %zu beyond the input's %lld", j,
                                                   static_cast<long long>(len));
    keep->push_back(static_cast<int64_t>(j));
  }
  return Status::Ok();
}

int64_t count_nonzero(const TensorRef& x) {
  int64_t nz = 0;
  (void)dispatch(x.dtype, [&]<typename T>() {
    const T* p = x.as<T>();
    for (int64_t e = 0; e < x.numel(); ++e) nz += p[e] != T(0);
    return Status::Ok();
  });
  return nz;
}

// ---- kernels --------------------------------------------------------------------------------

Status eval_trilu(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef& x = in[0];
  int64_t k = 0;
  if (present(in, 1)) {
    if (in[1].numel() != 1) return NERR("k must be a scalar");
    k = values_i64(in[1])[0];
  }
  const bool upper = n.i("upper", 1) != 0;
  const std::size_t r = x.shape.size();
  const int64_t M = x.shape[r - 2], N = x.shape[r - 1];
  const int64_t batch = M * N == 0 ? 0 : x.numel() / (M * N);
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const int64_t e = (b * M + i) * N + j;
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) std::memcpy(dst + e * es, src + e * es, es);
        else std::memset(dst + e * es, 0, es);
      }
  return Status::Ok();
}

Status eval_gather_elements(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef &x = in[0], &ix = in[1];
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", 0);
  if (axis < 0) axis += r;
  const auto xst = strides_of(x.shape);
  const std::vector<int64_t> iv = read_ints(ix);
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  std::vector<int64_t> idx(r, 0);
  for (int64_t e = 0; e < ix.numel(); ++e) {
    int64_t j = iv[e];
    if (!wrap(j, x.shape[axis])) return NERR("index %lld out of range", static_cast<long long>(iv[e]));
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) off += (d == axis ? j : idx[d]) * xst[d];
    std::memcpy(dst + e * es, src + off * es, es);
    next_index(idx, ix.shape);
  }
  return Status::Ok();
}

Status eval_gather_nd(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef &x = in[0], &ix = in[1];
  const std::size_t b = static_cast<std::size_t>(n.i("batch_dims", 0));
  const std::size_t q = ix.shape.size();
  const int64_t m = ix.shape[q - 1];
  const int64_t batch = prod(x.shape, 0, b);
  const int64_t tuples = prod(ix.shape, b, q - 1);
  const int64_t inner = prod(x.shape, b + m, x.shape.size());
  const int64_t bstride = prod(x.shape, b, x.shape.size());
  const auto xst = strides_of(x.shape);
  const std::vector<int64_t> iv = read_ints(ix);
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t row = bi * tuples + t;
      int64_t off = bi * bstride;
      for (int64_t j = 0; j < m; ++j) {
        int64_t v = iv[row * m + j];
        if (!wrap(v, x.shape[b + j])) return NERR("index %lld out of range", static_cast<long long>(iv[row * m + j]));
        off += v * xst[b + j];
      }
      std::memcpy(dst + row * inner * es, src + off * es, inner * es);
    }
  return Status::Ok();
}

Status eval_scatter_nd(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef &x = in[0], &ix = in[1], &up = in[2];
  Red red;
  SYSTOLIC_RETURN_IF_ERROR(parse_reduction(n, x.dtype, &red));
  const std::size_t q = ix.shape.size();
  const int64_t k = ix.shape[q - 1];
  const int64_t tuples = prod(ix.shape, 0, q - 1);
  const int64_t inner = prod(x.shape, k, x.shape.size());
  const auto xst = strides_of(x.shape);
  const std::vector<int64_t> iv = read_ints(ix);
  return dispatch(x.dtype, [&]<typename T>() {
    T* out = y.as<T>();
    std::copy(x.as<T>(), x.as<T>() + x.numel(), out);
    const T* u = up.as<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t v = iv[t * k + j];
        if (!wrap(v, x.shape[j])) return NERR("index %lld out of range", static_cast<long long>(iv[t * k + j]));
        off += v * xst[j];
      }
      for (int64_t i = 0; i < inner; ++i) apply(out[off + i], u[t * inner + i], red);
    }
    return Status::Ok();
  });
}

Status eval_scatter_elements(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef &x = in[0], &ix = in[1], &up = in[2];
  Red red = Red::none;
  if (n.op == Op::ScatterElements) SYSTOLIC_RETURN_IF_ERROR(parse_reduction(n, x.dtype, &red));
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", 0);
  if (axis < 0) axis += r;
  const auto xst = strides_of(x.shape);
  const std::vector<int64_t> iv = read_ints(ix);
  return dispatch(x.dtype, [&]<typename T>() {
    T* out = y.as<T>();
    std::copy(x.as<T>(), x.as<T>() + x.numel(), out);
    const T* u = up.as<T>();
    if (ix.numel() == 0) return Status::Ok();
    // A row of the innermost index dim at a time: the offset of its other dims once per row
    // (Faster R-CNN scatters 1.9M RoiAlign values; per-element offsets took 29 ms).
    const int64_t inner = ix.shape[r - 1], rows = ix.numel() / inner;
    std::vector<int64_t> idx(r, 0);
    for (int64_t row = 0; row < rows; ++row) {
      int64_t base = 0;
      for (int64_t d = 0; d + 1 < r; ++d) base += d == axis ? 0 : idx[d] * xst[d];
      const int64_t e0 = row * inner, step = axis == r - 1 ? 0 : xst[r - 1];
      for (int64_t i = 0; i < inner; ++i) {
        int64_t j = iv[e0 + i];
        if (!wrap(j, x.shape[axis])) return NERR("index %lld out of range", static_cast<long long>(iv[e0 + i]));
        apply(out[base + i * step + j * xst[axis]], u[e0 + i], red);
      }
      for (int64_t d = r - 2; d >= 0; --d) {  // the next row
        if (++idx[d] < ix.shape[d]) break;
        idx[d] = 0;
      }
    }
    return Status::Ok();
  });
}

Status eval_topk(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const TensorRef& x = in[0];
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", -1);
  if (axis < 0) axis += r;
  const int64_t K = out[0].shape[axis], len = x.shape[axis];
  const int64_t outer = prod(x.shape, 0, axis), inner = prod(x.shape, axis + 1, x.shape.size());
  const bool largest = n.i("largest", 1) != 0;
  int64_t* oi = out.size() > 1 ? out[1].as<int64_t>() : nullptr;
  return dispatch(x.dtype, [&]<typename T>() {
    const T* X = x.as<T>();
    T* ov = out[0].as<T>();
    std::vector<int64_t> order(static_cast<std::size_t>(len));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* base = X + o * len * inner + i;
        std::iota(order.begin(), order.end(), 0);
        // Stable: equal values keep the lower index first.
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest ? lt(base[b * inner], base[a * inner]) : lt(base[a * inner], base[b * inner]);
        });
        for (int64_t j = 0; j < K; ++j) {
          const int64_t e = (o * K + j) * inner + i;
          if (ov) ov[e] = base[order[j] * inner];
          if (oi) oi[e] = order[j];
        }
      }
    return Status::Ok();
  });
}

Status eval_cumsum(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef& x = in[0];
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (in[1].numel() != 1) return NERR("axis must be a scalar");
  int64_t axis = values_i64(in[1])[0];
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return NERR("axis out of range");
  const bool exclusive = n.i("exclusive", 0) != 0, reverse = n.i("reverse", 0) != 0;
  const int64_t len = x.shape[axis];
  const int64_t outer = prod(x.shape, 0, axis), inner = prod(x.shape, axis + 1, x.shape.size());
  return dispatch(x.dtype, [&]<typename T>() {
    const T* X = x.as<T>();
    T* Y = y.as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        T acc = 0;
        for (int64_t s = 0; s < len; ++s) {
          const int64_t j = reverse ? len - 1 - s : s;
          const int64_t e = (o * len + j) * inner + i;
          const T v = X[e];
          if (exclusive) {
            Y[e] = acc;
            acc = static_cast<T>(acc + v);
          } else {
            acc = static_cast<T>(acc + v);
            Y[e] = acc;
          }
        }
      }
    return Status::Ok();
  });
}

Status eval_tile(const TensorRef& x, const TensorRef& y) {
  const std::size_t r = x.shape.size();
  const auto xst = strides_of(x.shape);
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  std::vector<int64_t> idx(r, 0);
  for (int64_t e = 0; e < y.numel(); ++e) {
    int64_t off = 0;
    for (std::size_t d = 0; d < r; ++d) off += (idx[d] % x.shape[d]) * xst[d];
    std::memcpy(dst + e * es, src + off * es, es);
    next_index(idx, y.shape);
  }
  return Status::Ok();
}

// DepthToSpace (to_space) and SpaceToDepth on NCHW: walks the output row by row; each output
// row takes every b-th element of one source row (DepthToSpace), or one source row's elements
// at a stride of b (SpaceToDepth).
Status eval_depth_space(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  const int64_t b = n.i("blocksize", 0);
  const bool to_space = n.op == Op::DepthToSpace;
  const bool crd = to_space && n.s("mode", "DCR") == "CRD";
  const int64_t N = y.shape[0], C = y.shape[1], H = y.shape[2], W = y.shape[3];
  const int64_t XC = x.shape[1], XH = x.shape[2], XW = x.shape[3];
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  // Copies cnt elements, source stride ss, destination stride ds (in elements).
  auto strided = [&](uint8_t* d, int64_t ds, const uint8_t* s, int64_t ss, int64_t cnt) {
    if (es == 4) {
      for (int64_t k = 0; k < cnt; ++k) std::memcpy(d + k * ds * 4, s + k * ss * 4, 4);
    } else {
      for (int64_t k = 0; k < cnt; ++k) std::memcpy(d + k * ds * es, s + k * ss * es, es);
    }
  };
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h) {
        uint8_t* row = dst + ((static_cast<std::size_t>(nn * C + c) * H + h) * W) * es;
        if (to_space) {
          // Output column w = sw * b + j reads column sw of source channel sc, row h / b.
          const int64_t i = h % b, sh = h / b;
          for (int64_t j = 0; j < b; ++j) {
            const int64_t sc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;
            strided(row + j * es, b, src + (((nn * XC + sc) * XH + sh) * XW) * es, 1, XW);
          }
        } else {
          // Output column w reads column w * b + j of source row h * b + i.
          const int64_t ij = c / XC, i = ij / b, j = ij % b, sc = c % XC, sh = h * b + i;
          strided(row, 1, src + ((((nn * XC + sc) * XH + sh) * XW) + j) * es, b, W);
        }
      }
  return Status::Ok();
}

Status eval_onehot(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef &ix = in[0], &vals = in[2];
  const int64_t r = static_cast<int64_t>(ix.shape.size());
  int64_t axis = n.i("axis", -1);
  if (axis < 0) axis += r + 1;
  const int64_t depth = y.shape[axis];
  const int64_t outer = prod(ix.shape, 0, axis), inner = prod(ix.shape, axis, ix.shape.size());
  const std::vector<int64_t> iv = values_i64(ix);
  const std::size_t es = ir::dtype_size(vals.dtype);
  const auto* v = static_cast<const uint8_t*>(vals.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t e = 0; e < y.numel(); ++e) std::memcpy(dst + e * es, v, es);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t j = iv[o * inner + i];
      // Indices outside [-depth, depth) leave an all-off row, as the spec says.
      if (!wrap(j, depth)) continue;
      std::memcpy(dst + ((o * depth + j) * inner + i) * es, v + es, es);
    }
  return Status::Ok();
}

Status eval_eyelike(const ir::Node& n, const TensorRef& y) {
  const int64_t k = n.i("k", 0);
  const int64_t R = y.shape[0], C = y.shape[1];
  return dispatch(y.dtype, [&]<typename T>() {
    T* Y = y.as<T>();
    std::fill(Y, Y + y.numel(), T(0));
    for (int64_t i = 0; i < R; ++i)
      if (i + k >= 0 && i + k < C) Y[i * C + i + k] = T(1);
    return Status::Ok();
  });
}

Status eval_reverse_sequence(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef& x = in[0];
  const int64_t ba = n.i("batch_axis", 1), ta = n.i("time_axis", 0);
  const std::vector<int64_t> lens = read_ints(in[1]);
  const int64_t T = x.shape[ta];
  for (int64_t l : lens)
    if (l < 0 || l > T) return NERR("sequence length %lld out of range [0, %lld]", static_cast<long long>(l),
                                    static_cast<long long>(T));
  const auto xst = strides_of(x.shape);
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  std::vector<int64_t> idx(x.shape.size(), 0);
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t t = idx[ta], L = lens[idx[ba]];
    const int64_t st = t < L ? L - 1 - t : t;
    const int64_t off = e + (st - t) * xst[ta];
    std::memcpy(dst + e * es, src + off * es, es);
    next_index(idx, x.shape);
  }
  return Status::Ok();
}

Status eval_compress(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef& x = in[0];
  std::vector<int64_t> keep;
  SYSTOLIC_RETURN_IF_ERROR(compress_keep(n, x.shape, in[1], &keep));
  int64_t outer = 1, len = x.numel(), inner = 1;
  if (n.has("axis")) {
    int64_t a = n.i("axis", 0);
    if (a < 0) a += static_cast<int64_t>(x.shape.size());
    outer = prod(x.shape, 0, a);
    len = x.shape[a];
    inner = prod(x.shape, a + 1, x.shape.size());
  }
  const int64_t K = static_cast<int64_t>(keep.size());
  if (outer * K * inner != y.numel()) return NERR("output shape does not match the condition");
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < K; ++k)
      std::memcpy(dst + (o * K + k) * inner * es, src + (o * len + keep[k]) * inner * es, inner * es);
  return Status::Ok();
}

Status eval_nonzero(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  const int64_t nz = count_nonzero(x);
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (y.shape != Shape{r, nz}) return NERR("output shape does not match the input's values");
  int64_t* Y = y.as<int64_t>();
  return dispatch(x.dtype, [&]<typename T>() {
    const T* X = x.as<T>();
    std::vector<int64_t> idx(r, 0);
    int64_t k = 0;
    for (int64_t e = 0; e < x.numel(); ++e) {
      if (X[e] != T(0)) {
        for (int64_t d = 0; d < r; ++d) Y[d * nz + k] = idx[d];
        ++k;
      }
      next_index(idx, x.shape);
    }
    return Status::Ok();
  });
}

Status eval_unique(const ir::Node& n, const TensorRef& x, const std::vector<TensorRef>& out) {
  UniquePlan p;
  SYSTOLIC_RETURN_IF_ERROR(unique_groups(n, x, &p));
  int64_t axis, outer, len, inner;
  SYSTOLIC_RETURN_IF_ERROR(unique_view(n, x.shape, &axis, &outer, &len, &inner));
  const int64_t G = static_cast<int64_t>(p.first.size());
  if (out[0].numel() != outer * G * inner) return NERR("output shape does not match the input's values");
  const std::size_t es = ir::dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  if (out[0].data) {
    auto* dst = static_cast<uint8_t*>(out[0].data);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t g = 0; g < G; ++g)
        std::memcpy(dst + (o * G + g) * inner * es, src + (o * len + p.first[g]) * inner * es, inner * es);
  }
  const std::vector<int64_t>* rest[3] = {&p.first, &p.inverse, &p.counts};
  for (std::size_t k = 1; k < out.size() && k < 4; ++k)
    if (out[k].data) std::copy(rest[k - 1]->begin(), rest[k - 1]->end(), out[k].as<int64_t>());
  return Status::Ok();
}

// ---- shape rules ------------------------------------------------------------------------------

Status need_inputs(const ir::Node& n, const std::vector<TensorRef>& in, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (!present(in, i)) return NERR("input %zu is missing", i);
  return Status::Ok();
}

Status need_index_type(const ir::Node& n, const TensorRef& t, const char* what) {
  if (t.dtype != DType::i64 && t.dtype != DType::i32)
    return NERR("%s must be int32 or int64, not %s", what, ir::dtype_name(t.dtype));
  return Status::Ok();
}

Status norm_axis(const ir::Node& n, int64_t a, int64_t r, int64_t* out) {
  *out = a < 0 ? a + r : a;
  if (*out < 0 || *out >= r) return NERR("axis %lld out of range for rank %lld", static_cast<long long>(a),
                                         static_cast<long long>(r));
  return Status::Ok();
}

Status data_dependent(const ir::Node& n, const char* what) {
  return NERR("data-dependent output shape is not supported yet (%s is computed at run time)", what);
}

Status infer_op(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<Shape>* shapes,
                std::vector<DType>* types) {
  if (n.op != Op::Size)
    for (std::size_t i = 0; i < in.size(); ++i)
      if (present(in, i) && !ir::dtype_supported(in[i].dtype))
        return NERR("element type %s is not supported", ir::dtype_name(in[i].dtype));
  SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 1));
  const TensorRef& x = in[0];
  const Shape& xs = x.shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  auto out = [&](Shape s, DType t) {
    shapes->push_back(std::move(s));
    types->push_back(t);
  };
  switch (n.op) {
    case Op::Trilu:
      if (r < 2) return NERR("input must have rank >= 2");
      if (present(in, 1) && in[1].numel() != 1) return NERR("k must be a scalar");
      out(xs, x.dtype);
      return Status::Ok();

    case Op::GatherElements: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 2));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "indices"));
      int64_t axis;
      SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, n.i("axis", 0), r, &axis));
      const Shape& is = in[1].shape;
      if (static_cast<int64_t>(is.size()) != r) return NERR("indices must have the data's rank");
      for (int64_t d = 0; d < r; ++d)
        if (d != axis && is[d] > xs[d]) return NERR("indices dim %lld exceeds the data's", static_cast<long long>(d));
      out(is, x.dtype);
      return Status::Ok();
    }

    case Op::GatherND: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 2));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "indices"));
      const Shape& is = in[1].shape;
      const int64_t q = static_cast<int64_t>(is.size()), b = n.i("batch_dims", 0);
      if (r < 1 || q < 1) return NERR("data and indices must have rank >= 1");
      if (b < 0 || b >= std::min(r, q)) return NERR("batch_dims %lld out of range", static_cast<long long>(b));
      const int64_t m = is[q - 1];
      if (m < 1 || m > r - b) return NERR("indices' last dim %lld out of range", static_cast<long long>(m));
      for (int64_t d = 0; d < b; ++d)
        if (is[d] != xs[d]) return NERR("batch dims of data and indices differ");
      Shape s(is.begin(), is.end() - 1);
      s.insert(s.end(), xs.begin() + b + m, xs.end());
      out(s, x.dtype);
      return Status::Ok();
    }

    case Op::ScatterND: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 3));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "indices"));
      Red red;
      SYSTOLIC_RETURN_IF_ERROR(parse_reduction(n, x.dtype, &red));
      const Shape& is = in[1].shape;
      const int64_t q = static_cast<int64_t>(is.size());
      if (r < 1 || q < 1) return NERR("data and indices must have rank >= 1");
      const int64_t k = is[q - 1];
      if (k < 0 || k > r) return NERR("indices' last dim %lld out of range", static_cast<long long>(k));
      Shape us(is.begin(), is.end() - 1);
      us.insert(us.end(), xs.begin() + k, xs.end());
      if (in[2].shape != us) return NERR("updates must have shape %s", ir::shape_str(us).c_str());
      if (in[2].dtype != x.dtype) return NERR("updates and data differ in type");
      out(xs, x.dtype);
      return Status::Ok();
    }

    case Op::ScatterElements: case Op::Scatter: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 3));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "indices"));
      if (n.op == Op::ScatterElements) {
        Red red;
        SYSTOLIC_RETURN_IF_ERROR(parse_reduction(n, x.dtype, &red));
      }
      int64_t axis;
      SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, n.i("axis", 0), r, &axis));
      const Shape& is = in[1].shape;
      if (static_cast<int64_t>(is.size()) != r) return NERR("indices must have the data's rank");
      for (int64_t d = 0; d < r; ++d)
        if (d != axis && is[d] > xs[d]) return NERR("indices dim %lld exceeds the data's", static_cast<long long>(d));
      if (in[2].shape != is) return NERR("updates must have the indices' shape");
      if (in[2].dtype != x.dtype) return NERR("updates and data differ in type");
      out(xs, x.dtype);
      return Status::Ok();
    }

    case Op::TopK: {
      int64_t axis;
      SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, n.i("axis", -1), r, &axis));
      int64_t k;
      if (node_opset(n) < 10) {
        k = n.i("k", -1);
      } else {
        if (!present(in, 1)) return NERR("K input is missing");
        if (!in[1].data) return NERR("K computed at run time is not supported");
        if (in[1].numel() != 1) return NERR("K must have one element");
        k = values_i64(in[1])[0];
      }
      if (k < 0 || k > xs[axis]) return NERR("K %lld out of range [0, %lld]", static_cast<long long>(k),
                                             static_cast<long long>(xs[axis]));
      Shape s = xs;
      s[axis] = k;
      out(s, x.dtype);
      out(s, DType::i64);
      return Status::Ok();
    }

    case Op::CumSum: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 2));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "axis"));
      if (r < 1) return NERR("input must have rank >= 1");
      if (in[1].numel() != 1) return NERR("axis must be a scalar");
      if (x.dtype == DType::boolean) return NERR("element type bool is not supported");
      if (in[1].data) {
        int64_t axis;
        SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, values_i64(in[1])[0], r, &axis));
      }
      out(xs, x.dtype);
      return Status::Ok();
    }

    case Op::Tile: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 2));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "repeats"));
      if (!in[1].data) return NERR("repeats computed at run time is not supported");
      const std::vector<int64_t> rep = values_i64(in[1]);
      if (static_cast<int64_t>(rep.size()) != r) return NERR("repeats must have one value per input dim");
      Shape s = xs;
      for (int64_t d = 0; d < r; ++d) {
        if (rep[d] < 0) return NERR("negative repeat");
        if (__builtin_mul_overflow(s[d], rep[d], &s[d]) || s[d] > ir::kMaxElements) return NERR("repeats too large");
      }
      out(s, x.dtype);
      return Status::Ok();
    }

    case Op::DepthToSpace: case Op::SpaceToDepth: {
      const int64_t b = n.i("blocksize", 0);
      if (r != 4) return NERR("input must have rank 4");
      if (b < 1) return NERR("blocksize must be positive");
      if (n.op == Op::DepthToSpace) {
        const std::string mode = n.s("mode", "DCR");
        if (mode != "DCR" && mode != "CRD") return NERR("mode '%s' is not supported", mode.c_str());
        if (xs[1] % (b * b)) return NERR("channels not divisible by blocksize^2");
        out({xs[0], xs[1] / (b * b), xs[2] * b, xs[3] * b}, x.dtype);
      } else {
        if (xs[2] % b || xs[3] % b) return NERR("height and width must be divisible by blocksize");
        out({xs[0], xs[1] * b * b, xs[2] / b, xs[3] / b}, x.dtype);
      }
      return Status::Ok();
    }

    case Op::OneHot: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 3));
      if (in[1].numel() != 1) return NERR("depth must be a scalar");
      if (in[2].numel() != 2) return NERR("values must have two elements");
      if (!in[1].data) return NERR("depth computed at run time is not supported");
      const int64_t depth = values_i64(in[1])[0];
      if (depth < 1) return NERR("depth must be positive");
      int64_t axis;
      SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, n.i("axis", -1), r + 1, &axis));
      Shape s = xs;
      s.insert(s.begin() + axis, depth);
      out(s, in[2].dtype);
      return Status::Ok();
    }

    case Op::EyeLike: {
      if (r != 2) return NERR("input must have rank 2");
      const DType dt = n.has("dtype") ? static_cast<DType>(n.i("dtype", 1)) : x.dtype;
      if (!ir::dtype_supported(dt)) return NERR("output type %s is not supported", ir::dtype_name(dt));
      out(xs, dt);
      return Status::Ok();
    }

    case Op::Size:
      out({}, DType::i64);
      return Status::Ok();

    case Op::ReverseSequence: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 2));
      SYSTOLIC_RETURN_IF_ERROR(need_index_type(n, in[1], "sequence_lens"));
      const int64_t ba = n.i("batch_axis", 1), ta = n.i("time_axis", 0);
      if (r < 2) return NERR("input must have rank >= 2");
      if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0))) return NERR("batch_axis and time_axis must be 0 and 1");
      if (in[1].shape != Shape{xs[ba]}) return NERR("sequence_lens must have shape [batch]");
      out(xs, x.dtype);
      return Status::Ok();
    }

    case Op::Einsum: {
      std::vector<Shape> ss;
      for (std::size_t i = 0; i < in.size(); ++i) {
        SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, i + 1));
        if (in[i].dtype != x.dtype) return NERR("inputs differ in type");
        ss.push_back(in[i].shape);
      }
      if (x.dtype == DType::boolean) return NERR("element type bool is not supported");
      EinsumPlan p;
      SYSTOLIC_RETURN_IF_ERROR(einsum_plan(n, ss, &p));
      Shape s;
      for (int l : p.out_labels) s.push_back(p.size[l]);
      out(s, x.dtype);
      return Status::Ok();
    }

    case Op::Compress: {
      SYSTOLIC_RETURN_IF_ERROR(need_inputs(n, in, 2));
      if (n.has("axis")) {
        int64_t axis;
        SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, n.i("axis", 0), r, &axis));
      }
      if (!in[1].data) return data_dependent(n, "condition");
      std::vector<int64_t> keep;
      SYSTOLIC_RETURN_IF_ERROR(compress_keep(n, xs, in[1], &keep));
      const int64_t K = static_cast<int64_t>(keep.size());
      if (!n.has("axis")) {
        out({K}, x.dtype);
      } else {
        int64_t axis;
        SYSTOLIC_RETURN_IF_ERROR(norm_axis(n, n.i("axis", 0), r, &axis));
        Shape s = xs;
        s[axis] = K;
        out(s, x.dtype);
      }
      return Status::Ok();
    }

    case Op::NonZero:
      if (r < 1) return NERR("scalar input is not supported");
      if (!x.data) return data_dependent(n, "the input");
      out({r, count_nonzero(x)}, DType::i64);
      return Status::Ok();

    case Op::Unique: {
      int64_t axis, outer, len, inner;
      SYSTOLIC_RETURN_IF_ERROR(unique_view(n, xs, &axis, &outer, &len, &inner));
      if (!x.data) return data_dependent(n, "the input");
      UniquePlan p;
      SYSTOLIC_RETURN_IF_ERROR(unique_groups(n, x, &p));
      const int64_t G = static_cast<int64_t>(p.first.size());
      Shape s = axis < 0 ? Shape{G} : xs;
      if (axis >= 0) s[axis] = G;
      out(s, x.dtype);
      out({G}, DType::i64);
      out({len}, DType::i64);
      out({G}, DType::i64);
      return Status::Ok();
    }

    default:
      return NERR("not supported in the index family");
  }
}

}  // namespace

Status infer_index(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                   std::vector<ir::DType>* types) {
  return infer_op(n, in, shapes, types);
}

Status eval_index(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  // Re-run the shape rule: it validates inputs and attributes, so the kernels below can index freely.
  std::vector<Shape> shapes;
  std::vector<DType> types;
  SYSTOLIC_RETURN_IF_ERROR(infer_op(n, in, &shapes, &types));
  if (out.empty() || out.size() > shapes.size()) return NERR("wrong number of outputs");
  for (std::size_t k = 0; k < out.size(); ++k)
    if (out[k].data && (out[k].shape != shapes[k] || out[k].dtype != types[k]))
      return NERR("output %zu has shape %s, expected %s", k, ir::shape_str(out[k].shape).c_str(),
                  ir::shape_str(shapes[k]).c_str());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (present(in, i) && !in[i].data && in[i].numel() > 0) return NERR("input %zu has no data", i);
  if (!out[0].data && n.op != Op::TopK && n.op != Op::Unique) return Status::Ok();
  switch (n.op) {
    case Op::Trilu: return eval_trilu(n, in, out[0]);
    case Op::GatherElements: return eval_gather_elements(n, in, out[0]);
    case Op::GatherND: return eval_gather_nd(n, in, out[0]);
    case Op::ScatterND: return eval_scatter_nd(n, in, out[0]);
    case Op::ScatterElements: case Op::Scatter: return eval_scatter_elements(n, in, out[0]);
    case Op::TopK: return eval_topk(n, in, out);
    case Op::CumSum: return eval_cumsum(n, in, out[0]);
    case Op::Tile: return eval_tile(in[0], out[0]);
    case Op::DepthToSpace: case Op::SpaceToDepth: return eval_depth_space(n, in[0], out[0]);
    case Op::OneHot: return eval_onehot(n, in, out[0]);
    case Op::EyeLike: return eval_eyelike(n, out[0]);
    case Op::Size: *out[0].as<int64_t>() = in[0].numel(); return Status::Ok();
    case Op::ReverseSequence: return eval_reverse_sequence(n, in, out[0]);
    case Op::Einsum: {
      std::vector<Shape> ss;
      for (const TensorRef& t : in) ss.push_back(t.shape);
      EinsumPlan p;
      SYSTOLIC_RETURN_IF_ERROR(einsum_plan(n, ss, &p));
      return dispatch(in[0].dtype, [&]<typename T>() { return einsum_eval<T>(p, in, out[0]); });
    }
    case Op::Compress: return eval_compress(n, in, out[0]);
    case Op::NonZero: return eval_nonzero(n, in[0], out[0]);
    case Op::Unique: return eval_unique(n, in[0], out);
    default: return NERR("not supported in the index family");
  }
}

}  // namespace systolic::interp

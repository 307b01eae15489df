// Reference data-movement ops: reshapes, Transpose, Concat, Split, Slice, Pad, Gather, Expand,
// and the shape ops that exporters emit (Shape, ConstantOfShape, Range).
#include <algorithm>
#include <cstring>

#include "interp/eval.h"
#include "kernels/reorder/shuffle.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;

std::vector<int64_t> strides_of(const ir::Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// One row of a strided copy: n elements of size ES, the source `stride` elements apart.
template <typename E>
void copy_row(const uint8_t* src, uint8_t* dst, int64_t n, int64_t stride) {
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  for (int64_t i = 0; i < n; ++i) std::memcpy(d + i, s + i * stride, sizeof(E));
}

// Generic strided copy: out[idx] = in[sum(idx[d] * in_stride[d]) + in_offset]. Walks the
// output a row (last dim) at a time: a unit-stride row is one memcpy, others a typed loop.
void strided_copy(const uint8_t* src, uint8_t* dst, const ir::Shape& out_shape,
                  const std::vector<int64_t>& in_strides, int64_t in_offset, std::size_t es) {
  const int r = static_cast<int>(out_shape.size());
  const int64_t total = ir::num_elements(out_shape);
  if (total == 0) return;
  if (r == 0) {
    std::memcpy(dst, src + in_offset * es, es);
    return;
  }
  // A short unit-stride innermost run (a DepthToSpace on NHWC data of one or two channels
  // moves 8-byte runs) is copied as one wider element, a memcpy call per run costing more
  // than the bytes.
  if (r >= 2 && in_strides[r - 1] == 1 && out_shape[r - 1] > 1 && in_offset % out_shape[r - 1] == 0) {
    const int64_t run = out_shape[r - 1];
    const std::size_t wide = static_cast<std::size_t>(run) * es;
    bool whole = wide == 2 || wide == 4 || wide == 8;
    for (int d = 0; whole && d < r - 1; ++d) whole = in_strides[d] % run == 0;
    if (whole) {
      ir::Shape outer(out_shape.begin(), out_shape.end() - 1);
      std::vector<int64_t> st(in_strides.begin(), in_strides.end() - 1);
      for (int64_t& v : st) v /= run;
      return strided_copy(src, dst, outer, st, in_offset / run, wide);
    }
  }
  const int64_t len = out_shape[r - 1], st = in_strides[r - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t off = in_offset;
  for (int64_t e = 0; e < total; e += len) {
    const uint8_t* s = src + off * es;
    uint8_t* d = dst + e * es;
    if (st == 1) std::memcpy(d, s, static_cast<std::size_t>(len) * es);
    else if (es == 4) copy_row<uint32_t>(s, d, len, st);
    else if (es == 8) copy_row<uint64_t>(s, d, len, st);
    else if (es == 2) copy_row<uint16_t>(s, d, len, st);
    else if (es == 1) copy_row<uint8_t>(s, d, len, st);
    else for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * es, s + i * st * es, es);
    for (int dd = r - 2; dd >= 0; --dd) {
      ++idx[dd];
      off += in_strides[dd];
      if (idx[dd] < out_shape[dd]) break;
      off -= in_strides[dd] * out_shape[dd];
      idx[dd] = 0;
    }
  }
}

int64_t norm_axis(int64_t a, int64_t rank) { return a < 0 ? a + rank : a; }

Status eval_pad(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  const TensorRef& x = in[0];
  const int r = static_cast<int>(x.shape.size());
  std::vector<int64_t> pads = read_ints(in[1]);
  const std::string mode = n.s("mode", "constant");
  const std::size_t es = ir::dtype_size(x.dtype);
  std::vector<uint8_t> value(es, 0);
  if (in.size() > 2 && in[2].data && in[2].numel() > 0) std::memcpy(value.data(), in[2].data, es);
  auto xs = strides_of(x.shape);
  const int64_t total = y.numel();
  std::vector<int64_t> idx(r, 0);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(y.data);
  if (mode == "constant" && r > 0 && total > 0) {
    // A row (last dim) at a time: the value, then the source row, then the value again.
    const int64_t len = y.shape[r - 1], lo = pads[r - 1], xl = x.shape[r - 1];
    auto fill = [&](uint8_t* d, int64_t count) {
      for (int64_t i = 0; i < count; ++i) std::memcpy(d + i * es, value.data(), es);
    };
    for (int64_t e = 0; e < total; e += len) {
      int64_t off = 0;
      bool inside = true;
      for (int d = 0; d + 1 < r && inside; ++d) {
        const int64_t i = idx[d] - pads[d];
        inside = i >= 0 && i < x.shape[d];
        off += i * xs[d];
      }
      uint8_t* row = dst + e * es;
      if (!inside) {
        fill(row, len);
      } else {
        const int64_t a = std::clamp<int64_t>(lo, 0, len), from = std::max<int64_t>(0, -lo);
        const int64_t n = std::clamp<int64_t>(std::min(xl - from, len - a), 0, len);
        fill(row, a);
        if (n > 0) std::memcpy(row + a * es, src + (off + from) * es, static_cast<std::size_t>(n) * es);
        fill(row + (a + n) * es, len - a - n);
      }
      for (int d = r - 2; d >= 0; --d) {
        if (++idx[d] < y.shape[d]) break;
        idx[d] = 0;
      }
    }
    return Status::Ok();
  }
  for (int64_t e = 0; e < total; ++e) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < r; ++d) {
      int64_t i = idx[d] - pads[d];
      const int64_t len = x.shape[d];
      if (i < 0 || i >= len) {
        if (mode == "constant") {
          inside = false;
          break;
        } else if (mode == "edge") {
          i = i < 0 ? 0 : len - 1;
        } else {  // reflect
          if (len == 1) i = 0;
          while (i < 0 || i >= len) i = i < 0 ? -i : 2 * (len - 1) - i;
        }
      }
      off += i * xs[d];
    }
    std::memcpy(dst + e * es, inside ? src + off * es : value.data(), es);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < y.shape[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

Status slice_plan(const ir::Shape& in, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& ends, const std::vector<int64_t>& axes_in,
                  const std::vector<int64_t>& steps_in, std::vector<int64_t>* start,
                  std::vector<int64_t>* step, ir::Shape* out) {
  const int64_t r = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) return Err("Slice: starts and ends differ in length");
  std::vector<int64_t> axes = axes_in;
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (axes.size() != starts.size()) return Err("Slice: axes and starts differ in length");
  *start = std::vector<int64_t>(r, 0);
  *step = std::vector<int64_t>(r, 1);
  *out = in;
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = norm_axis(axes[k], r);
    if (a < 0 || a >= r) return Err("Slice: axis %lld out of range", static_cast<long long>(axes[k]));
    const int64_t dim = in[a];
    const int64_t st = steps_in.empty() ? 1 : steps_in[k];
    if (st == 0) return Err("Slice: step 0");
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      (*out)[a] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      (*out)[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    (*start)[a] = s;
    (*step)[a] = st;
  }
  return Status::Ok();
}

Status eval_movement(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const TensorRef& y = out[0];
  const std::size_t es = ir::dtype_size(y.dtype);
  switch (n.op) {
    case Op::Flatten: case Op::Reshape: case Op::Squeeze: case Op::Unsqueeze: case Op::Identity:
    case Op::Dropout:
      if (y.data != in[0].data) std::memcpy(y.data, in[0].data, y.numel() * es);
      if (n.op == Op::Dropout && out.size() > 1 && out[1].data)
        std::memset(out[1].data, 1, out[1].numel());
      return Status::Ok();
    case Op::Transpose: {
      const auto& xs = in[0].shape;
      std::vector<int64_t> perm = n.ints("perm");
      if (perm.empty())
        for (int i = static_cast<int>(xs.size()) - 1; i >= 0; --i) perm.push_back(i);
      auto st = strides_of(xs);
      std::vector<int64_t> pst(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i) pst[i] = st[perm[i]];
      strided_copy(static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(y.data), y.shape, pst, 0, es);
      return Status::Ok();
    }
    case Op::ChannelShuffle: {
      // [outer, g, C/g, inner] -> [outer, C/g, g, inner]; with g inputs (a Concat absorbed),
      // group i is input i.
      const auto& ys = y.shape;
      const int64_t axis = norm_axis(n.i("axis", 1), static_cast<int64_t>(ys.size()));
      const int64_t g = n.i("group", 0), k = static_cast<int64_t>(in.size());
      if (axis < 0 || axis >= static_cast<int64_t>(ys.size()) || g < 1 || ys[axis] % g != 0 || (k != 1 && k != g))
        return Err("ChannelShuffle %s: group %lld does not fit the channel axis and inputs", n.name.c_str(),
                   static_cast<long long>(g));
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= ys[d];
      for (std::size_t d = axis + 1; d < ys.size(); ++d) inner *= ys[d];
      for (const TensorRef& t : in)
        if (t.numel() * k != y.numel() || !t.data) return Err("ChannelShuffle %s: inputs do not fit the output", n.name.c_str());
      kernels::ShuffleParams p;
      p.rows = outer, p.groups = g, p.cg = ys[axis] / g, p.inner = inner, p.elem = static_cast<int64_t>(es);
      const int64_t group_bytes = p.cg * inner * p.elem;
      p.src_stride = k == 1 ? g * group_bytes : group_bytes;
      std::vector<const void*> srcs;
      for (int64_t i = 0; i < g; ++i)
        srcs.push_back(k == 1 ? static_cast<const uint8_t*>(in[0].data) + i * group_bytes : in[i].data);
      kernels::shuffle_channels_ref(p, srcs.data(), y.data);
      return Status::Ok();
    }
    case Op::Reorder: {
      // Physical NCHW <-> NHWC of a logical [N,C,H,W] tensor.
      const auto& s = y.shape;
      const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
      ir::Shape phys_out = n.i("to", 1) == 1 ? ir::Shape{N, H, W, C} : ir::Shape{N, C, H, W};
      std::vector<int64_t> st = n.i("to", 1) == 1 ? std::vector<int64_t>{C * H * W, W, 1, H * W}
                                                  : std::vector<int64_t>{H * W * C, 1, W * C, C};
      strided_copy(static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(y.data), phys_out, st, 0, es);
      return Status::Ok();
    }
    case Op::Concat: {
      const int64_t axis = norm_axis(n.i("axis", 0), static_cast<int64_t>(y.shape.size()));
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= y.shape[d];
      for (std::size_t d = axis + 1; d < y.shape.size(); ++d) inner *= y.shape[d];
      const int64_t out_row = y.shape[axis] * inner;
      int64_t col = 0;
      for (const TensorRef& t : in) {
        if (!t.data && t.numel() != 0) continue;
        const int64_t row = t.shape[axis] * inner;
        if (row > 0)  // an empty input may have no buffer at all
          for (int64_t o = 0; o < outer; ++o)
            std::memcpy(static_cast<uint8_t*>(y.data) + (o * out_row + col) * es,
                        static_cast<const uint8_t*>(t.data) + o * row * es, row * es);
        col += row;
      }
      return Status::Ok();
    }
    case Op::Split: {
      const auto& xs = in[0].shape;
      const int64_t axis = norm_axis(n.i("axis", 0), static_cast<int64_t>(xs.size()));
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
      for (std::size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
      const int64_t in_row = xs[axis] * inner;
      int64_t col = 0;
      for (const TensorRef& t : out) {
        const int64_t row = t.shape[axis] * inner;
        for (int64_t o = 0; o < outer && t.data; ++o)
          std::memcpy(static_cast<uint8_t*>(t.data) + o * row * es,
                      static_cast<const uint8_t*>(in[0].data) + (o * in_row + col) * es, row * es);
        col += row;
      }
      return Status::Ok();
    }
    case Op::Slice: {
      std::vector<int64_t> start, step;
      ir::Shape os;
      SYSTOLIC_RETURN_IF_ERROR(slice_plan(in[0].shape, read_ints(in[1]), read_ints(in[2]),
                                          in.size() > 3 && in[3].data ? read_ints(in[3]) : std::vector<int64_t>{},
                                          in.size() > 4 && in[4].data ? read_ints(in[4]) : std::vector<int64_t>{},
                                          &start, &step, &os));
      auto st = strides_of(in[0].shape);
      int64_t off = 0;
      std::vector<int64_t> sst(st.size());
      for (std::size_t d = 0; d < st.size(); ++d) {
        off += start[d] * st[d];
        sst[d] = st[d] * step[d];
      }
      strided_copy(static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(y.data), y.shape, sst, off, es);
      return Status::Ok();
    }
    case Op::Pad:
      return eval_pad(n, in, y);
    case Op::Gather: {
      const auto& xs = in[0].shape;
      const int64_t axis = norm_axis(n.i("axis", 0), static_cast<int64_t>(xs.size()));
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
      for (std::size_t d = axis + 1; d < xs.size(); ++d) inner *= xs[d];
      std::vector<int64_t> idx = read_ints(in[1]);
      const int64_t dim = xs[axis];
      // zero_fill (set by passes/conv3d_to_conv2d.cc, never by a model): index -1 is a slice of
      // zeros (a 3-D conv's depth padding); on uint8 data, of the zero point (attribute fill).
      const bool zero_fill = n.i("zero_fill", 0) != 0;
      const int fill = y.dtype == ir::DType::u8 ? static_cast<int>(n.i("fill", 0)) : 0;
      for (int64_t& i : idx) {
        if (zero_fill && i == -1) continue;
        if (i < -dim || i >= dim) return Err("Gather %s: index %lld out of range [-%lld, %lld)", n.name.c_str(),
                                             static_cast<long long>(i), static_cast<long long>(dim),
                                             static_cast<long long>(dim));
        if (i < 0) i += dim;
      }
      auto* dst = static_cast<uint8_t*>(y.data);
      const auto* src = static_cast<const uint8_t*>(in[0].data);
      for (int64_t o = 0; o < outer; ++o)
        for (std::size_t k = 0; k < idx.size(); ++k) {
          uint8_t* d = dst + ((o * idx.size() + k) * inner) * es;
          if (idx[k] < 0) std::memset(d, fill, inner * es);
          else std::memcpy(d, src + ((o * dim + idx[k]) * inner) * es, inner * es);
        }
      return Status::Ok();
    }
    case Op::Shape: {
      const int64_t r = static_cast<int64_t>(in[0].shape.size());
      int64_t s = n.i("start", 0), e = n.i("end", r);
      if (s < 0) s += r;
      if (e < 0) e += r;
      s = std::clamp<int64_t>(s, 0, r);
      e = std::clamp<int64_t>(e, 0, r);
      for (int64_t i = s; i < e; ++i) y.as<int64_t>()[i - s] = in[0].shape[i];
      return Status::Ok();
    }
    case Op::ConstantOfShape: {
      std::vector<uint8_t> v(es, 0);
      auto it = n.attrs.find("value");
      if (it != n.attrs.end() && it->second.tensor_v && it->second.tensor_v->data)
        std::memcpy(v.data(), it->second.tensor_v->data->data(), es);
      // One value, then the filled prefix copied onto what follows it, doubling: a byte-sized
      // memcpy per element made Faster R-CNN's 7.5 MB RoiAlign result buffer take 15 ms.
      auto* out = static_cast<uint8_t*>(y.data);
      const std::size_t total = static_cast<std::size_t>(y.numel()) * es;
      if (total == 0) return Status::Ok();
      if (std::all_of(v.begin(), v.end(), [&](uint8_t b) { return b == v[0]; })) {
        std::memset(out, v[0], total);
        return Status::Ok();
      }
      std::memcpy(out, v.data(), es);
      for (std::size_t done = es; done < total; done *= 2) std::memcpy(out + done, out, std::min(done, total - done));
      return Status::Ok();
    }
    case Op::Expand: {
      auto st = broadcast_strides(in[0].shape, y.shape);
      strided_copy(static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(y.data), y.shape, st, 0, es);
      return Status::Ok();
    }
    case Op::Range: {
      const double start = read_scalar(in[0]), delta = read_scalar(in[2]);
      for (int64_t i = 0; i < y.numel(); ++i) {
        const double v = start + static_cast<double>(i) * delta;
        switch (y.dtype) {
          case DType::f32: y.as<float>()[i] = static_cast<float>(v); break;
          case DType::f64: y.as<double>()[i] = v; break;
          case DType::i32: y.as<int32_t>()[i] = static_cast<int32_t>(v); break;
          case DType::i64: y.as<int64_t>()[i] = static_cast<int64_t>(v); break;
          default: return Err("Range: unsupported type %s", ir::dtype_name(y.dtype));
        }
      }
      return Status::Ok();
    }
    default:
      return Err("no reference implementation for %s", ir::op_name(n.op));
  }
}

}  // namespace systolic::interp

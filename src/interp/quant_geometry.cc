// The quantization ops' input rules and output dtypes and shapes (ONNX opsets 10 to 18).
#include "interp/quant_geometry.h"

#include "interp/nn_geometry.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;
using ir::Shape;

const char* const kQuantizeNames[] = {"x", "y_scale", "y_zero_point"};
const char* const kDequantizeNames[] = {"x", "x_scale", "x_zero_point"};
const char* const kQConvNames[] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point",
                                   "y_scale", "y_zero_point", "B"};
const char* const kQMatMulNames[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                                     "y_scale", "y_zero_point"};
const char* const kConvIntegerNames[] = {"x", "w", "x_zero_point", "w_zero_point"};
const char* const kMatMulIntegerNames[] = {"A", "B", "a_zero_point", "b_zero_point"};

constexpr std::size_t kAbsent = ~std::size_t{0};  // an input the op does not have


bool is_q8(DType t) { return t == DType::u8 || t == DType::i8; }

// The checks every op makes, with its input names for the messages.
struct Check {
  const ir::Node& n;
  const std::vector<TensorRef>& in;
  const char* const* names;
  std::size_t count;

  const char* op() const { return ir::op_name(n.op); }
  const char* name(std::size_t i) const { return i < count ? names[i] : "extra"; }

  Status inputs(std::size_t required) const {
    if (in.size() > count)
      return Err("%s %s has %zu inputs; it takes at most %zu", op(), n.name.c_str(), in.size(), count);
    for (std::size_t i = 0; i < required; ++i)
      if (!present(in, i)) return Err("%s %s: input %s is missing", op(), n.name.c_str(), name(i));
    return Status::Ok();
  }
  Status q8(std::size_t i) const {
    if (!is_q8(in[i].dtype))
      return Err("%s %s: %s has type %s; uint8 or int8 is supported", op(), n.name.c_str(), name(i),
                 ir::dtype_name(in[i].dtype));
    return Status::Ok();
  }
  Status f32(std::size_t i) const {
    if (in[i].dtype != DType::f32)
      return Err("%s %s: %s has type %s; a float32 scale is supported", op(), n.name.c_str(), name(i),
                 ir::dtype_name(in[i].dtype));
    return Status::Ok();
  }
  // A zero point has the type of the tensor it belongs to.
  Status same_type(std::size_t zp, std::size_t of) const {
    if (present(in, zp) && in[zp].dtype != in[of].dtype)
      return Err("%s %s: %s has type %s, but %s has type %s; they must match", op(), n.name.c_str(), name(zp),
                 ir::dtype_name(in[zp].dtype), name(of), ir::dtype_name(in[of].dtype));
    return Status::Ok();
  }
  Status scalar(std::size_t i) const {
    if (present(in, i) && !per_tensor_shape(in[i].shape))
      return Err("%s %s: %s has shape %s; it must hold one value (per-tensor quantization)", op(), n.name.c_str(),
                 name(i), ir::shape_str(in[i].shape).c_str());
    return Status::Ok();
  }
  // Per tensor, or 1-D with one value per output channel.
  Status per_channel(std::size_t i, int64_t channels) const {
    if (!present(in, i) || per_tensor_shape(in[i].shape)) return Status::Ok();
    if (in[i].shape.size() != 1 || in[i].shape[0] != channels)
      return Err("%s %s: %s has shape %s; it must be a scalar or 1-D with one value per output channel (%lld)", op(),
                 n.name.c_str(), name(i), ir::shape_str(in[i].shape).c_str(), static_cast<long long>(channels));
    return Status::Ok();
  }
};

Status matmul_shape(const ir::Node& n, const Shape& a0, const Shape& b0, Shape* out) {
  Shape a = a0, b = b0;
  if (a.empty() || b.empty()) return Err("%s %s: scalar operands", ir::op_name(n.op), n.name.c_str());
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return Err("%s %s: inner dimensions of %s and %s differ", ir::op_name(n.op), n.name.c_str(),
               ir::shape_str(a0).c_str(), ir::shape_str(b0).c_str());
  auto batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  if (!batch.ok()) return Err("%s %s: %s", ir::op_name(n.op), n.name.c_str(), batch.status().message().c_str());
  *out = *batch;
  if (!a1) out->push_back(a[a.size() - 2]);
  if (!b1) out->push_back(b.back());
  return Status::Ok();
}

// Scale and zero point of one matmul operand: allowed shapes, and the same quantization.
Status matmul_pair(const Check& c, std::size_t operand, std::size_t scale, std::size_t zp, bool is_a) {
  Shape fs, fz;
  if (present(c.in, scale))
    SYSTOLIC_RETURN_IF_ERROR(matmul_quant_shape(c.n, c.name(scale), c.in[operand].shape, is_a, c.in[scale].shape, &fs));
  if (present(c.in, zp))
    SYSTOLIC_RETURN_IF_ERROR(matmul_quant_shape(c.n, c.name(zp), c.in[operand].shape, is_a, c.in[zp].shape, &fz));
  if (present(c.in, scale) && present(c.in, zp) && fs != fz)
    return Err("%s %s: %s %s and %s %s do not describe the same quantization", c.op(), c.n.name.c_str(),
               c.name(scale), ir::shape_str(c.in[scale].shape).c_str(), c.name(zp),
               ir::shape_str(c.in[zp].shape).c_str());
  return Status::Ok();
}

Status infer_conv(const Check& c, std::size_t x, std::size_t w, Shape* out, int64_t* oc) {
  kernels::ConvParams p;
  SYSTOLIC_RETURN_IF_ERROR(conv_geometry(c.n, c.in[x].shape, c.in[w].shape, &p));
  *oc = p.oc;
  *out = c.in[x].shape.size() == 3 ? Shape{c.in[x].shape[0], p.oc, p.ow} : Shape{c.in[x].shape[0], p.oc, p.oh, p.ow};
  return Status::Ok();
}

}  // namespace

bool is_quant_op(ir::Op op) {
  return op == Op::QuantizeLinear || op == Op::DequantizeLinear || op == Op::DynamicQuantizeLinear ||
         op == Op::QLinearConv || op == Op::QLinearMatMul || op == Op::ConvInteger || op == Op::MatMulInteger;
}

bool per_tensor_shape(const ir::Shape& s) { return s.empty() || (s.size() == 1 && s[0] == 1); }

Status linear_quant_axis(const ir::Node& n, const TensorRef& x, const TensorRef& scale, const TensorRef& zp,
                         int64_t* axis) {
  const char* op = ir::op_name(n.op);
  const bool has_zp = zp.dtype != DType::undefined;
  if (per_tensor_shape(scale.shape)) {
    if (has_zp && !per_tensor_shape(zp.shape))
      return Err("%s %s: the scale has one value but the zero point has shape %s", op, n.name.c_str(),
                 ir::shape_str(zp.shape).c_str());
    *axis = -1;
    return Status::Ok();
  }
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t a = n.i("axis", 1);
  if (a < -r || a >= r)
    return Err("%s %s: axis %lld is out of range for a rank-%lld input", op, n.name.c_str(),
               static_cast<long long>(a), static_cast<long long>(r));
  if (a < 0) a += r;
  if (scale.shape.size() != 1 || scale.shape[0] != x.shape[a])
    return Err("%s %s: the scale has shape %s; per-axis quantization along axis %lld of %s needs [%lld]", op,
               n.name.c_str(), ir::shape_str(scale.shape).c_str(), static_cast<long long>(a),
               ir::shape_str(x.shape).c_str(), static_cast<long long>(x.shape[a]));
  if (has_zp && zp.shape != scale.shape)
    return Err("%s %s: the zero point has shape %s and the scale %s; they must match", op, n.name.c_str(),
               ir::shape_str(zp.shape).c_str(), ir::shape_str(scale.shape).c_str());
  *axis = a;
  return Status::Ok();
}

Status matmul_quant_shape(const ir::Node& n, const char* what, const ir::Shape& operand, bool is_a,
                          const ir::Shape& param, ir::Shape* full) {
  Shape s = operand;
  if (s.size() == 1) {
    if (is_a) s.insert(s.begin(), 1);
    else s.push_back(1);
  }
  const std::size_t r = s.size();
  if (r < 2) return Err("%s %s: scalar operands", ir::op_name(n.op), n.name.c_str());
  // The dim the quantization may vary along: rows of A, columns of B.
  const std::size_t along = is_a ? r - 2 : r - 1;
  *full = Shape(r, 1);
  if (per_tensor_shape(param)) return Status::Ok();
  if (param.size() == 1 && param[0] == s[along]) {
    (*full)[along] = param[0];
    return Status::Ok();
  }
  bool ok = param.size() == r;
  for (std::size_t d = 0; ok && d < r; ++d) {
    const bool reduced = d == (is_a ? r - 1 : r - 2);  // K
    ok = param[d] == 1 || (!reduced && param[d] == s[d]);
  }
  if (!ok)
    return Err("%s %s: %s has shape %s; for %s %s it must be a scalar, %s", ir::op_name(n.op), n.name.c_str(), what,
               ir::shape_str(param).c_str(), is_a ? "A" : "B", ir::shape_str(operand).c_str(),
               is_a ? "[M] or [..., M, 1] (per row)" : "[N] or [..., 1, N] (per column)");
  *full = param;
  return Status::Ok();
}

Status infer_quant(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                   std::vector<ir::DType>* dtypes) {
  shapes->clear();
  dtypes->clear();
  const char* op = ir::op_name(n.op);
  switch (n.op) {
    case Op::QuantizeLinear: case Op::DequantizeLinear: {
      const bool q = n.op == Op::QuantizeLinear;
      const Check c{n, in, q ? kQuantizeNames : kDequantizeNames, 3};
      SYSTOLIC_RETURN_IF_ERROR(c.inputs(2));
      const DType xt = in[0].dtype;
      if (q ? (xt != DType::f32 && xt != DType::i32) : (!is_q8(xt) && xt != DType::i32))
        return Err("%s %s: x has type %s; %s is supported", op, n.name.c_str(), ir::dtype_name(xt),
                   q ? "float32 or int32" : "uint8, int8 or int32");
      SYSTOLIC_RETURN_IF_ERROR(c.f32(1));
      if (present(in, 2)) SYSTOLIC_RETURN_IF_ERROR(q ? c.q8(2) : c.same_type(2, 0));
      int64_t axis = -1;
      SYSTOLIC_RETURN_IF_ERROR(linear_quant_axis(n, in[0], in[1], present(in, 2) ? in[2] : TensorRef{}, &axis));
      if (!q && xt == DType::i32 && present(in, 2) && in[2].data) {
        for (int64_t i = 0; i < in[2].numel(); ++i)
          if (in[2].as<int32_t>()[i] != 0)
            return Err("DequantizeLinear %s: an int32 input's zero point must be 0", n.name.c_str());
      }
      shapes->push_back(in[0].shape);
      dtypes->push_back(q ? (present(in, 2) ? in[2].dtype : DType::u8) : DType::f32);
      return Status::Ok();
    }
    case Op::DynamicQuantizeLinear: {
      const char* const names[] = {"x"};
      const Check c{n, in, names, 1};
      SYSTOLIC_RETURN_IF_ERROR(c.inputs(1));
      if (in[0].dtype != DType::f32)
        return Err("%s %s: x has type %s; float32 is supported", op, n.name.c_str(), ir::dtype_name(in[0].dtype));
      *shapes = {in[0].shape, {}, {}};
      *dtypes = {DType::u8, DType::f32, DType::u8};
      return Status::Ok();
    }
    case Op::QLinearConv: case Op::ConvInteger: {
      const bool ql = n.op == Op::QLinearConv;
      const Check c{n, in, ql ? kQConvNames : kConvIntegerNames, ql ? 9u : 4u};
      SYSTOLIC_RETURN_IF_ERROR(c.inputs(ql ? 8 : 2));
      const std::size_t x = 0, xzp = 2, w = ql ? 3 : 1, wzp = ql ? 5 : 3;
      SYSTOLIC_RETURN_IF_ERROR(c.q8(x));
      SYSTOLIC_RETURN_IF_ERROR(c.q8(w));
      SYSTOLIC_RETURN_IF_ERROR(c.same_type(xzp, x));
      SYSTOLIC_RETURN_IF_ERROR(c.same_type(wzp, w));
      Shape out;
      int64_t oc = 0;
      SYSTOLIC_RETURN_IF_ERROR(infer_conv(c, x, w, &out, &oc));
      SYSTOLIC_RETURN_IF_ERROR(c.scalar(xzp));
      SYSTOLIC_RETURN_IF_ERROR(c.per_channel(wzp, oc));
      DType yt = DType::i32;
      if (ql) {
        for (std::size_t s : {1, 4, 6}) SYSTOLIC_RETURN_IF_ERROR(c.f32(s));
        SYSTOLIC_RETURN_IF_ERROR(c.scalar(1));
        SYSTOLIC_RETURN_IF_ERROR(c.per_channel(4, oc));
        SYSTOLIC_RETURN_IF_ERROR(c.scalar(6));
        SYSTOLIC_RETURN_IF_ERROR(c.q8(7));
        SYSTOLIC_RETURN_IF_ERROR(c.scalar(7));
        if (present(in, 8) && (in[8].dtype != DType::i32 || in[8].shape != Shape{oc}))
          return Err("QLinearConv %s: B is %s%s; it must be int32 [%lld]", n.name.c_str(), ir::dtype_name(in[8].dtype),
                     ir::shape_str(in[8].shape).c_str(), static_cast<long long>(oc));
        yt = in[7].dtype;
      }
      shapes->push_back(out);
      dtypes->push_back(yt);
      return Status::Ok();
    }
    case Op::QLinearMatMul: case Op::MatMulInteger: {
      const bool ql = n.op == Op::QLinearMatMul;
      const Check c{n, in, ql ? kQMatMulNames : kMatMulIntegerNames, ql ? 8u : 4u};
      SYSTOLIC_RETURN_IF_ERROR(c.inputs(ql ? 8 : 2));
      const std::size_t a = 0, b = ql ? 3 : 1, azp = 2, bzp = ql ? 5 : 3;
      SYSTOLIC_RETURN_IF_ERROR(c.q8(a));
      SYSTOLIC_RETURN_IF_ERROR(c.q8(b));
      SYSTOLIC_RETURN_IF_ERROR(c.same_type(azp, a));
      SYSTOLIC_RETURN_IF_ERROR(c.same_type(bzp, b));
      Shape out;
      SYSTOLIC_RETURN_IF_ERROR(matmul_shape(n, in[a].shape, in[b].shape, &out));
      DType yt = DType::i32;
      if (ql) {
        for (std::size_t s : {1, 4, 6}) SYSTOLIC_RETURN_IF_ERROR(c.f32(s));
        SYSTOLIC_RETURN_IF_ERROR(matmul_pair(c, a, 1, azp, true));
        SYSTOLIC_RETURN_IF_ERROR(matmul_pair(c, b, 4, bzp, false));
        SYSTOLIC_RETURN_IF_ERROR(c.scalar(6));
        SYSTOLIC_RETURN_IF_ERROR(c.q8(7));
        SYSTOLIC_RETURN_IF_ERROR(c.scalar(7));
        yt = in[7].dtype;
      } else {
        SYSTOLIC_RETURN_IF_ERROR(matmul_pair(c, a, kAbsent, azp, true));
        SYSTOLIC_RETURN_IF_ERROR(matmul_pair(c, b, kAbsent, bzp, false));
      }
      shapes->push_back(out);
      dtypes->push_back(yt);
      return Status::Ok();
    }
    default:
      return Err("%s %s is not a quantization op", op, n.name.c_str());
  }
}

}  // namespace systolic::interp

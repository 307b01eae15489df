// Dispatch of eval_node to the op families, and shared broadcasting helpers.
#include "interp/eval.h"

namespace systolic::interp {

Expected<ir::Shape> broadcast_shapes(const ir::Shape& a, const ir::Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  ir::Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return Err("shapes %s and %s do not broadcast", ir::shape_str(a).c_str(), ir::shape_str(b).c_str());
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const ir::Shape& s, const ir::Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t acc = 1;
  for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
    const std::size_t o = out.size() - s.size() + i;
    st[o] = s[i] == 1 ? 0 : acc;
    acc *= s[i];
  }
  return st;
}

std::vector<int64_t> read_ints(const TensorRef& t) {
  std::vector<int64_t> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == ir::DType::i64) v[i] = t.as<int64_t>()[i];
    else if (t.dtype == ir::DType::i32) v[i] = t.as<int32_t>()[i];
    else if (t.dtype == ir::DType::f32) {  // saturating: a cast past int64 (or of NaN) is undefined
      const float f = t.as<float>()[i];
      v[i] = f != f ? 0 : f >= 0x1p63f ? INT64_MAX : f < -0x1p63f ? INT64_MIN : static_cast<int64_t>(f);
    }
    else v[i] = 0;
  }
  return v;
}

double read_scalar(const TensorRef& t) {
  switch (t.dtype) {
    case ir::DType::f32: return t.as<float>()[0];
    case ir::DType::f64: return t.as<double>()[0];
    case ir::DType::i64: return static_cast<double>(t.as<int64_t>()[0]);
    case ir::DType::i32: return t.as<int32_t>()[0];
    case ir::DType::u8: case ir::DType::boolean: return t.as<uint8_t>()[0];
    case ir::DType::i8: return t.as<int8_t>()[0];
    default: return 0;
  }
}

namespace {

using ir::Op;

bool in_range(Op op, Op first, Op last) { return op >= first && op <= last; }

}  // namespace

InferFn family_infer(Op op) {
  if (in_range(op, Op::Erf, Op::CastLike) || op == Op::Gelu) return infer_math;
  if (in_range(op, Op::LayerNormalization, Op::NegativeLogLikelihoodLoss)) return infer_norm;
  if (in_range(op, Op::Trilu, Op::Unique)) return infer_index;
  if (in_range(op, Op::Resize, Op::NonMaxSuppression)) return infer_spatial;
  if (in_range(op, Op::RNN, Op::LSTM)) return infer_recurrent;
  return nullptr;
}

Status eval_node(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  if (in_range(n.op, Op::Erf, Op::CastLike) || n.op == Op::Gelu) return eval_math(n, in, out);
  if (in_range(n.op, Op::LayerNormalization, Op::NegativeLogLikelihoodLoss)) return eval_norm(n, in, out);
  if (in_range(n.op, Op::ReduceSum, Op::ArgMin)) return eval_reduce(n, in, out);
  if (in_range(n.op, Op::Trilu, Op::Unique)) return eval_index(n, in, out);
  if (in_range(n.op, Op::Resize, Op::NonMaxSuppression)) return eval_spatial(n, in, out);
  if (in_range(n.op, Op::RNN, Op::LSTM)) return eval_recurrent(n, in, out);
  switch (n.op) {
    case Op::Conv: case Op::BatchNormalization: case Op::MaxPool: case Op::AveragePool:
    case Op::GlobalAveragePool: case Op::GlobalMaxPool: case Op::Gemm: case Op::MatMul:
    case Op::Softmax: case Op::LRN:
      return eval_nn(n, in, out);
    case Op::ReduceMean: case Op::ReduceMin: case Op::ReduceMax:
      return eval_reduce(n, in, out);
    case Op::QuantizeLinear: case Op::DequantizeLinear: case Op::DynamicQuantizeLinear: case Op::QLinearConv:
    case Op::QLinearMatMul: case Op::ConvInteger: case Op::MatMulInteger:
      return eval_quant(n, in, out);
    case Op::Flatten: case Op::Reshape: case Op::Transpose: case Op::Squeeze: case Op::Unsqueeze:
    case Op::Concat: case Op::Split: case Op::Slice: case Op::Pad: case Op::Dropout:
    case Op::Identity: case Op::Shape: case Op::Gather: case Op::ConstantOfShape:
    case Op::Expand: case Op::Range: case Op::Reorder: case Op::ChannelShuffle:
      return eval_movement(n, in, out);
    case Op::NormalizeImage:
      return eval_image(n, in, out);
    case Op::Lut:
      return eval_lut(n, in, out);
    default:
      return eval_elementwise(n, in, out);
  }
}

}  // namespace systolic::interp

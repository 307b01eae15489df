// The reference interpreter: evaluates one IR node on plain (NCHW) tensors of any supported
// dtype. It is the oracle for whole models, constant folding's engine, and the runtime's
// fallback for ops without an optimized kernel.
#pragma once
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace systolic::interp {

struct TensorRef {
  ir::DType dtype = ir::DType::undefined;
  ir::Shape shape;
  void* data = nullptr;

  int64_t numel() const { return ir::num_elements(shape); }
  template <typename T>
  T* as() const { return static_cast<T*>(data); }
};

// Output refs come with shapes from shape inference and memory the caller owns.
Status eval_node(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);

// Families, one file each.
Status eval_elementwise(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status eval_movement(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status eval_nn(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status eval_image(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status eval_quant(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status eval_reduce(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status eval_lut(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
// A Lut node's table and its input and output grids (scale, zero point), or an error naming it.
Status lut_params(const ir::Node& n, std::vector<uint8_t>* table, float* sx, int32_t* zx, float* sy, int32_t* zy);

// The families beyond the CNN core (ops.inc lists which op belongs where). Each has a shape
// rule beside its kernels: infer_<family> sets one shape and dtype per output from the input
// refs, whose `data` is set only for constant inputs. An op or attribute combination a family
// does not handle is an error whose message contains "not supported" and names the node.
using InferFn = Status (*)(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                           std::vector<ir::DType>* types);
Status infer_math(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                  std::vector<ir::DType>* types);
Status eval_math(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status infer_norm(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                  std::vector<ir::DType>* types);
Status eval_norm(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status infer_index(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                   std::vector<ir::DType>* types);
Status eval_index(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status infer_spatial(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                     std::vector<ir::DType>* types);
Status eval_spatial(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
Status infer_recurrent(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                       std::vector<ir::DType>* types);
Status eval_recurrent(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out);
// NonMaxSuppression's selected (batch, class, box) triples, flat: its output's values and,
// by their count, its shape (the dynamic tail selects once instead of shaping, then evaluating).
Status nms_select(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<int64_t>* selected);
// The family shape rule for `op`, or nullptr for the core ops shape_inference handles itself.
InferFn family_infer(ir::Op op);

// The dims a Reduce* node reduces, given its axes (attribute, or input 1 from opset 18): the
// listed ones; none listed: all, or none with noop_with_empty_axes. Error for an axis out of range.
Status reduce_dims(const ir::Node& n, int64_t rank, const std::vector<int64_t>& axes, std::vector<char>* red);
ir::Shape reduced_shape(const ir::Shape& x, const std::vector<char>& red, bool keepdims);

// Numpy broadcasting of two shapes; error when incompatible.
Expected<ir::Shape> broadcast_shapes(const ir::Shape& a, const ir::Shape& b);
// Element strides of `s` seen as shape `out` (0 on broadcast dims); s right-aligned to out.
std::vector<int64_t> broadcast_strides(const ir::Shape& s, const ir::Shape& out);
// Whether optional input i was given (an omitted one has dtype undefined).
inline bool present(const std::vector<TensorRef>& in, std::size_t i) {
  return i < in.size() && in[i].dtype != ir::DType::undefined;
}
// Reads a constant/int tensor's values as int64 (int32 or int64 storage).
std::vector<int64_t> read_ints(const TensorRef& t);
double read_scalar(const TensorRef& t);

}  // namespace systolic::interp

namespace systolic::interp {
// Resolves Slice's (starts, ends, axes, steps) against `in` into per-dim start and step and
// the output shape, with ONNX's clamping rules.
Status slice_plan(const ir::Shape& in, const std::vector<int64_t>& starts,
                  const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                  const std::vector<int64_t>& steps, std::vector<int64_t>* start,
                  std::vector<int64_t>* step, ir::Shape* out);
}  // namespace systolic::interp

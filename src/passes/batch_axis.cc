// batch_axis: an analysis (the graph is left as it is). It proves that every node computes
// each item of the batch from that item alone — the batch is the leading dim of every
// activation and no node reads across it — so that a plan for batch B may run as B/m runs
// of the same network compiled for batch m (plan/compile.cc decides m). It also measures
// what one item's activations take (the working set that decides m) and a signature of the
// graph's shapes, which the compile at batch m must reproduce. Unknown ops are taken to mix
// the items: the analysis may refuse a separable model, never accept a mixing one.
#include <cstring>

#include "interp/eval.h"
#include "interp/nn_geometry.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::Op;

enum Tag : uint8_t { unknown, free_, items };  // free_: the same whatever the batch

// A constant's integer values (int64 or int32); false when `id` is not such a constant.
bool const_ints(const ir::Graph& g, int id, std::vector<int64_t>* out) {
  if (id < 0 || !g.t(id).is_const()) return false;
  const ir::Tensor& t = g.t(id);
  if (t.dtype != ir::DType::i64 && t.dtype != ir::DType::i32) return false;
  *out = interp::read_ints({t.dtype, t.shape, t.data->data()});
  return true;
}

// A constant whose leading dim is the batch and whose B slices are byte for byte the same
// (an exporter's expanded class token): each item sees the same values at any batch.
bool replicated_const(const ir::Tensor& t, int64_t batch) {
  if (!t.is_const() || t.shape.empty() || t.shape[0] != batch) return false;
  const std::size_t slice = t.bytes() / static_cast<std::size_t>(batch);
  const uint8_t* p = t.data->data();
  for (int64_t b = 1; b < batch; ++b)
    if (std::memcmp(p, p + b * slice, slice) != 0) return false;
  return true;
}

int64_t norm_axis(int64_t axis, std::size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

bool elementwise(Op op) {
  switch (op) {
    case Op::Relu: case Op::LeakyRelu: case Op::PRelu: case Op::Clip: case Op::Sigmoid: case Op::HardSigmoid:
    case Op::HardSwish: case Op::Silu: case Op::Tanh: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Dropout:
    case Op::Identity: case Op::Cast: case Op::CastLike: case Op::Neg: case Op::Exp: case Op::Sqrt: case Op::Abs:
    case Op::Equal: case Op::Where: case Op::Min: case Op::Max: case Op::Round: case Op::Erf: case Op::Pow:
    case Op::Reciprocal: case Op::Log: case Op::Floor: case Op::Ceil: case Op::Sign: case Op::Sin: case Op::Cos:
    case Op::Tan: case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh: case Op::Asinh:
    case Op::Acosh: case Op::Atanh: case Op::Softplus: case Op::Softsign: case Op::Elu: case Op::Selu: case Op::Celu:
    case Op::ThresholdedRelu: case Op::Shrink: case Op::Mish: case Op::Mod: case Op::IsNaN: case Op::IsInf:
    case Op::Not: case Op::And: case Op::Or: case Op::Xor: case Op::Greater: case Op::Less: case Op::GreaterOrEqual:
    case Op::LessOrEqual: case Op::BitShift: case Op::BitwiseAnd: case Op::BitwiseOr: case Op::BitwiseXor:
    case Op::BitwiseNot: case Op::Sum: case Op::Mean: case Op::Gelu: case Op::RoundBf16: case Op::NormalizeImage:
      return true;
    default: return false;
  }
}

// Ops that compute each item from its own slice when only input 0 carries the batch (the
// others are weights, shapes or parameters) and the leading dim stays the batch.
bool per_item_on_input0(Op op) {
  switch (op) {
    case Op::Conv: case Op::ConvTranspose: case Op::QLinearConv: case Op::ConvInteger: case Op::MaxPool:
    case Op::AveragePool: case Op::GlobalAveragePool: case Op::GlobalMaxPool: case Op::BatchNormalization:
    case Op::LRN: case Op::InstanceNormalization: case Op::GroupNormalization: case Op::DepthToSpace:
    case Op::SpaceToDepth: case Op::Reshape: case Op::Squeeze: case Op::Unsqueeze: case Op::Expand:
    case Op::Upsample: case Op::Tile:
      return true;
    default: return false;
  }
}

struct Analysis {
  const ir::Graph& g;
  int64_t batch;
  std::vector<Tag> tag;
  std::string why;

  Tag of(int id) const { return id < 0 ? free_ : tag[id]; }
  bool leads(int id) const { return id >= 0 && !g.t(id).shape.empty() && g.t(id).shape[0] == batch; }
  bool fail(const ir::Node& n, const char* what) {
    why = std::string(ir::op_name(n.op)) + " " + n.name + " " + what;
    return false;
  }

  // Batch-free operands broadcast over the batch: fewer dims, a leading dim of 1, or the
  // same values for every item.
  bool broadcasts(const ir::Node& n, std::size_t rank) {
    for (int id : n.inputs)
      if (id >= 0 && of(id) == free_ && g.t(id).shape.size() == rank && g.t(id).shape[0] != 1 &&
          !replicated_const(g.t(id), batch))
        return fail(n, "reads a batch-free operand whose leading dim is not 1");
    return true;
  }

  bool axis_not_0(const ir::Node& n, int64_t def, std::size_t rank) {
    return norm_axis(n.i("axis", def), rank) != 0 || fail(n, "works along the batch axis");
  }

  // Whether every item of n's outputs depends on that item of its inputs only.
  bool node(const ir::Node& n) {
    std::size_t batched = 0;
    for (int id : n.inputs) batched += of(id) == items;
    if (batched == 0) {
      for (int o : n.outputs)
        if (o >= 0) tag[o] = free_;
      return true;
    }
    const int in0 = n.in(0);
    const std::size_t rank = in0 >= 0 ? g.t(in0).shape.size() : 0;
    for (int id : n.inputs)
      if (of(id) == items && !leads(id)) return fail(n, "reads a tensor whose leading dim is not the batch");
    for (int o : n.outputs)
      if (o >= 0 && !leads(o)) return fail(n, "writes a tensor whose leading dim is not the batch");
    bool ok = true;
    if (elementwise(n.op)) {
      std::size_t out_rank = 0;
      for (int o : n.outputs)
        if (o >= 0) out_rank = std::max(out_rank, g.t(o).shape.size());
      for (int id : n.inputs)
        if (of(id) == items && g.t(id).shape.size() != out_rank) return fail(n, "broadcasts the batch into another dim");
      ok = broadcasts(n, out_rank);
    } else if (interp::pool_has_indices(n)) {
      return fail(n, "numbers its Indices output from the batch's first item");
    } else if (per_item_on_input0(n.op)) {
      if (of(in0) != items || batched != 1) return fail(n, "reads the batch in an operand other than its data");
      if (n.op == Op::Tile) {
        std::vector<int64_t> reps;
        if (!const_ints(g, n.in(1), &reps) || reps.empty() || reps[0] != 1) return fail(n, "repeats the batch");
      }
    } else {
      switch (n.op) {
        case Op::QuantizeLinear: case Op::DequantizeLinear:
          ok = batched == 1 && of(in0) == items && (g.t(n.in(1)).numel() == 1 || axis_not_0(n, 1, rank));
          break;
        case Op::Softmax: case Op::LogSoftmax: case Op::Hardmax:
          ok = axis_not_0(n, g.opset >= 13 ? -1 : 1, rank);
          break;
        case Op::LayerNormalization: ok = axis_not_0(n, -1, rank); break;
        case Op::Flatten: ok = axis_not_0(n, 1, rank); break;
        case Op::Concat: case Op::Split: case Op::TopK:
          ok = axis_not_0(n, n.op == Op::TopK ? -1 : 0, rank) && broadcasts(n, rank);
          if (ok && n.op == Op::Concat)
            for (int id : n.inputs)
              if (id >= 0 && of(id) == free_ && !replicated_const(g.t(id), batch))
                return fail(n, "joins batch-free values to the batch");
          break;
        case Op::Transpose: {
          const std::vector<int64_t> perm = n.ints("perm");
          ok = (!perm.empty() && perm[0] == 0) || fail(n, "moves the batch axis");
          break;
        }
        case Op::Gather:
          ok = (of(in0) == items && of(n.in(1)) == free_ && axis_not_0(n, 0, rank)) ||
               (of(in0) == free_ && norm_axis(n.i("axis", 0), rank) == 0) || fail(n, "gathers across the batch");
          break;
        case Op::Slice: {
          // Axis 0 may appear only as the whole range, in order.
          std::vector<int64_t> starts, axes, steps;
          if (!const_ints(g, n.in(1), &starts)) return fail(n, "has starts known only at run time");
          if (!const_ints(g, n.in(3), &axes)) {
            axes.clear();
            for (std::size_t a = 0; a < starts.size(); ++a) axes.push_back(static_cast<int64_t>(a));
          }
          if (n.in(4) >= 0 && !const_ints(g, n.in(4), &steps)) return fail(n, "has steps known only at run time");
          for (std::size_t a = 0; a < axes.size() && a < starts.size(); ++a)
            if (norm_axis(axes[a], rank) == 0 &&
                ((starts[a] != 0 && starts[a] > -batch) || (a < steps.size() && steps[a] != 1)))
              return fail(n, "slices the batch axis");
          ok = of(in0) == items && batched == 1;
          break;
        }
        case Op::Pad: {
          std::vector<int64_t> pads = n.ints("pads"), axes;
          if (n.in(1) >= 0 && !const_ints(g, n.in(1), &pads)) return fail(n, "has pads known only at run time");
          if (n.in(3) >= 0 && !const_ints(g, n.in(3), &axes)) return fail(n, "has axes known only at run time");
          const std::size_t k = axes.empty() ? rank : axes.size();
          if (pads.size() != 2 * k) return fail(n, "has pads of an unexpected length");
          for (std::size_t a = 0; a < k; ++a)
            if ((axes.empty() ? static_cast<int64_t>(a) : norm_axis(axes[a], rank)) == 0 && (pads[a] || pads[a + k]))
              return fail(n, "pads the batch axis");
          ok = of(in0) == items && batched == 1;
          break;
        }
        case Op::Resize:
          ok = of(in0) == items && batched == 1 && n.s("coordinate_transformation_mode", "") != "tf_crop_and_resize";
          break;
        case Op::ReduceMean: case Op::ReduceMin: case Op::ReduceMax: case Op::ReduceSum: case Op::ReduceProd:
        case Op::ReduceL1: case Op::ReduceL2: case Op::ReduceLogSum: case Op::ReduceLogSumExp:
        case Op::ReduceSumSquare: {
          std::vector<int64_t> axes = n.ints("axes");
          if (n.i("axes_as_input", 0) && n.in(1) >= 0 && !const_ints(g, n.in(1), &axes))
            return fail(n, "has axes known only at run time");
          if (axes.empty() && n.i("noop_with_empty_axes", 0) == 0) return fail(n, "reduces over the batch");
          for (int64_t a : axes)
            if (norm_axis(a, rank) == 0) return fail(n, "reduces over the batch");
          ok = batched == 1;
          break;
        }
        case Op::ArgMax: case Op::ArgMin: ok = axis_not_0(n, 0, rank); break;
        case Op::MatMul: case Op::QLinearMatMul: case Op::MatMulInteger: case Op::Gemm: {
          // Rows of A are items (batch-free B), or both are batched stacks of matrices.
          const int a = n.in(0);
          const int b = n.op == Op::QLinearMatMul ? n.in(3) : n.in(1);
          const std::size_t ra = g.t(a).shape.size(), rb = b >= 0 ? g.t(b).shape.size() : 0;
          if (n.op == Op::Gemm && (n.i("transA", 0) != 0 || of(a) != items))
            return fail(n, "reads the batch in a transposed or second operand");
          if (of(a) == items && of(b) == free_)  // stacks of B broadcast over A's leading dims
            ok = ra == 2 ? rb <= 2 : ra >= 3 && (rb < ra || g.t(b).shape[0] == 1);
          else if (of(a) == items && of(b) == items)
            ok = ra >= 3 && rb == ra;
          else
            ok = of(a) == free_ && rb >= 3 && (ra < rb || g.t(a).shape[0] == 1);
          if (ok && n.op == Op::Gemm && n.in(2) >= 0)  // C broadcasts over the rows
            ok = of(n.in(2)) == free_ && (g.t(n.in(2)).shape.size() < 2 || g.t(n.in(2)).shape[0] == 1);
          if (!ok) fail(n, "multiplies across the batch");
          break;
        }
        default: return fail(n, "may read across the batch's items (not analysed)");
      }
    }
    if (!ok) {
      if (why.empty()) fail(n, "reads the batch in more than one operand");
      return false;
    }
    for (int o : n.outputs)
      if (o >= 0) tag[o] = items;
    return true;
  }
};

// The graph's shapes in node order, the leading dim of each value computed from the inputs
// marked where it equals the batch: the same string at batch B and at a micro-batch m when
// the graph is the same network.
uint64_t shape_signature(const ir::Graph& g, int64_t batch) {
  std::vector<char> from_input(g.tensors.size(), 0);
  for (int id : g.inputs) from_input[id] = 1;
  std::string sig;
  for (const ir::Node& n : g.nodes) {
    bool live = false;
    for (int id : n.inputs) live = live || (id >= 0 && from_input[id]);
    sig += ir::op_name(n.op);
    for (int id : n.outputs) {
      if (id < 0) continue;
      from_input[id] = live;
      ir::Shape s = g.t(id).shape;
      if (live && !s.empty() && s[0] == batch) s[0] = -1;
      sig += ir::shape_str(s);
    }
  }
  return std::hash<std::string>{}(sig);
}

}  // namespace

Status batch_axis(ir::Graph& g, PassContext& ctx) {
  BatchSplit& r = ctx.batch_split;
  r = BatchSplit{};
  r.signature = shape_signature(g, ctx.batch);
  if (ctx.batch <= 1) {
    r.why = "batch 1";
    return Status::Ok();
  }
  if (ctx.tail) {
    r.why = "the plan has a dynamic tail";
    return Status::Ok();
  }
  Analysis a{g, ctx.batch, std::vector<Tag>(g.tensors.size(), unknown), {}};
  for (std::size_t id = 0; id < g.tensors.size(); ++id)
    if (g.t(static_cast<int>(id)).is_const()) a.tag[id] = free_;
  for (int id : g.inputs) {
    if (!a.leads(id)) {
      r.why = "input " + g.t(id).name + " " + ir::shape_str(g.t(id).shape) + " does not lead with the batch";
      return Status::Ok();
    }
    a.tag[id] = items;
  }
  int64_t item_bytes = 0;
  for (const ir::Node& n : g.nodes) {
    if (!a.node(n)) {
      r.why = a.why;
      return Status::Ok();
    }
    int64_t bytes = 0;
    for (const auto* ids : {&n.inputs, &n.outputs})
      for (int id : *ids)
        if (id >= 0 && a.tag[id] == items && !g.t(id).is_const()) bytes += static_cast<int64_t>(g.t(id).bytes());
    item_bytes = std::max(item_bytes, bytes / ctx.batch);
  }
  for (int id : g.outputs)
    if (a.tag[id] != items) {
      r.why = "output " + g.t(id).name + " does not carry the batch";
      return Status::Ok();
    }
  r.separable = true;
  r.item_bytes = item_bytes;
  return Status::Ok();
}

}  // namespace systolic::passes

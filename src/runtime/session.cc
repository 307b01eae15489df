// Session: prepares each step of the plan once (kernel, parameters, pointers into the arena
// and the packed weights) and runs them in order.
#include "runtime/session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/aligned_vector.h"
#include "interp/nn_geometry.h"
#include "kernels/bconv/bconv.h"
#include "passes/pattern.h"
#include "runtime/session_step.h"

namespace systolic::runtime {

namespace {

// Element-wise float ops the eltwise kernels run: a unary activation, or a binary op whose
// second operand has a's shape, is a scalar, or is per-channel ([C,1,1] / [1,C,1,1] / [N,C,1,1]).
// Sets which inputs are a and b; false sends the node to the interpreter.
bool eltwise_params(const ir::Graph& g, const ir::Node& n, kernels::EltwiseParams* p, int* a, int* b) {
  using ir::Op;
  for (int id : n.inputs)
    if (id >= 0 && g.t(id).dtype != ir::DType::f32) return false;
  if (n.outputs.size() != 1) return false;
  const ir::Tensor& y = g.t(n.outputs[0]);
  *p = kernels::EltwiseParams{};
  p->n = y.numel();
  if (passes::as_activation(g, n, &p->act.act, &p->act.a, &p->act.b) || n.op == Op::RoundBf16) {
    p->act.round_bf16 = n.op == Op::RoundBf16;  // a bf16 plan's rounding: no activation, then round
    *a = n.inputs[0];
    *b = -1;
    return true;
  }
  static const std::pair<Op, kernels::BinaryOp> kOps[] = {{Op::Add, kernels::BinaryOp::add},
                                                          {Op::Sub, kernels::BinaryOp::sub},
                                                          {Op::Mul, kernels::BinaryOp::mul},
                                                          {Op::Div, kernels::BinaryOp::div},
                                                          {Op::PRelu, kernels::BinaryOp::prelu}};
  bool found = false;
  for (const auto& [op, bop] : kOps)
    if (n.op == op) {
      p->op = bop;
      found = true;
    }
  if (!found || n.inputs.size() != 2) return false;
  p->binary = true;
  *a = n.inputs[0];
  *b = n.inputs[1];
  const bool commutative = n.op == Op::Add || n.op == Op::Mul;
  if (commutative && g.t(*a).shape != y.shape) std::swap(*a, *b);
  const ir::Tensor& ta = g.t(*a);
  const ir::Tensor& tb = g.t(*b);
  if (ta.shape != y.shape) return false;
  if (tb.shape == ta.shape && tb.layout == ta.layout) {
    p->b_mode = 0;
    return true;
  }
  if (tb.numel() == 1) {
    p->b_mode = 1;
    return true;
  }
  const ir::Shape& s = ta.shape;
  // [N,C,1,1] with N > 1 (a batch's squeeze-excitation gates): the same bytes in either layout.
  if (s.size() == 4 && s[0] > 1 && tb.shape == ir::Shape{s[0], s[1], 1, 1}) {
    const bool nhwc = ta.layout == ir::Layout::nhwc;
    p->channels = nhwc ? s[1] : s[0] * s[1];
    p->inner = s[2] * s[3];
    p->b_mode = nhwc ? 4 : 3;
    return true;
  }
  const bool per_channel = s.size() == 4 && tb.numel() == s[1] &&
                           (tb.shape == ir::Shape{s[1], 1, 1} || tb.shape == ir::Shape{1, s[1], 1, 1});
  if (!per_channel) return false;
  p->channels = s[1];
  p->inner = s[2] * s[3];
  p->b_mode = ta.layout == ir::Layout::nhwc ? 2 : 3;
  return true;
}

// A MatMul of two f32 activations in plain layout the matmul kernels run: 1-D operands as
// ONNX promotes them ([K] -> [1,K] for A, [K,1] for B), and batch dims that are equal or
// where one side has a single batch (stride 0). Other broadcasts stay in the interpreter.
bool matmul_params(const ir::Graph& g, const ir::Node& n, kernels::MatMulParams* p) {
  if (n.op != ir::Op::MatMul || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  for (int id : {n.inputs[0], n.inputs[1], n.outputs[0]})
    if (id < 0 || g.t(id).dtype != ir::DType::f32 || g.t(id).layout != ir::Layout::plain) return false;
  const ir::Tensor& ta = g.t(n.inputs[0]);
  const ir::Tensor& tb = g.t(n.inputs[1]);
  if (ta.is_const() || tb.is_const() || ta.shape.empty() || tb.shape.empty()) return false;
  ir::Shape a = ta.shape, b = tb.shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), nn = b.back();
  if (b[b.size() - 2] != k) return false;
  ir::Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const int64_t na = ir::num_elements(ba), nb = ir::num_elements(bb);
  while (ba.size() < bb.size()) ba.insert(ba.begin(), 1);
  while (bb.size() < ba.size()) bb.insert(bb.begin(), 1);
  if (na != 1 && nb != 1 && ba != bb) return false;
  const int64_t batch = std::max(na, nb);
  *p = kernels::matmul_dense(batch, m, nn, k, na == 1 && batch > 1, nb == 1 && batch > 1);
  return g.t(n.outputs[0]).numel() == batch * m * nn;
}

// Softmax over the last axis (either form: legacy_2d from the last axis is the same rows), or
// LayerNormalization over the last axis with one scale (and bias) value per column and only
// output 0: f32, plain layout.
bool norm_params(const ir::Graph& g, const ir::Node& n, kernels::NormParams* p) {
  const bool softmax = n.op == ir::Op::Softmax, ln = n.op == ir::Op::LayerNormalization;
  if (!(softmax || ln) || n.inputs.empty() || n.outputs.empty() || n.outputs[0] < 0) return false;
  for (std::size_t k = 1; k < n.outputs.size(); ++k)
    if (n.outputs[k] >= 0) return false;
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (x.dtype != ir::DType::f32 || y.dtype != ir::DType::f32 || x.layout != ir::Layout::plain ||
      y.layout != ir::Layout::plain || x.shape.empty() || x.shape != y.shape)
    return false;
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", -1);  // the interpreter's default in both ops
  if (axis < 0) axis += r;
  if (axis != r - 1) return false;
  *p = kernels::NormParams{};
  p->n = x.shape.back();
  p->rows = p->n > 0 ? x.numel() / p->n : 0;
  if (softmax) {
    p->kind = kernels::NormKind::softmax;
    return n.inputs.size() == 1;
  }
  p->kind = kernels::NormKind::layer_norm;
  p->epsilon = n.f("epsilon", 1e-5f);
  if (n.inputs.size() > 3 || n.in(1) < 0) return false;
  for (int id : {n.in(1), n.in(2)}) {
    if (id < 0) continue;
    const ir::Tensor& t = g.t(id);
    if (t.dtype != ir::DType::f32 || t.layout != ir::Layout::plain || t.shape.empty() || t.shape.back() != p->n ||
        t.numel() != p->n)
      return false;
  }
  return true;
}

ir::Shape physical(const ir::Tensor& t) {
  if (t.layout != ir::Layout::nhwc) return t.shape;
  return {t.shape[0], t.shape[2], t.shape[3], t.shape[1]};
}

// A Concat whose inputs and output share a type and layout, as row copies
// (kernels/reorder/concat.h): rows are the dimensions before the axis (physical: an NHWC
// channel Concat has a row per pixel), each input giving its axis length times the inner size.
bool concat_params(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  if (n.op != ir::Op::Concat || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty()) return false;
  const ir::Tensor& y = g.t(n.outputs[0]);
  for (int id : n.inputs)
    if (id < 0 || g.t(id).dtype != y.dtype || g.t(id).layout != y.layout || g.t(id).shape.size() != y.shape.size())
      return false;
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  int64_t axis = n.i("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  if (y.layout == ir::Layout::nhwc) {
    if (rank != 4 || axis != 1) return false;
    axis = 3;
  }
  const ir::Shape ys = physical(y);
  int64_t rows = 1, inner = 1, sum = 0;
  for (int64_t d = 0; d < axis; ++d) rows *= ys[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= ys[d];
  const int64_t es = static_cast<int64_t>(ir::dtype_size(y.dtype));
  st->cat_src.clear();
  st->cat_bytes.clear();
  for (int id : n.inputs) {
    const ir::Shape xs = physical(g.t(id));
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && xs[d] != ys[d]) return false;
    sum += xs[axis];
    st->cat_bytes.push_back(xs[axis] * inner * es);
    st->cat_src.push_back(at(id));
  }
  if (sum != ys[axis]) return false;
  st->count = rows;
  st->dst = static_cast<float*>(at(n.outputs[0]));
  return true;
}

// A Slice of one axis with constant bounds and step 1 as a row copy from one strided input
// (kernels/reorder/concat.h): on NHWC data only a channel Slice (its axis the physical last).
bool slice_params(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  if (n.op != ir::Op::Slice || n.i("_opset", 13) < 10 || n.inputs.size() < 4 || n.outputs.size() != 1 ||
      n.outputs[0] < 0 || n.inputs[0] < 0)
    return false;
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (x.dtype != y.dtype || x.layout != y.layout || x.shape.size() != y.shape.size()) return false;
  int64_t start, end, axis, step = 1;
  if (!passes::int_scalar_const(g, n.inputs[1], &start) || !passes::int_scalar_const(g, n.inputs[2], &end) ||
      !passes::int_scalar_const(g, n.inputs[3], &axis))
    return false;
  if (n.in(4) >= 0 && (!passes::int_scalar_const(g, n.in(4), &step) || step != 1)) return false;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  if (x.layout == ir::Layout::nhwc) {
    if (rank != 4 || axis != 1) return false;
    axis = 3;
  }
  const ir::Shape xs = physical(x), ys = physical(y);
  const int64_t dim = xs[axis];
  start = std::clamp<int64_t>(start < 0 ? start + dim : start, 0, dim);
  end = std::clamp<int64_t>(end < 0 ? end + dim : end, 0, dim);
  if (std::max<int64_t>(0, end - start) != ys[axis]) return false;
  int64_t rows = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && xs[d] != ys[d]) return false;
    if (d < axis) rows *= xs[d];
    if (d > axis) inner *= xs[d];
  }
  const int64_t es = static_cast<int64_t>(ir::dtype_size(x.dtype));
  st->cat_src = {static_cast<const uint8_t*>(at(n.inputs[0])) + start * inner * es};
  st->cat_bytes = {ys[axis] * inner * es};
  st->cat_strides = {dim * inner * es};
  st->count = rows;
  st->dst = static_cast<float*>(at(n.outputs[0]));
  return true;
}

// A ChannelShuffle as kernels/reorder/shuffle.h: a row per image (plain) or per pixel (NHWC);
// its groups are slices of its one input, or its inputs (the Concat it absorbed).
bool shuffle_params(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  if (n.op != ir::Op::ChannelShuffle || n.inputs.empty() || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const ir::Tensor& y = g.t(n.outputs[0]);
  const int64_t groups = n.i("group", 0), k = static_cast<int64_t>(n.inputs.size());
  if (y.shape.size() < 2 || groups < 1 || y.shape[1] % groups != 0 || (k != 1 && k != groups) ||
      (y.layout == ir::Layout::nhwc && y.shape.size() != 4))
    return false;
  ir::Shape part = y.shape;
  part[1] = y.shape[1] / k;
  for (int id : n.inputs)
    if (id < 0 || g.t(id).shape != part || g.t(id).dtype != y.dtype || g.t(id).layout != y.layout) return false;
  kernels::ShuffleParams& p = st->shuffle_p;
  p.groups = groups;
  p.cg = y.shape[1] / groups;
  p.elem = static_cast<int64_t>(ir::dtype_size(y.dtype));
  const int64_t spatial = y.numel() / std::max<int64_t>(1, y.shape[0] * y.shape[1]);
  p.rows = y.layout == ir::Layout::nhwc ? y.shape[0] * spatial : y.shape[0];
  p.inner = y.layout == ir::Layout::nhwc ? 1 : spatial;
  const int64_t group_bytes = p.cg * p.inner * p.elem;
  p.src_stride = k == 1 ? groups * group_bytes : group_bytes;
  st->cat_src.clear();
  for (int64_t i = 0; i < groups; ++i)
    st->cat_src.push_back(k == 1 ? static_cast<const uint8_t*>(at(n.inputs[0])) + i * group_bytes : at(n.inputs[i]));
  st->dst = static_cast<float*>(at(n.outputs[0]));
  return true;
}

}  // namespace

Session::~Session() {
  std::free(arena_);
  std::free(workspace_);
}

Expected<std::unique_ptr<Session>> Session::create(std::shared_ptr<const plan::Program> program,
                                                   const SessionOptions& opts) {
  SYSTOLIC_RETURN_IF_ERROR(plan::check_runnable(*program, host_cpu()));
  std::unique_ptr<Session> s(new Session());
  s->program_ = program;
  s->threads_ = opts.threads > 0 ? opts.threads : std::max(1, host_cpu().cores);
  s->pool_ = make_thread_pool(s->threads_);
  const ir::Graph& g = program->graph;
  const std::size_t arena_bytes = static_cast<std::size_t>(std::max<int64_t>(64, g.arena_bytes));
  std::size_t workspace = 0;
  // Refuse what cannot fit rather than let the kernel kill the process on first touch.
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (ram > 0 && static_cast<double>(arena_bytes) > ram)
    return Err("the plan needs %.1f GiB of activations; this machine has %.1f GiB", arena_bytes / 1073741824.0,
               ram / 1073741824.0);
  s->tail_max_bytes_ = opts.tail_max_bytes ? opts.tail_max_bytes
                                           : static_cast<std::size_t>(ram > 0 ? ram / 2 : 1e9);
  SYSTOLIC_RETURN_IF_ERROR(check_storage(g));
  s->arena_ = static_cast<uint8_t*>(alloc_aligned(arena_bytes));
  if (!s->arena_) return Err("cannot allocate the %zu-byte arena", arena_bytes);
  auto at = [&](int id) -> void* {
    if (id < 0) return nullptr;
    const ir::Tensor& t = g.t(id);
    if (t.is_const()) return const_cast<uint8_t*>(t.data->data());
    if (t.arena_offset < 0) return nullptr;
    return s->arena_ + t.arena_offset;
  };
  for (const ir::Node& n : g.nodes) {
    auto st = std::make_unique<Step>();
    st->node = n;
    st->op = n.op;
    auto kernel_it = n.attrs.find("kernel");
    const bool has_kernel = kernel_it != n.attrs.end();
    bool quantized = false;
    SYSTOLIC_RETURN_IF_ERROR(prepare_quantized_step(g, n, at, st.get(), &quantized, &workspace));
    if (quantized) {
      // int8 convolution, uint8 pool, or a per-tensor quantize / dequantize (session_quant.cc)
    } else if (n.op == ir::Op::Conv && has_kernel) {
      st->kind = Step::conv;
      st->conv_k = kernels::conv_find(kernel_it->second.str_v);
      if (!st->conv_k) st->conv_k = kernels::bconv_find(kernel_it->second.str_v);
      if (!interp::decode_conv_params(n.ints("conv_params"), &st->cp))
        return Err("plan is corrupt: conv %s lacks its parameters", n.name.c_str());
      // Tensors stored as bf16 (passes/store_bf16.cc): the bits must name exactly those.
      st->cp.bf16_io = static_cast<int>(n.i("bf16_io", 0));
      auto bf16_at = [&](int id, int bit) {
        return id < 0 || (g.t(id).dtype == ir::DType::bf16) == ((st->cp.bf16_io & bit) != 0);
      };
      if (!bf16_at(n.inputs[0], kernels::kBf16Src) || !bf16_at(n.outputs[0], kernels::kBf16Dst) ||
          !bf16_at(n.in(3), kernels::kBf16Res))
        return Err("plan is corrupt: conv %s: its bf16 storage bits disagree with its tensors", n.name.c_str());
      const kernels::ConvParams& p = st->cp;
      if (!st->conv_k) return Err("plan uses unknown kernel %s", kernel_it->second.str_v.c_str());
      std::string why;
      // The plan's kernel runs wherever the CPU can: vdpbf16ps was measured faster when it was
      // chosen, and a measurement here must not turn that into an error.
      CpuFeatures cpu = host_cpu();
      cpu.bf16_rate = {};
      if (!st->conv_k->accepts(p, cpu, &why))
        return Err("kernel %s cannot run conv %s here: %s; recompile the model", st->conv_k->name, n.name.c_str(), why.c_str());
      // The parameters must describe the tensors the plan gives the kernel.
      const int64_t out_n = int64_t{p.n} * p.oh * p.ow * p.oc;
      if (g.t(n.inputs[1]).numel() != static_cast<int64_t>(st->conv_k->packed_floats(p)) ||
          g.t(n.inputs[0]).numel() != int64_t{p.n} * p.ih * p.iw * p.ic || g.t(n.outputs[0]).numel() != out_n ||
          (n.in(2) >= 0 && g.t(n.in(2)).numel() != p.oc) || (n.in(3) >= 0 && g.t(n.in(3)).numel() != out_n))
        return Err("plan is corrupt: conv %s does not match its tensors", n.name.c_str());
      SYSTOLIC_RETURN_IF_ERROR(check_conv_step(g, n, p, p.src_u8 ? 1 : p.bf16_io & kernels::kBf16Src ? 2 : 4,
                                               p.bf16_io & kernels::kBf16Dst ? 2 : 4,
                                               p.bf16_io & kernels::kBf16Res ? 2 : 4));
      if (p.src_u8) {
        // The image's normalisation, folded in: offsets per input channel.
        auto off = st->node.attrs.find("src_offset");
        if (g.t(n.inputs[0]).dtype != ir::DType::u8 || off == st->node.attrs.end() ||
            off->second.floats_v.size() != static_cast<std::size_t>(p.ic))
          return Err("plan is corrupt: conv %s lacks its image offsets", n.name.c_str());
        st->ca.src_u8 = static_cast<const uint8_t*>(at(n.inputs[0]));
        st->ca.src_offset = off->second.floats_v.data();
      } else {
        st->ca.src = static_cast<const float*>(at(n.inputs[0]));
      }
      st->ca.weights = static_cast<const float*>(at(n.inputs[1]));
      st->ca.bias = static_cast<const float*>(at(n.in(2)));
      st->ca.residual = static_cast<const float*>(at(n.in(3)));
      st->ca.dst = static_cast<float*>(at(n.outputs[0]));
      st->ca.epilogue.act = static_cast<kernels::Act>(n.i("act", 0));
      st->ca.epilogue.a = n.f("act_a", 0.f);
      st->ca.epilogue.b = n.f("act_b", 0.f);
      st->ca.epilogue.round_bf16 = n.i("bf16_out", 0) != 0;  // bf16 plans (passes/lower_bf16.cc)
      workspace = std::max(workspace, st->conv_k->workspace_bytes(p));
      st->flops = 2.0 * p.n * p.oh * p.ow * p.oc * (p.ic / p.groups) * p.kh * p.kw;
    } else if (has_kernel) {
      st->kind = Step::pool;
      st->pool_k = kernels::pool_find(kernel_it->second.str_v);
      if (!st->pool_k) return Err("plan uses unknown kernel %s", kernel_it->second.str_v.c_str());
      SYSTOLIC_RETURN_IF_ERROR(interp::pool_geometry(n, g.t(n.inputs[0]).shape, &st->pp));
      SYSTOLIC_RETURN_IF_ERROR(check_pool_step(g, n, st->pp));
      // The pool kernels read and write 4-byte floats, or bf16 values where the plan stores
      // them (passes/store_bf16.cc): any other tensor would be misread or read past its end
      // (uint8 pools are prepare_quantized_step's).
      st->pp.bf16 = n.i("bf16_io", 0) != 0;
      const ir::DType storage = st->pp.bf16 ? ir::DType::bf16 : ir::DType::f32;
      for (int id : {n.inputs[0], n.outputs[0]})
        if (g.t(id).dtype != storage)
          return Err(st->pp.bf16 ? "plan is corrupt: pool %s: its bf16 storage bit disagrees with its %s tensors"
                                 : "plan is corrupt: pool %s runs a float kernel on %s data",
                     n.name.c_str(), ir::dtype_name(g.t(id).dtype));
      std::string why;
      if (!st->pool_k->accepts(st->pp, host_cpu(), &why))
        return Err("kernel %s cannot run pool %s here: %s; recompile the model", st->pool_k->name, n.name.c_str(),
                   why.c_str());
      st->src = static_cast<const float*>(at(n.inputs[0]));
      st->dst = static_cast<float*>(at(n.outputs[0]));
    } else if (n.op == ir::Op::Reorder && (g.t(n.inputs[0]).dtype == ir::DType::f32 || g.t(n.inputs[0]).dtype == ir::DType::u8)) {
      // A reorder keeps its logical NCHW shape and type; only the layout changes.
      if (n.outputs.size() != 1 || n.outputs[0] < 0 || g.t(n.inputs[0]).shape.size() != 4 ||
          g.t(n.outputs[0]).shape != g.t(n.inputs[0]).shape || g.t(n.outputs[0]).dtype != g.t(n.inputs[0]).dtype)
        return Err("plan is corrupt: Reorder %s needs one rank-4 output of its input's shape and type", n.name.c_str());
      st->kind = Step::reorder;
      st->count = static_cast<int64_t>(ir::dtype_size(g.t(n.inputs[0]).dtype));
      for (int d = 0; d < 4; ++d) st->dims[d] = g.t(n.outputs[0]).shape[d];
      st->to = static_cast<int>(n.i("to", 1));
      st->src = static_cast<const float*>(at(n.inputs[0]));
      st->dst = static_cast<float*>(at(n.outputs[0]));
    } else if (matmul_params(g, n, &st->mp) && (st->mm_k = kernels::matmul_select(st->mp, host_cpu()))) {
      st->kind = Step::matmul;
      st->src = static_cast<const float*>(at(n.inputs[0]));
      st->src_b = static_cast<const float*>(at(n.inputs[1]));
      st->dst = static_cast<float*>(at(n.outputs[0]));
      const kernels::MatMulParams& p = st->mp;
      st->flops = 2.0 * static_cast<double>(p.batch) * static_cast<double>(p.m) * static_cast<double>(p.n) *
                  static_cast<double>(p.k);
    } else if (norm_params(g, n, &st->np) && (st->norm_k = kernels::norm_select(st->np, host_cpu()))) {
      st->kind = Step::norm;
      st->src = static_cast<const float*>(at(n.inputs[0]));
      st->src_b = static_cast<const float*>(at(n.in(1)));
      st->src_c = static_cast<const float*>(at(n.in(2)));
      st->dst = static_cast<float*>(at(n.outputs[0]));
      // Per element: max, subtract, exp, add, scale (softmax); sum, subtract, square-add,
      // subtract, two multiplies, add (layer norm).
      const int per = st->np.kind == kernels::NormKind::softmax ? 5 : 7;
      st->flops = static_cast<double>(per) * static_cast<double>(st->np.rows) * static_cast<double>(st->np.n);
    } else if (int a = -1, b = -1; eltwise_params(g, n, &st->ep, &a, &b)) {
      st->kind = Step::eltwise;
      st->elt_k = kernels::eltwise_select(st->ep, host_cpu());
      st->src = static_cast<const float*>(at(a));
      st->src_b = static_cast<const float*>(at(b));
      st->dst = static_cast<float*>(at(n.outputs[0]));
    } else if (n.op == ir::Op::Transpose && n.i("nhwc_view", 0)) {
      // Bytes already in the wanted order (passes/layout_assignment.cc): the memory plan shares
      // them, else one copy.
      bool fits = n.inputs.size() == 1 && n.outputs.size() == 1 && n.inputs[0] >= 0 && n.outputs[0] >= 0;
      if (fits) {
        const ir::Tensor& x = g.t(n.inputs[0]);
        const ir::Tensor& y = g.t(n.outputs[0]);
        const ir::Shape& xs = x.shape;
        const std::vector<int64_t> perm = n.ints("perm");
        fits = x.dtype == y.dtype && xs.size() == 4 && y.shape.size() == 4 &&
               ((perm == std::vector<int64_t>{0, 2, 3, 1} && x.layout == ir::Layout::nhwc &&
                 y.layout == ir::Layout::plain && y.shape == ir::Shape{xs[0], xs[2], xs[3], xs[1]}) ||
                (perm == std::vector<int64_t>{0, 3, 1, 2} && x.layout == ir::Layout::plain &&
                 y.layout == ir::Layout::nhwc && y.shape == ir::Shape{xs[0], xs[3], xs[1], xs[2]}));
      }
      if (!fits) return Err("plan is inconsistent: Transpose view %s does not fit its tensors; recompile the model", n.name.c_str());
      st->kind = Step::concat;
      st->cat_src = {at(n.inputs[0])};
      st->cat_bytes = {static_cast<int64_t>(g.t(n.inputs[0]).bytes())};
      st->count = 1;
      st->dst = static_cast<float*>(at(n.outputs[0]));
    } else if (concat_params(g, n, at, st.get())) {
      st->kind = Step::concat;
    } else if (shuffle_params(g, n, at, st.get())) {
      st->kind = Step::shuffle;
    } else if (slice_params(g, n, at, st.get())) {
      st->kind = Step::concat;
    } else {
      st->kind = Step::interp;
      bool nhwc = false;
      for (int id : n.outputs) nhwc |= id >= 0 && g.t(id).layout == ir::Layout::nhwc;
      // The physical channel axis: Concat, Split and ChannelShuffle name it by attribute. A
      // channel Slice of NHWC data (constant bounds, step 1) ran as a row copy above: any other
      // Slice on NHWC data is not one layout_assignment makes.
      if (nhwc && n.op == ir::Op::Slice)
        return Err("plan is inconsistent: NHWC Slice %s is not a channel slice with constant bounds; recompile the model",
                   n.name.c_str());
      const bool channel_op = n.op == ir::Op::Concat || n.op == ir::Op::Split || n.op == ir::Op::ChannelShuffle;
      if (nhwc && channel_op) st->node.set_i("axis", 3);
      // The interpreter is index-blind to layouts: on NHWC data it may only see same-shape
      // operands (or a channel Concat). Anything else would be a silently wrong answer.
      // A Resize of H and W (passes/layout_assignment.cc) sees [N,H,W,C] and its scales or
      // sizes permuted alike.
      const bool nhwc_resize = nhwc && n.op == ir::Op::Resize && g.t(n.inputs[0]).layout == ir::Layout::nhwc;
      // A DCR DepthToSpace on NHWC is a transpose of the physical [N,H,W,b,b*C] to [N,H,b,W,b*C].
      const bool nhwc_d2s = nhwc && n.op == ir::Op::DepthToSpace && g.t(n.inputs[0]).layout == ir::Layout::nhwc;
      if (nhwc_d2s && n.s("mode", "DCR") != "DCR")
        return Err("plan is inconsistent: DepthToSpace %s in mode %s on NHWC data; recompile the model",
                   n.name.c_str(), n.s("mode", "DCR").c_str());
      // A Gather of whole items (axis 0) copies the same bytes in either layout.
      const bool nhwc_items = nhwc && n.op == ir::Op::Gather && n.i("axis", 0) == 0 && n.inputs.size() == 2 &&
                              g.t(n.inputs[0]).layout == ir::Layout::nhwc && g.t(n.inputs[1]).shape.size() == 1;
      for (int id : n.inputs)
        if (nhwc && n.op != ir::Op::Concat && !nhwc_resize && !nhwc_d2s && !nhwc_items && id >= 0 && g.t(id).numel() != 1 &&
            (g.t(id).shape != g.t(n.outputs[0]).shape || g.t(id).layout != ir::Layout::nhwc) &&
            !(n.op == ir::Op::Split && (id != n.inputs[0] || g.t(id).layout == ir::Layout::nhwc)))
          return Err("plan is inconsistent: %s %s mixes layouts; recompile the model", ir::op_name(n.op),
                     n.name.c_str());
      for (int id : n.inputs) {
        if (id < 0) {
          st->ins.push_back({});
          continue;
        }
        st->ins.push_back({g.t(id).dtype, nhwc ? physical(g.t(id)) : g.t(id).shape, at(id)});
      }
      for (int id : n.outputs) {
        if (id < 0) {
          st->outs.push_back({});
          continue;
        }
        st->outs.push_back({g.t(id).dtype, nhwc ? physical(g.t(id)) : g.t(id).shape, at(id)});
      }
      if (nhwc_d2s) {
        const ir::Shape& xs = g.t(n.inputs[0]).shape;  // logical [N, b*b*C, H, W]
        const int64_t b = n.i("blocksize", 0), N = xs.size() == 4 ? xs[0] : 0, H = xs.size() == 4 ? xs[2] : 0,
                      W = xs.size() == 4 ? xs[3] : 0;
        if (xs.size() != 4 || b <= 0 || xs[1] % (b * b) != 0 ||
            g.t(n.outputs[0]).shape != ir::Shape{N, xs[1] / (b * b), H * b, W * b})
          return Err("plan is inconsistent: DepthToSpace %s does not fit its shapes; recompile the model", n.name.c_str());
        const int64_t run = b * (xs[1] / (b * b));
        st->node = ir::Node{};
        st->node.op = ir::Op::Transpose;
        st->node.name = n.name;
        st->node.set_ints("perm", {0, 1, 3, 2, 4});
        st->ins[0].shape = {N, H, W, b, run};
        st->outs[0].shape = {N, H, b, W, run};
      }
      if (nhwc_resize) {
        st->ins[0].shape = physical(g.t(n.inputs[0]));
        const int scales = n.in(2), sizes = n.in(3);
        auto usable = [&](int id, ir::DType dt) {
          return id >= 0 && g.t(id).is_const() && g.t(id).dtype == dt && g.t(id).numel() == 4;
        };
        if (usable(scales, ir::DType::f32)) {
          const float* v = g.t(scales).as<float>();
          st->phys_scales = {v[0], v[2], v[3], v[1]};
          st->ins[2].data = st->phys_scales.data();
        } else if (usable(sizes, ir::DType::i64)) {
          const int64_t* v = g.t(sizes).as<int64_t>();
          st->phys_sizes = {v[0], v[2], v[3], v[1]};
          st->ins[3].data = st->phys_sizes.data();
        } else {
          return Err("plan is inconsistent: NHWC Resize %s has no 4-value scales or sizes; recompile the model",
                     n.name.c_str());
        }
      }
      if (n.op == ir::Op::Conv) {
        kernels::ConvParams p;
        kernels::VolumeConvParams v;
        const ir::Shape& xs = g.t(n.inputs[0]).shape;
        if (interp::is_volume(xs) && interp::conv_volume_geometry(n, xs, g.t(n.inputs[1]).shape, &v).ok()) {
          st->flops = 2.0 * v.n * v.oc * (v.ic / v.groups);
          for (const auto& d : v.dims) st->flops *= static_cast<double>(d.out) * d.k;
        } else if (interp::conv_geometry(n, xs, g.t(n.inputs[1]).shape, &p).ok()) {
          st->flops = 2.0 * p.n * p.oh * p.ow * p.oc * (p.ic / p.groups) * p.kh * p.kw;
        }
      }
      if ((n.op == ir::Op::RNN || n.op == ir::Op::GRU || n.op == ir::Op::LSTM) && n.inputs.size() >= 3 &&
          g.t(n.inputs[0]).shape.size() == 3 && g.t(n.inputs[2]).shape.size() == 3) {
        // The recurrence's products (h R^T per step, direction and item), and the input's
        // projection unless a MatMul before it computed it (passes/rnn_input_projection.cc).
        const ir::Shape &x = g.t(n.inputs[0]).shape, &r = g.t(n.inputs[2]).shape, &w = g.t(n.inputs[1]).shape;
        const double steps = static_cast<double>(x[0]) * static_cast<double>(x[1]);  // seq x batch
        const double per = static_cast<double>(r[0]) * static_cast<double>(r[1]) *
                           static_cast<double>(r[2] + (n.i("projected", 0) ? 0 : w[2]));
        st->flops = 2.0 * steps * per;
      }
    }
    for (int id : n.inputs) st->bytes += id >= 0 ? static_cast<int64_t>(g.t(id).bytes()) : 0;
    for (int id : n.outputs) st->bytes += id >= 0 ? static_cast<int64_t>(g.t(id).bytes()) : 0;
    s->flops_ += st->flops;
    s->steps_.push_back(std::move(st));
  }
  if (workspace > 0) {
    // One workspace serves every conv: steps run one at a time.
    float* ws = static_cast<float*>(std::aligned_alloc(64, (workspace + 63) / 64 * 64));
    if (!ws) return Err("cannot allocate the conv workspace");
    std::memset(ws, 0, (workspace + 63) / 64 * 64);
    s->workspace_ = ws;
    for (auto& st : s->steps_) {
      if (st->kind == Step::conv) st->ca.workspace = ws;
      if (st->kind == Step::qconv) st->qa.workspace = ws;
    }
  }
  // An image input is given as stored (NHWC); every other input in its logical shape.
  s->runs_ = plan::runs_per_batch(*program);
  if (s->runs_ < 1) return Err("plan is inconsistent: batch %lld, micro-batch %lld; recompile the model",
                               static_cast<long long>(program->batch), static_cast<long long>(program->micro_batch));
  if (s->runs_ > 1) {
    if (program->tail) return Err("plan is inconsistent: a plan with a dynamic tail runs its batch whole; recompile the model");
    for (const auto* ids : {&g.inputs, &g.outputs})
      for (int id : *ids)
        if (g.t(id).shape.empty() || g.t(id).shape[0] != program->micro_batch ||
            ir::checked_num_elements(plan::batch_shape(*program, g.t(id).shape)) < 0)
          return Err("plan is inconsistent: %s %s does not lead with its micro-batch %lld; recompile the model",
                     g.t(id).name.c_str(), ir::shape_str(g.t(id).shape).c_str(), static_cast<long long>(program->micro_batch));
    // The caller's buffers hold the whole batch: refuse what no machine here could give.
    double io = 0;
    for (const auto* ids : {&g.inputs, &g.outputs})
      for (int id : *ids) io += static_cast<double>(g.t(id).bytes()) * static_cast<double>(s->runs_);
    if (ram > 0 && io > ram)
      return Err("the plan's inputs and outputs take %.1f GiB for batch %lld; this machine has %.1f GiB", io / 1073741824.0,
                 static_cast<long long>(program->batch), ram / 1073741824.0);
    s->flops_ *= static_cast<double>(s->runs_);
  }
  for (int id : g.inputs)
    s->inputs_.push_back({g.t(id).name, g.t(id).dtype, plan::batch_shape(*program, physical(g.t(id)))});
  if (program->tail)
    for (int id : program->tail->inputs) {
      const std::string& name = program->tail->t(id).name;
      bool found = false;
      for (std::size_t k = 0; k < g.inputs.size() && !found; ++k)
        if (g.t(g.inputs[k]).name == name) s->tail_sources_.push_back({true, k}), found = true;
      for (std::size_t k = 0; k < g.outputs.size() && !found; ++k)
        if (g.t(g.outputs[k]).name == name) s->tail_sources_.push_back({false, k}), found = true;
      if (!found) return Err("plan is inconsistent: the dynamic tail reads %s, which nothing gives", name.c_str());
    }
  const ir::Graph& og = plan::output_graph(*program);
  for (int id : og.outputs)
    s->outputs_.push_back({og.t(id).name, og.t(id).dtype, plan::batch_shape(*program, plan::output_spec_shape(og.t(id)))});
  return s;
}

}  // namespace systolic::runtime

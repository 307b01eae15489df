// The dynamic tail's executor: a copy of the tail graph per run whose tensors all hold values,
// so shape inference treats every input as known and each node is shaped, then evaluated.
#include "runtime/dynamic_tail.h"

#include <cstring>
#include <memory>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/matmul/matmul.h"
#include "passes/pass.h"

namespace systolic::runtime {
namespace {

struct Value {
  ir::DType dtype = ir::DType::undefined;
  ir::Shape shape;
  std::shared_ptr<AlignedBytes> data;  // null: an omitted optional value
};

struct Budget {
  std::size_t left;
  pthreadpool_t pool;
  TailMemory* memory;                               // null: every buffer fresh
  const ir::Graph* graph = nullptr;                 // the graph as the plan holds it (run_graph's)
  std::vector<std::shared_ptr<AlignedBytes>> made;  // this run's, for `memory` afterwards

  // At least `bytes` (never a null pointer, so a tensor of no elements still counts as a value
  // for the shape rules, which treat a null pointer as "not known yet"): a kept buffer of at
  // most twice the size, else a new one.
  std::shared_ptr<AlignedBytes> buffer(std::size_t bytes) {
    const std::size_t need = std::max<std::size_t>(bytes, kCacheLine);
    std::shared_ptr<AlignedBytes> b;
    if (memory) {
      auto it = memory->free.lower_bound(need);
      if (it != memory->free.end() && it->first <= 2 * need) {
        b = std::move(it->second);
        memory->free.erase(it);
      }
    }
    if (!b) b = std::make_shared<AlignedBytes>(need);
    if (memory) made.push_back(b);
    return b;
  }
};

// Gemm(A, W[, bias]) with constant float weights as a 1x1 conv over A's M rows (NHWC with
// H = W = 1: A and Y as they are), on a conv kernel and weights packed on first use. Faster
// R-CNN's box head (150 proposals x 12544 x 1024) took seconds on the reference loop and
// 44 ms on the matrix kernels, which stream the 51 MB of weights once per block of rows.
bool gemm_on_conv(const ir::Node& orig, const ir::Node& n, const std::vector<interp::TensorRef>& in,
                  const interp::TensorRef& y, Budget& budget) {
  using ir::DType;
  if (!budget.memory || n.op != ir::Op::Gemm || n.i("transA", 0) || n.f("alpha", 1.f) != 1.f || in.size() < 2 ||
      y.dtype != DType::f32 || orig.inputs.size() < 2 || orig.inputs[1] < 0)
    return false;
  const ir::Tensor& w = budget.graph->t(orig.inputs[1]);  // as the plan holds it: constant or not
  if (!w.is_const() || w.dtype != DType::f32 || w.shape.size() != 2) return false;
  const bool tb = n.i("transB", 0) != 0;
  const ir::Shape& as = in[0].shape;
  const int64_t N = tb ? w.shape[0] : w.shape[1], K = tb ? w.shape[1] : w.shape[0];
  if (in[0].dtype != DType::f32 || as.size() != 2 || as[1] != K || y.shape != ir::Shape{as[0], N}) return false;
  const bool has_bias = in.size() > 2 && in[2].data;
  if (has_bias && (in[2].dtype != DType::f32 || in[2].numel() != N || n.f("beta", 1.f) != 1.f ||
                   (in[2].shape.size() == 2 && in[2].shape[0] != 1)))
    return false;
  constexpr int64_t kMaxInt = 1 << 30;
  if (as[0] > kMaxInt || N > kMaxInt || K > kMaxInt) return false;
  kernels::ConvParams p;
  p.ic = static_cast<int>(K);
  p.oc = static_cast<int>(N);
  TailMemory::PackedGemm& pk = budget.memory->gemms[&orig];
  if (pk.weights.empty() && !pk.kernel) {  // first use: pick the kernel for a typical M, pack
    p.n = 64;
    pk.kernel = kernels::conv_select(p, host_cpu());
    if (pk.kernel) {
      std::vector<float> oihw;
      const float* src = w.as<float>();
      if (!tb) {  // stored [K, N]: the conv wants [N, K]
        oihw.resize(static_cast<std::size_t>(N * K));
        for (int64_t k = 0; k < K; ++k)
          for (int64_t j = 0; j < N; ++j) oihw[j * K + k] = src[k * N + j];
        src = oihw.data();
      }
      pk.weights.resize(pk.kernel->packed_floats(p));
      pk.kernel->pack(p, src, pk.weights.data());
    }
  }
  p.n = static_cast<int>(as[0]);
  std::string why;
  if (!pk.kernel || p.n == 0 || !pk.kernel->accepts(p, host_cpu(), &why)) return false;
  kernels::ConvArgs a;
  a.src = in[0].as<float>();
  a.weights = pk.weights.data();
  a.bias = has_bias ? in[2].as<float>() : nullptr;
  a.dst = y.as<float>();
  const std::size_t ws = pk.kernel->workspace_bytes(p);
  std::shared_ptr<AlignedBytes> wsb;
  if (ws) {
    wsb = budget.buffer(ws);
    a.workspace = reinterpret_cast<float*>(wsb->data());
  }
  pk.kernel->run(p, a, budget.pool);
  return true;
}

// RoiAlign split by rois over the pool: every roi's output is computed from its own box alone,
// so each thread evaluates a slice of rois (and batch indices) into its slice of the output.
// Faster R-CNN pools 150 rois x 256 channels at 7x7 with 2x2 samples each on one thread.
bool roi_align_split(const ir::Node& n, const std::vector<interp::TensorRef>& in, const interp::TensorRef& y,
                     pthreadpool_t pool, Status* st) {
  const std::size_t threads = pool ? pthreadpool_get_threads_count(pool) : 1;
  if (n.op != ir::Op::RoiAlign || threads < 2 || in.size() < 3 || in[1].shape.size() != 2 || in[2].shape.size() != 1 ||
      y.shape.size() != 4 || in[1].shape[0] != y.shape[0] || in[2].shape[0] != y.shape[0] || y.shape[0] < 2)
    return false;
  const int64_t R = y.shape[0], per = (R + static_cast<int64_t>(threads) - 1) / static_cast<int64_t>(threads);
  const int64_t chunks = (R + per - 1) / per;
  std::vector<Status> status(static_cast<std::size_t>(chunks));
  auto slice = [](const interp::TensorRef& t, int64_t r0, int64_t r1) {
    interp::TensorRef s = t;
    s.shape[0] = r1 - r0;
    const int64_t row = ir::num_elements(t.shape) / t.shape[0] * static_cast<int64_t>(ir::dtype_size(t.dtype));
    s.data = static_cast<uint8_t*>(t.data) + r0 * row;
    return s;
  };
  auto body = [&](std::size_t c) {
    const int64_t r0 = static_cast<int64_t>(c) * per, r1 = std::min(R, r0 + per);
    std::vector<interp::TensorRef> part = in;
    part[1] = slice(in[1], r0, r1);
    part[2] = slice(in[2], r0, r1);
    status[c] = interp::eval_node(n, part, {slice(y, r0, r1)});
  };
  pthreadpool_parallelize_1d(pool, body, static_cast<std::size_t>(chunks), kPoolFlags);
  *st = Status::Ok();
  for (const Status& s : status)
    if (!s.ok()) *st = s;
  return true;
}

// Gemm(A, B[, C]) of float matrices, neither transposed, on the matrix kernels (B computed at
// run time). false: not this form (the interpreter runs it).
bool gemm_on_kernels(const ir::Node& n, const std::vector<interp::TensorRef>& in, const interp::TensorRef& y,
                     pthreadpool_t pool) {
  using ir::DType;
  if (n.op != ir::Op::Gemm || n.i("transA", 0) || n.i("transB", 0) || in.size() < 2 || y.dtype != DType::f32) return false;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i].data && in[i].dtype != DType::f32) return false;
  const ir::Shape &as = in[0].shape, &bs = in[1].shape;
  if (as.size() != 2 || bs.size() != 2 || as[1] != bs[0] || y.shape != ir::Shape{as[0], bs[1]}) return false;
  const kernels::MatMulParams p = kernels::matmul_dense(1, as[0], bs[1], as[1]);
  const kernels::MatMulKernel* k = kernels::matmul_select(p, host_cpu());
  if (!k) return false;
  float* out = y.as<float>();
  k->run(p, in[0].as<float>(), in[1].as<float>(), out, pool);
  const float alpha = n.f("alpha", 1.f), beta = n.f("beta", 1.f);
  const bool bias = in.size() > 2 && in[2].data;
  const std::vector<int64_t> cs = bias ? interp::broadcast_strides(in[2].shape, y.shape) : std::vector<int64_t>{0, 0};
  if (alpha == 1.f && !bias) return true;
  for (int64_t m = 0; m < as[0]; ++m)
    for (int64_t j = 0; j < bs[1]; ++j) {
      float& v = out[m * bs[1] + j];
      v = alpha * v + (bias ? beta * in[2].as<float>()[m * cs[0] + j * cs[1]] : 0.f);
    }
  return true;
}

Status run_graph(const ir::Graph& sub, const std::vector<Value>& args, int depth, Budget& budget,
                 std::vector<Value>* results) {
  if (args.size() != sub.inputs.size())
    return Err("the graph takes %zu values, %zu given", sub.inputs.size(), args.size());
  ir::Graph g = sub;  // constants share their bytes
  const ir::Graph* outer = budget.graph;
  budget.graph = &sub;
  struct Restore {
    Budget& b;
    const ir::Graph* g;
    ~Restore() { b.graph = g; }
  } restore{budget, outer};
  for (std::size_t k = 0; k < args.size(); ++k) {
    ir::Tensor& t = g.t(g.inputs[k]);
    t.dtype = args[k].dtype;
    t.shape = args[k].shape;
    t.shape_known = true;
    t.data = args[k].data;
  }
  for (ir::Node& n : g.nodes) {
    for (int id : n.inputs)
      if (id >= 0 && !g.t(id).data) return Err("%s %s: input %s has no value", ir::op_name(n.op), n.name.c_str(), g.t(id).name.c_str());
    if (n.op == ir::Op::If) {
      if (n.inputs.empty() || n.inputs[0] < 0) return Err("If %s: the condition is missing", n.name.c_str());
      const ir::Tensor& c = g.t(n.inputs[0]);
      if (c.numel() != 1 || (c.dtype != ir::DType::boolean && c.dtype != ir::DType::u8))
        return Err("If %s: the condition must be one bool, got %s%s", n.name.c_str(), ir::dtype_name(c.dtype),
                   ir::shape_str(c.shape).c_str());
      const bool cond = c.data->data()[0] != 0;
      auto it = n.attrs.find(cond ? "then_branch" : "else_branch");
      if (it == n.attrs.end() || !it->second.graph_v) return Err("If %s: a branch is missing", n.name.c_str());
      if (depth >= 16) return Err("If %s: branches nested too deep", n.name.c_str());
      std::vector<Value> in, out;
      for (std::size_t i = 1; i < n.inputs.size(); ++i) {
        if (n.inputs[i] < 0) {  // a malformed plan's: the branch fails if it reads it
          in.push_back({});
          continue;
        }
        const ir::Tensor& t = g.t(n.inputs[i]);
        in.push_back({t.dtype, t.shape, t.data});
      }
      Status st = run_graph(*it->second.graph_v, in, depth + 1, budget, &out);
      if (!st.ok()) return Err("If %s (%s branch): %s", n.name.c_str(), cond ? "then" : "else", st.message().c_str());
      if (out.size() != n.outputs.size())
        return Err("If %s: the branch gives %zu values, the node has %zu outputs", n.name.c_str(), out.size(),
                   n.outputs.size());
      for (std::size_t k = 0; k < out.size(); ++k) {
        if (n.outputs[k] < 0) continue;
        ir::Tensor& t = g.t(n.outputs[k]);
        t.dtype = out[k].dtype;
        t.shape = out[k].shape;
        t.shape_known = true;
        t.data = out[k].data;
      }
      continue;
    }
    std::vector<interp::TensorRef> ins, outs;
    for (int id : n.inputs) {
      if (id < 0) ins.push_back({});
      else ins.push_back({g.t(id).dtype, g.t(id).shape, g.t(id).data->data()});
    }
    if (n.op == ir::Op::NonMaxSuppression && !n.outputs.empty() && n.outputs[0] >= 0) {
      // Selecting is the shape rule: once, not once to shape and again to evaluate.
      std::vector<int64_t> sel;
      SYSTOLIC_RETURN_IF_ERROR(interp::nms_select(n, ins, &sel));
      ir::Tensor& t = g.t(n.outputs[0]);
      t.dtype = ir::DType::i64;
      t.shape = {static_cast<int64_t>(sel.size() / 3), 3};
      t.shape_known = true;
      if (t.bytes() > budget.left) return Err("NonMaxSuppression %s: its selection passes the memory the dynamic tail may use", n.name.c_str());
      budget.left -= t.bytes();
      t.data = budget.buffer(t.bytes());
      if (!sel.empty()) std::memcpy(t.data->data(), sel.data(), t.bytes());
      continue;
    }
    SYSTOLIC_RETURN_IF_ERROR(passes::infer_node(g, n));
    std::vector<std::shared_ptr<AlignedBytes>> bufs;
    for (int id : n.outputs) {
      if (id < 0) {
        outs.push_back({});
        bufs.push_back(nullptr);
        continue;
      }
      ir::Tensor& t = g.t(id);
      if (ir::checked_num_elements(t.shape) < 0)
        return Err("%s %s: output %s would have shape %s", ir::op_name(n.op), n.name.c_str(), t.name.c_str(),
                   ir::shape_str(t.shape).c_str());
      if (t.bytes() > budget.left)
        return Err("%s %s: output %s of shape %s passes the memory the dynamic tail may use", ir::op_name(n.op),
                   n.name.c_str(), t.name.c_str(), ir::shape_str(t.shape).c_str());
      budget.left -= t.bytes();
      bufs.push_back(budget.buffer(t.bytes()));
      outs.push_back({t.dtype, t.shape, bufs.back()->data()});
    }
    if (outs.size() == 1 && (gemm_on_conv(sub.nodes[static_cast<std::size_t>(&n - g.nodes.data())], n, ins, outs[0], budget) ||
                             gemm_on_kernels(n, ins, outs[0], budget.pool))) {
      g.t(n.outputs[0]).data = bufs[0];
      continue;
    }
    Status st;
    if (!(outs.size() == 1 && roi_align_split(n, ins, outs[0], budget.pool, &st))) st = interp::eval_node(n, ins, outs);
    if (!st.ok()) return st;
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] >= 0) g.t(n.outputs[k]).data = bufs[k];
  }
  results->clear();
  for (int id : g.outputs) {
    const ir::Tensor& t = g.t(id);
    if (!t.data) return Err("output %s has no value", t.name.c_str());
    results->push_back({t.dtype, t.shape, t.data});
  }
  return Status::Ok();
}

}  // namespace

Status run_tail(const ir::Graph& tail, const std::vector<interp::TensorRef>& inputs, std::vector<HostTensor>* outputs,
                std::size_t max_bytes, pthreadpool_t pool, TailMemory* memory) {
  Budget budget{max_bytes, pool, memory, &tail, {}};
  std::vector<Value> args;
  for (const interp::TensorRef& r : inputs) {
    Value v{r.dtype, r.shape, nullptr};
    const int64_t n = ir::checked_num_elements(r.shape);
    if (n < 0) return Err("a tail input has shape %s", ir::shape_str(r.shape).c_str());
    const std::size_t bytes = static_cast<std::size_t>(n) * ir::dtype_size(r.dtype);
    if (bytes > budget.left) return Err("the dynamic tail's inputs pass the memory the dynamic tail may use");
    budget.left -= bytes;
    v.data = budget.buffer(bytes);
    if (bytes) std::memcpy(v.data->data(), r.data, bytes);
    args.push_back(std::move(v));
  }
  std::vector<Value> res;
  Status st = run_graph(tail, args, 0, budget, &res);
  if (st.ok()) {
    outputs->resize(res.size());
    for (std::size_t k = 0; k < res.size(); ++k) {
      HostTensor& o = (*outputs)[k];
      o.dtype = res[k].dtype;
      o.shape = res[k].shape;
      const std::size_t bytes = static_cast<std::size_t>(ir::num_elements(o.shape)) * ir::dtype_size(o.dtype);
      o.data.assign(res[k].data->begin(), res[k].data->begin() + static_cast<std::ptrdiff_t>(bytes));
    }
  }
  res.clear();
  args.clear();
  if (memory)
    for (auto& b : budget.made) memory->free.emplace(b->size(), std::move(b));
  return st;
}

}  // namespace systolic::runtime

// compile(): the pass pipeline plus the statistics `systolic compile` reports.
#include <chrono>

#include "kernels/bconv/bconv.h"
#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"
#include "kernels/qconv/qconv.h"
#include "kernels/qpool/qpool.h"
#include "plan/program.h"

namespace systolic::plan {

std::string isa_name(const CpuFeatures& cpu) {
  if (cpu.amx_tile) return "amx";
  if (cpu.has_avx512()) return "avx512";
  if (cpu.has_avx2_fma()) return "avx2";
  return "ref";
}

bool is_quantized_model(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes)
    switch (n.op) {
      case ir::Op::QuantizeLinear: case ir::Op::DequantizeLinear: case ir::Op::QLinearConv:
      case ir::Op::QLinearMatMul: case ir::Op::ConvInteger: case ir::Op::MatMulInteger:
        return true;
      default: break;
    }
  return false;
}

bool has_quantized_convs(const ir::Graph& g) {
  const std::vector<int> producers = g.producers();
  for (const ir::Node& n : g.nodes) {
    if (n.op == ir::Op::QLinearConv || n.op == ir::Op::ConvInteger) return true;
    if (n.op == ir::Op::Conv && n.in(1) >= 0) {
      const int p = producers[n.in(1)];
      if (p >= 0 && g.nodes[p].op == ir::Op::DequantizeLinear) return true;
    }
  }
  return false;
}

namespace {

// Drops tensors no node, input or output refers to (the weights that folding and packing
// replaced), so the program and its file carry each weight once.
void compact_tensors(ir::Graph& g) {
  std::vector<int> remap(g.tensors.size(), -1);
  std::vector<ir::Tensor> kept;
  auto use = [&](int id) {
    if (id < 0) return id;
    if (remap[id] < 0) {
      remap[id] = static_cast<int>(kept.size());
      kept.push_back(std::move(g.tensors[id]));
    }
    return remap[id];
  };
  for (int& id : g.inputs) id = use(id);
  for (ir::Node& n : g.nodes) {
    for (int& id : n.inputs) id = use(id);
    for (int& id : n.outputs) id = use(id);
  }
  for (int& id : g.outputs) id = use(id);
  g.tensors = std::move(kept);
}

// What the matrix kernels compute in: int8 for a quantized model when asked to choose.
passes::Precision plan_precision(const ir::Graph& graph, const CompileOptions& opts) {
  if (!opts.optimize) return passes::Precision::fp32;
  return opts.precision_auto && has_quantized_convs(graph) ? passes::Precision::int8 : opts.precision;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A virtual machine sees its host's whole L3 but shares it with the host's other cores: a 2-core
// Xeon slice reports 480 MB. At most kL3PerCore of it counts per core this process sees; there,
// ResNet-50 at batch 16 ran bf16 6-10% faster in micro-batches of 4-8 than whole, fp32 level
// (387 against 400 ms, medians of 3), int8 (a quarter of the bytes) still whole.
constexpr double kL3PerCore = 32.0 * 1024 * 1024;

double cache_budget(const CpuFeatures& cpu) {
  const int cores = std::max(1, cpu.cores);
  const double l3 = std::min(static_cast<double>(cpu.l3_bytes), kL3PerCore * cores);
  return static_cast<double>(cpu.l2_bytes) * cores + 0.6 * l3;
}

// The context every pipeline run of one compile starts from, for a graph of batch `batch`
// (bound input shapes lead with it).
passes::PassContext base_context(const ir::Graph& graph, const CompileOptions& opts, int64_t batch) {
  passes::PassContext ctx;
  ctx.cpu = opts.cpu_set ? opts.cpu : host_cpu();
  ctx.batch = batch;
  ctx.input_shapes = opts.input_shapes;
  for (auto& [name, shape] : ctx.input_shapes)
    if (!shape.empty() && shape[0] == opts.batch) shape[0] = batch;
  ctx.optimize = opts.optimize;
  ctx.preprocess = opts.preprocess;
  // Constant folding keeps an int8 plan's weight DequantizeLinear nodes: the precision is
  // part of what the early passes see.
  ctx.precision = plan_precision(graph, opts);
  return ctx;
}

// The whole pipeline for a graph of batch `batch` (opts.batch or a micro-batch of it).
Expected<std::shared_ptr<Program>> compile_at(ir::Graph graph, const CompileOptions& opts, int64_t batch,
                                              const std::function<void(const char*, const ir::Graph&)>& after_pass,
                                              passes::BatchSplit* split) {
  auto p = std::make_shared<Program>();
  p->stats.nodes_before = static_cast<int64_t>(graph.nodes.size());
  passes::PassContext ctx = base_context(graph, opts, batch);
  ctx.activation_quant = opts.activation_quant.get();
  ctx.keep_fp32 = opts.keep_fp32;
  ctx.fuse_residual = opts.fuse_residual;
  SYSTOLIC_RETURN_IF_ERROR(passes::run_pipeline(graph, ctx, after_pass));
  compact_tensors(graph);
  p->stats.nodes_after = static_cast<int64_t>(graph.nodes.size());
  p->stats.arena_bytes = graph.arena_bytes;
  std::vector<char> seen(graph.tensors.size(), 0);
  for (const ir::Node& n : graph.nodes) {
    for (int o : n.outputs)
      if (o >= 0 && !seen[o]) {
        seen[o] = 1;
        p->stats.naive_bytes += static_cast<int64_t>(graph.t(o).bytes());
      }
    for (int in : n.inputs)
      if (in >= 0 && graph.t(in).is_const() && !seen[in]) {
        seen[in] = 1;
        p->stats.weight_bytes += static_cast<int64_t>(graph.t(in).bytes());
      }
  }
  p->isa = isa_name(ctx.cpu);
  p->precision = passes::precision_name(ctx.precision);
  p->batch = batch;
  p->micro_batch = batch;
  p->optimized = opts.optimize;
  p->kernel_log = std::move(ctx.log);
  p->preprocess = ctx.preprocess;
  if (ctx.tail) {
    // Each tail input is a static output or a model input of the same name.
    for (int id : ctx.tail->inputs) {
      bool found = false;
      for (const auto* ids : {&graph.outputs, &graph.inputs})
        for (int s : *ids) found = found || graph.t(s).name == ctx.tail->t(id).name;
      if (!found) return Err("dynamic tail reads %s, which the static plan does not produce", ctx.tail->t(id).name.c_str());
    }
    p->tail = std::move(ctx.tail);
  }
  p->graph = std::move(graph);
  *split = ctx.batch_split;
  return p;
}

}  // namespace

int64_t choose_micro_batch(int64_t batch, int64_t item_bytes, const CpuFeatures& cpu) {
  // The micro-batch's busiest node should stay in the caches (the cores' L2 and most of the
  // L3): past them each layer streams its activations from memory. Single items are not
  // worth it: the kernels then have too few rows to split over the cores, and each pass
  // streams the weights again (ResNet-50 int8 at batch 16 ran slower as 16 x 1 than whole).
  // Measured on ResNet-50 and MobileNetV2, fp32 and int8 (docs/benchmarks.md): the best
  // micro-batches of 16 were 2-8.
  const double budget = cache_budget(cpu);
  const double item = static_cast<double>(std::max<int64_t>(item_bytes, 1));
  if (static_cast<double>(batch) * item <= budget) return batch;  // the whole batch fits
  int64_t best = batch;
  for (int64_t m = batch - 1; m >= 2; --m)
    if (batch % m == 0 && static_cast<double>(m) * item <= budget) {
      best = m;
      break;
    }
  return best;
}

Expected<std::shared_ptr<Program>> compile(ir::Graph graph, const CompileOptions& options,
                                           const std::function<void(const char*, const ir::Graph&)>& after_pass) {
  const auto t0 = std::chrono::steady_clock::now();
  // A misspelt --keep-fp32 name would silently keep nothing: check them before calibrating.
  for (const std::string& name : options.keep_fp32) {
    bool found = false;
    for (const ir::Node& n : graph.nodes) found = found || n.name == name;
    if (!found) return Err("--keep-fp32 %s: the model has no node of that name (compile --kernels lists them)", name.c_str());
  }
  CompileOptions opts = options;
  if (plan_precision(graph, opts) == passes::Precision::int8 && !is_quantized_model(graph) && !opts.activation_quant &&
      opts.calibrate) {
    auto cal = opts.calibrate(graph, opts);
    if (!cal.ok()) return cal.status();
    opts.activation_quant = *cal;
  }
  const int64_t batch = opts.batch;
  if (opts.micro_batch < 0) return Err("micro-batch %lld: must be positive (or 0 to choose)", static_cast<long long>(opts.micro_batch));
  if (opts.micro_batch > 0 && (opts.micro_batch > batch || batch % opts.micro_batch != 0))
    return Err("micro-batch %lld does not divide batch %lld", static_cast<long long>(opts.micro_batch),
               static_cast<long long>(batch));
  int64_t micro = batch;
  passes::BatchSplit whole;
  std::string why_whole = "as asked";  // for compile --kernels when the batch runs whole
  if (opts.optimize && batch > 1 && opts.micro_batch != batch) {
    // The graph at the full batch, as far as the analysis: whether its items are independent,
    // and how much one item's activations take.
    ir::Graph probe = graph;
    passes::PassContext pc = base_context(graph, opts, batch);
    if (passes::run_pipeline(probe, pc, nullptr, "batch_axis").ok()) whole = pc.batch_split;
    else whole.why = "the model does not compile at that batch";
    if (opts.micro_batch > 0 && !whole.separable)
      return Err("batch %lld cannot run as runs of %lld: %s", static_cast<long long>(batch),
                 static_cast<long long>(opts.micro_batch), whole.why.c_str());
    // The analysis sees float activations; an int8 plan stores them in a byte.
    if (pc.precision == passes::Precision::int8) whole.item_bytes /= 4;
    why_whole = whole.why;
    if (whole.separable) {
      micro = opts.micro_batch > 0 ? opts.micro_batch : choose_micro_batch(batch, whole.item_bytes, pc.cpu);
      why_whole = "one item's busiest node moves " + std::to_string(whole.item_bytes >> 10) + " KiB: " +
                  (static_cast<double>(batch) * static_cast<double>(whole.item_bytes) <= cache_budget(pc.cpu)
                       ? "the whole batch fits the caches"
                       : "no micro-batch of two or more fits the caches");
    }
  }
  passes::BatchSplit split;
  if (micro < batch) {
    auto p = compile_at(graph, opts, micro, after_pass, &split);
    // The network at the micro-batch must be the same one, shape for shape.
    if (p.ok() && split.signature == whole.signature) {
      Program& prog = **p;
      prog.batch = batch;
      prog.micro_batch = micro;
      prog.kernel_log = "batch " + std::to_string(batch) + " runs as " + std::to_string(batch / micro) + " x batch " +
                        std::to_string(micro) + " (one item's busiest node moves " +
                        std::to_string(whole.item_bytes >> 10) + " KiB)\n" + prog.kernel_log;
      prog.stats.compile_ms = ms_since(t0);
      return p;
    }
    if (opts.micro_batch > 0)
      return Err("batch %lld cannot run as runs of %lld: %s", static_cast<long long>(batch),
                 static_cast<long long>(micro),
                 (p.ok() ? "the model compiled for batch " + std::to_string(micro) + " has other shapes"
                         : "compiling for batch " + std::to_string(micro) + ": " + p.status().message())
                     .c_str());
    why_whole = "the network at a smaller batch differs in shape";
  }
  auto p = compile_at(std::move(graph), opts, batch, after_pass, &split);
  if (!p.ok()) return p;
  (*p)->stats.compile_ms = ms_since(t0);
  if (opts.optimize && batch > 1) (*p)->kernel_log = "batch " + std::to_string(batch) + " runs whole: " + why_whole + "\n" + (*p)->kernel_log;
  return p;
}

std::string dynamic_summary(const Program& p) {
  if (!p.tail) return "";
  std::map<std::string, int> ops;
  for (const ir::Node& n : p.tail->nodes) ++ops[ir::op_name(n.op)];
  std::string s = std::to_string(p.tail->nodes.size()) + " node(s) shaped at run time (";
  bool first = true;
  for (const auto& [op, count] : ops) {
    s += (first ? "" : ", ") + std::to_string(count) + " " + op;
    first = false;
  }
  return s + ")";
}

Status check_runnable(const Program& p, const CpuFeatures& cpu) {
  for (const ir::Node& n : p.graph.nodes) {
    auto it = n.attrs.find("kernel");
    if (it == n.attrs.end()) continue;
    const std::string& name = it->second.str_v;
    const bool ok = n.op == ir::Op::Conv ? kernels::conv_find(name) != nullptr || kernels::qconv_find(name) != nullptr ||
                                               kernels::bconv_find(name) != nullptr
                                         : kernels::pool_find(name) != nullptr || kernels::qpool_find(name) != nullptr;
    if (!ok) return Err("plan uses kernel %s, which this build does not have; recompile the model", name.c_str());
  }
  if ((p.isa == "avx512" && !cpu.has_avx512()) || (p.isa == "avx2" && !cpu.has_avx2_fma()) ||
      (p.isa == "amx" && !cpu.amx_tile))
    return Err("plan was compiled for %s, which this CPU (%s) lacks; recompile the model here", p.isa.c_str(),
               isa_name(cpu).c_str());
  return Status::Ok();
}

}  // namespace systolic::plan

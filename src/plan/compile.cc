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

}  // namespace

Expected<std::shared_ptr<Program>> compile(ir::Graph graph, const CompileOptions& opts,
                                           const std::function<void(const char*, const ir::Graph&)>& after_pass) {
  const auto t0 = std::chrono::steady_clock::now();
  auto p = std::make_shared<Program>();
  p->stats.nodes_before = static_cast<int64_t>(graph.nodes.size());
  passes::PassContext ctx;
  ctx.cpu = opts.cpu_set ? opts.cpu : host_cpu();
  ctx.batch = opts.batch;
  ctx.input_shapes = opts.input_shapes;
  ctx.optimize = opts.optimize;
  ctx.preprocess = opts.preprocess;
  const bool quantized_model = is_quantized_model(graph);
  passes::Precision precision = opts.precision_auto && quantized_model ? passes::Precision::int8 : opts.precision;
  if (!opts.optimize) precision = passes::Precision::fp32;
  // A misspelt --keep-fp32 name would silently keep nothing: check them before calibrating.
  for (const std::string& name : opts.keep_fp32) {
    bool found = false;
    for (const ir::Node& n : graph.nodes) found = found || n.name == name;
    if (!found) return Err("--keep-fp32 %s: the model has no node of that name (compile --kernels lists them)", name.c_str());
  }
  std::shared_ptr<const std::map<std::string, ir::QuantParams>> activation_quant = opts.activation_quant;
  if (precision == passes::Precision::int8 && !quantized_model && !activation_quant && opts.calibrate) {
    auto cal = opts.calibrate(graph, opts);
    if (!cal.ok()) return cal.status();
    activation_quant = *cal;
  }
  ctx.precision = precision;
  ctx.activation_quant = activation_quant.get();
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
  p->batch = opts.batch;
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
  p->stats.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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

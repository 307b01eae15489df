// `systolic compile MODEL.onnx [-o MODEL.plan] [--batch N] [--dump-passes]`.
#include <cstdio>

#include "frontend/onnx/import.h"
#include "tools/commands.h"
#include "tools/preprocess_flags.h"
#include "tools/shape_flags.h"

namespace systolic::tools {

void register_compile(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "compile an ONNX model into a plan for this machine");
  auto model = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto batch = std::make_shared<int64_t>(1);
  auto dump = std::make_shared<bool>(false);
  auto show_kernels = std::make_shared<bool>(false);
  auto reference = std::make_shared<bool>(false);
  cmd->add_option("model", *model, "model .onnx")->required();
  cmd->add_option("-o,--output", *out, "write the compiled plan here");
  cmd->add_option("--batch", *batch, "batch size for a symbolic batch dim (default 1)")->check(CLI::PositiveNumber);
  cmd->add_flag("--dump-passes", *dump, "print the graph after each pass");
  cmd->add_flag("--kernels", *show_kernels, "print the kernel chosen per node and why faster ones were rejected");
  cmd->add_flag("--reference", *reference, "compile for the reference executor (no optimization)");
  auto micro = std::make_shared<int64_t>(0);
  add_micro_batch_flag(cmd, micro);
  auto pre = std::make_shared<PreprocessFlags>();
  add_preprocess_flags(cmd, pre);
  auto prec = std::make_shared<PrecisionFlags>();
  add_precision_flags(cmd, prec);
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_shape_flag(cmd, shapes);
  auto* batch_opt = cmd->get_option("--batch");
  cmd->callback([=] {
    auto bound = parse_shapes(*shapes);
    if (!bound.ok()) return fail(bound.status());
    auto b = batch_with_shapes(batch_opt->count() ? *batch : 0, *bound);
    if (!b.ok()) return fail(b.status());
    auto g = frontend::import_onnx_file(*model);
    if (!g.ok()) return fail(g.status());
    plan::CompileOptions co;
    co.batch = *b;
    co.micro_batch = *micro;
    co.input_shapes = *bound;
    co.optimize = !*reference;
    auto preprocess = resolve_preprocess(*pre);
    if (!preprocess.ok()) return fail(preprocess.status());
    co.preprocess = *preprocess;
    if (Status st = api::apply_precision(precision_request(*prec), co.preprocess, &co); !st.ok()) return fail(st);
    std::function<void(const char*, const ir::Graph&)> dumper;
    if (*dump) {
      std::printf("=== import (%zu nodes)\n%s", g->nodes.size(), ir::print_graph(*g).c_str());
      dumper = [](const char* pass, const ir::Graph& gr) {
        std::printf("=== after %s (%zu nodes)\n%s", pass, gr.nodes.size(), ir::print_graph(gr).c_str());
      };
    }
    auto p = plan::compile(std::move(*g), co, dumper);
    if (!p.ok()) return fail(Err("%s: %s", model->c_str(), p.status().message().c_str()));
    const plan::CompileStats& s = (*p)->stats;
    std::printf("compiled %s for %s, %s, batch %lld in %.1f ms\n", model->c_str(), (*p)->isa.c_str(),
                (*p)->precision.c_str(), static_cast<long long>(*b), s.compile_ms);
    if (plan::runs_per_batch(**p) > 1)
      std::printf("  micro-batch: %lld (the batch runs as %lld runs; its items are independent)\n",
                  static_cast<long long>((*p)->micro_batch), static_cast<long long>(plan::runs_per_batch(**p)));
    std::printf("  nodes: %lld -> %lld\n", static_cast<long long>(s.nodes_before), static_cast<long long>(s.nodes_after));
    std::printf("  arena: %.2f MiB (naive sum of intermediates %.2f MiB, %.1fx less)\n", s.arena_bytes / 1048576.0,
                s.naive_bytes / 1048576.0, s.arena_bytes > 0 ? static_cast<double>(s.naive_bytes) / s.arena_bytes : 0.0);
    std::printf("  weights: %.2f MiB (pre-packed)\n", s.weight_bytes / 1048576.0);
    if ((*p)->tail) std::printf("  dynamic: %s, run by the interpreter after the plan\n", plan::dynamic_summary(**p).c_str());
    if ((*p)->preprocess.enabled()) {
      const ir::Graph& pg = (*p)->graph;
      bool folded = true;
      for (const ir::Node& n : pg.nodes) folded &= n.op != ir::Op::NormalizeImage;
      std::printf("  input: %s %s%s (%s)\n", pg.t(pg.inputs[0]).name.c_str(), ir::dtype_name(pg.t(pg.inputs[0]).dtype),
                  ir::shape_str({pg.t(pg.inputs[0]).shape[0], pg.t(pg.inputs[0]).shape[2], pg.t(pg.inputs[0]).shape[3],
                                 pg.t(pg.inputs[0]).shape[1]}).c_str(),
                  describe((*p)->preprocess).c_str());
      std::printf("  normalisation: %s\n", folded ? "folded into the first convolution" : "a separate step (see --kernels)");
    }
    if (*show_kernels) std::printf("kernels:\n%s", (*p)->kernel_log.c_str());
    if (!out->empty()) {
      Status st = plan::save_program(**p, *out);
      if (!st.ok()) return fail(st);
      std::printf("  wrote %s\n", out->c_str());
    }
  });
}

}  // namespace systolic::tools

// Registration of all subcommands, the shared exit status and model loading.
#include "tools/commands.h"
#include "tools/shape_flags.h"

#include <cstdio>
#include <fstream>

#include "tools/compile_cache.h"

namespace systolic::tools {
namespace {
int g_exit = 0;

}  // namespace

int exit_code() { return g_exit; }

bool is_plan_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, 8);
  return f.gcount() == 8 && std::string(magic, 8) == "SYSTPLAN";
}


void fail(const Status& st) {
  std::fprintf(stderr, "systolic: error: %s\n", st.message().c_str());
  g_exit = 1;
}

void register_commands(CLI::App& app) {
  register_zoo(app);
  register_compile(app);
  register_run(app);
  register_bench(app);
  register_onnx_suite(app);
  register_info(app);
  register_simulate(app);
  register_profile(app);
  register_classify(app);
  register_preprocess(app);
  register_tune(app);
  register_quantize(app);
  register_compare(app);
}

Expected<std::shared_ptr<const plan::Program>> load_model(const std::string& path, const ModelOptions& opts) {
  if (is_plan_file(path)) {
    auto p = plan::load_program(path);
    if (!p.ok()) return p.status();
    if (opts.batch > 0 && opts.batch != (*p)->batch)
      return Err("%s was compiled for batch %lld; recompile it for batch %lld", path.c_str(),
                 static_cast<long long>((*p)->batch), static_cast<long long>(opts.batch));
    if (opts.preprocess.enabled())
      return Err("%s is a compiled plan: its preprocessing was fixed at compile time (%s); drop the "
                 "preprocessing flags or pass the .onnx", path.c_str(),
                 (*p)->preprocess.enabled() ? "with image input" : "without");
    SYSTOLIC_RETURN_IF_ERROR(check_plan_precision(opts.precision, **p, path));
    for (const auto& [name, shape] : opts.input_shapes) {
      const ir::Graph& g = (*p)->graph;
      bool match = false;
      for (int id : g.inputs) match = match || (g.t(id).name == name && g.t(id).shape == shape);
      if (!match)
        return Err("%s is a compiled plan whose inputs do not include %s%s; recompile the .onnx with that --shape",
                   path.c_str(), name.c_str(), ir::shape_str(shape).c_str());
    }
    return std::shared_ptr<const plan::Program>(*p);
  }
  plan::CompileOptions co;
  auto batch = batch_with_shapes(opts.batch, opts.input_shapes);
  if (!batch.ok()) return batch.status();
  co.batch = *batch;
  co.input_shapes = opts.input_shapes;
  co.optimize = opts.optimize;
  co.preprocess = opts.preprocess;
  SYSTOLIC_RETURN_IF_ERROR(apply_precision(opts.precision, opts.preprocess, &co));
  auto r = compile_onnx_cached(path, co, opts.cache ? default_cache_dir() : "");
  if (!r.ok()) return r.status();
  if (!r->note.empty()) std::fprintf(stderr, "systolic: note: %s\n", r->note.c_str());
  if (r->hit)
    std::fprintf(stderr, "systolic: using cached plan %s (compiled in %.0f ms, loaded in %.0f ms)\n", r->path.c_str(),
                 r->compile_ms, r->load_ms);
  else if (!r->path.empty())
    std::fprintf(stderr, "systolic: compiled in %.0f ms; cached as %s\n", r->compile_ms, r->path.c_str());
  else
    std::fprintf(stderr, "systolic: compiled in %.0f ms\n", r->compile_ms);
  return r->program;
}

Expected<std::unique_ptr<runtime::Session>> open_session(const std::string& path, const ModelOptions& opts,
                                                         int threads) {
  auto prog = load_model(path, opts);
  if (!prog.ok()) return prog.status();
  runtime::SessionOptions so;
  so.threads = threads;
  return runtime::Session::create(*prog, so);
}

}  // namespace systolic::tools

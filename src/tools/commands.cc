// Registration of all subcommands, the shared exit status and model loading.
#include "tools/commands.h"

#include <cstdio>

#include "api/internal.h"

namespace systolic::tools {
namespace {
int g_exit = 0;
}  // namespace

int exit_code() { return g_exit; }

bool is_plan_file(const std::string& path) { return api::is_plan_file(path); }

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
  register_serve(app);
}

Expected<std::shared_ptr<const plan::Program>> load_model(const std::string& path, const ModelOptions& opts) {
  systolic::ModelOptions mo;
  mo.precision = opts.precision.precision;
  mo.batch = opts.batch;
  mo.micro_batch = opts.micro_batch;
  mo.shapes = opts.input_shapes;
  mo.use_cache = opts.cache;
  mo.use_tuned = false;
  mo.calibration = opts.precision.calibration;
  mo.calibration_method = opts.precision.method;
  mo.keep_fp32 = opts.precision.keep_fp32;
  const api::PrecisionRequest shown = precision_request(opts.precision);
  api::OpenExtras ex;
  ex.optimize = opts.optimize;
  ex.preprocess = opts.preprocess;
  ex.progress = shown.progress;
  ex.note = shown.note;
  auto m = api::open_model(path, mo, ex);
  if (!m.ok()) return m.status();
  const LoadReport& r = (*m)->report();
  if (!r.note.empty()) print_note(r.note);
  if (r.cache_hit)
    std::fprintf(stderr, "systolic: using cached plan %s (compiled in %.0f ms, loaded in %.0f ms)\n", r.cache_path.c_str(),
                 r.compile_ms, r.load_ms);
  else if (r.compiled && !r.cache_path.empty())
    std::fprintf(stderr, "systolic: compiled in %.0f ms; cached as %s\n", r.compile_ms, r.cache_path.c_str());
  else if (r.compiled)
    std::fprintf(stderr, "systolic: compiled in %.0f ms\n", r.compile_ms);
  return api::program(**m);
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

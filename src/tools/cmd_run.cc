// `systolic run MODEL [--input NAME=FILE]... [--output-dir DIR] [--profile F.json]`: one inference.
#include <sys/stat.h>

#include <cstdio>

#include "runtime/session.h"
#include "tools/commands.h"
#include "tools/preprocess_flags.h"
#include "tools/shape_flags.h"
#include "tools/random_inputs.h"
#include "frontend/tensor_io.h"
#include "tools/trace_json.h"

namespace systolic::tools {

void register_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "run a model (.onnx or .plan) once");
  auto model = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto outdir = std::make_shared<std::string>();
  auto batch = std::make_shared<int64_t>(0);
  auto threads = std::make_shared<int>(0);
  auto seed = std::make_shared<uint64_t>(1);
  auto reference = std::make_shared<bool>(false);
  auto trace = std::make_shared<std::string>();
  auto no_cache = std::make_shared<bool>(false);
  cmd->add_option("model", *model, "model .onnx or compiled .plan")->required();
  cmd->add_option("--input", *inputs, "NAME=FILE (.npy or TensorProto .pb); random N(0,1) when omitted");
  cmd->add_option("--output-dir", *outdir, "write each output as DIR/NAME.npy");
  cmd->add_option("--batch", *batch, "batch size for an .onnx with a symbolic batch dim");
  cmd->add_option("--threads", *threads, "threads (default: one per core)");
  cmd->add_option("--seed", *seed, "seed of the random inputs");
  cmd->add_option("--profile", *trace, "write a Chrome trace (JSON) of every step of the run");
  cmd->add_flag("--no-cache", *no_cache, "do not use the compile cache");
  cmd->add_flag("--reference", *reference, "use the reference executor (plain layouts, reference kernels)");
  auto pre = std::make_shared<PreprocessFlags>();
  add_preprocess_flags(cmd, pre);
  auto prec = std::make_shared<PrecisionFlags>();
  add_precision_flags(cmd, prec);
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_shape_flag(cmd, shapes);
  cmd->callback([=] {
    auto bound = parse_shapes(*shapes);
    if (!bound.ok()) return fail(bound.status());
    auto preprocess = resolve_preprocess(*pre);
    if (!preprocess.ok()) return fail(preprocess.status());
    std::vector<std::pair<std::string, runtime::HostTensor>> given;
    int64_t b = *batch;
    for (const std::string& spec : *inputs) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail(Err("--input %s: expected NAME=FILE", spec.c_str()));
      auto t = frontend::load_tensor(spec.substr(eq + 1));
      if (!t.ok()) return fail(t.status());
      if (b == 0 && !t->shape.empty()) b = t->shape[0];
      // The files given bind the model's symbolic dims (a preprocessed image input is NHWC
      // uint8, not the model's own tensor).
      if (!preprocess->enabled() && !bound->count(spec.substr(0, eq)) && !t->shape.empty())
        (*bound)[spec.substr(0, eq)] = t->shape;
      given.emplace_back(spec.substr(0, eq), std::move(*t));
    }
    ModelOptions mo;
    mo.batch = b;
    mo.optimize = !*reference;
    mo.cache = !*no_cache;
    mo.preprocess = *preprocess;
    mo.precision = *prec;
    mo.input_shapes = *bound;
    if (!shapes->empty()) mo.batch = *batch;  // the --shape's leading dim (tools/shape_flags.h)
    auto session = open_session(*model, mo, *threads);
    if (!session.ok()) return fail(session.status());
    uint64_t s = *seed;
    for (const auto& info : (*session)->inputs()) {
      bool have = false;
      for (auto& g : given) {
        if (g.first != info.name) continue;
        have = true;
        // numpy has no bfloat16: a .npy of uint16 holds a bfloat16 input's bits (as run writes it).
        if (info.dtype == ir::DType::bf16 && g.second.dtype == ir::DType::u16) g.second.dtype = ir::DType::bf16;
      }
      if (!have) given.emplace_back(info.name, random_tensor(info, s++));
    }
    std::vector<runtime::HostTensor> outs;
    if (!trace->empty()) (*session)->set_trace(1);
    Status st = (*session)->run(given, &outs);
    if (!st.ok()) return fail(st);
    if (!trace->empty())
      if (Status ts = write_chrome_trace(**session, *trace); !ts.ok()) return fail(ts);
    if (!outdir->empty()) {
      mkdir(outdir->c_str(), 0755);
      struct stat sb;
      if (stat(outdir->c_str(), &sb) != 0 || !S_ISDIR(sb.st_mode))
        return fail(Err("cannot create output directory %s", outdir->c_str()));
    }
    for (std::size_t k = 0; k < outs.size(); ++k) {
      const auto& info = (*session)->outputs()[k];
      std::printf("output %s: %s%s", info.name.c_str(), ir::dtype_name(outs[k].dtype), ir::shape_str(outs[k].shape).c_str());
      if (!outdir->empty()) {
        std::string file = info.name;
        for (char& c : file)
          if (c == '/' || c == '\\' || c == ':') c = '_';
        const std::string path = *outdir + "/" + file + ".npy";
        Status ws = frontend::save_npy(path, outs[k]);
        if (!ws.ok()) return fail(ws);
        std::printf(" -> %s", path.c_str());
      }
      std::printf("\n");
    }
  });
}

}  // namespace systolic::tools

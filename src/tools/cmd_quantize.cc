// `systolic quantize MODEL.onnx --calibration DIR|FILE...|random:N [--method minmax|percentile|entropy]
// [--keep-fp32 NODE,...] [--report] -o OUT.plan|OUT.onnx`: calibrates a float model and writes
// a compiled int8 plan, or the standard QDQ ONNX model other engines run.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "frontend/onnx/import.h"
#include "quantize/calibrate.h"
#include "quantize/calibration_data.h"
#include "quantize/layer_report.h"
#include "quantize/qdq_export.h"
#include "tools/commands.h"
#include "tools/preprocess_flags.h"

namespace systolic::tools {
namespace {

constexpr int kReportSamples = 8;  // the accuracy report runs both plans on the first few samples

void print_report(const std::vector<quantize::LayerError>& rows) {
  std::printf("%-34s %-6s %10s %12s\n", "layer", "kind", "SQNR dB", "max |error|");
  double worst = std::numeric_limits<double>::infinity();
  std::string worst_name;
  for (const auto& r : rows) {
    std::printf("%-34s %-6s %10.1f %12.4g\n", r.node.c_str(), r.int8 ? "int8" : "float", r.sqnr_db, r.max_abs);
    if (r.int8 && r.sqnr_db < worst) worst = r.sqnr_db, worst_name = r.node;
  }
  if (!worst_name.empty())
    std::printf("lowest: %s at %.1f dB (each layer's output against the float plan's, errors accumulated "
                "from the input on; --keep-fp32 %s leaves it in float)\n", worst_name.c_str(), worst, worst_name.c_str());
}

}  // namespace

void register_quantize(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "calibrate a float model: write an int8 .plan or a QDQ .onnx");
  auto model = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto batch = std::make_shared<int64_t>(1);
  auto report = std::make_shared<bool>(false);
  auto reduce_range = std::make_shared<bool>(false);
  auto prec = std::make_shared<PrecisionFlags>();
  cmd->add_option("model", *model, "float model .onnx")->required();
  cmd->add_option("-o,--output", *out, "OUT.plan (compiled int8 plan) or OUT.onnx (QDQ model)")->required();
  cmd->add_option("--calibration", prec->calibration,
                  "calibration images or tensors (folders, .jpg/.png/.npy/.pb files) or random:N")->required();
  cmd->add_option("--method", prec->method, "minmax | percentile | entropy (default minmax)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  cmd->add_option("--keep-fp32", prec->keep_fp32, "nodes to leave in float (comma-separated names)")->delimiter(',');
  cmd->add_option("--batch", *batch, "batch size of a .plan (default 1)")->check(CLI::PositiveNumber);
  cmd->add_flag("--reduce-range", *reduce_range,
                "QDQ output: 7-bit weights, exact in engines whose AVX2 int8 kernels saturate at 16 bits");
  cmd->add_flag("--report", *report, "print each layer's signal-to-quantization-noise ratio against float");
  cmd->add_flag("--progress", prec->progress, "show the progress bar even when stderr is not a terminal");
  auto pre = std::make_shared<PreprocessFlags>();
  add_preprocess_flags(cmd, pre);
  cmd->callback([=] {
    const bool qdq = out->size() > 5 && out->ends_with(".onnx");
    if (!qdq && !(out->size() > 5 && out->ends_with(".plan")))
      return fail(Err("-o %s: write a .plan (compiled int8) or an .onnx (QDQ model)", out->c_str()));
    // Calibration can take minutes: find out first that its result can be written.
    const std::size_t slash = out->rfind('/');
    const std::string out_dir = slash == std::string::npos ? "." : slash == 0 ? "/" : out->substr(0, slash);
    if (access(out_dir.c_str(), W_OK) != 0) return fail(Err("cannot write %s: %s", out->c_str(), std::strerror(errno)));
    auto preprocess = resolve_preprocess(*pre);
    if (!preprocess.ok()) return fail(preprocess.status());
    auto g = frontend::import_onnx_file(*model);
    if (!g.ok()) return fail(g.status());
    if (plan::is_quantized_model(*g))
      return fail(Err("%s is already quantized (it has QuantizeLinear/DequantizeLinear or QLinear ops); run it as it "
                      "is, or quantize its float original", model->c_str()));
    // The target: an int8 plan (with the image preprocessing asked for), or the QDQ model's
    // float-input graph. Calibration runs the same model in float.
    plan::CompileOptions co;
    co.batch = *batch;
    if (!qdq) co.preprocess = *preprocess;
    PrecisionFlags pf = *prec;
    pf.precision = "int8";
    if (Status st = api::apply_precision(precision_request(pf), *preprocess, &co); !st.ok()) return fail(st);
    const std::vector<std::string> sources = prec->calibration;
    std::vector<std::string> notes;
    auto loader = [&](int limit) {
      return [&, limit](const std::vector<runtime::TensorInfo>& inputs) {
        return quantize::load_samples(sources, inputs, co.preprocess.enabled() ? co.preprocess : *preprocess, limit,
                                      &notes);
      };
    };
    auto cal_prog = plan::compile(*g, quantize::calibration_options(co));
    if (!cal_prog.ok()) return fail(Err("%s: %s", model->c_str(), cal_prog.status().message().c_str()));
    quantize::CalibrationOptions copt;
    quantize::parse_method(prec->method, &copt.method);
    if (prec->progress || isatty(STDERR_FILENO))
      copt.progress = [](int done, int total) { draw_progress("calibrating", done, total); };
    auto ranges = quantize::calibrate(*cal_prog, loader(0), copt);
    for (const std::string& n : notes) std::fprintf(stderr, "systolic: note: calibration %s\n", n.c_str());
    if (!ranges.ok()) return fail(ranges.status());
    std::printf("calibrated %zu activations of %s (%s)\n", ranges->size(), model->c_str(), prec->method.c_str());
    co.activation_quant = std::make_shared<const quantize::QuantMap>(*ranges);
    co.calibrate = nullptr;
    if (qdq) {
      onnx::ModelProto m;
      quantize::QdqExportOptions eo;
      eo.keep_fp32.insert(prec->keep_fp32.begin(), prec->keep_fp32.end());
      eo.reduce_range = *reduce_range;
      quantize::QdqExportStats st;
      if (Status s = quantize::export_qdq(*model, *ranges, eo, &m, &st); !s.ok()) return fail(s);
      std::ofstream f(*out, std::ios::binary | std::ios::trunc);
      if (!f || !m.SerializeToOstream(&f)) return fail(Err("cannot write %s", out->c_str()));
      std::printf("wrote %s: QDQ ONNX, %d quantized activations, %d int8 weight tensors\n", out->c_str(),
                  st.activations, st.weights);
    }
    std::shared_ptr<const plan::Program> int8;
    if (!qdq || *report) {
      auto p = plan::compile(*g, co);
      if (!p.ok()) return fail(Err("%s: %s", model->c_str(), p.status().message().c_str()));
      int8 = *p;
    }
    if (!qdq) {
      if (Status st = plan::save_program(*int8, *out); !st.ok()) return fail(st);
      std::printf("wrote %s: int8 plan for %s, batch %lld\n", out->c_str(), int8->isa.c_str(),
                  static_cast<long long>(int8->batch));
    }
    if (*report) {
      plan::CompileOptions fo = quantize::calibration_options(co);
      fo.fuse_residual = true;
      auto fp32 = plan::compile(*g, fo);
      if (!fp32.ok()) return fail(fp32.status());
      notes.clear();
      auto rows = quantize::layer_report(*fp32, int8, loader(kReportSamples));
      if (!rows.ok()) return fail(rows.status());
      print_report(*rows);
    }
  });
}

}  // namespace systolic::tools

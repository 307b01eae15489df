// `systolic quantize MODEL.onnx --calibration DIR|FILE...|random:N [--method minmax|percentile|entropy]
// [--keep-fp32 NODE,...] [--shape NAME=DIMS] [--report] -o OUT.plan|OUT.onnx`: calibrates a float
// model and writes a compiled int8 plan, or the standard QDQ ONNX model other engines run.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "api/quantize.h"
#include "quantize/layer_report.h"
#include "tools/commands.h"
#include "tools/preprocess_flags.h"
#include "tools/shape_flags.h"

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
  auto batch = std::make_shared<int64_t>(0);  // 0: a --shape's leading dim, else 1
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
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_shape_flag(cmd, shapes);
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
    auto bound = parse_shapes(*shapes);
    if (!bound.ok()) return fail(bound.status());
    auto b = batch_with_shapes(*batch, *bound);
    if (!b.ok()) return fail(b.status());
    api::QuantizeRequest req;
    req.precision = precision_request(*prec);
    req.preprocess = *preprocess;
    req.batch = *b;
    req.input_shapes = *bound;
    req.qdq = qdq;
    std::vector<std::string> notes;
    auto cal = api::calibrate_model(*model, req, &notes);
    for (const std::string& n : notes) std::fprintf(stderr, "systolic: note: calibration %s\n", n.c_str());
    if (!cal.ok()) return fail(cal.status());
    std::printf("calibrated %zu activations of %s (%s)\n", cal->ranges.size(), model->c_str(), prec->method.c_str());
    const ir::Graph& g = cal->graph;
    const plan::CompileOptions& co = cal->co;
    auto loader = [&](int limit) {
      return [&, limit](const std::vector<runtime::TensorInfo>& inputs) {
        return api::calibration_samples(req, co, inputs, limit, &notes);
      };
    };
    if (qdq) {
      quantize::QdqExportStats st;
      if (Status s = api::write_qdq(*model, cal->ranges, prec->keep_fp32, *reduce_range, *out, &st, *bound); !s.ok())
        return fail(s);
      std::printf("wrote %s: QDQ ONNX, %d quantized activations, %d int8 weight tensors\n", out->c_str(),
                  st.activations, st.weights);
      if (st.batch_fixed)
        std::fprintf(stderr, "note: %s has batch 1: a shape the model computes from its batch size could not be "
                     "written for any batch\n", out->c_str());
    }
    std::shared_ptr<const plan::Program> int8;
    if (!qdq || *report) {
      auto p = plan::compile(g, co);
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
      auto fp32 = plan::compile(g, fo);
      if (!fp32.ok()) return fail(fp32.status());
      notes.clear();
      auto rows = quantize::layer_report(*fp32, int8, loader(kReportSamples));
      if (!rows.ok()) return fail(rows.status());
      print_report(*rows);
    }
  });
}

}  // namespace systolic::tools

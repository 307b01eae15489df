// The precision flags: int8 calibration set up as a callback the compile runs on a cache miss.
#include "tools/precision_flags.h"

#include <unistd.h>

#include <cstdio>

#include "quantize/calibrate.h"
#include "quantize/calibration_data.h"

namespace systolic::tools {
namespace {

constexpr int kRandomSamples = 16;

}  // namespace

void draw_progress(const char* what, int done, int total) {
  const int width = 30, fill = total > 0 ? done * width / total : width;
  std::fprintf(stderr, "\rsystolic: %s [%s%s] %d/%d", what, std::string(fill, '#').c_str(),
               std::string(width - fill, ' ').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

void add_precision_flags(CLI::App* cmd, const std::shared_ptr<PrecisionFlags>& f) {
  cmd->add_option("--precision", f->precision,
                  "fp32 | bf16 | int8 (default: int8 for a quantized QDQ model, else fp32)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  cmd->add_option("--calibration", f->calibration,
                  "int8 of a float model: calibration images or tensors (folders, .jpg/.png/.npy/.pb files) or random:N");
  cmd->add_option("--method", f->method, "calibration: minmax | percentile | entropy (default minmax)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  cmd->add_option("--keep-fp32", f->keep_fp32, "int8: nodes to leave in float (comma-separated names)")->delimiter(',');
}

Status apply_precision(const PrecisionFlags& f, const ir::ImagePreprocess& image, plan::CompileOptions* co) {
  if (f.precision.empty()) {
    co->precision = passes::Precision::fp32;
    co->precision_auto = true;
  } else {
    co->precision_auto = false;
    co->precision = f.precision == "int8" ? passes::Precision::int8
                    : f.precision == "bf16" ? passes::Precision::bf16 : passes::Precision::fp32;
  }
  const bool int8 = co->precision == passes::Precision::int8;
  if (!int8 && (!f.calibration.empty() || !f.keep_fp32.empty()))
    return Err("--calibration and --keep-fp32 apply to --precision int8");
  if (!int8) return Status::Ok();
  quantize::Method method;
  if (!quantize::parse_method(f.method, &method)) return Err("--method %s: unknown (minmax, percentile, entropy)", f.method.c_str());
  co->keep_fp32.insert(f.keep_fp32.begin(), f.keep_fp32.end());
  const bool random = f.calibration.empty();
  const std::vector<std::string> sources =
      random ? std::vector<std::string>{"random:" + std::to_string(kRandomSamples)} : f.calibration;
  auto key = quantize::sources_key(sources);
  if (!key.ok()) return key.status();
  co->calibration_key = *key + "|" + f.method;
  const bool bar = f.progress || isatty(STDERR_FILENO);
  co->calibrate = [=](const ir::Graph& g, const plan::CompileOptions& target)
      -> Expected<std::shared_ptr<const quantize::QuantMap>> {
    if (random)
      std::fprintf(stderr, "systolic: note: int8 calibrated on %d random inputs; accuracy needs real calibration data "
                           "(--calibration DIR, or systolic quantize)\n", kRandomSamples);
    auto fp32 = plan::compile(g, quantize::calibration_options(target));
    if (!fp32.ok()) return fp32.status();
    const ir::ImagePreprocess pre = target.preprocess.enabled() ? target.preprocess : image;
    std::vector<std::string> notes;
    quantize::CalibrationOptions o;
    o.method = method;
    if (bar) o.progress = [](int done, int total) { draw_progress("calibrating", done, total); };
    auto q = quantize::calibrate(*fp32, [&](const std::vector<runtime::TensorInfo>& inputs) {
      return quantize::load_samples(sources, inputs, pre, 0, &notes);
    }, o);
    for (const std::string& n : notes) std::fprintf(stderr, "systolic: note: calibration %s\n", n.c_str());
    if (!q.ok()) return q.status();
    return std::make_shared<const quantize::QuantMap>(std::move(*q));
  };
  return Status::Ok();
}

Status check_plan_precision(const PrecisionFlags& f, const plan::Program& p, const std::string& path) {
  if (!f.precision.empty() && f.precision != p.precision)
    return Err("%s was compiled for %s; recompile the model with --precision %s", path.c_str(), p.precision.c_str(),
               f.precision.c_str());
  if (!f.calibration.empty() || !f.keep_fp32.empty())
    return Err("%s is a compiled plan: its quantization was fixed at compile time; pass the .onnx to calibrate",
               path.c_str());
  return Status::Ok();
}

}  // namespace systolic::tools

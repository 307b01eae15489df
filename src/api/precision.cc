// Precision requests: int8 calibration set up as a callback the compile runs on a cache miss,
// and a model's precision read before compiling it (the tune store's key).
#include "api/precision.h"

#include <onnx/onnx_pb.h>

#include <climits>
#include <fstream>
#include <set>
#include <sstream>

#include "quantize/calibrate.h"
#include "quantize/calibration_data.h"

namespace systolic::api {
namespace {

constexpr int kRandomSamples = 16;

}  // namespace

Status apply_precision(const PrecisionRequest& r, const ir::ImagePreprocess& image, plan::CompileOptions* co) {
  if (r.precision.empty()) {
    co->precision = passes::Precision::fp32;
    co->precision_auto = true;
  } else if (r.precision == "fp32" || r.precision == "bf16" || r.precision == "int8") {
    co->precision_auto = false;
    co->precision = r.precision == "int8"   ? passes::Precision::int8
                    : r.precision == "bf16" ? passes::Precision::bf16
                                            : passes::Precision::fp32;
  } else {
    return Err("precision '%s': expected fp32, bf16 or int8 (or empty for automatic)", r.precision.c_str());
  }
  const bool int8 = co->precision == passes::Precision::int8;
  if (!int8 && (!r.calibration.empty() || !r.keep_fp32.empty()))
    return Err("--calibration and --keep-fp32 apply to --precision int8");
  if (!int8) return Status::Ok();
  quantize::Method method;
  if (!quantize::parse_method(r.method, &method))
    return Err("--method %s: unknown (minmax, percentile, entropy)", r.method.c_str());
  co->keep_fp32.insert(r.keep_fp32.begin(), r.keep_fp32.end());
  const bool random = r.calibration.empty();
  const std::vector<std::string> sources =
      random ? std::vector<std::string>{"random:" + std::to_string(kRandomSamples)} : r.calibration;
  auto key = quantize::sources_key(sources);
  if (!key.ok()) return key.status();
  co->calibration_key = *key + "|" + r.method;
  const auto note = r.note;
  const auto progress = r.progress;
  co->calibrate = [=](const ir::Graph& g, const plan::CompileOptions& target)
      -> Expected<std::shared_ptr<const quantize::QuantMap>> {
    if (random && note)
      note("int8 calibrated on " + std::to_string(kRandomSamples) +
           " random inputs; accuracy needs real calibration data (--calibration DIR, or systolic quantize)");
    auto fp32 = plan::compile(g, quantize::calibration_options(target));
    if (!fp32.ok()) return fp32.status();
    const ir::ImagePreprocess pre = target.preprocess.enabled() ? target.preprocess : image;
    std::vector<std::string> notes;
    quantize::CalibrationOptions o;
    o.method = method;
    if (progress) o.progress = progress;
    auto q = quantize::calibrate(*fp32, [&](const std::vector<runtime::TensorInfo>& inputs) {
      return quantize::load_samples(sources, inputs, pre, 0, &notes);
    }, o);
    if (note)
      for (const std::string& n : notes) note("calibration " + n);
    if (!q.ok()) return q.status();
    return std::make_shared<const quantize::QuantMap>(std::move(*q));
  };
  return Status::Ok();
}

Status check_plan_precision(const PrecisionRequest& r, const plan::Program& p, const std::string& path) {
  if (!r.precision.empty() && r.precision != p.precision)
    return Err("%s was compiled for %s; recompile the model with --precision %s", path.c_str(), p.precision.c_str(),
               r.precision.c_str());
  if (!r.calibration.empty() || !r.keep_fp32.empty())
    return Err("%s is a compiled plan: its quantization was fixed at compile time; pass the .onnx to calibrate",
               path.c_str());
  return Status::Ok();
}

std::string model_precision(const std::string& model_path, const std::string& requested) {
  if (!requested.empty()) return requested;
  std::ifstream f(model_path, std::ios::binary);
  if (!f) return "fp32";
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.rfind("SYSTPLAN", 0) == 0) {
    auto p = plan::load_program_bytes(bytes);
    return p.ok() ? (*p)->precision : "fp32";
  }
  onnx::ModelProto m;
  if (bytes.size() > INT32_MAX || !m.ParseFromString(bytes)) return "fp32";
  // What plan::has_quantized_convs looks for.
  std::set<std::string> dequantized;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "DequantizeLinear" && n.output_size() > 0) dequantized.insert(n.output(0));
  for (const auto& n : m.graph().node()) {
    if (n.op_type() == "QLinearConv" || n.op_type() == "ConvInteger") return "int8";
    if (n.op_type() == "Conv" && n.input_size() > 1 && dequantized.count(n.input(1)))
      return "int8";
  }
  return "fp32";
}

}  // namespace systolic::api

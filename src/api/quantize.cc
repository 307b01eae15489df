// Calibration of a float model and the QDQ export, as `systolic quantize` runs them.
#include "api/quantize.h"

#include <fstream>

#include "frontend/onnx/import.h"

namespace systolic::api {

Expected<std::vector<std::vector<runtime::HostTensor>>> calibration_samples(const QuantizeRequest& r,
                                                                          const plan::CompileOptions& co,
                                                                          const std::vector<runtime::TensorInfo>& inputs,
                                                                          int limit, std::vector<std::string>* notes) {
  return quantize::load_samples(r.precision.calibration, inputs, co.preprocess.enabled() ? co.preprocess : r.preprocess,
                                limit, notes);
}

Expected<Calibrated> calibrate_model(const std::string& model, const QuantizeRequest& r,
                                     std::vector<std::string>* notes) {
  auto g = frontend::import_onnx_file(model);
  if (!g.ok()) return g.status();
  if (plan::is_quantized_model(*g))
    return Err("%s is already quantized (it has QuantizeLinear/DequantizeLinear or QLinear ops); run it as it "
               "is, or quantize its float original", model.c_str());
  // The target: an int8 plan (with the image preprocessing asked for), or the QDQ model's
  // float-input graph. Calibration runs the same model in float.
  Calibrated c;
  c.co.batch = r.batch;
  c.co.input_shapes = r.input_shapes;
  if (!r.qdq) c.co.preprocess = r.preprocess;
  PrecisionRequest pr = r.precision;
  pr.precision = "int8";
  if (Status st = apply_precision(pr, r.preprocess, &c.co); !st.ok()) return st;
  auto cal_prog = plan::compile(*g, quantize::calibration_options(c.co));
  if (!cal_prog.ok()) return Err("%s: %s", model.c_str(), cal_prog.status().message().c_str());
  quantize::CalibrationOptions copt;
  quantize::parse_method(r.precision.method, &copt.method);  // apply_precision refused unknown ones
  copt.progress = r.precision.progress;
  const plan::CompileOptions& co = c.co;
  auto ranges = quantize::calibrate(
      *cal_prog, [&](const std::vector<runtime::TensorInfo>& inputs) { return calibration_samples(r, co, inputs, 0, notes); },
      copt);
  if (!ranges.ok()) return ranges.status();
  c.ranges = std::move(*ranges);
  c.co.activation_quant = std::make_shared<const quantize::QuantMap>(c.ranges);
  c.co.calibrate = nullptr;
  c.graph = std::move(*g);
  return c;
}

Status write_qdq(const std::string& model, const quantize::QuantMap& ranges, const std::vector<std::string>& keep_fp32,
                 bool reduce_range, const std::string& out, quantize::QdqExportStats* stats,
                 const std::map<std::string, ir::Shape>& input_shapes) {
  onnx::ModelProto m;
  quantize::QdqExportOptions eo;
  eo.input_shapes = input_shapes;
  eo.keep_fp32.insert(keep_fp32.begin(), keep_fp32.end());
  eo.reduce_range = reduce_range;
  if (Status s = quantize::export_qdq(model, ranges, eo, &m, stats); !s.ok()) return s;
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  if (!f || !m.SerializeToOstream(&f)) return Err("cannot write %s", out.c_str());
  return Status::Ok();
}

}  // namespace systolic::api

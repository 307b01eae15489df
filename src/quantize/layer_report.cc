// Per-layer SQNR: the int8 plan's conv outputs (dequantized) against the float plan's.
#include "quantize/layer_report.h"

#include <cmath>
#include <limits>
#include <map>

#include "kernels/reorder/reorder.h"
#include "runtime/session.h"

namespace systolic::quantize {
namespace {

struct Sums {
  double signal = 0, noise = 0, max_abs = 0;
};

}  // namespace

Status model_order_floats(const ir::Tensor& t, const void* data, std::vector<float>* out) {
  const int64_t n = t.numel();
  std::vector<float> v(static_cast<std::size_t>(n));
  if (t.dtype == ir::DType::u8 && t.quant.per_tensor()) {
    const auto* q = static_cast<const uint8_t*>(data);
    const float sc = t.quant.scale[0], z = static_cast<float>(t.quant.zero_point[0]);
    for (int64_t i = 0; i < n; ++i) v[i] = (static_cast<float>(q[i]) - z) * sc;
  } else if (t.dtype == ir::DType::f32) {
    const auto* f = static_cast<const float*>(data);
    v.assign(f, f + n);
  } else {
    return Err("tensor %s is %s in the plan; only float and quantized uint8 tensors read as floats", t.name.c_str(),
               ir::dtype_name(t.dtype));
  }
  if (t.layout != ir::Layout::nhwc) {
    *out = std::move(v);
    return Status::Ok();
  }
  if (t.shape.size() != 4) return Err("tensor %s is NHWC but not 4-D", t.name.c_str());
  out->resize(v.size());
  kernels::reorder_ref_f32(v.data(), out->data(), t.shape.data(), 0);
  return Status::Ok();
}

Expected<std::vector<LayerError>> layer_report(std::shared_ptr<const plan::Program> fp32,
                                               std::shared_ptr<const plan::Program> int8, const SampleLoader& load,
                                               int threads) {
  runtime::SessionOptions so;
  so.threads = threads;
  auto sf = runtime::Session::create(fp32, so);
  if (!sf.ok()) return sf.status();
  auto sq = runtime::Session::create(int8, so);
  if (!sq.ok()) return sq.status();
  auto samples = load((*sf)->inputs());
  if (!samples.ok()) return samples.status();
  // The int8 plan's conv outputs, by name, in plan order.
  std::vector<LayerError> rows;
  std::map<std::string, std::size_t> row_of;
  for (const ir::Node& n : int8->graph.nodes) {
    if (n.op != ir::Op::Conv) continue;
    const ir::Tensor& t = int8->graph.t(n.outputs[0]);
    LayerError e;
    e.node = n.name;
    e.op = ir::op_name(n.op);
    e.tensor = t.name;
    e.int8 = n.inputs.size() > 1 && int8->graph.t(n.inputs[1]).dtype == ir::DType::i8;
    row_of[t.name] = rows.size();
    rows.push_back(e);
  }
  // Each plan's values of those tensors in one run, appended per micro-batch (the two plans
  // may split a batch differently), compared once both runs are done.
  std::map<std::string, std::vector<float>> quantized, reference;
  std::vector<Sums> sums(rows.size());
  std::vector<float> buf;
  auto observer = [&](std::map<std::string, std::vector<float>>* seen, bool float_only) {
    return [&, seen, float_only](const ir::Tensor& t, const void* data) {
      if (!row_of.count(t.name) || (float_only && t.dtype != ir::DType::f32)) return;
      if (!model_order_floats(t, data, &buf).ok()) return;
      std::vector<float>& v = (*seen)[t.name];
      v.insert(v.end(), buf.begin(), buf.end());
    };
  };
  (*sq)->set_observer(observer(&quantized, false));
  (*sf)->set_observer(observer(&reference, true));
  std::vector<runtime::HostTensor> outs;
  for (const auto& set : *samples) {
    std::vector<std::pair<std::string, runtime::HostTensor>> named;
    for (std::size_t k = 0; k < set.size() && k < (*sf)->inputs().size(); ++k)
      named.emplace_back((*sf)->inputs()[k].name, set[k]);
    quantized.clear();
    reference.clear();
    SYSTOLIC_RETURN_IF_ERROR((*sq)->run(named, &outs));
    SYSTOLIC_RETURN_IF_ERROR((*sf)->run(named, &outs));
    for (const auto& [name, ref] : reference) {
      auto it = quantized.find(name);
      if (it == quantized.end() || it->second.size() != ref.size()) continue;
      const std::vector<float>& q = it->second;
      Sums& s = sums[row_of[name]];
      for (std::size_t i = 0; i < q.size(); ++i) {
        const double d = double(ref[i]) - q[i];
        s.signal += double(ref[i]) * ref[i];
        s.noise += d * d;
        s.max_abs = std::max(s.max_abs, std::fabs(d));
      }
    }
  }
  std::vector<LayerError> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (sums[i].signal == 0 && sums[i].noise == 0) continue;  // the float plan has no such tensor
    rows[i].max_abs = sums[i].max_abs;
    rows[i].sqnr_db = sums[i].noise > 0 ? 10.0 * std::log10(sums[i].signal / sums[i].noise)
                                        : std::numeric_limits<double>::infinity();
    out.push_back(rows[i]);
  }
  return out;
}

}  // namespace systolic::quantize

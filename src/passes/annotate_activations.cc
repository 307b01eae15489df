// Calibrated quantization (int8 plans of float models): every float activation whose range the
// calibration measured takes the uint8 parameters it was given, by tensor name. The names are
// those of the float plan the calibration ran, which went through the same passes up to here.
// A QDQ model's own annotations win; graph outputs stay float.
#include "passes/pass.h"

namespace systolic::passes {

Status annotate_activations(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::int8 || !ctx.optimize || !ctx.activation_quant) return Status::Ok();
  int n = 0;
  for (std::size_t i = 0; i < g.tensors.size(); ++i) {
    ir::Tensor& t = g.tensors[i];
    if (t.is_const() || t.dtype != ir::DType::f32 || !t.quant.empty() || g.is_graph_output(static_cast<int>(i)))
      continue;
    auto it = ctx.activation_quant->find(t.name);
    if (it == ctx.activation_quant->end()) continue;
    const ir::QuantParams& q = it->second;
    if (!q.per_tensor() || q.qtype != ir::DType::u8 || !(q.scale[0] > 0.f) || q.zero_point[0] < 0 ||
        q.zero_point[0] > 255)
      return Err("activation quantization of %s must be uint8, per tensor, with a positive scale", t.name.c_str());
    t.quant = q;
    ++n;
  }
  ctx.log += "annotate_activations: " + std::to_string(n) + " activations calibrated\n";
  return Status::Ok();
}

}  // namespace systolic::passes

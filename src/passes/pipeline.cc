// The pass pipeline: one list, printable with --dump-passes.
#include <string_view>

#include "passes/pass.h"

namespace systolic::passes {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::int8: return "int8";
  }
  return "?";
}

const std::vector<Pass>& pipeline(bool optimize) {
  static const std::vector<Pass> kFull = {
      {"bind_preprocess", bind_preprocess},
      {"bind_input_shapes", bind_input_shapes},
      {"qoperator_to_qdq", qoperator_to_qdq},
      {"constant_folding", constant_folding},
      {"shape_inference", shape_inference},
      {"split_dynamic", split_dynamic},
      {"batch_axis", batch_axis},
      {"fold_qdq", fold_qdq},
      {"dead_code_elimination", dead_code_elimination},
      {"fold_pad", fold_pad},
      {"convtranspose_to_conv", convtranspose_to_conv},
      {"fold_batchnorm", fold_batchnorm},
      {"conv3d_to_conv2d", conv3d_to_conv2d},
      {"prune_conv_taps", prune_conv_taps},
      {"fuse_layernorm", fuse_layernorm},
      {"rnn_input_projection", rnn_input_projection},
      {"gemm_to_conv", gemm_to_conv},
      {"fuse_gelu", fuse_gelu},
      {"fuse_channel_shuffle", fuse_channel_shuffle},
      {"reduce_mean_to_pool", reduce_mean_to_pool},
      {"canonicalize_activations", canonicalize_activations},
      {"int8_tables", int8_tables},
      {"fuse_epilogue", fuse_epilogue},
      {"dead_code_elimination", dead_code_elimination},
      {"fold_input_normalization", fold_input_normalization},
      {"annotate_activations", annotate_activations},
      {"int8_tables", int8_tables},
      {"lower_int8", lower_int8},
      {"lower_bf16", lower_bf16},
      {"dead_code_elimination", dead_code_elimination},
      {"layout_assignment", layout_assignment},
      {"fuse_quantize_reorder", fuse_quantize_reorder},
      {"fuse_lut", fuse_lut},
      {"pack_weights", pack_weights},
      {"store_bf16", store_bf16},
      {"memory_plan", memory_plan},
  };
  static const std::vector<Pass> kReference = {
      {"bind_preprocess", bind_preprocess},
      {"bind_input_shapes", bind_input_shapes},
      {"constant_folding", constant_folding},
      {"shape_inference", shape_inference},
      {"split_dynamic", split_dynamic},
      {"dead_code_elimination", dead_code_elimination},
      {"memory_plan", memory_plan},
  };
  return optimize ? kFull : kReference;
}

Status run_pipeline(ir::Graph& g, PassContext& ctx,
                    const std::function<void(const char*, const ir::Graph&)>& after, const char* last) {
  for (const Pass& p : pipeline(ctx.optimize)) {
    Status st = p.run(g, ctx);
    if (!st.ok()) return st;
#ifndef NDEBUG
    st = ir::verify(g);
    if (!st.ok()) return Err("after pass %s: %s", p.name, st.message().c_str());
#endif
    if (after) after(p.name, g);
    if (last && std::string_view(last) == p.name) break;
  }
  return Status::Ok();
}

}  // namespace systolic::passes

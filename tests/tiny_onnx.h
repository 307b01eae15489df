// Tiny ONNX models for fast end-to-end tests, with seeded weights.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace systolic::testing {

namespace tiny_detail {

// A float input "input" [batch, 3, h, w]; a dim given as "" is symbolic under `names`.
inline void add_input(onnx::GraphProto* g, const std::vector<int64_t>& dims, const std::vector<const char*>& names) {
  auto* in = g->add_input();
  in->set_name("input");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] > 0) tt->mutable_shape()->add_dim()->set_dim_value(dims[i]);
    else tt->mutable_shape()->add_dim()->set_dim_param(names[i]);
  }
}

// Conv 3x3 "conv" (pad 1) from "input" to "c" with oc x 3 seeded weights "w", then Relu to "r".
inline void add_conv_relu(onnx::GraphProto* g, int64_t oc, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 0.3f);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {oc, int64_t{3}, int64_t{3}, int64_t{3}}) w->add_dims(d);
  for (int64_t i = 0; i < oc * 3 * 3 * 3; ++i) w->add_float_data(dist(rng));
  auto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->set_name("conv");
  conv->add_input("input");
  conv->add_input("w");
  conv->add_output("c");
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int k = 0; k < 4; ++k) pads->add_ints(1);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("c");
  relu->add_output("r");
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const char* op, const std::vector<const char*>& in, const char* out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (const char* i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

}  // namespace tiny_detail

// Conv 3x3 (3 -> 16 channels) + Relu + GlobalAveragePool on float[N,3,32,32], batch dim symbolic
// ("N") unless `fixed_batch` > 0, height and width symbolic ("H", "W") with `symbolic_hw`.
inline std::string tiny_conv_onnx(uint32_t seed = 1, int64_t fixed_batch = 0, bool symbolic_hw = false) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  const int64_t hw = symbolic_hw ? 0 : 32;
  tiny_detail::add_input(g, {fixed_batch > 0 ? fixed_batch : 0, 3, hw, hw}, {"N", "", "H", "W"});
  tiny_detail::add_conv_relu(g, 16, seed);
  tiny_detail::add_node(g, "GlobalAveragePool", {"r"}, "y");
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

// Conv 3x3 (3 -> 4 channels, pad 1) + Relu on float[N,3,8,8], with three outputs: the relu's
// "r" [N,4,8,8]; "nz", NonZero of it: int64[4, count], count decided by each run's values; and
// "pos", the values nz points at (GatherND): float[count].
inline std::string tiny_nonzero_onnx(uint32_t seed = 1) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny_nonzero");
  tiny_detail::add_input(g, {0, 3, 8, 8}, {"N", "", "", ""});
  tiny_detail::add_conv_relu(g, 4, seed);
  tiny_detail::add_node(g, "NonZero", {"r"}, "nz");
  auto* perm = tiny_detail::add_node(g, "Transpose", {"nz"}, "nzt")->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  tiny_detail::add_node(g, "GatherND", {"r", "nzt"}, "pos");
  for (const char* o : {"r", "nz", "pos"}) g->add_output()->set_name(o);
  return m.SerializeAsString();
}

}  // namespace systolic::testing

// A tiny ONNX model for fast end-to-end tests: Conv 3x3 (3 -> 16 channels) + Relu +
// GlobalAveragePool on float[N,3,32,32], batch dim symbolic ("N") unless `fixed_batch` > 0,
// height and width symbolic ("H", "W") with `symbolic_hw`, seeded weights.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <random>
#include <string>

namespace systolic::testing {

inline std::string tiny_conv_onnx(uint32_t seed = 1, int64_t fixed_batch = 0, bool symbolic_hw = false) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  auto* in = g->add_input();
  in->set_name("input");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  if (fixed_batch > 0) tt->mutable_shape()->add_dim()->set_dim_value(fixed_batch);
  else tt->mutable_shape()->add_dim()->set_dim_param("N");
  tt->mutable_shape()->add_dim()->set_dim_value(3);
  for (const char* d : {"H", "W"}) {
    if (symbolic_hw) tt->mutable_shape()->add_dim()->set_dim_param(d);
    else tt->mutable_shape()->add_dim()->set_dim_value(32);
  }
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 0.3f);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {16, 3, 3, 3}) w->add_dims(d);
  for (int i = 0; i < 16 * 3 * 3 * 3; ++i) w->add_float_data(dist(rng));
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
  auto* gap = g->add_node();
  gap->set_op_type("GlobalAveragePool");
  gap->add_input("r");
  gap->add_output("y");
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
  auto* in = g->add_input();
  in->set_name("input");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  for (int64_t d : {3, 8, 8}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 0.3f);
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 3, 3, 3}) w->add_dims(d);
  for (int i = 0; i < 4 * 3 * 3 * 3; ++i) w->add_float_data(dist(rng));
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
  auto* nz = g->add_node();
  nz->set_op_type("NonZero");
  nz->add_input("r");
  nz->add_output("nz");
  auto* tr = g->add_node();
  tr->set_op_type("Transpose");
  tr->add_input("nz");
  tr->add_output("nzt");
  auto* perm = tr->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  perm->add_ints(1);
  perm->add_ints(0);
  auto* gnd = g->add_node();
  gnd->set_op_type("GatherND");
  gnd->add_input("r");
  gnd->add_input("nzt");
  gnd->add_output("pos");
  g->add_output()->set_name("r");
  g->add_output()->set_name("nz");
  g->add_output()->set_name("pos");
  return m.SerializeAsString();
}

}  // namespace systolic::testing

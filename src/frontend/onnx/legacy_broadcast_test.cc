// Opset < 7 broadcasting (`broadcast`, `axis`): B aligned with A's dims from `axis` on, for a
// computed A (its rank from ONNX's shape inference), a constant B and a runtime B.
#include "frontend/onnx/legacy_broadcast.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "frontend/onnx/import.h"
#include "plan/program.h"
#include "runtime/session.h"

namespace systolic::frontend {
namespace {

void io(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const char* name, std::vector<int64_t> dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* binary(onnx::GraphProto* g, const char* op, const char* a, const char* b, const char* out, int axis) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->add_input(a);
  n->add_input(b);
  n->add_output(out);
  auto* br = n->add_attribute();
  br->set_name("broadcast");
  br->set_type(onnx::AttributeProto::INT);
  br->set_i(1);
  if (axis != INT32_MIN) {
    auto* ax = n->add_attribute();
    ax->set_name("axis");
    ax->set_type(onnx::AttributeProto::INT);
    ax->set_i(axis);
  }
  return n;
}

// x [2,3,2] -> Relu -> r; s = r + b (b [3] a runtime input, axis 1); y = s * c (c [3] a
// constant, axis -2); z = y - d (d [2] an input, no axis: A's trailing dim).
std::string legacy_model(int add_axis = 1) {
  onnx::ModelProto m;
  m.set_ir_version(3);
  m.add_opset_import()->set_version(6);
  auto* g = m.mutable_graph();
  io(g->mutable_input(), "x", {2, 3, 2});
  io(g->mutable_input(), "b", {3});
  io(g->mutable_input(), "d", {2});
  auto* c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  c->add_dims(3);
  for (float v : {2.f, 3.f, 4.f}) c->add_float_data(v);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("r");
  binary(g, "Add", "r", "b", "s", add_axis);
  binary(g, "Mul", "s", "c", "y", -2);
  binary(g, "Sub", "y", "d", "z", INT32_MIN);
  io(g->mutable_output(), "z", {2, 3, 2});
  return m.SerializeAsString();
}

TEST(LegacyBroadcast, AlignsBWithAFromAxis) {
  auto g = import_onnx_bytes(legacy_model(), "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (bool optimize : {true, false}) {
    plan::CompileOptions co;
    co.optimize = optimize;
    auto p = plan::compile(*g, co);
    ASSERT_TRUE(p.ok()) << p.status().message();
    auto s = runtime::Session::create(*p);
    ASSERT_TRUE(s.ok()) << s.status().message();
    runtime::HostTensor x = runtime::HostTensor::zeros(ir::DType::f32, {2, 3, 2});
    runtime::HostTensor b = runtime::HostTensor::zeros(ir::DType::f32, {3});
    runtime::HostTensor d = runtime::HostTensor::zeros(ir::DType::f32, {2});
    for (int i = 0; i < 12; ++i) x.as<float>()[i] = static_cast<float>(i % 5) - 1.f;
    for (int i = 0; i < 3; ++i) b.as<float>()[i] = 10.f * static_cast<float>(i + 1);
    d.as<float>()[0] = 0.5f;
    d.as<float>()[1] = -0.25f;
    std::vector<runtime::HostTensor> outs;
    const Status st = (*s)->run({{"x", x}, {"b", b}, {"d", d}}, &outs);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(outs.size(), 1u);
    ASSERT_EQ(outs[0].shape, (ir::Shape{2, 3, 2}));
    const float cs[3] = {2.f, 3.f, 4.f};
    for (int n = 0; n < 2; ++n)
      for (int ch = 0; ch < 3; ++ch)
        for (int w = 0; w < 2; ++w) {
          const int i = (n * 3 + ch) * 2 + w;
          const float want = (std::max(x.as<float>()[i], 0.f) + b.as<float>()[ch]) * cs[ch] - d.as<float>()[w];
          EXPECT_EQ(outs[0].as<float>()[i], want) << optimize << " at " << i;
        }
  }
}

TEST(LegacyBroadcast, AnAxisPuttingBOutsideAIsRefused) {
  auto g = import_onnx_bytes(legacy_model(3), "");  // B [3] from past A's last dim
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("legacy broadcast axis 3"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace systolic::frontend

// float16 / bfloat16 models: the conversions, and a half model computing in float32 with its
// casts' rounding kept.
#include "frontend/onnx/half_precision.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "frontend/onnx/import.h"
#include "ir/half.h"
#include "plan/program.h"
#include "runtime/session.h"

namespace systolic::frontend {
namespace {

using ir::DType;

TEST(HalfConversions, RoundToNearestEvenWithOverflowSubnormalsAndNaN) {
  auto f16 = [](double x) { return ir::half_from_double(DType::f16, x); };
  EXPECT_EQ(f16(1.0), 0x3C00);
  EXPECT_EQ(f16(-2.0), 0xC000);
  EXPECT_EQ(f16(65504.0), 0x7BFF);             // the largest float16
  EXPECT_EQ(f16(65519.99), 0x7BFF);            // below the midpoint to 65536
  EXPECT_EQ(f16(65520.0), 0x7C00);             // the midpoint: even is the infinity
  EXPECT_EQ(f16(1.0 + 0x1p-11), 0x3C00);       // tie: to the even 1.0
  EXPECT_EQ(f16(1.0 + 3 * 0x1p-11), 0x3C02);   // tie: to the even 1 + 2^-9
  EXPECT_EQ(f16(1.0 + 0x1p-11 + 0x1p-30), 0x3C01);  // past the tie (a float32 source would lose it)
  EXPECT_EQ(f16(0x1p-24), 0x0001);             // the smallest subnormal
  EXPECT_EQ(f16(0x1p-25), 0x0000);             // half of it: ties to zero (even)
  EXPECT_EQ(f16(3 * 0x1p-25), 0x0002);         // 1.5 steps: to 2
  EXPECT_EQ(f16(-0.0), 0x8000);
  EXPECT_EQ(f16(-INFINITY), 0xFC00);
  EXPECT_EQ(f16(std::numeric_limits<double>::quiet_NaN()) & 0x7E00, 0x7E00);
  auto bf = [](double x) { return ir::half_from_double(DType::bf16, x); };
  EXPECT_EQ(bf(1.0), 0x3F80);
  EXPECT_EQ(bf(1.0 + 0x1p-8), 0x3F80);          // tie: to even
  EXPECT_EQ(bf(1.0 + 3 * 0x1p-8), 0x3F82);
  EXPECT_EQ(bf(3.0e38), 0x7F62);
  EXPECT_EQ(bf(3.4e38), 0x7F80);                // past the largest bfloat16 (0x7F7F = 3.39e38)
  // Every non-NaN float16 and bfloat16 goes to float and back unchanged, and agrees with the
  // bf16 rounding of the conv epilogues.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    for (DType t : {DType::f16, DType::bf16}) {
      const float v = ir::half_to_float(t, uint16_t(h));
      if (std::isnan(v)) continue;
      ASSERT_EQ(ir::half_from_double(t, v), h) << std::hex << h;
    }
  }
  EXPECT_EQ(ir::half_to_float(DType::f16, 0x0001), 0x1p-24f);
  EXPECT_EQ(ir::half_to_float(DType::f16, 0x7BFF), 65504.f);
}

// float16 bits of x, as a model stores them.
uint16_t h(float x) { return ir::half_from_double(DType::f16, x); }

onnx::ValueInfoProto* io(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const char* name,
                         onnx::TensorProto::DataType dt, std::vector<int64_t> dims) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dt);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

onnx::NodeProto* node(onnx::GraphProto* g, const char* op, std::vector<const char*> in, const char* out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (const char* i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

// A float16 model as `model.half()` exports it: x (f16) -> Conv 1x1 (f16 weights, 2 -> 3
// channels) -> Add a f16 constant -> y (f16); and a float32 input z through Cast to float16
// and back (an explicit rounding) to a float32 output zr, to a bfloat16 output zb, and through
// CastLike of a float16 constant and back to float32 to zl.
std::string half_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(15);  // CastLike
  auto* g = m.mutable_graph();
  io(g->mutable_input(), "x", onnx::TensorProto::FLOAT16, {1, 2, 2, 2});
  io(g->mutable_input(), "z", onnx::TensorProto::FLOAT, {4});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT16);
  for (int64_t d : {3, 2, 1, 1}) w->add_dims(d);
  for (float v : {0.5f, -1.f, 0.25f, 2.f, 1.f / 3, 0.1f}) w->add_int32_data(h(v));  // int32_data holds the bits
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT16);
  b->add_dims(1);
  const uint16_t bb = h(1000.f);
  b->set_raw_data(std::string(reinterpret_cast<const char*>(&bb), 2));
  node(g, "Conv", {"x", "w"}, "c");
  node(g, "Add", {"c", "b"}, "y");
  auto* c16 = node(g, "Cast", {"z"}, "z16");
  auto* to = c16->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT16);
  auto* c32 = node(g, "Cast", {"z16"}, "zr");
  auto* to2 = c32->add_attribute();
  *to2 = *to;
  to2->set_i(onnx::TensorProto::FLOAT);
  auto* cb = node(g, "Cast", {"z"}, "zb");
  auto* to3 = cb->add_attribute();
  *to3 = *to;
  to3->set_i(onnx::TensorProto::BFLOAT16);
  io(g->mutable_output(), "y", onnx::TensorProto::FLOAT16, {1, 3, 2, 2});
  io(g->mutable_output(), "zr", onnx::TensorProto::FLOAT, {4});
  io(g->mutable_output(), "zb", onnx::TensorProto::BFLOAT16, {4});
  node(g, "CastLike", {"z", "b"}, "zl16");  // like a float16 constant: a Cast to float16
  auto* cl = node(g, "Cast", {"zl16"}, "zl");
  *cl->add_attribute() = *to2;
  io(g->mutable_output(), "zl", onnx::TensorProto::FLOAT, {4});
  return m.SerializeAsString();
}

TEST(HalfModels, ComputeInFloat32AndRoundWhereTheModelCasts) {
  auto g = import_onnx_bytes(half_model(), "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  for (bool optimize : {true, false}) {
    plan::CompileOptions co;
    co.optimize = optimize;
    auto p = plan::compile(*g, co);
    ASSERT_TRUE(p.ok()) << p.status().message();
    auto s = runtime::Session::create(*p);
    ASSERT_TRUE(s.ok()) << s.status().message();
    runtime::HostTensor x = runtime::HostTensor::zeros(DType::f16, {1, 2, 2, 2});
    const float xs[8] = {1.f, 2.f, -3.f, 0.125f, 7.f, -0.5f, 0.3f, 11.f};
    for (int i = 0; i < 8; ++i) x.as<uint16_t>()[i] = h(xs[i]);
    runtime::HostTensor z = runtime::HostTensor::zeros(DType::f32, {4});
    const float zs[4] = {1.f + 0x1p-11f, 1.f + 3 * 0x1p-11f, 70000.f, 0.1f};
    std::memcpy(z.as<float>(), zs, sizeof zs);
    std::vector<runtime::HostTensor> outs;
    const Status st = (*s)->run({{"x", x}, {"z", z}}, &outs);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(outs.size(), 4u);
    ASSERT_EQ(outs[0].dtype, DType::f16);
    ASSERT_EQ(outs[2].dtype, DType::bf16);
    // y: the conv and the add in float32 on the half inputs' values, rounded once to float16.
    const float ws[6] = {0.5f, -1.f, 0.25f, 2.f, 1.f / 3, 0.1f};
    for (int o = 0; o < 3; ++o)
      for (int px = 0; px < 4; ++px) {
        const float w0 = ir::half_to_float(DType::f16, h(ws[o * 2])), w1 = ir::half_to_float(DType::f16, h(ws[o * 2 + 1]));
        const float x0 = ir::half_to_float(DType::f16, h(xs[px])), x1 = ir::half_to_float(DType::f16, h(xs[4 + px]));
        const float want = w0 * x0 + w1 * x1 + 1000.f;
        EXPECT_EQ(outs[0].as<uint16_t>()[o * 4 + px], h(want)) << optimize << " " << o << " " << px;
      }
    // zr: each value rounded to float16 by the model's Cast (ties to even, overflow to inf).
    const float zr[4] = {1.f, 1.f + 4 * 0x1p-11f, INFINITY, ir::half_to_float(DType::f16, h(0.1f))};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(outs[1].as<float>()[i], zr[i]) << i;
    EXPECT_NE(outs[1].as<float>()[3], 0.1f);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(outs[2].as<uint16_t>()[i], ir::half_from_double(DType::bf16, zs[i])) << i;
    ASSERT_EQ(outs[3].dtype, DType::f32);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(outs[3].as<float>()[i], zr[i]) << i;
  }
}

TEST(HalfModels, OnlyCastsTouchHalfTensors) {
  auto g = import_onnx_bytes(half_model(), "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto p = plan::compile(*g, plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ir::Graph& pg = (*p)->graph;
  int half_tensors = 0;
  for (const ir::Tensor& t : pg.tensors) half_tensors += ir::is_half(t.dtype);
  EXPECT_GE(half_tensors, 5);  // x, z16, y, zb, zl16
  for (const ir::Node& n : pg.nodes) {
    if (n.op == ir::Op::Cast) continue;
    for (int in : n.inputs) EXPECT_TRUE(in < 0 || !ir::is_half(pg.t(in).dtype)) << n.name << " reads " << pg.t(in).name;
    for (int out : n.outputs) EXPECT_TRUE(out < 0 || !ir::is_half(pg.t(out).dtype)) << n.name;
  }
}

}  // namespace
}  // namespace systolic::frontend

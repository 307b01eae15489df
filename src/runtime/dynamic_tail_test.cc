// The dynamic tail: compile splits off the nodes shaped by values, the runtime runs them after
// the static plan, plans keep them, and an If picks its branch at run time.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "frontend/onnx/import.h"
#include "runtime/dynamic_tail.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// conv -> relu (a static output) -> NonZero -> Transpose: the positions of the positive values.
ir::Graph nonzero_model() {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 6, 6});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {4, 3, 3, 3}), b.weights("bias", {4})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int y = b.node(ir::Op::Relu, {c}, 1, "relu")[0];
  const int nz = b.node(ir::Op::NonZero, {y})[0];
  const int idx = b.node(ir::Op::Transpose, {nz}, 1, "positions")[0];
  b.output(y);
  b.output(idx);
  return b.g;
}

// Every row of `idx` ([count, 4]) is the position of a non-zero of y, in row-major order,
// and there is one row per non-zero.
void expect_positions(const runtime::HostTensor& y, const runtime::HostTensor& idx) {
  std::vector<int64_t> want;
  const ir::Shape& s = y.shape;
  for (int64_t i = 0; i < y.numel(); ++i)
    if (y.as<float>()[i] != 0.f) want.push_back(i);
  ASSERT_EQ(idx.dtype, ir::DType::i64);
  ASSERT_EQ(idx.shape, (ir::Shape{static_cast<int64_t>(want.size()), 4}));
  ASSERT_GT(want.size(), 0u);
  ASSERT_LT(want.size(), static_cast<std::size_t>(y.numel()));  // the relu zeroed some
  for (std::size_t r = 0; r < want.size(); ++r) {
    const int64_t* p = idx.as<int64_t>() + r * 4;
    EXPECT_EQ(((p[0] * s[1] + p[1]) * s[2] + p[2]) * s[3] + p[3], want[r]) << "row " << r;
  }
}

}  // namespace

TEST(DynamicTail, CompileSplitsAndTheRuntimeRunsIt) {
  for (bool optimize : {true, false}) {
    plan::CompileOptions co;
    co.optimize = optimize;
    auto p = plan::compile(nonzero_model(), co);
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_TRUE((*p)->tail);
    ASSERT_EQ((*p)->tail->nodes.size(), 2u);  // NonZero, Transpose; conv and relu stay static
    for (const ir::Node& n : (*p)->graph.nodes) EXPECT_NE(n.op, ir::Op::NonZero);
    EXPECT_NE(plan::dynamic_summary(**p).find("1 NonZero"), std::string::npos) << plan::dynamic_summary(**p);

    // A plan file keeps the tail.
    auto loaded = plan::load_program_bytes(plan::serialize_program(**p));
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    ASSERT_TRUE((*loaded)->tail);
    for (const auto& prog : {*p, *loaded}) {
      auto s = runtime::Session::create(prog);
      ASSERT_TRUE(s.ok()) << s.status().message();
      ASSERT_EQ((*s)->outputs().size(), 2u);
      EXPECT_EQ((*s)->outputs()[0].shape, (ir::Shape{1, 4, 6, 6}));
      EXPECT_TRUE((*s)->outputs()[1].dynamic());
      for (uint32_t seed : {1u, 2u}) {
        std::vector<runtime::HostTensor> outs;
        Status st = (*s)->run({{"x", random_input(prog->graph.t(prog->graph.inputs[0]), seed)}}, &outs);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(outs.size(), 2u);
        expect_positions(outs[0], outs[1]);
      }
      // The steady-state path cannot hold a data-dependent output and says so.
      runtime::HostTensor x = random_input(prog->graph.t(prog->graph.inputs[0]), 1);
      std::vector<float> y(4 * 36);
      std::vector<int64_t> idx(4 * 144);
      Status st = (*s)->run_into({x.data.data()}, {y.data(), idx.data()});
      ASSERT_FALSE(st.ok());
      EXPECT_NE(st.message().find("data-dependent"), std::string::npos) << st.message();
    }
  }
}

TEST(DynamicTail, StaysWithinItsMemoryBudget) {
  auto p = plan::compile(nonzero_model(), {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  runtime::SessionOptions so;
  so.tail_max_bytes = 64;  // less than its input (the relu's 576 bytes) alone
  auto s = runtime::Session::create(*p, so);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<runtime::HostTensor> outs;
  Status st = (*s)->run({{"x", random_input((*p)->graph.t((*p)->graph.inputs[0]), 1)}}, &outs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("memory the dynamic tail may use"), std::string::npos) << st.message();
}

// rows = feat[NonZero(mask)]; y = Gemm(rows, W, bias): a fully connected layer over a number
// of rows known at run time, as detectors' box heads are.
TEST(DynamicTail, GemmOverDataDependentRowsMatchesTheReference) {
  for (bool trans_b : {true, false}) {
    GraphBuilder b;
    const int feat = b.input("feat", {6, 64});
    const int mask = b.input("mask", {6});
    const int w = b.weights("w", trans_b ? ir::Shape{32, 64} : ir::Shape{64, 32});
    const int bias = b.weights("bias", {32});
    const int nz = b.node(ir::Op::NonZero, {mask})[0];
    const int idx = b.node(ir::Op::Squeeze, {nz, b.g.add_const_i64("axes", {1}, {0})})[0];
    const int rows = b.node(ir::Op::Gather, {feat, idx})[0];
    const int y = b.node(ir::Op::Gemm, {rows, w, bias})[0];
    b.last().set_i("transB", trans_b);
    b.output(y);
    auto p = plan::compile(b.g, {});
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_TRUE((*p)->tail);
    auto s = runtime::Session::create(*p);
    ASSERT_TRUE(s.ok()) << s.status().message();
    runtime::HostTensor f = random_input((*p)->graph.t((*p)->graph.inputs[0]), 3);
    for (int run = 0; run < 2; ++run) {  // the second run reuses the packed weights and buffers
      runtime::HostTensor m = runtime::HostTensor::zeros(ir::DType::f32, {6});
      std::vector<int> picked = run == 0 ? std::vector<int>{0, 2, 3, 5} : std::vector<int>{1, 4};
      for (int i : picked) m.as<float>()[i] = 1.f;
      std::vector<runtime::HostTensor> outs;
      Status st = (*s)->run({{"feat", f}, {"mask", m}}, &outs);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(outs[0].shape, (ir::Shape{static_cast<int64_t>(picked.size()), 32}));
      const float* W = b.g.t(w).as<float>();
      for (std::size_t r = 0; r < picked.size(); ++r)
        for (int j = 0; j < 32; ++j) {
          double want = b.g.t(bias).as<float>()[j];
          for (int k = 0; k < 64; ++k)
            want += double(f.as<float>()[picked[r] * 64 + k]) * (trans_b ? W[j * 64 + k] : W[k * 32 + j]);
          EXPECT_NEAR(outs[0].as<float>()[r * 32 + j], want, 1e-4 * (1 + std::abs(want))) << r << "," << j;
        }
    }
  }
}

// RoiAlign over rois picked at run time: split across two threads, it gives what one thread
// gives, bit for bit.
TEST(DynamicTail, RoiAlignSplitAcrossThreadsEqualsOneThread) {
  GraphBuilder b;
  const int x = b.input("x", {2, 4, 8, 8});
  const int boxes = b.input("boxes", {7, 4});
  const int mask = b.input("mask", {7});
  const int nz = b.node(ir::Op::NonZero, {mask})[0];
  const int idx = b.node(ir::Op::Squeeze, {nz, b.g.add_const_i64("axes", {1}, {0})})[0];
  const int rois = b.node(ir::Op::Gather, {boxes, idx})[0];
  const int which = b.node(ir::Op::Gather, {b.g.add_const_i64("image", {7}, {0, 1, 0, 1, 1, 0, 1}), idx})[0];
  b.output(b.node(ir::Op::RoiAlign, {x, rois, which})[0]);
  b.last().set_i("output_height", 3);
  b.last().set_i("output_width", 3);
  auto p = plan::compile(b.g, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  runtime::HostTensor xs = random_input((*p)->graph.t((*p)->graph.inputs[0]), 5);
  runtime::HostTensor bx = runtime::HostTensor::zeros(ir::DType::f32, {7, 4});
  for (int i = 0; i < 7; ++i) {
    float* r = bx.as<float>() + i * 4;
    r[0] = 0.5f * i, r[1] = 0.3f * i, r[2] = r[0] + 3.f + i % 3, r[3] = r[1] + 2.f + i % 2;
  }
  runtime::HostTensor m = runtime::HostTensor::zeros(ir::DType::f32, {7});
  for (int i : {0, 1, 3, 4, 6}) m.as<float>()[i] = 1.f;
  std::vector<std::vector<runtime::HostTensor>> outs(2);
  for (int threads : {1, 2}) {
    runtime::SessionOptions so;
    so.threads = threads;
    auto s = runtime::Session::create(*p, so);
    ASSERT_TRUE(s.ok()) << s.status().message();
    Status st = (*s)->run({{"x", xs}, {"boxes", bx}, {"mask", m}}, &outs[threads - 1]);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  ASSERT_EQ(outs[1][0].shape, (ir::Shape{5, 4, 3, 3}));
  EXPECT_EQ(outs[0][0].data, outs[1][0].data);
}

TEST(DynamicTail, ModelWithoutDynamicNodesHasNoTail) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 4, 4});
  b.output(b.node(ir::Op::Relu, {x})[0]);
  auto p = plan::compile(b.g, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_FALSE((*p)->tail);
  EXPECT_EQ(plan::dynamic_summary(**p), "");
}

namespace {

onnx::ValueInfoProto* value(onnx::ValueInfoProto* v, const std::string& name, int elem, std::vector<int64_t> dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  tt->mutable_shape();  // a scalar has a shape of no dims
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return v;
}

void add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in, std::string out) {
  auto* n = g->add_node();
  n->set_op_type(op);
  for (auto& s : in) n->add_input(s);
  n->add_output(out);
}

// y = If(c, then: x + k, else: x * k) where both branches read x and k from the outer graph.
onnx::ModelProto if_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  value(g->add_input(), "x", onnx::TensorProto::FLOAT, {3});
  value(g->add_input(), "c", onnx::TensorProto::BOOL, {});
  auto* k = g->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::FLOAT);
  k->add_float_data(10.f);
  auto* n = g->add_node();
  n->set_op_type("If");
  n->add_input("c");
  n->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* bg = a->mutable_g();
    add_node(bg, std::string(branch) == "then_branch" ? "Add" : "Mul", {"x", "k"}, "r");
    value(bg->add_output(), "r", onnx::TensorProto::FLOAT, {3});
  }
  value(g->add_output(), "y", onnx::TensorProto::FLOAT, {3});
  return m;
}

}  // namespace

TEST(DynamicTail, IfRunsTheBranchItsConditionPicks) {
  auto g = frontend::import_onnx_bytes(if_model().SerializeAsString(), "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->nodes.size(), 1u);
  const ir::Node& n = g->nodes[0];
  ASSERT_EQ(n.inputs.size(), 3u);  // the condition, then x and k as the branches read them
  for (const char* b : {"then_branch", "else_branch"}) ASSERT_EQ(n.attrs.at(b).graph_v->inputs.size(), 2u);
  auto p = plan::compile(*g, {});
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE((*p)->tail);
  auto s = runtime::Session::create(*p);
  ASSERT_TRUE(s.ok()) << s.status().message();
  runtime::HostTensor x = runtime::HostTensor::zeros(ir::DType::f32, {3});
  for (int i = 0; i < 3; ++i) x.as<float>()[i] = float(i + 1);
  for (uint8_t c : {1, 0}) {
    runtime::HostTensor cond = runtime::HostTensor::zeros(ir::DType::boolean, {});
    cond.data[0] = c;
    std::vector<runtime::HostTensor> outs;
    Status st = (*s)->run({{"x", x}, {"c", cond}}, &outs);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(outs.size(), 1u);
    ASSERT_EQ(outs[0].shape, (ir::Shape{3}));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(outs[0].as<float>()[i], c ? float(i + 1) + 10.f : float(i + 1) * 10.f);
    // Its output's shape is fixed by the model, so the steady-state path serves it too.
    float y[3];
    st = (*s)->run_into({x.data.data(), cond.data.data()}, {y});
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(y[0], outs[0].as<float>()[0]);
  }
}

TEST(DynamicTail, BranchReadingAnUnknownNameIsRefused) {
  onnx::ModelProto m = if_model();
  auto* bg = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  bg->mutable_node(0)->set_input(1, "nowhere");
  auto g = frontend::import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("nowhere"), std::string::npos) << g.status().message();
}

}  // namespace systolic::testing

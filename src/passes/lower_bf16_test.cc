// lower_bf16: weights rounded to bf16, conv epilogues round outputs that convs read (through a max
// pool too), one RoundBf16 per other tensor a conv reads (graph input, average pool), graph
// outputs left alone; compiled bf16 plans agree with the interpreter on the lowered graph.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/epilogue.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

bool is_bf16_value(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return (u & 0xFFFF) == 0;
}

passes::PassContext bf16_context() {
  passes::PassContext ctx;
  ctx.cpu = host_cpu();
  ctx.precision = passes::Precision::bf16;
  return ctx;
}

void lower(ir::Graph& g) {
  passes::PassContext ctx = bf16_context();
  for (auto p : {passes::shape_inference, passes::fuse_epilogue, passes::gemm_to_conv, passes::shape_inference,
                 passes::lower_bf16}) {
    Status st = p(g, ctx);
    ASSERT_TRUE(st.ok()) << st.message();
    st = ir::verify(g);
    ASSERT_TRUE(st.ok()) << st.message();
  }
}

const ir::Node* producer(const ir::Graph& g, int t) {
  for (const ir::Node& n : g.nodes)
    for (int o : n.outputs)
      if (o == t) return &n;
  return nullptr;
}

// x -> conv1+relu -> maxpool -> conv2 (+ residual conv3(x)) -> GAP -> Flatten -> Gemm -> y
GraphBuilder resnet_like() {
  GraphBuilder b;
  const int x = b.input("x", {2, 8, 6, 6});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {8, 8, 3, 3}), b.weights("b1", {8})}, 1, "conv1")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r1 = b.node(ir::Op::Relu, {c1})[0];
  const int m = b.node(ir::Op::MaxPool, {r1})[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  const int c2 = b.node(ir::Op::Conv, {m, b.weights("w2", {16, 8, 1, 1})}, 1, "conv2")[0];
  const int c3 = b.node(ir::Op::Conv, {x, b.weights("w3", {16, 8, 3, 3})}, 1, "conv3")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.last().set_ints("strides", {2, 2});
  const int a = b.node(ir::Op::Add, {c3, c2})[0];
  const int gp = b.node(ir::Op::GlobalAveragePool, {a})[0];
  const int f = b.node(ir::Op::Flatten, {gp})[0];
  const int y = b.node(ir::Op::Gemm, {f, b.weights("wfc", {16, 10}), b.weights("bfc", {10})}, 1, "fc")[0];
  b.output(y);
  return b;
}

TEST(LowerBf16, RoundsWeightsEpiloguesAndOtherInputs) {
  GraphBuilder b = resnet_like();
  ir::Graph g = b.g;
  lower(g);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 4);
  // The graph input (read by conv1 and conv3: once) and the average pool's output (read by fc).
  ASSERT_EQ(count_ops(g, ir::Op::RoundBf16), 2);
  for (const ir::Node& n : g.nodes) {
    if (n.op == ir::Op::RoundBf16) {
      const ir::Node* p = producer(g, n.inputs[0]);
      EXPECT_TRUE(p == nullptr || p->op == ir::Op::Reshape) << n.name;  // graph input, or fc's view of the pool
      if (!p) {
        EXPECT_EQ(n.inputs[0], g.inputs[0]);
      }
    }
    if (n.op != ir::Op::Conv) continue;
    EXPECT_EQ(n.i("bf16", 0), 1) << n.name;
    const ir::Tensor& w = g.t(n.inputs[1]);
    for (int64_t i = 0; i < w.numel(); ++i) ASSERT_TRUE(is_bf16_value(w.as<float>()[i])) << n.name;
    if (n.in(2) >= 0 && n.name == "conv1") {
      EXPECT_FALSE(is_bf16_value(g.t(n.in(2)).as<float>()[0])) << "bias stays fp32";
    }
    // Every conv reads a RoundBf16 output or a rounded conv output (through the max pool).
    const ir::Node* p = producer(g, n.inputs[0]);
    ASSERT_NE(p, nullptr) << n.name;
    if (p->op == ir::Op::MaxPool) p = producer(g, p->inputs[0]);
    EXPECT_TRUE(p->op == ir::Op::RoundBf16 || (p->op == ir::Op::Conv && p->i("bf16_out", 0))) << n.name;
    // Only conv1's output feeds a conv (conv2, through the pool); the others feed the residual
    // add, the average pool and the graph output, which stay fp32.
    EXPECT_EQ(n.i("bf16_out", 0), n.name == "conv1" ? 1 : 0) << n.name;
  }
}

TEST(LowerBf16, OnlyForBf16) {
  GraphBuilder b = resnet_like();
  ir::Graph g = b.g;
  passes::PassContext ctx;
  ctx.cpu = host_cpu();
  ASSERT_TRUE(passes::shape_inference(g, ctx).ok());
  ASSERT_TRUE(passes::lower_bf16(g, ctx).ok());
  EXPECT_EQ(count_ops(g, ir::Op::RoundBf16), 0);
  for (const ir::Node& n : g.nodes) EXPECT_FALSE(n.has("bf16"));
}

// A conv output that is also a graph output keeps its fp32 value; the conv reading it gets a
// RoundBf16. An unfused Add feeding a conv gets one too.
TEST(LowerBf16, GraphOutputsAndFloatOps) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {4, 4, 1, 1})}, 1, "conv1")[0];
  const int c2 = b.node(ir::Op::Conv, {c1, b.weights("w2", {4, 4, 1, 1})}, 1, "conv2")[0];
  const int s = b.node(ir::Op::Sigmoid, {c2})[0];
  const int m = b.node(ir::Op::Mul, {s, x})[0];
  const int c3 = b.node(ir::Op::Conv, {m, b.weights("w3", {4, 4, 1, 1})}, 1, "conv3")[0];
  b.output(c3);
  b.output(c1);
  ir::Graph g = b.g;
  lower(g);
  for (const ir::Node& n : g.nodes)
    if (n.op == ir::Op::Conv) {  // conv2's sigmoid is fused
      EXPECT_EQ(n.i("bf16_out", 0), 0) << n.name;
    }
  int on_c1 = 0, on_mul = 0;
  for (const ir::Node& n : g.nodes)
    if (n.op == ir::Op::RoundBf16) {
      on_c1 += n.inputs[0] == c1;
      on_mul += n.inputs[0] == m;
    }
  EXPECT_EQ(on_c1, 1);
  EXPECT_EQ(on_mul, 1);
  EXPECT_EQ(count_ops(g, ir::Op::RoundBf16), 3);  // and x
}

std::shared_ptr<plan::Program> compile_bf16(const ir::Graph& g, const std::function<void(const char*, const ir::Graph&)>& after = nullptr) {
  plan::CompileOptions co;
  co.precision = passes::Precision::bf16;
  auto p = plan::compile(g, co, after);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  return *p;
}

// The compiled bf16 plan (kernels, NHWC, fused rounding) against the interpreter running the
// graph as lower_bf16 left it (reference convs rounding inputs and weights themselves, sums in
// double); and both near fp32 but not equal to it.
TEST(LowerBf16, PlanMatchesInterpretedLowering) {
  GraphBuilder b = resnet_like();
  ir::Graph lowered;
  auto p = compile_bf16(b.g, [&](const char* pass, const ir::Graph& g) {
    if (std::string(pass) == "lower_bf16") lowered = g;
  });
  EXPECT_EQ(p->precision, "bf16");
  EXPECT_NE(p->kernel_log.find(" (bf16)\n"), std::string::npos) << p->kernel_log;
  ASSERT_FALSE(lowered.nodes.empty());
  passes::PassContext ctx;
  ASSERT_TRUE(passes::memory_plan(lowered, ctx).ok());
  auto ref = std::make_shared<plan::Program>();
  ref->graph = lowered;
  ref->optimized = false;
  ref->isa = "ref";
  const auto got = run_program(p, b.g), want = run_program(ref, b.g), fp32 = run_graph(b.g, false);
  EXPECT_LT(max_rel_error(got, want), 1e-5);
  EXPECT_LT(max_rel_error(got, fp32), 3e-2);
  EXPECT_GT(max_rel_error(got, fp32), 1e-6) << "bf16 rounding had no effect";
}

}  // namespace
}  // namespace systolic::testing

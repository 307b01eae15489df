// store_bf16: activations written by a bf16-rounding conv and read only by convs (source or
// residual) on a kernel that takes bf16 storage, or by max pools between such convs, become
// bf16 tensors, the convs and pools told which;
// graph outputs and tensors another op or kernel reads stay float. Where the host has AMX-BF16,
// a compiled plan with bf16 storage gives exactly the outputs of the same plan on floats, also
// after a round trip through a plan file.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/conv/conv.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

constexpr const char* kAmx = "conv_bf16_igemm_32x32_amx";

// x -> conv1+relu -> c1 -> conv2+relu -> c2 -> conv3 (+ residual c1) + relu -> y
GraphBuilder chain(int c) {
  GraphBuilder b;
  const int x = b.input("x", {2, c, 9, 7});
  const int c1 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {x, b.weights("w1", {c, c, 3, 3})}, 1, "conv1")[0]})[0];
  b.g.nodes[b.g.nodes.size() - 2].set_ints("pads", {1, 1, 1, 1});
  const int c2 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {c1, b.weights("w2", {c, c, 1, 1})}, 1, "conv2")[0]})[0];
  const int c3 = b.node(ir::Op::Conv, {c2, b.weights("w3", {c, c, 3, 3}), b.weights("b3", {c})}, 1, "conv3")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(b.node(ir::Op::Relu, {b.node(ir::Op::Add, {c3, c1})[0]})[0]);
  return b;
}

// x -> conv1+relu -> maxpool 3x3 s2 -> m -> conv2+relu -> conv3 (+ residual m) + relu -> y:
// ResNet's stem and first block.
GraphBuilder stem(int c) {
  GraphBuilder b;
  const int x = b.input("x", {2, c, 10, 9});
  const int c1 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {x, b.weights("w1", {c, c, 3, 3})}, 1, "conv1")[0]})[0];
  b.g.nodes[b.g.nodes.size() - 2].set_ints("pads", {1, 1, 1, 1});
  const int m = b.node(ir::Op::MaxPool, {c1}, 1, "pool")[0];
  b.last().set_ints("kernel_shape", {3, 3});
  b.last().set_ints("strides", {2, 2});
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int c2 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {m, b.weights("w2", {c, c, 1, 1})}, 1, "conv2")[0]})[0];
  const int c3 = b.node(ir::Op::Conv, {c2, b.weights("w3", {c, c, 3, 3})}, 1, "conv3")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(b.node(ir::Op::Relu, {b.node(ir::Op::Add, {c3, m})[0]})[0]);
  return b;
}

// x -> conv1+relu -> c1 -> conv2+relu -> conv3 (+ residual: downsample(c1)) + relu -> y:
// ResNet's projection shortcut, whose output only the residual add reads.
GraphBuilder projection(int c) {
  GraphBuilder b;
  const int x = b.input("x", {2, c, 9, 7});
  const int c1 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {x, b.weights("w1", {c, c, 3, 3})}, 1, "conv1")[0]})[0];
  b.g.nodes[b.g.nodes.size() - 2].set_ints("pads", {1, 1, 1, 1});
  const int c2 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {c1, b.weights("w2", {c, c, 1, 1})}, 1, "conv2")[0]})[0];
  const int d = b.node(ir::Op::Conv, {c1, b.weights("wd", {2 * c, c, 1, 1})}, 1, "downsample")[0];
  const int c3 = b.node(ir::Op::Conv, {c2, b.weights("w3", {2 * c, c, 1, 1})}, 1, "conv3")[0];
  b.output(b.node(ir::Op::Relu, {b.node(ir::Op::Add, {c3, d})[0]})[0]);
  return b;
}

passes::PassContext bf16_context() {
  passes::PassContext ctx;
  ctx.cpu = host_cpu();
  ctx.precision = passes::Precision::bf16;
  return ctx;
}

ir::Attr str(const std::string& v) {
  ir::Attr a;
  a.kind = ir::Attr::s;
  a.str_v = v;
  return a;
}

// The chain (or the stem) fused and lowered, every conv given `kernel`, pools a float kernel.
ir::Graph lowered(const std::string& kernel, ir::Graph g = chain(8).g) {
  passes::PassContext ctx = bf16_context();
  for (auto p : {passes::shape_inference, passes::fuse_epilogue, passes::lower_bf16}) {
    const Status st = p(g, ctx);
    if (!st.ok()) throw std::runtime_error(st.message());
  }
  for (ir::Node& n : g.nodes)
    if (n.op == ir::Op::Conv) n.attrs["kernel"] = str(kernel);
    else if (n.op == ir::Op::MaxPool) n.attrs["kernel"] = str("pool_f32_ref");
  return g;
}

const ir::Node& node(const ir::Graph& g, const std::string& name) {
  for (const ir::Node& n : g.nodes)
    if (n.name == name) return n;
  throw std::runtime_error("no node " + name);
}

TEST(StoreBf16, ConvToConvActivationsBecomeBf16) {
  ir::Graph g = lowered(kAmx);
  passes::PassContext ctx = bf16_context();
  ASSERT_TRUE(passes::store_bf16(g, ctx).ok());
  ASSERT_TRUE(ir::verify(g).ok());
  const ir::Node &c1 = node(g, "conv1"), &c2 = node(g, "conv2"), &c3 = node(g, "conv3");
  ASSERT_EQ(c3.in(3), c1.outputs[0]) << "the residual add is fused";
  EXPECT_EQ(g.t(c1.outputs[0]).dtype, ir::DType::bf16);  // read by conv2 and as conv3's residual
  EXPECT_EQ(g.t(c2.outputs[0]).dtype, ir::DType::bf16);
  EXPECT_EQ(g.t(c3.outputs[0]).dtype, ir::DType::f32);  // the graph output
  EXPECT_EQ(g.t(c1.inputs[0]).dtype, ir::DType::f32);   // the graph input
  EXPECT_EQ(c1.i("bf16_io", 0), kernels::kBf16Dst);
  EXPECT_EQ(c2.i("bf16_io", 0), kernels::kBf16Src | kernels::kBf16Dst);
  EXPECT_EQ(c3.i("bf16_io", 0), kernels::kBf16Src | kernels::kBf16Res);
}

// A projection shortcut's output, read only as a residual, is left unrounded by lower_bf16;
// on storage-taking convs it becomes bf16 too, its writer told to round it.
TEST(StoreBf16, AResidualOnlyOutputIsRoundedAndStored) {
  ir::Graph g = lowered(kAmx, projection(8).g);
  const ir::Node& ds = node(g, "downsample");
  ASSERT_EQ(node(g, "conv3").in(3), ds.outputs[0]) << "the residual add is fused";
  EXPECT_EQ(ds.i("bf16_out", 0), 0) << "lower_bf16 rounds only what a conv multiplies";
  passes::PassContext ctx = bf16_context();
  ASSERT_TRUE(passes::store_bf16(g, ctx).ok());
  ASSERT_TRUE(ir::verify(g).ok());
  EXPECT_EQ(g.t(ds.outputs[0]).dtype, ir::DType::bf16);
  EXPECT_EQ(ds.i("bf16_out", 0), 1);
  EXPECT_EQ(ds.i("bf16_io", 0), kernels::kBf16Src | kernels::kBf16Dst);
  EXPECT_EQ(node(g, "conv3").i("bf16_io", 0), kernels::kBf16Src | kernels::kBf16Res);
  // On a kernel that takes no bf16 storage nothing changes: it stays an unrounded float.
  ir::Graph f = lowered("conv_f32_igemm_6x64_avx512", projection(8).g);
  ASSERT_TRUE(passes::store_bf16(f, ctx).ok());
  EXPECT_EQ(f.t(node(f, "downsample").outputs[0]).dtype, ir::DType::f32);
  EXPECT_EQ(node(f, "downsample").i("bf16_out", 0), 0);
}

// A max pool between such convs keeps the storage on its kernel's bf16 twin; one that a float
// reader follows, or that follows a float writer, stays float with its input and output.
TEST(StoreBf16, MaxPoolBetweenConvsTakesBf16) {
  if (!host_cpu().avx2) GTEST_SKIP() << "the bf16 pool kernels need AVX2";
  ir::Graph g = lowered(kAmx, stem(8).g);
  passes::PassContext ctx = bf16_context();
  ASSERT_TRUE(passes::store_bf16(g, ctx).ok());
  ASSERT_TRUE(ir::verify(g).ok());
  const ir::Node &pool = node(g, "pool"), &c2 = node(g, "conv2"), &c3 = node(g, "conv3");
  EXPECT_EQ(g.t(pool.inputs[0]).dtype, ir::DType::bf16);
  EXPECT_EQ(g.t(pool.outputs[0]).dtype, ir::DType::bf16);
  EXPECT_EQ(pool.i("bf16_io", 0), 1);
  EXPECT_TRUE(pool.s("kernel", "").starts_with("pool_bf16_")) << pool.s("kernel", "");
  EXPECT_EQ(c2.i("bf16_io", 0), kernels::kBf16Src | kernels::kBf16Dst);
  EXPECT_EQ(c3.i("bf16_io", 0), kernels::kBf16Src | kernels::kBf16Res);
  // The pool's reader conv3, or its writer conv1, on a float kernel: its input and output stay float.
  for (const char* off : {"conv3", "conv1"}) {
    ir::Graph h = lowered(kAmx, stem(8).g);
    for (ir::Node& n : h.nodes)
      if (n.name == off) n.attrs["kernel"] = str("conv_f32_igemm_6x64_avx512");
    ASSERT_TRUE(passes::store_bf16(h, ctx).ok());
    const ir::Node& p = node(h, "pool");
    EXPECT_EQ(h.t(p.inputs[0]).dtype, ir::DType::f32) << off;
    EXPECT_EQ(h.t(p.outputs[0]).dtype, ir::DType::f32) << off;
    EXPECT_FALSE(p.has("bf16_io")) << off;
    EXPECT_EQ(p.s("kernel", ""), "pool_f32_ref") << off;
  }
}

TEST(StoreBf16, OtherKernelsAndPrecisionsKeepFloats) {
  for (const char* kernel : {"conv_bf16_igemm_6x64_avx512bf16", "conv_f32_igemm_6x64_avx512"}) {
    ir::Graph g = lowered(kernel);
    passes::PassContext ctx = bf16_context();
    ASSERT_TRUE(passes::store_bf16(g, ctx).ok());
    for (const ir::Tensor& t : g.tensors) EXPECT_NE(t.dtype, ir::DType::bf16) << kernel << " " << t.name;
    for (const ir::Node& n : g.nodes) EXPECT_FALSE(n.has("bf16_io")) << kernel << " " << n.name;
  }
  // One reader on another kernel (conv3) keeps what it reads in float: c1 (its residual) and c2.
  ir::Graph g = lowered(kAmx);
  for (ir::Node& n : g.nodes)
    if (n.name == "conv3") n.attrs["kernel"] = str("conv_f32_igemm_6x64_avx512");
  passes::PassContext ctx = bf16_context();
  ASSERT_TRUE(passes::store_bf16(g, ctx).ok());
  for (const ir::Tensor& t : g.tensors) EXPECT_NE(t.dtype, ir::DType::bf16) << t.name;
  // fp32 plans are left alone.
  ir::Graph f = lowered(kAmx);
  passes::PassContext fctx;
  ASSERT_TRUE(passes::store_bf16(f, fctx).ok());
  for (const ir::Tensor& t : f.tensors) EXPECT_NE(t.dtype, ir::DType::bf16) << t.name;
}

// The compiled plan against itself with the storage undone (floats, memory planned again):
// the same bytes out, and a smaller arena where activations are its peak; the chain, the stem
// and the projection shortcut.
class CompiledPlan : public ::testing::TestWithParam<int> {};

TEST_P(CompiledPlan, GivesTheFloatPlansOutputs) {
  if (!host_cpu().amx_bf16) GTEST_SKIP() << "the AMX bf16 kernel (the one that takes bf16 storage) needs AMX-BF16";
  GraphBuilder b = GetParam() == 1 ? stem(64) : GetParam() == 2 ? projection(64) : chain(64);
  plan::CompileOptions co;
  co.precision = passes::Precision::bf16;
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  int stored = 0;
  for (const ir::Tensor& t : (*p)->graph.tensors) stored += t.dtype == ir::DType::bf16;
  EXPECT_GE(stored, GetParam() == 2 ? 3 : 2) << (*p)->kernel_log;  // the projection: its shortcut's output too
  auto floats = std::make_shared<plan::Program>(**p);
  for (ir::Tensor& t : floats->graph.tensors)
    if (t.dtype == ir::DType::bf16) t.dtype = ir::DType::f32;
  int pools = 0;
  for (ir::Node& n : floats->graph.nodes) {
    n.attrs.erase("bf16_io");
    if (n.s("kernel", "").starts_with("pool_bf16_")) n.attrs["kernel"] = str("pool_f32_ref"), ++pools;
  }
  EXPECT_EQ(pools, GetParam() == 1 ? 1 : 0);
  passes::PassContext ctx;
  ASSERT_TRUE(passes::memory_plan(floats->graph, ctx).ok());
  // The chain's peak is its activations; the stem's, the float input and its NHWC copy.
  if (GetParam() != 1) {
    EXPECT_LT((*p)->graph.arena_bytes, floats->graph.arena_bytes);
  }
  // Through a plan file too: the bf16 tensors and the convs' bits survive it.
  auto loaded = plan::load_program_bytes(plan::serialize_program(**p));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const auto got = run_program(*p, b.g, 2), want = run_program(floats, b.g, 2), reread = run_program(*loaded, b.g);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), reread.size());
  long differ = 0, differ_reread = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    differ += std::memcmp(&got[i], &want[i], 4) != 0;
    differ_reread += std::memcmp(&reread[i], &want[i], 4) != 0;
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(differ_reread, 0);
}

INSTANTIATE_TEST_SUITE_P(StoreBf16, CompiledPlan, ::testing::Values(0, 1, 2), [](const auto& i) {
  return std::string(i.param == 1 ? "Stem" : i.param == 2 ? "Projection" : "Chain");
});

// A plan whose storage bits and tensor types disagree is refused at load, never misread: a conv
// told of bf16 storage its tensors lack, and a float pool over a bf16 tensor.
TEST(StoreBf16, PlansWhoseBitsAndTypesDisagreeAreRefused) {
  GraphBuilder b;
  const int x = b.input("x", {1, 16, 8, 8});
  const int c1 = b.node(ir::Op::Relu, {b.node(ir::Op::Conv, {x, b.weights("w1", {16, 16, 3, 3})}, 1, "conv1")[0]})[0];
  b.g.nodes[b.g.nodes.size() - 2].set_ints("pads", {1, 1, 1, 1});
  const int mp = b.node(ir::Op::MaxPool, {c1}, 1, "pool")[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  b.output(b.node(ir::Op::Conv, {mp, b.weights("w2", {16, 16, 1, 1})}, 1, "conv2")[0]);
  plan::CompileOptions co;
  co.precision = passes::Precision::bf16;
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_TRUE(runtime::Session::create(*p, {}).ok());
  auto tampered = [&](auto&& change) {
    auto q = std::make_shared<plan::Program>(**p);
    change(q->graph);
    auto s = runtime::Session::create(q, {});
    return s.ok() ? std::string("loaded") : s.status().message();
  };
  const std::string bits = tampered([](ir::Graph& g) {
    for (ir::Node& n : g.nodes)
      if (n.op == ir::Op::Conv) n.set_i("bf16_io", kernels::kBf16Dst);
  });
  EXPECT_NE(bits.find("bf16 storage bits disagree"), std::string::npos) << bits;
  // The pool (bf16 or float as this host compiled it): told of float storage over a bf16
  // output, then of bf16 storage over a float output.
  const std::string pool = tampered([](ir::Graph& g) {
    for (ir::Node& n : g.nodes)
      if (n.op == ir::Op::MaxPool) n.attrs.erase("bf16_io"), g.tensors[n.outputs[0]].dtype = ir::DType::bf16;
  });
  EXPECT_NE(pool.find("runs a float kernel on bfloat16 data"), std::string::npos) << pool;
  const std::string pool_bit = tampered([](ir::Graph& g) {
    for (ir::Node& n : g.nodes)
      if (n.op == ir::Op::MaxPool) n.set_i("bf16_io", 1), g.tensors[n.outputs[0]].dtype = ir::DType::f32;
  });
  EXPECT_NE(pool_bit.find("bf16 storage bit disagrees"), std::string::npos) << pool_bit;
}

}  // namespace
}  // namespace systolic::testing

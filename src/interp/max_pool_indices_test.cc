// MaxPool's Indices output: positions counted over the whole NCHW input (batch and channel
// included), the first of equal maxima, row- or column-major; a plan runs it as written.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/pool/pool.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// Runs `g` compiled (optimized or reference) on its seeded inputs; returns every output.
std::vector<runtime::HostTensor> run_all(const ir::Graph& g, bool optimize, int64_t batch) {
  plan::CompileOptions co;
  co.optimize = optimize;
  co.batch = batch;
  auto p = plan::compile(g, co);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  auto s = runtime::Session::create(*p, runtime::SessionOptions{});
  if (!s.ok()) throw std::runtime_error(s.status().message());
  std::vector<std::pair<std::string, runtime::HostTensor>> ins;
  for (int id : g.inputs) ins.emplace_back(g.t(id).name, random_input(g.t(id), 11));
  std::vector<runtime::HostTensor> outs;
  const Status st = (*s)->run(ins, &outs);
  if (!st.ok()) throw std::runtime_error(st.message());
  return outs;
}

TEST(MaxPoolIndices, ReferenceCountsOverTheBatchTakesTheFirstMaximumAndSkipsNaN) {
  // Two images of one 3x4 channel, 2x2 windows with stride 2 and a right pad of 1 (a 2x3
  // window grid whose last column reads one pixel per row).
  kernels::PoolParams p;
  p.n = 2, p.c = 1, p.ih = 2, p.iw = 5, p.oh = 1, p.ow = 3, p.kh = 2, p.kw = 2, p.sh = 2, p.sw = 2, p.pad_r = 1;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float src[] = {1, 7, 3, 3, 9,    //
                       7, 2, 3, 0, 4,    // image 0: 7 twice (first wins), 3 twice, then 9 over 4
                       nan, 2, 5, 6, 1,  //
                       4, nan, 6, 6, 8};  // image 1: NaN never wins; 6 at (0,3) before (1,2), (1,3)
  float dst[6];
  int64_t idx[6];
  kernels::pool_max_indices_ref_nchw(p, src, dst, idx, false);
  EXPECT_EQ(std::vector<float>(dst, dst + 6), (std::vector<float>{7, 3, 9, 4, 6, 8}));
  EXPECT_EQ(std::vector<int64_t>(idx, idx + 6), (std::vector<int64_t>{1, 2, 4, 15, 13, 19}));
  // Column-major numbering within each image plane: (y, x) -> x * H + y.
  kernels::pool_max_indices_ref_nchw(p, src, dst, idx, true);
  EXPECT_EQ(std::vector<int64_t>(idx, idx + 6), (std::vector<int64_t>{2, 4, 8, 11, 16, 19}));
}

// conv -> relu -> MaxPool with Indices -> MaxUnpool: the SegNet pattern, both pool outputs
// read by the graph's outputs too.
ir::Graph segnet_block(int64_t batch, int storage_order) {
  GraphBuilder b;
  const int x = b.input("x", {batch, 3, 8, 10});
  int y = b.node(ir::Op::Conv, {x, b.weights("w", {16, 3, 3, 3}), b.weights("bias", {16})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  y = b.node(ir::Op::Relu, {y})[0];
  const auto pooled = b.node(ir::Op::MaxPool, {y}, 2, "pool");
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  b.last().set_i("storage_order", storage_order);
  const int up = b.node(ir::Op::MaxUnpool, {pooled[0], pooled[1]})[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  b.output(up);
  b.output(pooled[0]);
  b.output(pooled[1]);
  return b.g;
}

TEST(MaxPoolIndices, APlanGivesTheReferenceExecutorsValuesAndIndicesAtBatchThree) {
  const ir::Graph g = segnet_block(3, 0);
  const auto opt = run_all(g, true, 3), ref = run_all(g, false, 3);
  ASSERT_EQ(opt.size(), 3u);
  ASSERT_EQ(opt[2].dtype, ir::DType::i64);
  ASSERT_EQ(opt[2].numel(), 3 * 16 * 4 * 5);
  // Every index names a pixel of its own image and channel, the one holding the maximum.
  const int64_t plane = 8 * 10;
  for (int64_t i = 0; i < opt[2].numel(); ++i) {
    const int64_t at = opt[2].as<int64_t>()[i];
    ASSERT_EQ(at / plane, i / 20) << i;
  }
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(opt[k].numel(), ref[k].numel());
    if (k == 2) {
      EXPECT_EQ(opt[k].data, ref[k].data);
    } else {
      std::vector<float> a(opt[k].as<float>(), opt[k].as<float>() + opt[k].numel());
      std::vector<float> r(ref[k].as<float>(), ref[k].as<float>() + ref[k].numel());
      EXPECT_LT(max_rel_error(a, r), 1e-5) << k;
    }
  }
  // storage_order=1 numbers the same maxima column-major.
  const auto col = run_all(segnet_block(3, 1), true, 3);
  for (int64_t i = 0; i < opt[2].numel(); ++i) {
    const int64_t r = opt[2].as<int64_t>()[i], c = col[2].as<int64_t>()[i];
    const int64_t y = (r % plane) / 10, x = r % 10;
    ASSERT_EQ(c, r - r % plane + x * 8 + y) << i;
  }
}

TEST(MaxPoolIndices, KeepsTheBatchWholeAndItsPlaneLayout) {
  ir::Graph g = segnet_block(4, 0);
  passes::PassContext ctx;
  ctx.batch = 4;
  ASSERT_TRUE(passes::shape_inference(g, ctx).ok());
  ASSERT_TRUE(passes::batch_axis(g, ctx).ok());
  EXPECT_FALSE(ctx.batch_split.separable);
  EXPECT_NE(ctx.batch_split.why.find("Indices"), std::string::npos) << ctx.batch_split.why;
  // Compiled, the pool stays a plain NCHW step (the NHWC pool kernels give no indices).
  plan::CompileOptions co;
  co.batch = 4;
  auto p = plan::compile(g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  int pools = 0;
  for (const ir::Node& n : (*p)->graph.nodes) {
    if (n.op != ir::Op::MaxPool) continue;
    ++pools;
    EXPECT_FALSE(n.has("kernel")) << n.name;
  }
  EXPECT_EQ(pools, 1);
  // Without the Indices output the same pool runs on a pool kernel.
  GraphBuilder b;
  const int x = b.input("x", {4, 16, 8, 10});
  b.node(ir::Op::MaxPool, {x});
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  b.output(b.last().outputs[0]);
  auto plain = plan::compile(b.g, co);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  bool kernel = false;
  for (const ir::Node& n : (*plain)->graph.nodes) kernel |= n.op == ir::Op::MaxPool && n.has("kernel");
  EXPECT_TRUE(kernel);
}

}  // namespace
}  // namespace systolic::testing

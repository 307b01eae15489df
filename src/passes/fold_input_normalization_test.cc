// fold_input_normalization: NormalizeImage disappears into the first conv (weights scaled,
// offsets on the uint8 read), with the results of the unfolded plan, padding included.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// conv (7x7/2 pad 3 like ResNet's stem, or a 1x1 the uint8 path does not take) then relu.
ir::Graph stem(int k, int stride, int pad) {
  GraphBuilder b;
  const int x = b.input("image", {2, 3, 19, 22});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 3, k, k}), b.weights("bias", {8})})[0];
  b.last().set_ints("strides", {stride, stride});
  b.last().set_ints("pads", {pad, pad, pad, pad});
  b.output(b.node(ir::Op::Relu, {c})[0]);
  return b.g;
}

std::vector<float> run_image(const ir::Graph& g, bool optimize, std::shared_ptr<plan::Program>* plan_out) {
  plan::CompileOptions co;
  co.optimize = optimize;
  co.preprocess = ir::imagenet_preprocess();
  auto p = plan::compile(g, co);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  *plan_out = *p;
  auto s = runtime::Session::create(*p);
  if (!s.ok()) throw std::runtime_error(s.status().message());
  std::mt19937 rng(9);
  runtime::HostTensor img = runtime::HostTensor::zeros(ir::DType::u8, (*s)->inputs()[0].shape);
  for (auto& v : img.data) v = static_cast<uint8_t>(rng() & 255);
  std::vector<runtime::HostTensor> out;
  Status st = (*s)->run({{"image", img}}, &out);
  if (!st.ok()) throw std::runtime_error(st.message());
  return std::vector<float>(out[0].as<float>(), out[0].as<float>() + out[0].numel());
}

}  // namespace

TEST(FoldInputNormalization, FoldsIntoTheStemAndKeepsResults) {
  const ir::Graph g = stem(7, 2, 3);
  std::shared_ptr<plan::Program> opt, ref;
  const auto a = run_image(g, true, &opt);
  const auto b = run_image(g, false, &ref);
  EXPECT_LT(max_rel_error(a, b), 1e-5);
  EXPECT_EQ(count_ops(ref->graph, ir::Op::NormalizeImage), 1);
  if (host_cpu().has_avx2_fma()) {  // an optimized kernel reads uint8: folded
    EXPECT_EQ(count_ops(opt->graph, ir::Op::NormalizeImage), 0);
    for (const ir::Node& n : opt->graph.nodes)
      if (n.op == ir::Op::Conv) {
        EXPECT_EQ(n.i("src_u8", 0), 1);
      }
  }
}

TEST(FoldInputNormalization, KeepsTheNodeWhenNoKernelCanRead) {
  // A 1x1 conv is not on the uint8 path: NormalizeImage stays (on NHWC) and results hold.
  const ir::Graph g = stem(1, 1, 0);
  std::shared_ptr<plan::Program> opt, ref;
  const auto a = run_image(g, true, &opt);
  const auto b = run_image(g, false, &ref);
  EXPECT_LT(max_rel_error(a, b), 1e-5);
  EXPECT_EQ(count_ops(opt->graph, ir::Op::NormalizeImage), 1);
  EXPECT_NE(opt->kernel_log.find("NormalizeImage kept"), std::string::npos) << opt->kernel_log;
}

TEST(FoldInputNormalization, WithoutPreprocessingNothingChanges) {
  ir::Graph g = stem(3, 1, 1);
  const std::size_t nodes = g.nodes.size();
  passes::PassContext ctx;
  ctx.cpu = host_cpu();
  ASSERT_TRUE(passes::fold_input_normalization(g, ctx).ok());
  EXPECT_EQ(g.nodes.size(), nodes);
}

}  // namespace systolic::testing

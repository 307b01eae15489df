// pack_weights: every NHWC conv gets a kernel chosen for the target and its packed weights,
// and the reference kernel is chosen when the target has no vector unit.
#include <gtest/gtest.h>

#include "kernels/conv/conv.h"
#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(PackWeights, ChoosesKernelPerTarget) {
  for (const char* isa : {"native", "ref"}) {
    GraphBuilder b;
    const int x = b.input("x", {1, 5, 7, 7});
    const int y = b.node(ir::Op::Conv, {x, b.weights("w", {6, 5, 3, 3})})[0];
    b.output(y);
    passes::PassContext ctx;
    ctx.cpu = cap_isa(host_cpu(), isa);
    for (auto p : {passes::shape_inference, passes::layout_assignment, passes::pack_weights})
      ASSERT_TRUE(p(b.g, ctx).ok());
    const ir::Node* conv = nullptr;
    for (const ir::Node& n : b.g.nodes)
      if (n.op == ir::Op::Conv) conv = &n;
    ASSERT_NE(conv, nullptr);
    const std::string k = conv->s("kernel", "");
    ASSERT_NE(kernels::conv_find(k), nullptr) << k;
    if (std::string(isa) == "ref") {
      EXPECT_EQ(k, "conv_f32_ref");
    }
    if (std::string(isa) == "native" && host_cpu().has_avx2_fma()) {
      EXPECT_NE(k, "conv_f32_ref");
    }
    EXPECT_EQ(b.g.t(conv->inputs[1]).shape.size(), 1u);  // packed
  }
}

}  // namespace systolic::testing

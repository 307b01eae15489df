// batch_axis: which graphs compute each item of the batch from that item alone, and the shape
// signature that ties a micro-batch's compile to the full batch's.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

passes::BatchSplit analyse(ir::Graph& g, int64_t batch) {
  passes::PassContext ctx;
  ctx.batch = batch;
  EXPECT_TRUE(passes::shape_inference(g, ctx).ok());
  EXPECT_TRUE(passes::batch_axis(g, ctx).ok());
  return ctx.batch_split;
}

// Conv + Relu + GlobalAveragePool + Flatten + Gemm: a classifier's shape.
ir::Graph classifier(int64_t batch) {
  GraphBuilder b;
  const int x = b.input("x", {batch, 3, 8, 8});
  int y = b.node(ir::Op::Conv, {x, b.weights("w", {4, 3, 3, 3}), b.weights("bias", {4})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  y = b.node(ir::Op::Relu, {y})[0];
  y = b.node(ir::Op::GlobalAveragePool, {y})[0];
  y = b.node(ir::Op::Flatten, {y})[0];
  y = b.node(ir::Op::Gemm, {y, b.weights("fc", {5, 4}), b.weights("fcb", {5})})[0];
  b.last().set_i("transB", 1);
  b.output(y);
  return b.g;
}

TEST(BatchAxis, AClassifierIsSeparableAndKeepsItsSignatureAcrossBatches) {
  ir::Graph g4 = classifier(4), g2 = classifier(2), g1 = classifier(1);
  const passes::BatchSplit s4 = analyse(g4, 4);
  EXPECT_TRUE(s4.separable) << s4.why;
  // The busiest node per item: the Relu's input and output (4x8x8 floats each).
  EXPECT_EQ(s4.item_bytes, 2 * 4 * 64 * 4);
  EXPECT_EQ(analyse(g2, 2).signature, s4.signature);
  EXPECT_EQ(analyse(g1, 1).signature, s4.signature);
  EXPECT_FALSE(analyse(g1, 1).separable);  // nothing to split at batch 1
  ir::Graph other = classifier(4);
  other.nodes[0].set_ints("pads", {0, 0, 0, 0});  // another network: other shapes
  EXPECT_NE(analyse(other, 4).signature, s4.signature);
}

// Each graph reads across the batch's items in one node; the analysis names it.
TEST(BatchAxis, NodesThatReadAcrossItemsAreNamed) {
  struct Case {
    const char* name;
    std::function<int(GraphBuilder&, int)> build;  // from x [4,6,3,3], the output
    const char* why;
  };
  const std::vector<Case> cases = {
      {"reduce over the batch",
       [](GraphBuilder& b, int x) {
         const int r = b.node(ir::Op::ReduceMean, {x})[0];
         b.last().set_ints("axes", {0});
         return b.node(ir::Op::Add, {x, r})[0];
       },
       "ReduceMean"},
      {"transpose the batch away",
       [](GraphBuilder& b, int x) {
         const int t = b.node(ir::Op::Transpose, {x})[0];
         b.last().set_ints("perm", {1, 0, 2, 3});
         return b.node(ir::Op::Transpose, {t})[0];  // (not reached)
       },
       "Transpose"},
      {"softmax over the batch",
       [](GraphBuilder& b, int x) {
         const int f = b.node(ir::Op::Flatten, {x})[0];
         const int s = b.node(ir::Op::Softmax, {f})[0];
         b.last().set_i("axis", 0);
         return s;
       },
       "Softmax"},
      {"add a different constant to each item",
       [](GraphBuilder& b, int x) { return b.node(ir::Op::Add, {x, b.weights("per_item", {4, 6, 3, 3})})[0]; },
       "batch-free operand"},
      {"concatenate a constant that differs per item",
       [](GraphBuilder& b, int x) {
         const int c = b.node(ir::Op::Concat, {x, b.weights("tokens", {4, 1, 3, 3})})[0];
         b.last().set_i("axis", 1);
         return c;
       },
       "batch-free operand"},
      {"multiply two items' rows together",
       [](GraphBuilder& b, int x) {
         const int f = b.node(ir::Op::Flatten, {x})[0];  // [4, 54]
         const int s = b.node(ir::Op::Slice, {f, b.g.add_const_i64("st", {1}, {0}), b.g.add_const_i64("en", {1}, {4}),
                                              b.g.add_const_i64("ax", {1}, {1})})[0];  // [4, 4]
         return b.node(ir::Op::MatMul, {s, s})[0];
       },
       "MatMul"},
      {"reverse the batch",
       [](GraphBuilder& b, int x) {
         return b.node(ir::Op::Slice, {x, b.g.add_const_i64("st", {1}, {-1}), b.g.add_const_i64("en", {1}, {-100}),
                                       b.g.add_const_i64("ax", {1}, {0}), b.g.add_const_i64("sp", {1}, {-1})})[0];
       },
       "slices the batch axis"},
  };
  for (const Case& c : cases) {
    GraphBuilder b;
    const int x = b.input("x", {4, 6, 3, 3});
    b.output(c.build(b, x));
    const passes::BatchSplit s = analyse(b.g, 4);
    EXPECT_FALSE(s.separable) << c.name;
    EXPECT_NE(s.why.find(c.why), std::string::npos) << c.name << ": " << s.why;
  }
}

TEST(BatchAxis, AConstantTheSameForEveryItemMayJoinTheBatch) {
  // A class token expanded over the batch by the exporter and folded: every item's slice is
  // the same, so each item sees the same values at any batch.
  GraphBuilder b;
  const int x = b.input("x", {3, 4, 5});
  std::vector<float> tok(3 * 1 * 5);
  for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = static_cast<float>(i % 5);
  const int c = b.node(ir::Op::Concat, {b.g.add_const_f32("cls", {3, 1, 5}, tok), x})[0];
  b.last().set_i("axis", 1);
  b.output(b.node(ir::Op::Relu, {c})[0]);
  const passes::BatchSplit s = analyse(b.g, 3);
  EXPECT_TRUE(s.separable) << s.why;
}

TEST(BatchAxis, InputsAndOutputsMustLeadWithTheBatch) {
  GraphBuilder b;
  const int x = b.input("x", {4, 6});
  const int y = b.input("y", {6, 4});  // batch second
  b.output(b.node(ir::Op::Add, {x, b.node(ir::Op::Transpose, {y})[0]})[0]);
  b.g.nodes[0].set_ints("perm", {1, 0});
  const passes::BatchSplit s = analyse(b.g, 4);
  EXPECT_FALSE(s.separable);
  EXPECT_NE(s.why.find("input y"), std::string::npos) << s.why;
}

}  // namespace
}  // namespace systolic::testing

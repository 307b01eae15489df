// reduce_mean_to_pool: ReduceMean over H and W (attribute or input axes, negative or not, either
// keepdims) becomes GlobalAveragePool (and a Reshape), with the same results; other
// reductions stay.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(ReduceMeanToPool, MeanOverHeightAndWidthIsAGlobalPool) {
  for (int keep : {0, 1})
    for (bool as_input : {false, true}) {
      GraphBuilder b;
      const int x = b.input("x", {2, 3, 5, 4});
      const int c = b.node(ir::Op::Conv, {x, b.weights("w", {6, 3, 1, 1})})[0];
      const int m = as_input ? b.node(ir::Op::ReduceMean, {c, b.g.add_const_i64("axes", {2}, {-1, 2})})[0]
                             : b.node(ir::Op::ReduceMean, {c})[0];
      if (as_input) b.last().set_i("axes_as_input", 1);
      else b.last().set_ints("axes", {2, 3});
      b.last().set_i("keepdims", keep);
      b.output(m);
      ir::Graph g = b.g;
      run_passes(g, {passes::shape_inference, passes::reduce_mean_to_pool});
      EXPECT_EQ(count_ops(g, ir::Op::ReduceMean), 0) << keep << as_input;
      EXPECT_EQ(count_ops(g, ir::Op::GlobalAveragePool), 1);
      EXPECT_EQ(count_ops(g, ir::Op::Reshape), keep ? 0 : 1);
      EXPECT_EQ(g.t(m).shape, keep ? ir::Shape({2, 6, 1, 1}) : ir::Shape({2, 6}));
      EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-6);
      EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
    }
}

TEST(ReduceMeanToPool, OtherAxesStay) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 5, 4});
  const int m = b.node(ir::Op::ReduceMean, {x})[0];
  b.last().set_ints("axes", {1, 2});
  b.output(m);
  run_passes(b.g, {passes::shape_inference, passes::reduce_mean_to_pool});
  EXPECT_EQ(count_ops(b.g, ir::Op::ReduceMean), 1);
}

}  // namespace systolic::testing

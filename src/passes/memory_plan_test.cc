// memory_plan: tensors alive at the same time never share bytes, a chain reuses memory, and a
// view shares its input's bytes for as long as either lives.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(MemoryPlan, NoOverlapWhileAliveAndReuse) {
  GraphBuilder b;
  int t = b.input("x", {1, 8, 16, 16});
  const int x = t;
  for (int i = 0; i < 6; ++i) t = b.node(ir::Op::Relu, {t})[0];
  const int y = b.node(ir::Op::Add, {t, x})[0];  // x lives to the end
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::memory_plan});
  int64_t naive = 0;
  for (const ir::Tensor& tt : g.tensors) naive += tt.bytes();
  EXPECT_LT(g.arena_bytes, naive / 2);
  // Interval check: for every node, its inputs and outputs occupy disjoint byte ranges.
  for (const ir::Node& n : g.nodes)
    for (int o : n.outputs)
      for (int i : n.inputs) {
        const ir::Tensor& a = g.t(o);
        const ir::Tensor& c = g.t(i);
        const bool disjoint = a.arena_offset + int64_t(a.bytes()) <= c.arena_offset ||
                              c.arena_offset + int64_t(c.bytes()) <= a.arena_offset;
        EXPECT_TRUE(disjoint) << n.name;
      }
  // x is read by the last node, so nothing in between may sit on it.
  const ir::Tensor& xt = g.t(x);
  for (const ir::Node& n : g.nodes)
    for (int o : n.outputs) {
      const ir::Tensor& a = g.t(o);
      EXPECT_TRUE(a.arena_offset + int64_t(a.bytes()) <= xt.arena_offset ||
                  xt.arena_offset + int64_t(xt.bytes()) <= a.arena_offset);
    }
}

TEST(MemoryPlan, ViewsShareTheirInputsBytes) {
  GraphBuilder b;
  const int x = b.input("x", {2, 6, 4, 4});
  const int r = b.node(ir::Op::Relu, {x})[0];
  const int flat = b.node(ir::Op::Flatten, {r})[0];
  const int s = b.node(ir::Op::Sigmoid, {flat})[0];
  const int y = b.node(ir::Op::Add, {s, flat})[0];  // the view is read after its input's last use
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::memory_plan});
  EXPECT_EQ(g.t(flat).arena_offset, g.t(r).arena_offset);
  // The group lives until the Add: neither the Sigmoid's nor the Add's output may sit on it.
  for (int o : {s, y}) {
    const ir::Tensor& a = g.t(o);
    const ir::Tensor& v = g.t(flat);
    EXPECT_TRUE(a.arena_offset + int64_t(a.bytes()) <= v.arena_offset ||
                v.arena_offset + int64_t(v.bytes()) <= a.arena_offset);
  }
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-6);
}

}  // namespace systolic::testing

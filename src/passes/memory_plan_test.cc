// memory_plan: tensors alive at the same time never share bytes, a chain reuses memory, and a
// view shares its input's bytes for as long as either lives; an int8 conv may write over its residual.
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

// An int8 conv writes over its residual only where nothing reads the residual afterwards and
// the residual is not also one of its other inputs.
TEST(MemoryPlan, Int8ConvWritesOverAResidualNothingReadsLater) {
  GraphBuilder b;
  const ir::Shape shape{1, 8, 4, 4};
  const int x = b.input("x", shape, ir::DType::u8);
  const int w = b.weights("w", {8, 8, 1, 1}), bias = b.weights("b", {8});
  auto conv = [&](int in, int res) {
    std::vector<int> ins{in, w, bias};
    if (res >= 0) ins.push_back(res);
    const int o = b.node(ir::Op::Conv, ins)[0];
    ir::Attr k;
    k.kind = ir::Attr::s;
    k.str_v = "qconv_u8s8_ref";
    b.last().attrs["kernel"] = k;
    b.g.t(o).dtype = ir::DType::u8;
    b.g.t(o).shape = shape;
    b.g.t(o).shape_known = true;
    return o;
  };
  const int a = conv(x, -1);
  const int m = conv(a, -1);
  const int c = conv(m, a);       // a's last reader: c takes a's bytes
  const int d = conv(c, c);       // the residual is also the source: no
  const int e = conv(d, -1);
  const int f = conv(e, d);       // d is read again below: no
  const int y = conv(f, d);       // d's last reader: y takes d's bytes
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::memory_plan});
  EXPECT_EQ(g.t(c).arena_offset, g.t(a).arena_offset);
  EXPECT_NE(g.t(d).arena_offset, g.t(c).arena_offset);
  EXPECT_NE(g.t(f).arena_offset, g.t(d).arena_offset);
  // y is a graph output: it keeps bytes of its own.
  EXPECT_NE(g.t(y).arena_offset, g.t(d).arena_offset);
  // The shared group lives from a's producer to c's last reader: m (alive meanwhile) is apart.
  const ir::Tensor& at = g.t(a);
  const ir::Tensor& mt = g.t(m);
  EXPECT_TRUE(at.arena_offset + int64_t(at.bytes()) <= mt.arena_offset ||
              mt.arena_offset + int64_t(mt.bytes()) <= at.arena_offset);
}

}  // namespace systolic::testing

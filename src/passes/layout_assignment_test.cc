// layout_assignment: a conv/pool chain runs in NHWC with one reorder in and one out;
// a layout-bound op (Flatten) gets its plain input back.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(LayoutAssignment, FewestReorders) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 10, 10});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {16, 3, 3, 3})})[0];
  const int r = b.node(ir::Op::Relu, {c1})[0];
  const int c2 = b.node(ir::Op::Conv, {r, b.weights("w2", {16, 16, 3, 3})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int s = b.node(ir::Op::Add, {c2, r})[0];
  const int p = b.node(ir::Op::MaxPool, {s})[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  const int cat = b.node(ir::Op::Concat, {p, p})[0];
  b.last().set_i("axis", 1);
  const int f = b.node(ir::Op::Flatten, {cat})[0];
  b.output(f);
  b.output(p);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  // In: x -> nhwc. Out: cat -> plain for Flatten, p -> plain as a graph output.
  EXPECT_EQ(count_ops(g, ir::Op::Reorder), 3);
  EXPECT_EQ(g.t(r).layout, ir::Layout::nhwc);
  EXPECT_EQ(g.t(p).layout, ir::Layout::plain);  // graph outputs are delivered plain
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(LayoutAssignment, PerChannelOperandsStayInNhwc) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 8, 1, 1})})[0];
  const int pooled = b.node(ir::Op::GlobalAveragePool, {c})[0];
  const int gate = b.node(ir::Op::Sigmoid, {pooled})[0];
  const int se = b.node(ir::Op::Mul, {gate, c})[0];  // squeeze-excitation: [1,C,1,1] * [1,C,H,W]
  const int scaled = b.node(ir::Op::Sub, {se, b.weights("shift", {8, 1, 1})})[0];
  const int y = b.node(ir::Op::Conv, {scaled, b.weights("w2", {4, 8, 1, 1})})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  EXPECT_EQ(g.t(se).layout, ir::Layout::nhwc);
  EXPECT_EQ(g.t(scaled).layout, ir::Layout::nhwc);
  EXPECT_EQ(count_ops(g, ir::Op::Reorder), 2);  // the input and the output only
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

// A batch's squeeze-excitation gates are [N,C,1,1], one value per image and channel: the same
// bytes in either layout, so the gated tensor stays NHWC and the Mul runs on the eltwise
// kernels (per-image broadcast) instead of going plain through the interpreter.
TEST(LayoutAssignment, PerImageGatesOfABatchStayInNhwc) {
  GraphBuilder b;
  const int x = b.input("x", {3, 8, 6, 6});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 8, 1, 1})})[0];
  const int pooled = b.node(ir::Op::GlobalAveragePool, {c})[0];
  const int gate = b.node(ir::Op::Sigmoid, {pooled})[0];
  const int se = b.node(ir::Op::Mul, {gate, c})[0];  // [3,8,1,1] * [3,8,6,6]
  const int y = b.node(ir::Op::Conv, {se, b.weights("w2", {4, 8, 1, 1})})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  EXPECT_EQ(g.t(se).layout, ir::Layout::nhwc);
  EXPECT_EQ(count_ops(g, ir::Op::Reorder), 2);  // the input and the output only
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
  auto p = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto s = runtime::Session::create(*p);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const std::string profile_kernels = [&] {
    std::string k;
    for (const auto& l : (*s)->profile()) k += l.kernel + " ";
    return k;
  }();
  EXPECT_EQ(profile_kernels.find("interp"), std::string::npos) << profile_kernels;
}

TEST(LayoutAssignment, ResizeOfHeightAndWidthStaysInNhwc) {
  for (const char* mode : {"linear", "nearest"}) {
    GraphBuilder b;
    const int x = b.input("x", {1, 8, 5, 7});
    const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 8, 1, 1})})[0];
    const int up = b.node(ir::Op::Resize, {c, -1, b.g.add_const_f32("scales", {4}, {1.f, 1.f, 2.f, 3.f})})[0];
    b.last().attrs["mode"].kind = ir::Attr::s;
    b.last().attrs["mode"].str_v = mode;
    b.last().set_i("_opset", 13);
    const int y = b.node(ir::Op::Conv, {up, b.weights("w2", {4, 8, 1, 1})})[0];
    b.output(y);
    ir::Graph g = b.g;
    run_passes(g, {passes::shape_inference, passes::layout_assignment});
    EXPECT_EQ(g.t(up).layout, ir::Layout::nhwc) << mode;
    EXPECT_EQ(count_ops(g, ir::Op::Reorder), 2) << mode;  // the input and the output only
    EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5) << mode;
  }
}

// A DCR DepthToSpace between convs stays in NHWC (the runtime moves runs of blocksize*C values;
// 1, 3 and 4 channels: runs of 8 bytes, 24 and 32); a CRD one goes through the plain layout.
TEST(LayoutAssignment, DepthToSpaceDcrStaysInNhwc) {
  for (const char* mode : {"DCR", "CRD"})
    for (int64_t c : {1, 3, 4})
      for (int64_t bs : {2, 3}) {
        GraphBuilder b;
        const int x = b.input("x", {2, 5, 4, 6});
        const int conv = b.node(ir::Op::Conv, {x, b.weights("w", {c * bs * bs, 5, 1, 1})})[0];
        const int d2s = b.node(ir::Op::DepthToSpace, {conv})[0];
        b.last().set_i("blocksize", bs);
        b.last().attrs["mode"].kind = ir::Attr::s;
        b.last().attrs["mode"].str_v = mode;
        const int y = b.node(ir::Op::Conv, {d2s, b.weights("w2", {7, c, 3, 3})})[0];
        b.last().set_ints("pads", {1, 1, 1, 1});
        b.output(y);
        ir::Graph g = b.g;
        run_passes(g, {passes::shape_inference, passes::layout_assignment});
        const bool dcr = std::string(mode) == "DCR";
        EXPECT_EQ(g.t(d2s).layout, dcr ? ir::Layout::nhwc : ir::Layout::plain) << mode << c << bs;
        EXPECT_EQ(count_ops(g, ir::Op::Reorder), dcr ? 2 : 4) << mode << c << bs;
        EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5) << mode << c << bs;
      }
}

}  // namespace systolic::testing

namespace systolic::testing {

// ShuffleNet halves its channels with Slice (or Split) between convs: a channel slice follows
// the NHWC layout (the runtime slices the physical last axis) instead of a reorder each way.
TEST(LayoutAssignment, ChannelSlicesAndSplitsStayInNhwc) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 6, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {10, 3, 1, 1})})[0];
  const int lo = b.node(ir::Op::Slice, {c, b.g.add_const_i64("st", {1}, {0}), b.g.add_const_i64("en", {1}, {4}),
                                        b.g.add_const_i64("ax", {1}, {1})})[0];
  const int hi = b.node(ir::Op::Slice, {c, b.g.add_const_i64("st2", {1}, {4}), b.g.add_const_i64("en2", {1}, {100}),
                                        b.g.add_const_i64("ax2", {1}, {-3}), b.g.add_const_i64("sp", {1}, {1})})[0];
  const std::vector<int> parts = b.node(ir::Op::Split, {hi, b.g.add_const_i64("sizes", {2}, {2, 4})}, 2);
  b.last().set_i("axis", 1);
  const int cat = b.node(ir::Op::Concat, {parts[1], lo, parts[0]})[0];
  b.last().set_i("axis", 1);
  b.output(b.node(ir::Op::Conv, {cat, b.weights("w2", {4, 10, 1, 1})})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  EXPECT_EQ(g.t(lo).layout, ir::Layout::nhwc);
  EXPECT_EQ(g.t(hi).layout, ir::Layout::nhwc);
  EXPECT_EQ(g.t(parts[0]).layout, ir::Layout::nhwc);
  EXPECT_EQ(count_ops(g, ir::Op::Reorder), 2);  // the input and the output only
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

// A Slice of another axis (or of several) keeps the plain order.
TEST(LayoutAssignment, SpatialSlicesGoPlain) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 6, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 3, 1, 1})})[0];
  const int s = b.node(ir::Op::Slice, {c, b.g.add_const_i64("st", {1}, {1}), b.g.add_const_i64("en", {1}, {4}),
                                       b.g.add_const_i64("ax", {1}, {2})})[0];
  b.output(b.node(ir::Op::Conv, {s, b.weights("w2", {4, 8, 1, 1})})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  EXPECT_EQ(g.t(s).layout, ir::Layout::plain);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing

namespace systolic::testing {

// ConvNeXt's block: an NHWC conv output permuted to [N,H,W,C] for a LayerNorm over channels
// and permuted back for the residual Add. Both Transposes find their bytes already in order:
// views sharing their input's bytes, no reorder between.
TEST(LayoutAssignment, PermutesBetweenNchwAndNhwcAreViews) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 5, 6});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 3, 1, 1})})[0];
  const int t1 = b.node(ir::Op::Transpose, {c})[0];
  b.last().set_ints("perm", {0, 2, 3, 1});
  const int ln = b.node(ir::Op::LayerNormalization, {t1, b.positive("scale", {8}), b.weights("bias", {8})})[0];
  b.last().set_i("axis", -1);
  const int t2 = b.node(ir::Op::Transpose, {ln})[0];
  b.last().set_ints("perm", {0, 3, 1, 2});
  const int sum = b.node(ir::Op::Add, {t2, c})[0];
  b.output(b.node(ir::Op::Conv, {sum, b.weights("w2", {4, 8, 1, 1})})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  EXPECT_EQ(g.t(t1).layout, ir::Layout::plain);
  EXPECT_EQ(g.t(t2).layout, ir::Layout::nhwc);
  EXPECT_EQ(g.t(sum).layout, ir::Layout::nhwc);
  EXPECT_EQ(count_ops(g, ir::Op::Reorder), 2);  // the input and the output only
  int views = 0;
  for (const ir::Node& n : g.nodes) views += n.op == ir::Op::Transpose && n.i("nhwc_view", 0);
  EXPECT_EQ(views, 2);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
  // The memory plan gives each view its input's bytes.
  auto prog = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const ir::Graph& pg = (*prog)->graph;
  for (const ir::Node& n : pg.nodes) {
    if (n.op == ir::Op::Transpose) {
      EXPECT_EQ(pg.t(n.inputs[0]).arena_offset, pg.t(n.outputs[0]).arena_offset) << n.name;
    }
  }
}

// Other permutations, and a permute whose input is not in the order it names, stay copies.
TEST(LayoutAssignment, OtherTransposesAreNotViews) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 5, 6});
  const int t1 = b.node(ir::Op::Transpose, {x})[0];  // x is plain: (0,2,3,1) must move bytes
  b.last().set_ints("perm", {0, 2, 3, 1});
  const int t2 = b.node(ir::Op::Transpose, {t1})[0];
  b.last().set_ints("perm", {0, 2, 1, 3});
  b.output(t2);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  for (const ir::Node& n : g.nodes) EXPECT_FALSE(n.has("nhwc_view")) << n.name;
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-6);
}

}  // namespace systolic::testing

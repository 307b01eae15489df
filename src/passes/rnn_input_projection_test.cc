// rnn_input_projection: a recurrent layer's input projection moves onto the matrix kernels, and
// the plan's answers stay the reference executor's.
#include <gtest/gtest.h>

#include "ir/rnn_activation.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// X [5, 2, 16] -> op (hidden 8, bidirectional, with B unless `no_bias`) -> Y; a Relu after it.
// `variant`: clip 0.7, GRU's linear_before_reset, and activations other than the defaults
// (RNN relu, GRU hard sigmoid gates, LSTM a scaled tanh cell), which the plan's kernels take.
ir::Graph layer(ir::Op op, bool no_bias, int64_t layout = 0, bool variant = false) {
  GraphBuilder b;
  const int64_t G = op == ir::Op::LSTM ? 4 : op == ir::Op::GRU ? 3 : 1;
  const int x = b.input("x", layout ? ir::Shape{2, 5, 16} : ir::Shape{5, 2, 16});
  std::vector<int> in = {x, b.weights("w", {2, G * 8, 16}), b.weights("r", {2, G * 8, 8})};
  if (!no_bias) in.push_back(b.weights("bias", {2, 2 * G * 8}));
  const auto outs = b.node(op, in, 2, "rnn");
  b.last().set_i("hidden_size", 8);
  b.last().set_i("layout", layout);
  ir::Attr dir;
  dir.kind = ir::Attr::s;
  dir.str_v = "bidirectional";
  b.last().attrs["direction"] = dir;
  if (variant) {
    b.last().set_f("clip", 0.7f);
    b.last().set_i("linear_before_reset", 1);
    using ir::RnnAct;
    b.last().set_ints("activations", op == ir::Op::RNN   ? std::vector<int64_t>{int(RnnAct::relu)}
                                     : op == ir::Op::GRU ? std::vector<int64_t>{int(RnnAct::hard_sigmoid), int(RnnAct::tanh)}
                                                         : std::vector<int64_t>{int(RnnAct::sigmoid), int(RnnAct::scaled_tanh),
                                                                                int(RnnAct::tanh)});
  }
  b.output(b.node(ir::Op::Relu, {outs[0]})[0]);
  return b.g;
}

TEST(RnnInputProjection, RunsOnTheMatrixKernelsWithTheReferencesAnswers) {
  for (ir::Op op : {ir::Op::RNN, ir::Op::GRU, ir::Op::LSTM})
    for (bool no_bias : {false, true})
      for (int64_t layout : {0, 1}) {
        const ir::Graph g = layer(op, no_bias, layout, no_bias != (layout == 1));
        plan::CompileOptions co;
        co.batch = layout ? 2 : 5;  // the leading dim
        auto p = plan::compile(g, co);
        ASSERT_TRUE(p.ok()) << p.status().message();
        bool projected = false, on_kernel = false;
        for (const ir::Node& n : (*p)->graph.nodes) {
          projected |= n.op == op && n.i("projected", 0) == 1;
          on_kernel |= n.op == ir::Op::Conv && n.has("kernel") && n.name.find("input_projection") != std::string::npos;
        }
        EXPECT_TRUE(projected) << ir::op_name(op);
        EXPECT_TRUE(on_kernel) << ir::op_name(op);
        co.optimize = false;
        auto r = plan::compile(g, co);
        ASSERT_TRUE(r.ok()) << r.status().message();
        const auto opt = run_program(*p, g), ref = run_program(*r, g);
        EXPECT_LT(max_rel_error(opt, ref), 1e-5) << ir::op_name(op) << " bias " << !no_bias << " layout " << layout;
      }
}

}  // namespace
}  // namespace systolic::testing

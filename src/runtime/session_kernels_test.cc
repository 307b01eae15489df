// Session steps on the matmul and norm kernels: MatMul of two activations (equal batches,
// a shared B, 1-D operands), Softmax and LayerNormalization over the last axis run on them and
// agree with the interpreter node by node; other forms (mixed batch broadcast, a Softmax on an
// inner axis) stay in the interpreter.
#include <gtest/gtest.h>

#include <map>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// Every node of the compiled graph through the interpreter: the expected value of each tensor.
std::map<int, std::vector<float>> interpret(const ir::Graph& g, const std::vector<std::pair<std::string, runtime::HostTensor>>& ins) {
  std::map<int, std::vector<float>> v;
  for (std::size_t k = 0; k < g.inputs.size(); ++k) {
    const runtime::HostTensor& h = ins[k].second;
    v[g.inputs[k]].assign(h.as<float>(), h.as<float>() + h.numel());
  }
  auto ref = [&](int id) -> interp::TensorRef {
    if (id < 0) return {};
    const ir::Tensor& t = g.t(id);
    if (t.is_const()) return {t.dtype, t.shape, const_cast<uint8_t*>(t.data->data())};
    std::vector<float>& buf = v[id];
    buf.resize(static_cast<std::size_t>(t.numel()));
    return {t.dtype, t.shape, buf.data()};
  };
  for (const ir::Node& n : g.nodes) {
    std::vector<interp::TensorRef> in, out;
    for (int id : n.inputs) in.push_back(ref(id));
    for (int id : n.outputs) out.push_back(ref(id));
    Status st = interp::eval_node(n, in, out);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  return v;
}

}  // namespace

TEST(SessionKernels, AttentionOpsRunOnKernelsAndMatchTheInterpreter) {
  GraphBuilder b;
  const int q = b.input("q", {2, 3, 13, 7});
  const int k = b.input("k", {2, 3, 7, 19});
  const int v = b.input("v", {3, 19, 5});
  const int w = b.input("w", {19});
  const int s = b.node(ir::Op::MatMul, {q, k}, 1, "qk")[0];                          // equal batches
  const int p = b.node(ir::Op::Softmax, {s}, 1, "softmax")[0];
  const int pv = b.node(ir::Op::MatMul, {p, v}, 1, "pv_mixed")[0];                   // [2,3] vs [3]: interpreter
  const int pw = b.node(ir::Op::MatMul, {p, w}, 1, "p_vec")[0];                      // 1-D B
  const int pu = b.node(ir::Op::MatMul, {p, b.input("u", {19, 4})}, 1, "shared_b")[0];  // B stride 0
  const int ak = b.node(ir::Op::MatMul, {b.input("a", {13, 7}), k}, 1, "shared_a")[0];  // A stride 0
  const int ln = b.node(ir::Op::LayerNormalization, {pv, b.weights("scale", {5}), b.weights("bias", {5})}, 1, "ln")[0];
  const int inner = b.node(ir::Op::Softmax, {pw}, 1, "softmax_inner")[0];
  b.last().set_i("axis", 1);
  b.output(ln);
  b.output(inner);
  b.output(pw);
  b.output(pu);
  b.output(ak);
  auto prog = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  runtime::SessionOptions so;
  so.threads = 2;
  auto sess = runtime::Session::create(*prog, so);
  ASSERT_TRUE(sess.ok()) << sess.status().message();
  const ir::Graph& g = (*sess)->program().graph;
  std::vector<std::pair<std::string, runtime::HostTensor>> ins;
  uint32_t seed = 3;
  for (int id : g.inputs) ins.emplace_back(g.t(id).name, random_input(g.t(id), seed++));
  std::vector<runtime::HostTensor> outs;
  ASSERT_TRUE((*sess)->run(ins, &outs).ok());
  auto want = interpret(g, ins);
  for (std::size_t o = 0; o < g.outputs.size(); ++o) {
    const std::vector<float>& e = want[g.outputs[o]];
    const std::vector<float> got(outs[o].as<float>(), outs[o].as<float>() + outs[o].numel());
    EXPECT_LE(max_rel_error(got, e), 1e-5) << "output " << o;
  }
  std::map<std::string, std::string> kernel;
  for (const auto& sp : (*sess)->profile()) kernel[sp.name] = sp.kernel;
  const bool vec = host_cpu().has_avx2_fma();
  EXPECT_EQ(kernel["qk"].rfind("matmul_f32_", 0), 0u) << kernel["qk"];
  EXPECT_EQ(kernel["shared_a"].rfind("matmul_f32_", 0), 0u) << kernel["shared_a"];
  EXPECT_EQ(kernel["shared_b"].rfind("matmul_f32_", 0), 0u) << kernel["shared_b"];
  EXPECT_EQ(kernel["p_vec"].rfind("matmul_f32_", 0), 0u) << kernel["p_vec"];
  EXPECT_EQ(kernel["softmax"].rfind("norm_f32_", 0), 0u) << kernel["softmax"];
  EXPECT_EQ(kernel["ln"].rfind("norm_f32_", 0), 0u) << kernel["ln"];
  EXPECT_EQ(kernel["pv_mixed"], "interp");
  EXPECT_EQ(kernel["softmax_inner"], "interp");
  if (vec) {
    EXPECT_NE(kernel["qk"], "matmul_f32_ref");
  }
}

}  // namespace systolic::testing

namespace systolic::testing {

// Concat and Slice as row copies: a channel Concat of NHWC conv outputs (a row per pixel,
// DenseNet's pattern), plain ones on the channel and the last axis, a channel Slice of NHWC
// data and a plain Slice with negative bounds agree with the reference executor.
TEST(SessionKernels, ConcatAndSliceRunAsRowCopies) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 9, 11});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {8, 3, 3, 3})}, 1, "c1")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int c2 = b.node(ir::Op::Conv, {x, b.weights("w2", {5, 3, 1, 1})}, 1, "c2")[0];
  const int cat = b.node(ir::Op::Concat, {c1, c2, c1}, 1, "cat_nhwc")[0];
  b.last().set_i("axis", 1);
  const int half = b.node(ir::Op::Slice, {cat, b.g.add_const_i64("s0", {1}, {3}), b.g.add_const_i64("s1", {1}, {-2}),
                                          b.g.add_const_i64("sa", {1}, {1})}, 1, "slice_nhwc")[0];  // channels 3..18
  const int y = b.node(ir::Op::Conv, {half, b.weights("w3", {4, 16, 1, 1})}, 1, "c3")[0];
  const int p = b.input("p", {2, 3, 5});
  const int q = b.input("q", {2, 4, 5});
  const int plain = b.node(ir::Op::Concat, {p, q, p}, 1, "cat_plain")[0];
  b.last().set_i("axis", 1);
  const int last = b.node(ir::Op::Concat, {plain, plain}, 1, "cat_last")[0];
  b.last().set_i("axis", -1);
  const int tail = b.node(ir::Op::Slice, {last, b.g.add_const_i64("t0", {1}, {-7}), b.g.add_const_i64("t1", {1}, {100}),
                                          b.g.add_const_i64("ta", {1}, {-1})}, 1, "slice_plain")[0];
  b.output(y);
  b.output(tail);
  auto prog = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  runtime::SessionOptions so;
  so.threads = 2;
  auto sess = runtime::Session::create(*prog, so);
  ASSERT_TRUE(sess.ok()) << sess.status().message();
  std::vector<std::pair<std::string, runtime::HostTensor>> ins;
  uint32_t seed = 5;
  for (int id : b.g.inputs) ins.emplace_back(b.g.t(id).name, random_input(b.g.t(id), seed++));
  std::vector<runtime::HostTensor> outs;
  ASSERT_TRUE((*sess)->run(ins, &outs).ok());
  plan::CompileOptions ref_opts;
  ref_opts.optimize = false;
  auto ref_prog = plan::compile(b.g, ref_opts);
  ASSERT_TRUE(ref_prog.ok());
  auto ref = runtime::Session::create(*ref_prog, so);
  ASSERT_TRUE(ref.ok());
  std::vector<runtime::HostTensor> want;
  ASSERT_TRUE((*ref)->run(ins, &want).ok());
  for (std::size_t o = 0; o < outs.size(); ++o) {
    const std::vector<float> got(outs[o].as<float>(), outs[o].as<float>() + outs[o].numel());
    const std::vector<float> exp(want[o].as<float>(), want[o].as<float>() + want[o].numel());
    EXPECT_LE(max_rel_error(got, exp), 1e-5) << "output " << o;
  }
  std::map<std::string, std::string> kernel;
  for (const auto& sp : (*sess)->profile()) kernel[sp.name] = sp.kernel;
  EXPECT_EQ(kernel["cat_nhwc"], "concat_rows");
  EXPECT_EQ(kernel["cat_plain"], "concat_rows");
  EXPECT_EQ(kernel["cat_last"], "concat_rows");
  EXPECT_EQ(kernel["slice_nhwc"], "slice_rows");
  EXPECT_EQ(kernel["slice_plain"], "slice_rows");
  const ir::Graph& g = (*sess)->program().graph;
  for (const ir::Node& n : g.nodes) {
    if (n.name == "cat_nhwc") {
      EXPECT_EQ(g.t(n.outputs[0]).layout, ir::Layout::nhwc);
    }
  }
}

}  // namespace systolic::testing

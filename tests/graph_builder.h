// Small helpers to build IR graphs and run them in tests.
#pragma once
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "interp/eval.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "plan/program.h"
#include "runtime/session.h"

namespace systolic::testing {

struct GraphBuilder {
  ir::Graph g;
  std::mt19937 rng{42};

  int input(const std::string& name, ir::Shape shape, ir::DType dt = ir::DType::f32) {
    ir::Tensor t;
    t.name = name;
    t.dtype = dt;
    t.shape = std::move(shape);
    t.shape_known = true;
    const int id = g.add_tensor(std::move(t));
    g.inputs.push_back(id);
    return id;
  }
  int weights(const std::string& name, ir::Shape shape, float scale = 0.5f) {
    std::normal_distribution<float> d(0.f, scale);
    std::vector<float> v(static_cast<std::size_t>(ir::num_elements(shape)));
    for (float& x : v) x = d(rng);
    return g.add_const_f32(name, std::move(shape), v);
  }
  int positive(const std::string& name, ir::Shape shape) {
    std::uniform_real_distribution<float> d(0.5f, 1.5f);
    std::vector<float> v(static_cast<std::size_t>(ir::num_elements(shape)));
    for (float& x : v) x = d(rng);
    return g.add_const_f32(name, std::move(shape), v);
  }
  // Adds a node with fresh outputs (dtype/shape filled by shape inference later).
  std::vector<int> node(ir::Op op, std::vector<int> inputs, int n_out = 1, const std::string& name = "") {
    ir::Node n;
    n.op = op;
    n.name = name.empty() ? std::string(ir::op_name(op)) + std::to_string(g.nodes.size()) : name;
    n.inputs = std::move(inputs);
    for (int k = 0; k < n_out; ++k) {
      ir::Tensor t;
      t.name = n.name + ".out" + std::to_string(k);
      n.outputs.push_back(g.add_tensor(std::move(t)));
    }
    g.nodes.push_back(std::move(n));
    return g.nodes.back().outputs;
  }
  ir::Node& last() { return g.nodes.back(); }
  void output(int id) { g.outputs.push_back(id); }
};

inline runtime::HostTensor random_input(const ir::Tensor& t, uint32_t seed) {
  runtime::HostTensor h = runtime::HostTensor::zeros(t.dtype, t.shape);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  for (int64_t i = 0; i < h.numel(); ++i) h.as<float>()[i] = d(rng);
  return h;
}

// Runs a compiled plan of `g` on seeded inputs; returns output 0 (throws on error).
inline std::vector<float> run_program(std::shared_ptr<const plan::Program> p, const ir::Graph& g, int threads = 1) {
  runtime::SessionOptions so;
  so.threads = threads;
  auto s = runtime::Session::create(p, so);
  if (!s.ok()) throw std::runtime_error(s.status().message());
  std::vector<std::pair<std::string, runtime::HostTensor>> ins;
  uint32_t seed = 7;
  for (int id : g.inputs) ins.emplace_back(g.t(id).name, random_input(g.t(id), seed++));
  std::vector<runtime::HostTensor> outs;
  Status st = (*s)->run(ins, &outs);
  if (!st.ok()) throw std::runtime_error(st.message());
  return std::vector<float>(outs[0].as<float>(), outs[0].as<float>() + outs[0].numel());
}

// Compiles (optimized or reference) and runs the graph on seeded inputs; returns output 0.
inline std::vector<float> run_graph(const ir::Graph& g, bool optimize, int threads = 1) {
  plan::CompileOptions co;
  co.optimize = optimize;
  auto p = plan::compile(g, co);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  return run_program(*p, g, threads);
}

inline double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0, scale = 1e-6;
  for (float x : b) scale = std::max(scale, static_cast<double>(std::fabs(x)));
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]) / scale);
  return a.size() == b.size() ? m : 1e30;
}

inline int count_ops(const ir::Graph& g, ir::Op op) {
  int c = 0;
  for (const ir::Node& n : g.nodes) c += n.op == op;
  return c;
}

// The uint8 tables of a compiled int8 plan: Lut steps, and those fused into convs (q_table).
inline int count_tables(const ir::Graph& g) {
  int c = 0;
  for (const ir::Node& n : g.nodes) c += n.op == ir::Op::Lut || n.attrs.count("q_table") > 0;
  return c;
}

// Runs the named passes in order (each must succeed).
inline void run_passes(ir::Graph& g, const std::vector<Status (*)(ir::Graph&, passes::PassContext&)>& ps) {
  passes::PassContext ctx;
  ctx.cpu = host_cpu();
  for (auto p : ps) {
    Status st = p(g, ctx);
    if (!st.ok()) throw std::runtime_error(st.message());
    st = ir::verify(g);
    if (!st.ok()) throw std::runtime_error(st.message());
  }
}

// t through QuantizeLinear -> DequantizeLinear (uint8, per tensor), as a QDQ model writes it.
inline int qdq(GraphBuilder& b, int t, float scale, int zp, const std::string& name) {
  using ir::DType;
  using ir::Op;
  const int s = b.g.add_const_f32(name + ".s", {}, {scale});
  AlignedBytes z(1, static_cast<uint8_t>(zp));
  const int zt = b.g.add_const(name + ".z", DType::u8, {}, std::move(z));
  const int q = b.node(Op::QuantizeLinear, {t, s, zt})[0];
  return b.node(Op::DequantizeLinear, {q, s, zt})[0];
}

// Patterned int8 weights `shape` behind a DequantizeLinear: one scale, or one per output channel.
inline int int8_weights(GraphBuilder& b, const std::string& name, const ir::Shape& shape, const std::vector<float>& scales) {
  using ir::DType;
  using ir::Op;
  std::vector<int8_t> wq(static_cast<std::size_t>(ir::num_elements(shape)));
  for (std::size_t i = 0; i < wq.size(); ++i) wq[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  AlignedBytes wb(wq.size());
  std::memcpy(wb.data(), wq.data(), wq.size());
  const int w8 = b.g.add_const(name, DType::i8, shape, std::move(wb));
  const bool per_channel = scales.size() > 1;
  const int ws = b.g.add_const_f32(name + ".s", per_channel ? ir::Shape{int64_t(scales.size())} : ir::Shape{}, scales);
  AlignedBytes wz(scales.size(), 0);
  const int wzp = b.g.add_const(name + ".z", DType::i8, per_channel ? ir::Shape{int64_t(scales.size())} : ir::Shape{},
                                std::move(wz));
  const int w = b.node(Op::DequantizeLinear, {w8, ws, wzp})[0];
  if (per_channel) b.last().set_i("axis", 0);
  return w;
}

// A QDQ squeeze-excitation block (EfficientNet's, MobileNetV3's) on x {N, 8, H, W}: a 3x3 conv to
// 16 channels, then the gate (global pool, 1x1 conv, sigmoid) multiplying it; returns the
// quantized product. `gate_name` names the Mul.
inline int qdq_squeeze_excitation(GraphBuilder& b, int x, const std::string& gate_name = "") {
  using ir::Op;
  int c = b.node(Op::Conv, {qdq(b, x, 0.02f, 128, "x"), int8_weights(b, "w8", {16, 8, 3, 3}, {0.002f})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  c = qdq(b, c, 0.03f, 120, "c");
  const int pooled = qdq(b, b.node(Op::GlobalAveragePool, {c})[0], 0.01f, 100, "p");
  const int fc = qdq(b, b.node(Op::Conv, {pooled, int8_weights(b, "fc", {16, 16, 1, 1}, {0.01f})})[0], 0.05f, 128, "fc");
  const int gate = qdq(b, b.node(Op::Sigmoid, {fc})[0], 1.f / 255.f, 0, "gate");
  return qdq(b, b.node(Op::Mul, {c, gate}, 1, gate_name)[0], 0.02f, 110, "y");
}

}  // namespace systolic::testing

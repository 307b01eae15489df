// RNN / GRU / LSTM: the directions, sequence lengths and layouts the backend suite does not
// cover, checked by identities (a reverse layer is a forward one on the reversed prefix; a
// bidirectional one is both; layout 1 is layout 0 transposed), and one LSTM step by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "interp/eval.h"
#include "ir/graph.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;
using ir::Shape;

std::vector<float> random_floats(std::size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 0.5f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TensorRef ref(DType t, Shape s, void* p) { return TensorRef{t, std::move(s), p}; }

struct Layer {
  Op op;
  int64_t S, N, I, H;
  std::string direction = "forward";
  int64_t layout = 0;
  std::vector<float> X, W, R, B;  // W, R, B for every direction
  std::vector<int32_t> lens;      // empty: full length
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  int64_t gates() const { return op == Op::LSTM ? 4 : op == Op::GRU ? 3 : 1; }
};

// Runs the layer; returns Y, Y_h (and Y_c for LSTM), as the op lays them out.
std::vector<std::vector<float>> run(const Layer& l) {
  ir::Node n;
  n.op = l.op;
  n.name = "rnn";
  n.set_i("hidden_size", l.H);
  n.set_i("layout", l.layout);
  ir::Attr dir;
  dir.kind = ir::Attr::s;
  dir.str_v = l.direction;
  n.attrs["direction"] = dir;
  const int64_t D = l.dirs(), G = l.gates();
  std::vector<TensorRef> in = {
      ref(DType::f32, l.layout ? Shape{l.N, l.S, l.I} : Shape{l.S, l.N, l.I}, const_cast<float*>(l.X.data())),
      ref(DType::f32, {D, G * l.H, l.I}, const_cast<float*>(l.W.data())),
      ref(DType::f32, {D, G * l.H, l.H}, const_cast<float*>(l.R.data())),
      ref(DType::f32, {D, 2 * G * l.H}, const_cast<float*>(l.B.data())),
      l.lens.empty() ? TensorRef{} : ref(DType::i32, {l.N}, const_cast<int32_t*>(l.lens.data()))};
  std::vector<Shape> shapes;
  std::vector<DType> types;
  const Status st = infer_recurrent(n, in, &shapes, &types);
  if (!st.ok()) throw std::runtime_error(st.message());
  std::vector<std::vector<float>> outs;
  std::vector<TensorRef> refs;
  for (const Shape& s : shapes) outs.emplace_back(ir::num_elements(s), -7.f);
  for (std::size_t k = 0; k < shapes.size(); ++k) refs.push_back(ref(DType::f32, shapes[k], outs[k].data()));
  const Status e = eval_recurrent(n, in, refs);
  if (!e.ok()) throw std::runtime_error(e.message());
  return outs;
}

Layer sized(Op op, int64_t S, int64_t N, int64_t I, int64_t H) {
  Layer l;
  l.op = op, l.S = S, l.N = N, l.I = I, l.H = H;
  return l;
}

Layer make(Op op, const std::string& direction, std::vector<int32_t> lens = {}) {
  Layer l = sized(op, 5, 3, 4, 3);
  l.direction = direction;
  l.lens = std::move(lens);
  const int64_t D = l.dirs(), G = l.gates();
  l.X = random_floats(l.S * l.N * l.I, 1);
  l.W = random_floats(D * G * l.H * l.I, 2);
  l.R = random_floats(D * G * l.H * l.H, 3);
  l.B = random_floats(D * 2 * G * l.H, 4);
  return l;
}

// Direction d's weights of a bidirectional layer as a one-direction layer.
Layer one_direction(const Layer& bi, int d, const std::string& direction) {
  Layer l = bi;
  l.direction = direction;
  auto part = [&](const std::vector<float>& v) {
    const std::size_t n = v.size() / 2;
    return std::vector<float>(v.begin() + d * n, v.begin() + (d + 1) * n);
  };
  l.W = part(bi.W), l.R = part(bi.R), l.B = part(bi.B);
  return l;
}

class Recurrent : public ::testing::TestWithParam<Op> {};

TEST_P(Recurrent, ReverseIsForwardOnEachItemsReversedPrefix) {
  const Layer rev = make(GetParam(), "reverse", {5, 3, 0});
  Layer fwd = rev;
  fwd.direction = "forward";
  // Item b's first lens[b] steps reversed in time; the rest left as they were.
  for (int64_t b = 0; b < rev.N; ++b)
    for (int64_t t = 0; t < rev.lens[b]; ++t)
      for (int64_t i = 0; i < rev.I; ++i)
        fwd.X[(t * rev.N + b) * rev.I + i] = rev.X[((rev.lens[b] - 1 - t) * rev.N + b) * rev.I + i];
  const auto r = run(rev), f = run(fwd);
  const int64_t H = rev.H;
  for (int64_t b = 0; b < rev.N; ++b)
    for (int64_t t = 0; t < rev.S; ++t)
      for (int64_t j = 0; j < H; ++j) {
        const float got = r[0][(t * rev.N + b) * H + j];
        if (t >= rev.lens[b]) {
          EXPECT_EQ(got, 0.f) << "past the item's length";
          continue;
        }
        EXPECT_FLOAT_EQ(got, f[0][((rev.lens[b] - 1 - t) * rev.N + b) * H + j]) << b << " " << t;
      }
  for (std::size_t k = 1; k < r.size(); ++k)
    for (std::size_t i = 0; i < r[k].size(); ++i) EXPECT_FLOAT_EQ(r[k][i], f[k][i]) << k;
  // An item of length 0 keeps its (zero) initial state.
  for (int64_t j = 0; j < H; ++j) EXPECT_EQ(r[1][2 * H + j], 0.f);
}

TEST_P(Recurrent, BidirectionalIsBothDirectionsAndLayoutOneIsATranspose) {
  const Layer bi = make(GetParam(), "bidirectional", {4, 5, 2});
  const auto y = run(bi), f = run(one_direction(bi, 0, "forward")), r = run(one_direction(bi, 1, "reverse"));
  const int64_t S = bi.S, N = bi.N, H = bi.H;
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t j = 0; j < H; ++j) {
        EXPECT_FLOAT_EQ(y[0][((t * 2 + 0) * N + b) * H + j], f[0][(t * N + b) * H + j]);
        EXPECT_FLOAT_EQ(y[0][((t * 2 + 1) * N + b) * H + j], r[0][(t * N + b) * H + j]);
      }
  for (int64_t b = 0; b < N; ++b)
    for (int64_t j = 0; j < H; ++j) {
      EXPECT_FLOAT_EQ(y[1][(0 * N + b) * H + j], f[1][b * H + j]);
      EXPECT_FLOAT_EQ(y[1][(1 * N + b) * H + j], r[1][b * H + j]);
    }
  // layout 1: X [N, S, I], Y [N, S, D, H], Y_h [N, D, H].
  Layer bf = bi;
  bf.layout = 1;
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t i = 0; i < bi.I; ++i) bf.X[(b * S + t) * bi.I + i] = bi.X[(t * N + b) * bi.I + i];
  const auto yb = run(bf);
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t b = 0; b < N; ++b)
        for (int64_t j = 0; j < H; ++j)
          EXPECT_EQ(yb[0][((b * S + t) * 2 + d) * H + j], y[0][((t * 2 + d) * N + b) * H + j]);
  for (int64_t d = 0; d < 2; ++d)
    for (int64_t b = 0; b < N; ++b)
      for (int64_t j = 0; j < H; ++j) EXPECT_EQ(yb[1][(b * 2 + d) * H + j], y[1][(d * N + b) * H + j]);
}

INSTANTIATE_TEST_SUITE_P(Ops, Recurrent, ::testing::Values(Op::RNN, Op::GRU, Op::LSTM),
                         [](const auto& info) { return std::string(ir::op_name(info.param)); });

TEST(Lstm, OneStepByHand) {
  // H = I = 1, one step from zero state: gates i, o, f, c in that order in W and B.
  Layer l = sized(Op::LSTM, 1, 1, 1, 1);
  l.X = {2.f};
  l.W = {0.5f, -1.f, 0.25f, 0.75f};  // i, o, f, c
  l.R = {0.f, 0.f, 0.f, 0.f};
  l.B = {0.1f, 0.2f, 0.3f, 0.4f, 0.f, 0.f, 0.f, 0.f};
  const auto y = run(l);
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  const double i = sig(2 * 0.5 + 0.1), o = sig(2 * -1.0 + 0.2), c = std::tanh(2 * 0.75 + 0.4);
  const double cell = i * c, h = o * std::tanh(cell);  // f multiplies the zero state
  EXPECT_NEAR(y[0][0], h, 1e-6);
  EXPECT_NEAR(y[1][0], h, 1e-6);
  EXPECT_NEAR(y[2][0], cell, 1e-6);
}

}  // namespace
}  // namespace systolic::interp

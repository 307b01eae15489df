// Recurrent layers: RNN, GRU and LSTM as ONNX defines them (opsets 7-14): forward, reverse or
// bidirectional, layout 0 ([seq, batch, ...]) or 1 ([batch, seq, ...]), per-item sequence
// lengths (steps past an item's length give zeros and leave its state), initial states, LSTM
// peepholes, clip, GRU's linear_before_reset and every activation ONNX names. A CRNN text
// recognizer's BiLSTM is the case that matters; each item and direction runs on its own: the
// input's projection for all steps first, then the recurrence step by step. With attribute
// projected = 1 input 0 already holds that projection (passes/rnn_input_projection.cc puts it
// on the matrix kernels). In such a plan the recurrence runs on the kernels too: h R^T on the
// matmul kernel, sigmoid / tanh / relu gates on the element-wise kernels (class Fast); the
// reference executor keeps its plain loops, which the plan's answers are tested against.
#include <cmath>
#include <vector>

#include "base/cpu.h"
#include "interp/eval.h"
#include "ir/rnn_activation.h"
#include "kernels/eltwise/eltwise.h"
#include "kernels/matmul/matmul.h"

namespace systolic::interp {

namespace {

using ir::Op;
using ir::RnnAct;

const char* opn(const ir::Node& n) { return ir::op_name(n.op); }

// Gate blocks per op (LSTM i,o,f,c; GRU z,r,h; RNN one) and activations per direction.
int gates_of(Op op) { return op == Op::LSTM ? 4 : op == Op::GRU ? 3 : 1; }
int acts_of(Op op) { return op == Op::LSTM ? 3 : op == Op::GRU ? 2 : 1; }

struct Act {
  RnnAct f;
  float alpha, beta;
  float operator()(float x) const { return ir::rnn_act(f, alpha, beta, x); }
};

struct Geometry {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batch_first = false;  // layout 1
  bool reverse = false;      // direction "reverse" (direction 0 runs backwards)
  std::vector<Act> acts;     // acts_of(op) per direction
};


Status geometry(const ir::Node& n, const std::vector<TensorRef>& in, Geometry* g) {
  const int G = gates_of(n.op);
  if (in.size() < 3 || in[0].shape.size() != 3 || in[1].shape.size() != 3 || in[2].shape.size() != 3)
    return Err("%s %s: X, W and R must be 3-D", opn(n), n.name.c_str());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (present(in, i) && i != 4 && in[i].dtype != ir::DType::f32)
      return Err("%s %s: input %zu is %s; only float32 is supported", opn(n), n.name.c_str(), i,
                 ir::dtype_name(in[i].dtype));
  const int64_t layout = n.i("layout", 0);
  if (layout != 0 && layout != 1) return Err("%s %s: layout %lld is not 0 or 1", opn(n), n.name.c_str(), (long long)layout);
  g->batch_first = layout == 1;
  const std::string dir = n.s("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return Err("%s %s: direction %s is not forward, reverse or bidirectional", opn(n), n.name.c_str(), dir.c_str());
  g->dirs = dir == "bidirectional" ? 2 : 1;
  g->reverse = dir == "reverse";
  if (n.op == Op::LSTM && n.i("input_forget", 0) != 0)
    return Err("%s %s: input_forget=1 is not supported", opn(n), n.name.c_str());
  const ir::Shape &xs = in[0].shape, &ws = in[1].shape, &rs = in[2].shape;
  g->seq = g->batch_first ? xs[1] : xs[0];
  g->batch = g->batch_first ? xs[0] : xs[1];
  // projected (passes/rnn_input_projection.cc): X holds X W^T + Wb, D*G*H values per step.
  g->input = n.i("projected", 0) ? ws[2] : xs[2];
  g->hidden = n.i("hidden_size", ws[1] / G);
  const int64_t H = g->hidden, D = g->dirs;
  if (n.i("projected", 0) && xs[2] != D * G * H)
    return Err("%s %s: projected input has %lld values per step, expected %lld", opn(n), n.name.c_str(),
               (long long)xs[2], (long long)(D * G * H));
  if (H <= 0 || ws != ir::Shape{D, G * H, g->input} || rs != ir::Shape{D, G * H, H})
    return Err("%s %s: W %s and R %s do not match %lld direction(s), hidden size %lld and input size %lld", opn(n),
               n.name.c_str(), ir::shape_str(ws).c_str(), ir::shape_str(rs).c_str(), (long long)D, (long long)H,
               (long long)g->input);
  if (present(in, 3) && in[3].shape != ir::Shape{D, 2 * G * H})
    return Err("%s %s: B is %s, expected [%lld,%lld]", opn(n), n.name.c_str(), ir::shape_str(in[3].shape).c_str(),
               (long long)D, (long long)(2 * G * H));
  if (present(in, 4)) {
    if (in[4].dtype != ir::DType::i32 || in[4].shape != ir::Shape{g->batch})
      return Err("%s %s: sequence_lens must be int32 [%lld]", opn(n), n.name.c_str(), (long long)g->batch);
    if (in[4].data)
      for (int64_t b = 0; b < g->batch; ++b) {
        const int32_t len = in[4].as<int32_t>()[b];
        if (len < 0 || len > g->seq)
          return Err("%s %s: sequence_lens[%lld] is %d, outside [0, %lld]", opn(n), n.name.c_str(), (long long)b, len,
                     (long long)g->seq);
      }
  }
  const ir::Shape state = g->batch_first ? ir::Shape{g->batch, D, H} : ir::Shape{D, g->batch, H};
  for (std::size_t i : {std::size_t(5), std::size_t(6)})
    if (present(in, i) && (i == 5 || n.op == Op::LSTM) && in[i].shape != state)
      return Err("%s %s: initial state %s, expected %s", opn(n), n.name.c_str(), ir::shape_str(in[i].shape).c_str(),
                 ir::shape_str(state).c_str());
  if (n.op == Op::LSTM && present(in, 7) && in[7].shape != ir::Shape{D, 3 * H})
    return Err("%s %s: P is %s, expected [%lld,%lld]", opn(n), n.name.c_str(), ir::shape_str(in[7].shape).c_str(),
               (long long)D, (long long)(3 * H));
  // Activations: the attribute's codes (importer), else the op's defaults; one set per
  // direction (a bidirectional layer given one set uses it both ways). alpha and beta are
  // consumed in order by the functions that take them.
  const int A = acts_of(n.op);
  std::vector<int64_t> codes = n.ints("activations");
  if (codes.empty()) {
    codes = n.op == Op::LSTM ? std::vector<int64_t>{int(RnnAct::sigmoid), int(RnnAct::tanh), int(RnnAct::tanh)}
            : n.op == Op::GRU ? std::vector<int64_t>{int(RnnAct::sigmoid), int(RnnAct::tanh)}
                              : std::vector<int64_t>{int(RnnAct::tanh)};
  }
  if (int64_t(codes.size()) == A && D == 2) codes.insert(codes.end(), codes.begin(), codes.end());
  if (int64_t(codes.size()) != A * D)
    return Err("%s %s: %zu activations, expected %lld", opn(n), n.name.c_str(), codes.size(), (long long)(A * D));
  const auto alphas = n.has("activation_alpha") ? n.attrs.at("activation_alpha").floats_v : std::vector<float>{};
  const auto betas = n.has("activation_beta") ? n.attrs.at("activation_beta").floats_v : std::vector<float>{};
  std::size_t ai = 0, bi = 0;
  g->acts.clear();
  for (int64_t c : codes) {
    if (c < 0 || c > int(RnnAct::softplus)) return Err("%s %s: activation code %lld is not known", opn(n), n.name.c_str(), (long long)c);
    const auto f = static_cast<RnnAct>(c);
    Act a{f, ir::rnn_act_default_alpha(f), ir::rnn_act_default_beta(f)};
    if (ir::rnn_act_alpha(f) && ai < alphas.size()) a.alpha = alphas[ai++];
    if (ir::rnn_act_beta(f) && bi < betas.size()) a.beta = betas[bi++];
    g->acts.push_back(a);
  }
  return Status::Ok();
}

// One direction's weights, transposed so that every product below runs along a contiguous
// row of G*H outputs (vectorized; each output its own sum, in k order).
struct Weights {
  std::vector<float> wt, rt;  // [I][G*H], [H][G*H]
  const float *Wb, *Rb, *P;   // biases (or null), peepholes i, o, f (LSTM, or null)
};

// acc[0..cols) += sum over k of v[k] * Mt[k][0..cols), Mt rows `stride` apart.
void accumulate(float* acc, const float* v, const float* Mt, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t k = 0; k < rows; ++k) {
    const float x = v[k];
    const float* m = Mt + k * stride;
    for (int64_t j = 0; j < cols; ++j) acc[j] += x * m[j];
  }
}

// The kernels a compiled plan's recurrence runs on: y = x M (x a row of k values, M row-major
// with `ldb` between rows, n columns), and an activation over n contiguous values.
struct Fast {
  const kernels::MatMulKernel* mm = nullptr;

  void matvec(const float* x, const float* m, int64_t k, int64_t n, int64_t ldb, float* y) const {
    kernels::MatMulParams p;
    p.m = 1, p.n = n, p.k = k, p.lda = k, p.ldb = ldb, p.ldc = n;
    mm->run(p, x, m, y, nullptr);
  }
  // In place; sigmoid, tanh and relu on the element-wise kernels, the rest element by element.
  static void activate(const Act& a, float* x, int64_t n) {
    kernels::EltwiseParams p;
    p.n = n;
    p.act.act = a.f == RnnAct::sigmoid ? kernels::Act::sigmoid
                : a.f == RnnAct::tanh  ? kernels::Act::tanh
                : a.f == RnnAct::relu  ? kernels::Act::relu
                                       : kernels::Act::none;
    if (p.act.act == kernels::Act::none) {
      for (int64_t j = 0; j < n; ++j) x[j] = a(x[j]);
      return;
    }
    kernels::eltwise_select(p, host_cpu())->run(p, x, nullptr, x, nullptr);
  }
};

// One step of one item in one direction: xw = its input's projection plus Wb (G*H values),
// h and c the state, updated in place.
struct Step {
  Op op;
  int64_t H, G;
  const Weights& w;
  const Act* act;  // acts_of(op) functions
  float clip;      // 0: none
  bool linear_before_reset;
  const Fast* fast;  // null: the reference's loops

  float clipped(float x) const { return clip > 0.f ? std::fmax(-clip, std::fmin(clip, x)) : x; }

  // The kernels' step: whole gate blocks at a time (LSTM peepholes take the loops).
  void run_fast(const float* xw, float* h, float* c, std::vector<float>& tmp) const {
    float* hr = tmp.data();  // h R^T + Rb, then the gates' pre-activations: G*H
    float* hn = hr + G * H;
    fast->matvec(h, w.rt.data(), H, G * H, G * H, hr);
    // Every gate but GRU's h gate (lbr = 0 recomputes its h R^T below): xw + h R^T + Rb, clipped.
    const int64_t ready = op == Op::GRU ? 2 * H : G * H;
    for (int64_t j = 0; j < ready; ++j) hr[j] = clipped(xw[j] + hr[j] + (w.Rb ? w.Rb[j] : 0.f));
    if (op == Op::RNN) {
      Fast::activate(act[0], hr, H);
      for (int64_t j = 0; j < H; ++j) h[j] = hr[j];
      return;
    }
    if (op == Op::GRU) {  // gates z, r, h
      Fast::activate(act[0], hr, 2 * H);
      const float *z = hr, *r = hr + H;
      float* hh = hr + 2 * H;
      if (linear_before_reset) {
        for (int64_t j = 0; j < H; ++j) hh[j] = clipped(xw[2 * H + j] + r[j] * (hh[j] + (w.Rb ? w.Rb[2 * H + j] : 0.f)));
      } else {  // (r . h) R_h^T + Rb_h
        float* rh = hn + H;
        for (int64_t k = 0; k < H; ++k) rh[k] = r[k] * h[k];
        fast->matvec(rh, w.rt.data() + 2 * H, H, H, G * H, hh);
        for (int64_t j = 0; j < H; ++j) hh[j] = clipped(xw[2 * H + j] + hh[j] + (w.Rb ? w.Rb[2 * H + j] : 0.f));
      }
      Fast::activate(act[1], hh, H);
      for (int64_t j = 0; j < H; ++j) h[j] = (1.f - z[j]) * hh[j] + z[j] * h[j];
      return;
    }
    // LSTM: gates i, o, f (act[0]) and c (act[1]); h = o . act[2](c').
    Fast::activate(act[0], hr, 3 * H);
    Fast::activate(act[1], hr + 3 * H, H);
    const float *i = hr, *o = hr + H, *f = hr + 2 * H, *cc = hr + 3 * H;
    for (int64_t j = 0; j < H; ++j) hn[j] = c[j] = f[j] * c[j] + i[j] * cc[j];
    Fast::activate(act[2], hn, H);
    for (int64_t j = 0; j < H; ++j) h[j] = o[j] * hn[j];
  }

  void run(const float* xw, float* h, float* c, std::vector<float>& tmp) const {
    if (fast && !(op == Op::LSTM && w.P)) return run_fast(xw, h, c, tmp);
    float* hr = tmp.data();  // h R^T + Rb: G*H
    float* hn = hr + G * H;
    for (int64_t j = 0; j < G * H; ++j) hr[j] = w.Rb ? w.Rb[j] : 0.f;
    accumulate(hr, h, w.rt.data(), H, G * H, G * H);
    if (op == Op::RNN) {
      for (int64_t j = 0; j < H; ++j) hn[j] = act[0](clipped(xw[j] + hr[j]));
    } else if (op == Op::GRU) {  // gates z, r, h
      float* z = hn + H;
      float* r = z + H;
      for (int64_t j = 0; j < H; ++j) {
        z[j] = act[0](clipped(xw[j] + hr[j]));
        r[j] = act[0](clipped(xw[H + j] + hr[H + j]));
      }
      if (!linear_before_reset) {  // the h gate reads (r . h) R_h^T + Rb_h instead
        float* rh = r + H;
        for (int64_t k = 0; k < H; ++k) rh[k] = r[k] * h[k];
        for (int64_t j = 0; j < H; ++j) hr[2 * H + j] = w.Rb ? w.Rb[2 * H + j] : 0.f;
        accumulate(hr + 2 * H, rh, w.rt.data() + 2 * H, H, H, G * H);
      }
      for (int64_t j = 0; j < H; ++j) {
        const float hh = linear_before_reset ? r[j] * hr[2 * H + j] : hr[2 * H + j];
        const float ht = act[1](clipped(xw[2 * H + j] + hh));
        hn[j] = (1.f - z[j]) * ht + z[j] * h[j];
      }
    } else {  // LSTM: gates i, o, f, c; peepholes i, o, f
      float* cn = hn + H;
      const float* P = w.P;
      for (int64_t j = 0; j < H; ++j) {
        const float i = act[0](clipped(xw[j] + hr[j] + (P ? P[j] * c[j] : 0.f)));
        const float f = act[0](clipped(xw[2 * H + j] + hr[2 * H + j] + (P ? P[2 * H + j] * c[j] : 0.f)));
        const float cc = act[1](clipped(xw[3 * H + j] + hr[3 * H + j]));
        cn[j] = f * c[j] + i * cc;
        const float o = act[0](clipped(xw[H + j] + hr[H + j] + (P ? P[H + j] * cn[j] : 0.f)));
        hn[j] = o * act[2](cn[j]);
      }
      for (int64_t j = 0; j < H; ++j) c[j] = cn[j];
    }
    for (int64_t j = 0; j < H; ++j) h[j] = hn[j];
  }
};

}  // namespace

Status infer_recurrent(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                       std::vector<ir::DType>* types) {
  Geometry g;
  SYSTOLIC_RETURN_IF_ERROR(geometry(n, in, &g));
  const ir::Shape y = g.batch_first ? ir::Shape{g.batch, g.seq, g.dirs, g.hidden} : ir::Shape{g.seq, g.dirs, g.batch, g.hidden};
  const ir::Shape state = g.batch_first ? ir::Shape{g.batch, g.dirs, g.hidden} : ir::Shape{g.dirs, g.batch, g.hidden};
  *shapes = {y, state};
  if (n.op == Op::LSTM) shapes->push_back(state);
  types->assign(shapes->size(), ir::DType::f32);
  return Status::Ok();
}

Status eval_recurrent(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  Geometry g;
  SYSTOLIC_RETURN_IF_ERROR(geometry(n, in, &g));
  const int64_t H = g.hidden, D = g.dirs, S = g.seq, N = g.batch, I = g.input, G = gates_of(n.op);
  const int A = acts_of(n.op);
  const bool projected = n.i("projected", 0) != 0;
  auto output = [&](std::size_t k) { return k < out.size() && out[k].data ? out[k].as<float>() : nullptr; };
  float *Y = output(0), *Yh = output(1), *Yc = n.op == Op::LSTM ? output(2) : nullptr;
  const float* X = in[0].as<float>();
  const int32_t* lens = present(in, 4) ? in[4].as<int32_t>() : nullptr;
  const float* H0 = present(in, 5) ? in[5].as<float>() : nullptr;
  const float* C0 = n.op == Op::LSTM && present(in, 6) ? in[6].as<float>() : nullptr;
  auto state_at = [&](int64_t d, int64_t b) { return (g.batch_first ? b * D + d : d * N + b) * H; };
  auto x_at = [&](int64_t t, int64_t b) { return (g.batch_first ? b * S + t : t * N + b) * I; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) { return (g.batch_first ? (b * S + t) * D + d : (t * D + d) * N + b) * H; };
  std::vector<float> h(H), c(H), tmp(2 * G * H + 3 * H), xw;
  // A compiled plan's layer (its projection done by the matrix kernels) runs on the kernels.
  Fast fast;
  if (projected) {
    kernels::MatMulParams p;
    p.m = 1, p.n = G * H, p.k = H, p.lda = H, p.ldb = G * H, p.ldc = G * H;
    fast.mm = kernels::matmul_select(p, host_cpu());
  }
  for (int64_t d = 0; d < D; ++d) {
    const bool backwards = g.reverse || d == 1;
    Weights w;
    const float* Wd = in[1].as<float>() + d * G * H * I;
    const float* Rd = in[2].as<float>() + d * G * H * H;
    if (!projected) w.wt.resize(I * G * H);
    w.rt.resize(H * G * H);
    for (int64_t j = 0; j < G * H; ++j) {
      if (!projected)
        for (int64_t k = 0; k < I; ++k) w.wt[k * G * H + j] = Wd[j * I + k];
      for (int64_t k = 0; k < H; ++k) w.rt[k * G * H + j] = Rd[j * H + k];
    }
    w.Wb = present(in, 3) ? in[3].as<float>() + d * 2 * G * H : nullptr;
    w.Rb = present(in, 3) ? in[3].as<float>() + d * 2 * G * H + G * H : nullptr;
    w.P = n.op == Op::LSTM && present(in, 7) ? in[7].as<float>() + d * 3 * H : nullptr;
    const Step step{n.op, H, G, w, g.acts.data() + d * A, n.has("clip") ? n.f("clip", 0.f) : 0.f,
                    n.i("linear_before_reset", 0) != 0, fast.mm ? &fast : nullptr};
    for (int64_t b = 0; b < N; ++b) {
      const int64_t len = lens ? lens[b] : S;
      // The input's projection for every step at once: X_t W^T + Wb (or the MatMul's, given).
      xw.assign(len * G * H, 0.f);
      for (int64_t t = 0; t < len; ++t) {
        float* row = xw.data() + t * G * H;
        if (projected) {
          const float* p = X + (g.batch_first ? b * S + t : t * N + b) * D * G * H + d * G * H;
          for (int64_t j = 0; j < G * H; ++j) row[j] = p[j];
          continue;
        }
        if (w.Wb)
          for (int64_t j = 0; j < G * H; ++j) row[j] = w.Wb[j];
        accumulate(row, X + x_at(t, b), w.wt.data(), I, G * H, G * H);
      }
      for (int64_t j = 0; j < H; ++j) {
        h[j] = H0 ? H0[state_at(d, b) + j] : 0.f;
        c[j] = C0 ? C0[state_at(d, b) + j] : 0.f;
      }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = backwards ? len - 1 - s : s;
        step.run(xw.data() + t * G * H, h.data(), c.data(), tmp);
        if (Y)
          for (int64_t j = 0; j < H; ++j) Y[y_at(t, d, b) + j] = h[j];
      }
      if (Y)
        for (int64_t t = len; t < S; ++t)
          for (int64_t j = 0; j < H; ++j) Y[y_at(t, d, b) + j] = 0.f;
      for (int64_t j = 0; j < H; ++j) {
        if (Yh) Yh[state_at(d, b) + j] = h[j];
        if (Yc) Yc[state_at(d, b) + j] = c[j];
      }
    }
  }
  return Status::Ok();
}

}  // namespace systolic::interp

// The element-wise segment loops over a vector traits struct T (defined in each *_avx*.cc), and the
// table that picks one per (op, activation, b kind). Include only from ISA files; everything here
// has internal linkage, so an AVX-512 copy can never be linked into another ISA's code path.
//
// T provides: V, W, zero, set1, load, load_n, store, store_n, add, sub, mul, div, fma (a*b+c),
// min, max, lt_select (a < b ? x : y), abs, copysign (|mag| with sign of s), round (to nearest),
// scale2 (p * 2^n for integral n in [-150, 129]), round_bf16 (to the nearest bf16, as
// kernels/epilogue.h's round_bf16).
#pragma once
#include <cstdint>

#include "kernels/eltwise/eltwise_util.h"
#include "kernels/vec_math.h"

namespace systolic::kernels::eltwise {
namespace {

using vmath::exp;
using vmath::sigmoid;


// |x| < 0.625: Cephes' tanhf odd polynomial; else 1 - 2/(exp(2|x|) + 1) (saturated at |x| = 9).
template <class T>
inline typename T::V tanh(typename T::V x) {
  using V = typename T::V;
  const V ax = T::abs(x), z = T::mul(x, x);
  V s = T::set1(-5.70498872745e-3f);
  s = T::fma(s, z, T::set1(2.06390887954e-2f));
  s = T::fma(s, z, T::set1(-5.37397155531e-2f));
  s = T::fma(s, z, T::set1(1.33314422036e-1f));
  s = T::fma(s, z, T::set1(-3.33332819422e-1f));
  s = T::fma(T::mul(s, z), x, x);
  const V e = exp<T>(T::mul(T::min(ax, T::set1(9.f)), T::set1(2.f)));
  const V l = T::sub(T::set1(1.f), T::div(T::set1(2.f), T::add(e, T::set1(1.f))));
  return T::lt_select(ax, T::set1(0.625f), s, T::copysign(l, x));
}

// GELU, x/2 (1 + erf(x/sqrt2)), with erfc(|x|/sqrt2) from Abramowitz-Stegun 7.1.26 (absolute
// error <= 1.5e-7): x >= 0 gives x (1 - q/2), x < 0 gives x q/2, so neither side cancels.
// tanh_form: the tanh approximation x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class T>
inline typename T::V gelu(typename T::V x, bool tanh_form) {
  using V = typename T::V;
  if (tanh_form) {
    const V inner = T::mul(T::set1(0.7978845608f), T::fma(T::mul(T::mul(x, x), x), T::set1(0.044715f), x));
    return T::mul(T::mul(x, T::set1(0.5f)), T::add(T::set1(1.f), tanh<T>(inner)));
  }
  const V z = T::mul(T::abs(x), T::set1(0.70710678118654752f));
  const V t = T::div(T::set1(1.f), T::fma(z, T::set1(0.3275911f), T::set1(1.f)));
  V p = T::set1(1.061405429f);
  p = T::fma(p, t, T::set1(-1.453152027f));
  p = T::fma(p, t, T::set1(1.421413741f));
  p = T::fma(p, t, T::set1(-0.284496736f));
  p = T::fma(p, t, T::set1(0.254829592f));
  const V half_q = T::mul(T::mul(T::mul(p, t), exp<T>(T::sub(T::zero(), T::mul(z, z)))), T::set1(0.5f));
  return T::mul(x, T::lt_select(x, T::zero(), half_q, T::sub(T::set1(1.f), half_q)));
}

template <class T>
struct ActArgs {
  typename T::V a, b;
  bool tanh_form;
  explicit ActArgs(const Epilogue& e) : a(T::set1(e.a)), b(T::set1(e.b)), tanh_form(e.a != 0.f) {}
};

template <class T, Act A>
inline typename T::V act(typename T::V x, const ActArgs<T>& k) {
  const auto zero = T::zero();
  if constexpr (A == Act::none) return x;
  if constexpr (A == Act::relu) return T::max(x, zero);
  if constexpr (A == Act::clip) return T::min(T::max(x, k.a), k.b);
  if constexpr (A == Act::leaky_relu) return T::lt_select(x, zero, T::mul(x, k.a), x);
  if constexpr (A == Act::sigmoid) return sigmoid<T>(x);
  if constexpr (A == Act::silu) return T::mul(x, sigmoid<T>(x));
  if constexpr (A == Act::hard_sigmoid) return T::min(T::max(T::fma(x, k.a, k.b), zero), T::set1(1.f));
  if constexpr (A == Act::hard_swish) {
    const auto g = T::fma(x, T::set1(1.f / 6.f), T::set1(0.5f));
    return T::mul(x, T::min(T::max(g, zero), T::set1(1.f)));
  }
  if constexpr (A == Act::tanh) return tanh<T>(x);
  if constexpr (A == Act::gelu) return gelu<T>(x, k.tanh_form);
}

constexpr int kUnary = -1;  // OP value of the no-binary-op loops

template <class T, int OP>
inline typename T::V binop(typename T::V x, typename T::V w) {
  if constexpr (OP == kUnary) return x;
  if constexpr (OP == int(BinaryOp::add)) return T::add(x, w);
  if constexpr (OP == int(BinaryOp::sub)) return T::sub(x, w);
  if constexpr (OP == int(BinaryOp::mul)) return T::mul(x, w);
  if constexpr (OP == int(BinaryOp::div)) return T::div(x, w);
  if constexpr (OP == int(BinaryOp::prelu)) return T::lt_select(x, T::zero(), T::mul(x, w), x);
}

// y[0, len) = act(op(a, b)), rounded to bf16 with RB; SB: b is the scalar b[0]. Four vectors
// per step, then one, then a masked tail; every a load of a step precedes its stores, so y may
// alias a.
template <class T, int OP, Act A, bool SB, bool RB>
void seg(const float* a, const float* b, float* y, int64_t len, const Epilogue& e) {
  using V = typename T::V;
  constexpr int W = T::W;
  const ActArgs<T> k(e);
  auto fin = [&](V v) {
    v = act<T, A>(v, k);
    if constexpr (RB) v = T::round_bf16(v);
    return v;
  };
  V bs = T::zero();
  if constexpr (OP != kUnary && SB) bs = T::set1(*b);
  auto bv = [&](int64_t j) {
    if constexpr (OP == kUnary || SB) return bs;
    else return T::load(b + j);
  };
  int64_t i = 0;
  for (; i + 4 * W <= len; i += 4 * W) {
    V r[4];
    for (int u = 0; u < 4; ++u) r[u] = fin(binop<T, OP>(T::load(a + i + u * W), bv(i + u * W)));
    for (int u = 0; u < 4; ++u) T::store(y + i + u * W, r[u]);
  }
  for (; i + W <= len; i += W) T::store(y + i, fin(binop<T, OP>(T::load(a + i), bv(i))));
  if (const int t = int(len - i); t > 0) {
    V w = bs;
    if constexpr (OP != kUnary && !SB) w = T::load_n(b + i, t);
    T::store_n(y + i, fin(binop<T, OP>(T::load_n(a + i, t), w)), t);
  }
}

template <class T, int OP, bool SB, bool RB>
EltwiseSegFn pick_act(Act a) {
  switch (a) {
    case Act::none: return seg<T, OP, Act::none, SB, RB>;
    case Act::relu: return seg<T, OP, Act::relu, SB, RB>;
    case Act::clip: return seg<T, OP, Act::clip, SB, RB>;
    case Act::leaky_relu: return seg<T, OP, Act::leaky_relu, SB, RB>;
    case Act::sigmoid: return seg<T, OP, Act::sigmoid, SB, RB>;
    case Act::silu: return seg<T, OP, Act::silu, SB, RB>;
    case Act::hard_sigmoid: return seg<T, OP, Act::hard_sigmoid, SB, RB>;
    case Act::hard_swish: return seg<T, OP, Act::hard_swish, SB, RB>;
    case Act::tanh: return seg<T, OP, Act::tanh, SB, RB>;
    case Act::gelu: return seg<T, OP, Act::gelu, SB, RB>;
  }
  return nullptr;
}

template <class T, bool SB, bool RB>
EltwiseSegFn pick(const EltwiseParams& p) {
  if (!p.binary) return pick_act<T, kUnary, false, RB>(p.act.act);
  switch (p.op) {
    case BinaryOp::add: return pick_act<T, int(BinaryOp::add), SB, RB>(p.act.act);
    case BinaryOp::sub: return pick_act<T, int(BinaryOp::sub), SB, RB>(p.act.act);
    case BinaryOp::mul: return pick_act<T, int(BinaryOp::mul), SB, RB>(p.act.act);
    case BinaryOp::div: return pick_act<T, int(BinaryOp::div), SB, RB>(p.act.act);
    case BinaryOp::prelu: return pick_act<T, int(BinaryOp::prelu), SB, RB>(p.act.act);
  }
  return nullptr;
}

template <class T>
void run(const EltwiseParams& p, const float* a, const float* b, float* y, pthreadpool_t pool) {
  if (p.act.round_bf16) eltwise_drive(p, a, b, y, pool, pick<T, false, true>(p), pick<T, true, true>(p));
  else eltwise_drive(p, a, b, y, pool, pick<T, false, false>(p), pick<T, true, false>(p));
}

}  // namespace
}  // namespace systolic::kernels::eltwise

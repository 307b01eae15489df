// The fp32 indirect-GEMM microkernel (MR pixels x NR channels in registers, fused epilogue),
// written once over a vector-ops traits struct (VecAvx2, VecAvx512) and instantiated per ISA.
#pragma once
#include <type_traits>

#include "kernels/epilogue.h"
#include "kernels/vec_math.h"

#define SYSTOLIC_INLINE inline __attribute__((always_inline))

namespace systolic::kernels {

// Scalar activation (and bf16 rounding, when the epilogue asks) over n floats, compiled without
// ISA flags (act_scalar.cc) so that ISA files never emit their own copy of apply_act for the
// linker to pick.
void apply_act_n(const Epilogue& e, float* x, int n);

// Internal linkage: each ISA file keeps its own copy of these helpers.
namespace {

// Where and how one tile is written: dst/res rows are pixels (stride in floats), columns are
// output channels; bias/res/dst already point at the tile's first channel.
struct TileOut {
  float* dst;
  long dst_stride;
  const float* res;  // or null
  long res_stride;
  const float* bias;  // or null
  int nvalid;         // valid columns (<= NR); the packed weights are zero beyond them
  Epilogue ep;
  // K-blocked runs: `accumulate` starts from the partial sums in dst instead of zero; `partial`
  // stores the raw sums (no bias, residual or activation) because more K blocks follow.
  bool accumulate = false, partial = false;
  // Lines [pf, pf_end) to fetch into L2 during the K loop, one per k step (a slice of the next K
  // block's, panel's or Winograd element's weights; a k step reads 4 lines of a 64-wide panel,
  // so blocks of fewer than 4 tiles fetch only part of the next). Issued all at once before the
  // tile, the same fetches left ResNet-50's layer4 at batch 1 15-23% slower (docs/benchmarks.md).
  const char* pf = nullptr;
  const char* pf_end = nullptr;
};

inline bool act_vectorized(Act a) {
  return a == Act::none || a == Act::relu || a == Act::clip || a == Act::leaky_relu || a == Act::hard_swish ||
         a == Act::silu;
}

// Activation for the vectorized kinds; others are applied by scalar code after the store.
template <class T>
SYSTOLIC_INLINE typename T::V act_vec(typename T::V x, Act act, typename T::V a,
                                      typename T::V b) {
  switch (act) {
    case Act::relu: return T::max(x, T::zero());
    // std::min(std::max(x, a), b) exactly: vector max/min return their second operand on a NaN
    // or a tie, so x goes second (a NaN passes, -0 stays -0 against a bound of 0).
    case Act::clip: return T::min(b, T::max(a, x));
    case Act::leaky_relu: return T::leaky(x, a);
    case Act::hard_swish: {
      // apply_act's x * min(max(x / 6 + 1/2, 0), 1), bit for bit: a true division, and the
      // clamps take t second so that a NaN passes through them as it does in std::max/min.
      const typename T::V t = T::add(T::div(x, T::set1(6.f)), T::set1(0.5f));
      return T::mul(x, T::min(T::set1(1.f), T::max(T::zero(), t)));
    }
    // x * sigmoid(x) with the element-wise family's vector exp (kernels/vec_math.h): the bytes
    // of the separate Silu step, within 2 ulp of apply_act's std::exp. Applied in registers,
    // EfficientNet's convs no longer write a tensor for a SiLU pass to read back.
    case Act::silu: return T::mul(x, vmath::sigmoid<T>(x));
    default: return x;
  }
}

// Adds bias and residual, applies the activation and the bf16 rounding (when the epilogue asks)
// and stores `rows` rows of NV vectors.
template <class T, int MR, int NV>
SYSTOLIC_INLINE void store_tile(typename T::V (&acc)[MR][NV], const TileOut& o) {
  using V = typename T::V;
  constexpr int W = T::W;
  const bool full = o.nvalid == NV * W;
  int nv[NV];
  for (int j = 0; j < NV; ++j) {
    int n = o.nvalid - j * W;
    nv[j] = n < 0 ? 0 : (n > W ? W : n);
  }
  if (o.partial) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) {
        float* d = o.dst + i * o.dst_stride + j * W;
        if (full) T::store(d, acc[i][j]);
        else if (nv[j] > 0) T::store_n(d, acc[i][j], nv[j]);
      }
    return;
  }
  if (o.bias) {
    V b[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) b[j] = full ? T::load(o.bias + j * W) : T::load_n(o.bias + j * W, nv[j]);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = T::add(acc[i][j], b[j]);
  }
  const bool vec_act = act_vectorized(o.ep.act);
  // The bf16 rounding goes last: in registers after a vectorized activation, else in
  // apply_act_n with the activation.
  const bool vec_round = vec_act && o.ep.round_bf16;
  const V va = T::set1(o.ep.a), vb = T::set1(o.ep.b);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* d = o.dst + i * o.dst_stride;
    const float* r = o.res ? o.res + i * o.res_stride : nullptr;
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      V x = acc[i][j];
      if (r) x = T::add(x, full ? T::load(r + j * W) : T::load_n(r + j * W, nv[j]));
      if (vec_act) x = act_vec<T>(x, o.ep.act, va, vb);
      if (vec_round) x = T::round_bf16(x);
      if (full) T::store(d + j * W, x);
      else if (nv[j] > 0) T::store_n(d + j * W, x, nv[j]);
    }
    if (!vec_act) apply_act_n(o.ep, d, o.nvalid);
  }
}

// acc = the partial sums a previous K block stored in the tile's dst.
template <class T, int MR, int NV>
SYSTOLIC_INLINE void load_tile(typename T::V (&acc)[MR][NV], const TileOut& o) {
  constexpr int W = T::W;
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) {
      const float* d = o.dst + i * o.dst_stride + j * W;
      const int n = o.nvalid - j * W;
      acc[i][j] = n >= W ? T::load(d) : n > 0 ? T::load_n(d, n) : T::zero();
    }
}

// Starts fetching the tile's residual and destination lines while the K loop runs: read at the
// very end, they would otherwise stall on memory once per tile (a third of a short-K 1x1 conv
// at batch 16, where activations live in DRAM).
template <class T, int MR, int NV>
SYSTOLIC_INLINE void prefetch_out(const TileOut& o) {
  constexpr int W = T::W;
  if (o.res && !o.partial)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; j += 64 / (W * 4)) __builtin_prefetch(o.res + i * o.res_stride + j * W, 0, 3);
  if (!o.accumulate)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; j += 64 / (W * 4)) __builtin_prefetch(o.dst + i * o.dst_stride + j * W, 1, 3);
}

// acc[MR][NV] = sum over taps t, channels c < kc of rows(t)[i][c] * w[t][c][0..NR).
// rows(t, p) fills p[0..MR) with the MR pixel row pointers of tap t (a zero row when padded);
// where it returns bool, false says every row of tap t is padding and the tap is skipped.
// Small tiles split the c loop over KU accumulator sets so the FMA latency stays hidden (GEMV).
template <class T, int MR, int NV, class Rows>
SYSTOLIC_INLINE void igemm_tile(int taps, int kc, const float* w, Rows&& rows, const TileOut& o) {
  using V = typename T::V;
  constexpr int W = T::W;
  constexpr int NR = NV * W;
  constexpr int KU = MR * NV >= 8 ? 1 : (MR * NV >= 4 ? 2 : 4);
  V acc[KU][MR][NV];
#pragma GCC unroll 4
  for (int u = 0; u < KU; ++u)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[u][i][j] = T::zero();
  if (o.accumulate) load_tile<T, MR, NV>(acc[0], o);
  prefetch_out<T, MR, NV>(o);
  const char* pf = o.pf;
  const char* const pf_end = o.pf_end;
  for (int t = 0; t < taps; ++t) {
    const float* p[MR];
    if constexpr (std::is_same_v<decltype(rows(t, p)), bool>) {
      if (!rows(t, p)) {  // adds only zeros
        w += long(kc) * NR;
        continue;
      }
    } else {
      rows(t, p);
    }
    int c = 0;
    if constexpr (KU > 1) {
      for (; c + KU <= kc; c += KU) {
        if (pf < pf_end) __builtin_prefetch(pf, 0, 2), pf += 64;
#pragma GCC unroll 4
        for (int u = 0; u < KU; ++u) {
          V b[NV];
#pragma GCC unroll 8
          for (int j = 0; j < NV; ++j) b[j] = T::load(w + u * NR + j * W);
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) {
            const V a = T::bcast(p[i] + c + u);
#pragma GCC unroll 8
            for (int j = 0; j < NV; ++j) acc[u][i][j] = T::fma(a, b[j], acc[u][i][j]);
          }
        }
        w += KU * NR;
      }
    }
    for (; c < kc; ++c) {
      if (pf < pf_end) __builtin_prefetch(pf, 0, 2), pf += 64;
      V b[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) b[j] = T::load(w + j * W);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const V a = T::bcast(p[i] + c);
#pragma GCC unroll 8
        for (int j = 0; j < NV; ++j) acc[0][i][j] = T::fma(a, b[j], acc[0][i][j]);
      }
      w += NR;
    }
  }
#pragma GCC unroll 4
  for (int u = 1; u < KU; ++u)
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[0][i][j] = T::add(acc[0][i][j], acc[u][i][j]);
  store_tile<T, MR, NV>(acc[0], o);
}

}  // namespace
}  // namespace systolic::kernels

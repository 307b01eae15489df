// Int8 depthwise NHWC conv (groups == ic == oc, channel multiplier 1) over a traits struct
// (QDwAvx2, QDwAvx512): weight packing, channel-vector tiles, threading and the family's fused
// requantizing epilogue, for any kernel size, stride, dilation and pads.
//
// Exact sums through vpmaddwd: the u8 activations of two vertically adjacent taps (ky, ky+1) of
// one channel are widened into an int16 pair per int32 lane, against the weights packed as the
// same int16 pairs, so one multiply-add sums two taps; the last tap row of an odd kernel height
// is widened alone (the pair's high half 0) against (w, 0). Products are at most 255 * 128, so
// the int32 sums are exact.
//
// Channels go in steps of two int32 vectors (CB = 2W: 16 on AVX2, 32 on AVX-512). A step widens
// its bytes with in-lane unpacks only, which leaves its lanes permuted: 128-bit lane k of vector
// v holds channels 8k + 4v + {0..3}. The weights of whole blocks are packed in that order, bias
// and scale are permuted to it, and the u8 pack of the two vectors' results restores the
// natural order for free. A single vector (W channels) keeps the natural order.
//
// Packed weights: [channel block of CB][kx][row pair p < ceil(kh / 2)][CB lanes][2] int16, lane
// (v, l) of pair p holding (w[c, 2p, kx], w[c, 2p + 1, kx]) for the channel c it carries: the
// permuted one in a whole block, c = b * CB + v * W + l in the last, partial block. Zero past kh
// and past oc.
//
// Work is split into tasks of (image, output row, channel chunk). Within a task, 3x3 and 5x5
// kernels with equal strides 1 or 2 and no dilation, and unpadded 1x1, take a fast path: OX horizontally adjacent
// outputs at once, each input column widened once and used by every output it feeds; rows cut
// by the top or bottom pad read the pad bytes in place of the row (column stride 0), outputs
// whose window leaves the image horizontally read them per tap. Other kernels and ragged
// channel tails go through the per-pixel path. Out-of-image taps always count (the zero points
// live in the bias), so every path sums every tap of the window.
#pragma once
#include <algorithm>
#include <cstring>

#include "base/threadpool.h"
#include "kernels/qconv/qconv.h"

#ifndef SYSTOLIC_INLINE
#define SYSTOLIC_INLINE inline __attribute__((always_inline))
#endif

namespace systolic::kernels::qdw {

constexpr long ceil_div(long a, long b) { return (a + b - 1) / b; }
// Exact int32 accumulation: |x * w| <= 255 * 128 per tap (as the igemm kernels' K bound).
constexpr long kMaxTaps = (2147483647L - kQConvMaxBias) / (255L * 128L);

template <int CB>
std::size_t packed_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  return std::size_t(ceil_div(p.oc, CB)) * p.kw * ceil_div(p.kh, 2) * CB * 2 * sizeof(int16_t);
}

// The channel (within its block) that lane l of vector v of a whole block's step carries.
constexpr int permuted(int v, int l) {
  return 8 * (l / 4) + 4 * v + l % 4;
}

template <int CB>
void pack(const QConvParams& qp, const int8_t* w, void* out_v) {
  constexpr int W = CB / 2;
  const ConvParams& p = qp.conv;
  const int P = int(ceil_div(p.kh, 2));
  int16_t* out = static_cast<int16_t*>(out_v);
  for (int b = 0; b < ceil_div(p.oc, CB); ++b) {
    const bool whole = (b + 1) * CB <= p.oc;
    for (int kx = 0; kx < p.kw; ++kx)
      for (int pr = 0; pr < P; ++pr)
        for (int lane = 0; lane < CB; ++lane)
          for (int e = 0; e < 2; ++e) {
            const int c = b * CB + (whole ? permuted(lane / W, lane % W) : lane), ky = 2 * pr + e;
            *out++ = c < p.oc && ky < p.kh ? int16_t(w[(long(c) * p.kh + ky) * p.kw + kx]) : int16_t(0);
          }
  }
}

// The run side below is instantiated in ISA files only; internal linkage keeps copies apart.
namespace {

// Everything a task needs, computed once per run.
struct Ctx {
  QConvParams qp;
  QConvArgs a;
  long ss, ds, rs;   // pixel strides (elements)
  int P;             // row pairs: ceil(kh / 2)
  long block;        // int16 per packed channel block: kw * P * CB * 2
  int ox_lo, ox_hi;  // outputs [ox_lo, ox_hi) have every horizontal tap inside the image
};

// Where channel c's weights start: its block, then lane c % CB (0 or W: vectors start there).
template <class T>
SYSTOLIC_INLINE const int16_t* weights_at(const Ctx& x, int c) {
  constexpr int CB = 2 * T::W;
  return static_cast<const int16_t*>(x.a.weights) + (c / CB) * x.block + (c % CB) * 2;
}

// The epilogue's operands. The fast path keeps a copy in locals: a byte store may alias anything
// in memory, so operands read through a reference would be reloaded after every store.
struct Out {
  const int32_t* bias;
  const float* scale;
  const void* res;
  void* dst;
  long ds, rs;
  bool f32;
  QRequant rq;
  Epilogue ep;
};

inline Out out_of(const Ctx& x) {
  return {x.a.bias, x.a.scale, x.a.residual, x.a.dst, x.ds, x.rs, x.qp.out_f32 != 0, x.a.rq, x.a.ep};
}

// u8 output without mid steps or residual: the two vectors of a step requantize in their
// permuted order and pack together.
inline bool plain(const Out& o) { return !o.f32 && !o.res && !o.rq.mid; }

// NV vectors of channel c's step in its lane order (permuted with NV == 2).
template <class T, int NV>
SYSTOLIC_INLINE void load_lanes(const int32_t* p, typename T::V (&v)[NV]) {
#pragma GCC unroll 2
  for (int i = 0; i < NV; ++i) v[i] = T::load32(p + i * T::W);
  if constexpr (NV == 2) T::to_perm(v);
}

// The epilogue of one pixel's NV full vectors at channel c, in the step's lane order (bias
// already in acc). PLAIN: `sc` holds the step's scales in that order.
template <class T, int NV, bool PLAIN>
SYSTOLIC_INLINE void store(const Out& o, typename T::V (&acc)[NV], const typename T::V (&sc)[NV], long pix,
                           int c) {
  if constexpr (PLAIN && NV == 2) {
    T::requant2(acc, sc, o.rq, static_cast<uint8_t*>(o.dst) + pix * o.ds + c);
  } else {
    if constexpr (NV == 2) T::from_perm(acc);
#pragma GCC unroll 2
    for (int v = 0; v < NV; ++v) {
      const long ch = c + v * T::W;
      if (!PLAIN && o.f32) {
        const float* r = o.res ? static_cast<const float*>(o.res) + pix * o.rs + ch : nullptr;
        T::dequant(acc[v], o.scale + ch, r, o.ep, static_cast<float*>(o.dst) + pix * o.ds + ch);
      } else {
        const uint8_t* r = !PLAIN && o.res ? static_cast<const uint8_t*>(o.res) + pix * o.rs + ch : nullptr;
        T::requant(acc[v], o.scale + ch, r, o.rq, static_cast<uint8_t*>(o.dst) + pix * o.ds + ch);
      }
    }
  }
}

// The epilogue of n < W channels (one natural-order vector, bias not added): through a stack
// copy and the scalar form of the arithmetic, or the traits' masked requant_rows for u8.
template <class T>
void store_n(const Out& o, typename T::V acc, long pix, int c, int n) {
  alignas(64) int32_t tmp[T::W];
  T::store32(tmp, acc);
  if constexpr (requires { T::kMaskedTail; }) {
    if (T::kMaskedTail && !o.f32) {
      const uint8_t* r = o.res ? static_cast<const uint8_t*>(o.res) + pix * o.rs + c : nullptr;
      T::requant_rows(tmp, 0, 1, n, o.bias + c, o.scale + c, r, 0, o.rq, static_cast<uint8_t*>(o.dst) + pix * o.ds + c, 0);
      return;
    }
  }
  for (int e = 0; e < n; ++e) tmp[e] += o.bias[c + e];
  if (o.f32) {
    const float* r = o.res ? static_cast<const float*>(o.res) + pix * o.rs + c : nullptr;
    qconv_dequant_n(tmp, n, o.scale + c, r, o.ep, static_cast<float*>(o.dst) + pix * o.ds + c);
  } else {
    const uint8_t* r = o.res ? static_cast<const uint8_t*>(o.res) + pix * o.rs + c : nullptr;
    qconv_requant_n(tmp, n, o.scale + c, r, o.rq, static_cast<uint8_t*>(o.dst) + pix * o.ds + c);
  }
}

// One pixel (image n, output oy, ox), channels [c, c + n): NV full vectors (n == NV * W), or one
// vector holding n < W channels (NV == 1), whose bytes are copied out first so that nothing
// past channel oc is read. Any kernel, stride, dilation; out-of-image taps read pad[c].
template <class T, int NV>
void pixel(const Ctx& x, int n_img, int oy, int ox, int c, int n) {
  using V = typename T::V;
  constexpr int W = T::W, CB = 2 * W;
  const ConvParams& p = x.qp.conv;
  const bool ragged = n < NV * W;
  V acc[NV];
  if (ragged) acc[0] = T::zero();
  else load_lanes<T, NV>(x.a.bias + c, acc);
  const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
  const uint8_t* img = x.a.src + long(n_img) * p.ih * p.iw * x.ss + c;
  const uint8_t* pad = x.a.pad + c;
  const int16_t* w = weights_at<T>(x, c);
  auto tap = [&](int ky, int ix, bool col_in) {
    const int iy = iy0 + ky * p.dh;
    return col_in && unsigned(iy) < unsigned(p.ih) ? img + (long(iy) * p.iw + ix) * x.ss : pad;
  };
  alignas(64) uint8_t ba[64] = {}, bb[64] = {};
  constexpr bool kMasked = NV == 1 && requires { T::kMaskedTaps; };
  for (int kx = 0; kx < p.kw; ++kx) {
    const int ix = ix0 + kx * p.dw;
    const bool col_in = unsigned(ix) < unsigned(p.iw);
    for (int pr = 0; pr < x.P; ++pr, w += CB * 2) {
      const uint8_t* ta = tap(2 * pr, ix, col_in);
      const uint8_t* tb = 2 * pr + 1 < p.kh ? tap(2 * pr + 1, ix, col_in) : nullptr;
      V col[NV];
      if constexpr (kMasked) {
        if (ragged) {
          if (tb) T::pairs_n(ta, tb, n, col);
          else T::singles_n(ta, n, col);
          acc[0] = T::madd(acc[0], col[0], w);
          continue;
        }
      }
      if (ragged) {
        std::memcpy(ba, ta, n);
        ta = ba;
        if (tb) std::memcpy(bb, tb, n), tb = bb;
      }
      if (tb) T::template pairs<NV>(ta, tb, col);
      else T::template singles<NV>(ta, col);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[v] = T::madd(acc[v], col[v], w + v * W * 2);
    }
  }
  const long pix = (long(n_img) * p.oh + oy) * p.ow + ox;
  if (ragged) {
    store_n<T>(out_of(x), acc[0], pix, c, n);
  } else {
    const V none[NV] = {};
    store<T, NV, false>(out_of(x), acc, none, pix, c);
  }
}

// Channels [c0, c1) of one pixel: whole steps of 2 vectors, then one vector, then the rest.
template <class T>
void pixel_channels(const Ctx& x, int n_img, int oy, int ox, int c0, int c1) {
  constexpr int W = T::W;
  int c = c0;
  for (; c + 2 * W <= c1; c += 2 * W) pixel<T, 2>(x, n_img, oy, ox, c, 2 * W);
  for (; c < c1; c += W) pixel<T, 1>(x, n_img, oy, ox, c, std::min(W, c1 - c));
}

// OX adjacent outputs, `steps` steps of NV channel vectors from channel c on. q[ky]: the input
// column of the first output's first tap in tap row ky (channel 0); st[ky]: bytes between
// columns of that row (0 for a row outside the image, whose q points at the pad bytes). FULL:
// every st is ss.
template <class T, int KH, int KW, int S, int OX, int NV, bool FULL, bool PLAIN>
SYSTOLIC_INLINE void tile(const Out& out, long ss, const uint8_t* const (&q)[KH], const long (&st)[KH],
                          const int16_t* w, long block, long pix, int c, int steps) {
  using V = typename T::V;
  constexpr int W = T::W, CB = 2 * W, P = (KH + 1) / 2, NX = (OX - 1) * S + KW;
  uint8_t* d = static_cast<uint8_t*>(out.dst) + pix * out.ds;
  for (int step = 0; step < steps; ++step, c += NV * W, w += block) {
    V acc[OX][NV];
    {
      V b[NV];
      load_lanes<T, NV>(out.bias + c, b);
#pragma GCC unroll 8
      for (int o = 0; o < OX; ++o)
#pragma GCC unroll 2
        for (int v = 0; v < NV; ++v) acc[o][v] = b[v];
    }
#pragma GCC unroll 4
    for (int pr = 0; pr < P; ++pr) {
      constexpr bool kOdd = KH % 2 == 1;
      const bool single = kOdd && pr == P - 1;
      const int ra = 2 * pr, rb = single ? ra : ra + 1;
      const long sa = FULL ? ss : st[ra], sb = FULL ? ss : st[rb];
      // Column bases every 3 columns, opaque to the optimizer: columns are then addressed as
      // base + {0,1,2} * stride rather than as precomputed offsets spilled to the stack.
      const uint8_t* qa[(NX + 2) / 3];
      const uint8_t* qb[(NX + 2) / 3];
#pragma GCC unroll 8
      for (int i = 0; i < (NX + 2) / 3; ++i) {
        qa[i] = q[ra] + c + 3 * i * sa;
        qb[i] = q[rb] + c + 3 * i * sb;
        asm("" : "+r"(qa[i]), "+r"(qb[i]));
      }
#pragma GCC unroll 16
      for (int xx = 0; xx < NX; ++xx) {
        V col[NV];
        if (single) T::template singles<NV>(qa[xx / 3] + (xx % 3) * sa, col);
        else T::template pairs<NV>(qa[xx / 3] + (xx % 3) * sa, qb[xx / 3] + (xx % 3) * sb, col);
#pragma GCC unroll 8
        for (int o = 0; o < OX; ++o) {
          const int kx = xx - o * S;
          if (kx < 0 || kx >= KW) continue;
#pragma GCC unroll 2
          for (int v = 0; v < NV; ++v) acc[o][v] = T::madd(acc[o][v], col[v], w + ((kx * P + pr) * CB + v * W) * 2);
        }
      }
    }
    if constexpr (PLAIN && NV == 2) {
      V sc[NV];
      load_lanes<T, NV>(reinterpret_cast<const int32_t*>(out.scale + c), sc);
#pragma GCC unroll 8
      for (int o = 0; o < OX; ++o) T::requant2(acc[o], sc, out.rq, d + o * out.ds + c);
    } else {
      const V none[NV] = {};
#pragma GCC unroll 8
      for (int o = 0; o < OX; ++o) store<T, NV, PLAIN>(out, acc[o], none, pix + o, c);
    }
  }
}

// One output whose window leaves the image horizontally, NV channel vectors: col[ky][kx] is
// the tap's pixel (or the pad bytes) before adding channel c.
template <class T, int KH, int KW, int NV, bool PLAIN>
SYSTOLIC_INLINE void edge(const Out& out, const uint8_t* const (&col)[KH][KW], const int16_t* w, long pix, int c) {
  using V = typename T::V;
  constexpr int W = T::W, CB = 2 * W, P = (KH + 1) / 2;
  V acc[NV];
  load_lanes<T, NV>(out.bias + c, acc);
#pragma GCC unroll 8
  for (int kx = 0; kx < KW; ++kx)
#pragma GCC unroll 4
    for (int pr = 0; pr < P; ++pr) {
      V cv[NV];
      if (2 * pr + 1 < KH) T::template pairs<NV>(col[2 * pr][kx] + c, col[2 * pr + 1][kx] + c, cv);
      else T::template singles<NV>(col[2 * pr][kx] + c, cv);
#pragma GCC unroll 2
      for (int v = 0; v < NV; ++v) acc[v] = T::madd(acc[v], cv[v], w + ((kx * P + pr) * CB + v * W) * 2);
    }
  V sc[NV] = {};
  if constexpr (PLAIN && NV == 2) load_lanes<T, NV>(reinterpret_cast<const int32_t*>(out.scale + c), sc);
  store<T, NV, PLAIN>(out, acc, sc, pix, c);
}

// The source of one output row: tap row ky starts at rb[ky] and steps st[ky] bytes per column
// (0 for a row outside the image, which points at the pad bytes).
template <int KH>
struct Rows {
  const uint8_t* rb[KH];
  long st[KH];
  bool full;
};

// OX outputs from ox on (every tap inside the image horizontally), channels [c0, c1).
template <class T, int KH, int KW, int S, int OX, bool FULL, bool PLAIN>
SYSTOLIC_INLINE void tiles(const Ctx& x, const Out& out, const Rows<KH>& r, int n_img, int oy, int ox, int c0,
                           int c1) {
  constexpr int W = T::W;
  const ConvParams& p = x.qp.conv;
  const long ix0 = long(ox) * S - p.pad_l;
  const long pix = (long(n_img) * p.oh + oy) * p.ow + ox;
  const uint8_t* q[KH];
  for (int ky = 0; ky < KH; ++ky) q[ky] = r.rb[ky] + ix0 * r.st[ky];
  const int steps = (c1 - c0) / (2 * W);
  int c = c0 + steps * 2 * W;
  if (steps) tile<T, KH, KW, S, OX, 2, FULL, PLAIN>(out, x.ss, q, r.st, weights_at<T>(x, c0), x.block, pix, c0, steps);
  if (c + W <= c1) {
    tile<T, KH, KW, S, OX, 1, FULL, PLAIN>(out, x.ss, q, r.st, weights_at<T>(x, c), x.block, pix, c, 1);
    c += W;
  }
  if (c < c1)
    for (int o = 0; o < OX; ++o) pixel<T, 1>(x, n_img, oy, ox + o, c, c1 - c);
}

// Outputs [ox, ox_end) in tiles of OX, then of OX / 2, then one by one.
template <class T, int KH, int KW, int S, int OX, bool FULL, bool PLAIN>
void tile_run(const Ctx& x, const Out& out, const Rows<KH>& r, int n_img, int oy, int ox, int ox_end, int c0,
              int c1) {
  for (; ox + OX <= ox_end; ox += OX) tiles<T, KH, KW, S, OX, FULL, PLAIN>(x, out, r, n_img, oy, ox, c0, c1);
  if constexpr (OX > 1) tile_run<T, KH, KW, S, OX / 2, FULL, PLAIN>(x, out, r, n_img, oy, ox, ox_end, c0, c1);
}

// One output at ox whose window leaves the image horizontally, channels [c0, c1).
template <class T, int KH, int KW, int S, bool PLAIN>
void edges(const Ctx& x, const Out& out, const Rows<KH>& r, int n_img, int oy, int ox, int c0, int c1) {
  constexpr int W = T::W;
  const ConvParams& p = x.qp.conv;
  const uint8_t* col[KH][KW];
  for (int kx = 0; kx < KW; ++kx) {
    const int ix = ox * S - p.pad_l + kx;
    const bool in = unsigned(ix) < unsigned(p.iw);
    for (int ky = 0; ky < KH; ++ky) col[ky][kx] = in ? r.rb[ky] + ix * r.st[ky] : x.a.pad;
  }
  const long pix = (long(n_img) * p.oh + oy) * p.ow + ox;
  int c = c0;
  for (; c + 2 * W <= c1; c += 2 * W) edge<T, KH, KW, 2, PLAIN>(out, col, weights_at<T>(x, c), pix, c);
  if (c + W <= c1) edge<T, KH, KW, 1, PLAIN>(out, col, weights_at<T>(x, c), pix, c), c += W;
  if (c < c1) pixel<T, 1>(x, n_img, oy, ox, c, c1 - c);
}

template <class T, int KH, int KW, int S, bool PLAIN>
void row_fast_ep(const Ctx& x, const Rows<KH>& r, int n_img, int oy, int c0, int c1) {
  const Out out = out_of(x);
  for (int ox = 0; ox < x.ox_lo; ++ox) edges<T, KH, KW, S, PLAIN>(x, out, r, n_img, oy, ox, c0, c1);
  if (r.full) tile_run<T, KH, KW, S, T::OX, true, PLAIN>(x, out, r, n_img, oy, x.ox_lo, x.ox_hi, c0, c1);
  else tile_run<T, KH, KW, S, T::OX, false, PLAIN>(x, out, r, n_img, oy, x.ox_lo, x.ox_hi, c0, c1);
  for (int ox = x.ox_hi; ox < x.qp.conv.ow; ++ox) edges<T, KH, KW, S, PLAIN>(x, out, r, n_img, oy, ox, c0, c1);
}

// One output row, channels [c0, c1), of a KHxKW stride-S undilated kernel.
template <class T, int KH, int KW, int S>
void row_fast(const Ctx& x, int n_img, int oy, int c0, int c1) {
  const ConvParams& p = x.qp.conv;
  Rows<KH> r;
  r.full = true;
  for (int ky = 0; ky < KH; ++ky) {
    const int iy = oy * S - p.pad_t + ky;
    const bool in = unsigned(iy) < unsigned(p.ih);
    r.rb[ky] = in ? x.a.src + (long(n_img) * p.ih + iy) * p.iw * x.ss : x.a.pad;
    r.st[ky] = in ? x.ss : 0;
    r.full &= in;
  }
  if (plain(out_of(x))) row_fast_ep<T, KH, KW, S, true>(x, r, n_img, oy, c0, c1);
  else row_fast_ep<T, KH, KW, S, false>(x, r, n_img, oy, c0, c1);
}

template <class T>
void row_generic(const Ctx& x, int n_img, int oy, int c0, int c1) {
  for (int ox = 0; ox < x.qp.conv.ow; ++ox) pixel_channels<T>(x, n_img, oy, ox, c0, c1);
}

using RowFn = void (*)(const Ctx&, int, int, int, int);

// The fast row for this shape, or the generic one.
template <class T>
RowFn row_fn(const ConvParams& p) {
  if (p.dh == 1 && p.dw == 1 && p.sh == p.sw && p.kh == p.kw) {
    if (p.kh == 1 && p.sh == 1 && p.pad_t == 0 && p.pad_l == 0 && p.oh == p.ih && p.ow == p.iw)
      return row_fast<T, 1, 1, 1>;  // a batch norm with no conv to fold into (DenseNet)
    if (p.kh == 3 && p.sh == 1) return row_fast<T, 3, 3, 1>;
    if (p.kh == 3 && p.sh == 2) return row_fast<T, 3, 3, 2>;
    if (p.kh == 5 && p.sh == 1) return row_fast<T, 5, 5, 1>;
    if (p.kh == 5 && p.sh == 2) return row_fast<T, 5, 5, 2>;
  }
  return row_generic<T>;
}

template <class T>
void run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  constexpr int CB = 2 * T::W;
  const ConvParams& p = qp.conv;
  Ctx x;
  x.qp = qp;
  x.a = a;
  x.ss = p.src_stride ? p.src_stride : p.ic;
  x.ds = p.dst_stride ? p.dst_stride : p.oc;
  x.rs = p.res_stride ? p.res_stride : p.oc;
  x.P = int(ceil_div(p.kh, 2));
  x.block = long(p.kw) * x.P * CB * 2;
  x.ox_lo = std::min(p.ow, (p.pad_l + p.sw - 1) / p.sw);
  const int last = p.iw + p.pad_l - p.dw * (p.kw - 1) - 1;  // largest ox * sw allowed
  x.ox_hi = last < 0 ? x.ox_lo : std::max(x.ox_lo, std::min(p.ow, last / p.sw + 1));
  const RowFn row = row_fn<T>(p);
  // Tasks are output rows; with few rows for the pool, rows split into chunks of whole blocks.
  const long rows = long(p.n) * p.oh, blocks = ceil_div(p.oc, CB);
  const long threads = std::max<long>(1, long(pthreadpool_get_threads_count(pool)));
  const long chunks_want = threads > 1 ? std::clamp<long>(ceil_div(4 * threads, rows), 1, blocks) : 1;
  const long per = ceil_div(blocks, chunks_want), chunks = ceil_div(blocks, per);
  auto task = [&](std::size_t t) {
    const long r = long(t) / chunks, ch = long(t) % chunks;
    const int c0 = int(ch * per * CB), c1 = int(std::min<long>(p.oc, (ch + 1) * per * CB));
    row(x, int(r / p.oh), int(r % p.oh), c0, c1);
    if (!qp.out_f32 && a.rq.lut) {  // the row just written, still in L1: one run where it is whole
      uint8_t* d = static_cast<uint8_t*>(a.dst) + r * p.ow * x.ds + c0;
      if (c1 - c0 == x.ds) a.rq.lut_rows(a.rq.lut, d, 0, d, 0, long(p.ow) * x.ds, 1);
      else a.rq.lut_rows(a.rq.lut, d, x.ds, d, x.ds, c1 - c0, p.ow);
    }
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t(rows * chunks), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::qdw

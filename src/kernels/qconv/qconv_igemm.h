// Int8 implicit-GEMM NHWC conv driver over a dot-product traits struct (QVecAvx2, QVecAvxVnni,
// QVecAvx512Vnni): weight packing into NR-channel panels of KG-element groups, per-tile
// gathering of the pixels' kernel windows (widened to the traits' A type), K chunking with
// int32 partial sums, threading, and the fused requantizing epilogue.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/threadpool.h"
#include "kernels/gemm/block_grid.h"
#include "kernels/gemm/prefetch_rows.h"
#include "kernels/qconv/qconv.h"

#define SYSTOLIC_INLINE inline __attribute__((always_inline))

namespace systolic::kernels::qigemm {

constexpr long ceil_div(long a, long b) { return (a + b - 1) / b; }

// Blocking, GotoBLAS-style. A task gathers an M block of pixels' windows (one K chunk at a
// time) into a stack buffer of at most kBlockBytes that stays in L2, then sweeps its weight
// panels over it: a panel's K chunk (at most kL1WeightBytes) stays in L1 while the block's
// tiles pass. With several chunks, partial sums wait in a stack buffer of kMaxPartialBytes.
constexpr long kBlockBytes = 48 * 1024;
constexpr long kMaxBlockTiles = 16;
constexpr long kL1WeightBytes = 16 * 1024;
constexpr long kMaxPartialBytes = 48 * 1024;
constexpr long kTilesOuterWeightBytes = 32 * 1024;
// Exact int32 accumulation: |x * w| <= 255 * 128 per product.
constexpr long kMaxK = (2147483647L - kQConvMaxBias) / (255L * 128L);

// Packed layout: [group][panel][K/KG][NR][KG] (K rounded up to KG, the window ordered
// (ky, kx, c)), channels past ocg and K past the window zero.
template <class B, int NR, int KG>
std::size_t packed_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  const long icg = p.ic / p.groups, ocg = p.oc / p.groups, K = long(p.kh) * p.kw * icg;
  return std::size_t(p.groups) * ceil_div(ocg, NR) * ceil_div(K, KG) * KG * NR * sizeof(B);
}

template <class B, int NR, int KG>
void pack(const QConvParams& qp, const int8_t* w, void* out_v) {
  const ConvParams& p = qp.conv;
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups, taps = p.kh * p.kw;
  const long K = long(taps) * icg, Kp = ceil_div(K, KG) * KG;
  B* out = static_cast<B*>(out_v);
  for (int g = 0; g < p.groups; ++g)
    for (int pn = 0; pn < ceil_div(ocg, NR); ++pn)
      for (long k0 = 0; k0 < Kp; k0 += KG)
        for (int r = 0; r < NR; ++r)
          for (int e = 0; e < KG; ++e) {
            const long k = k0 + e;
            const int oc = pn * NR + r, t = int(k / icg), c = int(k % icg);
            *out++ = oc < ocg && k < K ? B(w[(long(g * ocg + oc) * icg + c) * taps + t]) : B(0);
          }
}

// Whether a conv's A rows are the source's own pixels (1x1, stride 1, no pad, whole groups of
// KG channels): the tiles read them in place.
template <class A, int KG>
bool reads_in_place(const ConvParams& p) {
  return std::is_same_v<A, uint8_t> && p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.pad_t == 0 &&
         p.pad_l == 0 && p.ih == p.oh && p.iw == p.ow && (p.ic / p.groups) % KG == 0;
}

// The workspace of a conv whose windows are gathered once, M rows of Kp elements, before the
// tiles run (0: gathered per task). That is where block_grid splits the panels first, and each
// task would gather the same windows again: ResNet-50's 7x7 3x3 convs at batch 1 gathered
// 225 KB eight times over.
constexpr long kMaxIm2colBytes = 1L << 20;
// Elements after each gathered row: the rows are gathered in parallel blocks, so a copy_run
// past a row's end must not reach the next row.
constexpr long kIm2colSlack = 64;
template <class A, int MR, int NR, int KG>
std::size_t im2col_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  if (p.groups != 1 || reads_in_place<A, KG>(p)) return 0;
  const long M = long(p.n) * p.oh * p.ow, Kp = ceil_div(long(p.kh) * p.kw * p.ic, KG) * KG;
  if (!panels_first(ceil_div(M, MR), MR, ceil_div(p.oc, NR), NR)) return 0;
  const long bytes = M * (Kp + kIm2colSlack) * long(sizeof(A));
  return bytes <= kMaxIm2colBytes ? std::size_t(bytes) : 0;
}

// The run side below is instantiated in ISA files only; internal linkage keeps copies apart.
namespace {

// Points rq.tail at `table` (256 bytes that outlive the run) where traits T take the four-column
// epilogue and the machine can look the table up (QRequant::tail).
template <class T>
void attach_tail(QRequant& rq, uint8_t* table) {
  if constexpr (requires { T::kPackedRows; })
    if (T::kPackedRows && T::W == 16 && host_cpu().avx512vbmi && qconv_tail_table(rq, table)) rq.tail = table;
}

// Everything a tile needs, computed once per run.
struct Ctx {
  QConvParams qp;
  QConvArgs a;
  long ss, ds, rs;   // pixel strides (elements)
  int icg, ocg, panels_g;
  long K, Kp;        // window length, rounded up to KG
  long kc;           // K chunk (multiple of KG)
  bool direct;       // A rows read in place from the source (u8 A, 1x1, stride 1, no pad)
  long row;          // one kernel row of the window (kw x icg elements)
};

// One kernel row of gather_window: the traits' widen_over where it has one. It may write up to
// 63 elements past the run: a row is written in increasing k with its K padding zeroed last,
// one task writes a block's rows in order, and every buffer keeps 64 elements of slack after
// each block (the small-M workspace after each row: its blocks are gathered in parallel).
template <class T>
SYSTOLIC_INLINE void copy_run(const uint8_t* s, typename T::A* d, int n) {
  if constexpr (requires { T::widen_over(s, d, n); }) T::widen_over(s, d, n);
  else T::widen(s, d, n);
}

// The longest kernel row (kw x channels) gather_window takes.
constexpr int kMaxWindowRow = 1024;

// gather() of whole windows (one K chunk) from a dense source without x dilation: per pixel
// and kernel row, the taps inside the image are one contiguous copy and the rest the input's
// zero points. The 3-channel 7x7 stem spent half its time in the general loop, a few bytes
// per step.
template <class T>
void gather_window(const Ctx& x, long m, int rows, int g, long k1, typename T::A* buf, long ld) {
  using A = typename T::A;
  const ConvParams& p = x.qp.conv;
  const int icg = x.icg, row = p.kw * icg;
  alignas(64) A padrow[kMaxWindowRow];
  for (int t = 0; t < p.kw; ++t) T::widen(x.a.pad + g * icg, padrow + t * icg, icg);
  const long hw = long(p.oh) * p.ow;
  long img = m / hw;
  int oy = int((m - img * hw) / p.ow), ox = int(m - img * hw - long(oy) * p.ow);
  for (int i = 0; i < rows; ++i) {
    const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
    const uint8_t* base = x.a.src + img * p.ih * p.iw * x.ss + g * icg;
    const int lo = std::clamp(-ix0, 0, p.kw), hi = std::clamp(p.iw - ix0, lo, p.kw);  // taps in the image
    A* d = buf + i * ld;
    for (int ky = 0; ky < p.kh; ++ky, d += row) {
      const int iy = iy0 + ky * p.dh;
      if (unsigned(iy) >= unsigned(p.ih) || lo == hi) {
        std::memcpy(d, padrow, sizeof(A) * row);
        continue;
      }
      if (lo > 0) std::memcpy(d, padrow, sizeof(A) * lo * icg);
      copy_run<T>(base + (long(iy) * p.iw + ix0 + lo) * x.ss, d + lo * icg, (hi - lo) * icg);
      if (hi < p.kw) std::memcpy(d + hi * icg, padrow + hi * icg, sizeof(A) * (p.kw - hi) * icg);
    }
    for (long k = x.K; k < k1; ++k) buf[i * ld + k] = 0;
    if (++ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
  }
}

// Gathers window elements [k0, k1) of `rows` pixels from m on (conv group g) into
// buf[i * ld + (k - k0)], converting bytes to A; out-of-image taps read the pad bytes; elements
// past K are 0. Divides once per call: per-row and per-tap divisions cost as much as the
// widening itself on short windows.
template <class T>
void gather(const Ctx& x, long m, int rows, int g, long k0, long k1, typename T::A* buf, long ld) {
  const ConvParams& p = x.qp.conv;
  // A run of taps along x is contiguous in a dense source without x dilation.
  const bool runs = x.ss == x.icg && p.dw == 1;
  if (runs && k0 == 0 && k1 >= x.K && p.kw * x.icg <= kMaxWindowRow)
    return gather_window<T>(x, m, rows, g, k1, buf, ld);
  const long kend = std::min(k1, x.K);
  const uint8_t* pad = x.a.pad + g * x.icg;
  const int t0 = int(k0 / x.icg), c0 = int(k0 - long(t0) * x.icg);
  const int ky0 = t0 / p.kw, kx0 = t0 - ky0 * p.kw;
  const long hw = long(p.oh) * p.ow;
  long img = m / hw;
  int oy = int((m - img * hw) / p.ow), ox = int(m - img * hw - long(oy) * p.ow);
  for (int i = 0; i < rows; ++i) {
    const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
    const uint8_t* base = x.a.src + img * p.ih * p.iw * x.ss + g * x.icg;
    typename T::A* d = buf + i * ld;
    long k = k0;
    int c = c0, ky = ky0, kx = kx0;
    while (k < kend) {
      const int iy = iy0 + ky * p.dh, ix = ix0 + kx * p.dw;
      const bool in = unsigned(iy) < unsigned(p.ih) && unsigned(ix) < unsigned(p.iw);
      int taps = 1;
      if (in && runs && c == 0) taps = std::min(p.kw - kx, p.iw - ix);  // whole taps to the row's or image's end
      const int span = taps * x.icg - c;
      const int n = int(std::min<long>(span, kend - k));
      const uint8_t* s = in ? base + (long(iy) * p.iw + ix) * x.ss + c : pad + c;
      T::widen(s, d + (k - k0), n);
      k += n;
      if (n < span) break;  // the chunk ends inside a tap
      c = 0;
      kx += taps;
      if (kx >= p.kw) kx = 0, ++ky;
    }
    for (; k < k1; ++k) d[k - k0] = 0;
    if (++ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
  }
}

// The row-direct chunk [k0, k1) (inside one kernel row) of `rows` pixels from m: rp[i] points
// at pixel i's run in the source where its taps are all inside the image, else at its chunk
// gathered (with the pad bytes) into buf[i * x.kc].
template <class T>
void point_rows(const Ctx& x, long m, int rows, long k0, long k1, typename T::A* buf, const typename T::A** rp) {
  const ConvParams& p = x.qp.conv;
  const long ky = k0 / x.row, koff = k0 - ky * x.row;
  const long hw = long(p.oh) * p.ow;
  long img = m / hw;
  int oy = int((m - img * hw) / p.ow), ox = int(m - img * hw - long(oy) * p.ow);
  for (int i = 0; i < rows; ++i) {
    const long iy = long(oy) * p.sh - p.pad_t + ky * p.dh, ix0 = long(ox) * p.sw - p.pad_l;
    if (iy >= 0 && iy < p.ih && ix0 >= 0 && ix0 + p.kw <= p.iw) {
      if constexpr (std::is_same_v<typename T::A, uint8_t>) rp[i] = x.a.src + ((img * p.ih + iy) * p.iw + ix0) * x.ss + koff;
    } else {
      gather<T>(x, m + i, 1, 0, k0, k1, buf + i * x.kc, x.kc);
      rp[i] = buf + i * x.kc;
    }
    if (++ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
  }
}

// acc[MR][NV] += sum over KG-groups kg < ng of rows a + i * ld x the panel w. The rows are
// addressed from a base per five rows with ld, 2 ld, 3 ld and 4 ld as scaled indexes: against
// a + i * ld + k * KG per row, 3 interleaved single-thread runs of systolic_kernel_bench gave
// the 6x16 AVX2 tile 182 vs 155 GOP/s and the VNNI tiles 1-8% more.
template <class T, int MR, int NV>
SYSTOLIC_INLINE void dot_tile(long ng, const typename T::A* a, long ld, const typename T::B* w,
                              typename T::V (&acc)[MR][NV]) {
  using V = typename T::V;
  using A = typename T::A;
  constexpr int W = T::W, KG = T::KG;
  constexpr int NB = (MR + 4) / 5;
  const A* base[NB];
#pragma GCC unroll 4
  for (int b = 0; b < NB; ++b) base[b] = a + b * 5 * ld;
  const long ld3 = 3 * ld;
  for (long k = 0; k < ng; ++k) {
    V b[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) b[j] = T::loadb(w + j * W * KG);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const A* r = base[i / 5];
      switch (i % 5) {
        case 1: r += ld; break;
        case 2: r += 2 * ld; break;
        case 3: r += ld3; break;
        case 4: r += 4 * ld; break;
        default: break;
      }
      const V av = T::bcast(r);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = T::dot(acc[i][j], av, b[j]);
    }
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) base[b] += KG;
    w += NV * W * KG;
  }
}

// dot_tile() over MR rows at their own addresses rp[i] (the row-direct chunks of run()).
template <class T, int MR, int NV>
SYSTOLIC_INLINE void dot_tile_p(long ng, const typename T::A* const* rp, const typename T::B* w,
                                typename T::V (&acc)[MR][NV]) {
  using V = typename T::V;
  using A = typename T::A;
  constexpr int W = T::W, KG = T::KG;
  const A* r[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) r[i] = rp[i];
  for (long k = 0; k < ng; ++k) {
    V b[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) b[j] = T::loadb(w + j * W * KG);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V av = T::bcast(r[i] + k * KG);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = T::dot(acc[i][j], av, b[j]);
    }
    w += NV * W * KG;
  }
}

// Where one tile goes: pixel m, channel ch (in the whole oc), `nvalid` valid columns.
struct TileOut {
  long m;
  long ch;
  int nvalid;
};

// packed_rows(): whether a tile takes the traits' requant_rows_packed (kPackedNV whole columns
// of u8 output: 64 channels on zmm, 16 on ymm). store_sums' bias_in: the sums hold the bias
// already (tile() starts from it where the packed form runs).
template <class T, int NV>
constexpr bool has_packed_rows() {
  if constexpr (requires { T::kPackedRows; }) return T::kPackedRows && NV == T::kPackedNV;
  return false;
}
template <class T, int NV>
bool packed_rows(const Ctx& x, const TileOut& o) {
  return has_packed_rows<T, NV>() && !x.qp.out_f32 && o.nvalid == NV * T::W;
}

// The epilogue of `rows` pixels whose sums (bias not yet added) wait in c[i * ldc + column]:
// bias, requantization (or dequantization) and the store, W lanes at a time; a ragged last
// vector goes through a stack copy and the scalar form of the same arithmetic (or, with
// kMaskedTail, requant_rows under a lane mask). The tile loop parks its accumulators in memory
// first: with the epilogue in the same function, GCC kept part of the 24-register 6x64 tile on
// the stack inside the K loop (a 1x1 1024->256 conv at 704 instead of 910 GOP/s per thread).
template <class T, int NV>
__attribute__((noinline)) void store_sums(const Ctx& x, const int32_t* c, long ldc, int rows, const TileOut& o,
                                          bool bias_in = false) {
  constexpr int W = T::W;
  const QConvArgs& a = x.a;
  const bool f32 = x.qp.out_f32;
  if constexpr (has_packed_rows<T, NV>()) {
    if (packed_rows<T, NV>(x, o)) {
      const uint8_t* r = a.residual ? static_cast<const uint8_t*>(a.residual) + o.m * x.rs + o.ch : nullptr;
      T::requant_rows_packed(c, ldc, rows, bias_in ? nullptr : a.bias + o.ch, a.scale + o.ch, r, x.rs, a.rq,
                        static_cast<uint8_t*>(a.dst) + o.m * x.ds + o.ch, x.ds);
      return;
    }
  }
  for (int j = 0; j < NV; ++j) {
    const int n = std::min(W, o.nvalid - j * W);
    if (n <= 0) break;
    const long ch = o.ch + j * W;
    const int32_t* bias = a.bias + ch;
    const float* scale = a.scale + ch;
    const int32_t* cj = c + j * W;
    if (!f32 && (n == W || T::kMaskedTail)) {  // the column with its constants in registers
      const uint8_t* r = a.residual ? static_cast<const uint8_t*>(a.residual) + o.m * x.rs + ch : nullptr;
      T::requant_rows(cj, ldc, rows, n, bias, scale, r, x.rs, a.rq, static_cast<uint8_t*>(a.dst) + o.m * x.ds + ch,
                      x.ds);
      continue;
    }
    for (int i = 0; i < rows; ++i) {
      const long pix = o.m + i;
      if (n == W) {  // float output
        const float* r = a.residual ? static_cast<const float*>(a.residual) + pix * x.rs + ch : nullptr;
        T::dequant(T::add32(T::load32(cj + i * ldc), T::load32(bias)), scale, r, a.ep,
                   static_cast<float*>(a.dst) + pix * x.ds + ch);
        continue;
      }
      alignas(64) int32_t tmp[W];
      for (int e = 0; e < n; ++e) tmp[e] = cj[i * ldc + e] + bias[e];
      if (f32) {
        const float* r = a.residual ? static_cast<const float*>(a.residual) + pix * x.rs + ch : nullptr;
        qconv_dequant_n(tmp, n, scale, r, a.ep, static_cast<float*>(a.dst) + pix * x.ds + ch);
      } else {
        const uint8_t* r = a.residual ? static_cast<const uint8_t*>(a.residual) + pix * x.rs + ch : nullptr;
        qconv_requant_n(tmp, n, scale, r, a.rq, static_cast<uint8_t*>(a.dst) + pix * x.ds + ch);
      }
    }
  }
}

// The fused table (QRequant::lut) over what a task wrote: `rows` pixels from m0, channels
// [c0, c1), in L1 or L2 still; one run where those are whole rows. Per tile, the lookups of
// 32-byte rows just stored as 16-byte pieces cost EfficientNet-B0 more than the separate pass.
inline void lut_block(const Ctx& x, long m0, long rows, long c0, long c1) {
  const QRequant& rq = x.a.rq;
  if (x.qp.out_f32 || !rq.lut || rows <= 0 || c1 <= c0) return;
  uint8_t* d = static_cast<uint8_t*>(x.a.dst) + m0 * x.ds + c0;
  if (c1 - c0 == x.ds) rq.lut_rows(rq.lut, d, 0, d, 0, rows * x.ds, 1);
  else rq.lut_rows(rq.lut, d, x.ds, d, x.ds, c1 - c0, rows);
}

// One tile (R rows) against one panel over one K chunk; `part` holds the partial sums between
// chunks (first: start from zero; last: run the epilogue instead of saving).
template <class T, int R, int NV>
void tile(const Ctx& x, const typename T::A* rows, long ld, const typename T::A* const* rp, long ng,
          const typename T::B* w, int32_t* part, bool first, bool last, const TileOut& o) {
  constexpr int W = T::W;
  typename T::V acc[R][NV];
  // Where the packed epilogue runs, the sums start from the bias: two ops per vector fewer there.
  const bool bias_in = packed_rows<T, NV>(x, o);
  typename T::V init[NV];
#pragma GCC unroll 8
  for (int j = 0; j < NV; ++j) init[j] = bias_in ? T::load32(x.a.bias + o.ch + j * W) : T::zero();
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = first ? init[j] : T::load32(part + (i * NV + j) * W);
  if (rp) dot_tile_p<T, R, NV>(ng, rp, w, acc);
  else dot_tile<T, R, NV>(ng, rows, ld, w, acc);
  alignas(64) int32_t sums[R * NV * W];
  int32_t* out = last ? sums : part;
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) T::store32(out + (i * NV + j) * W, acc[i][j]);
  if (last) store_sums<T, NV>(x, sums, NV * W, R, o, bias_in);
}

// Picks the R = rows instantiation (R = 1..MR) at run time. The rows are a + i * ld, or rp[i]
// where rp is given.
template <class T, int R, int NV>
void tile_rows(int rows, const Ctx& x, const typename T::A* a, long ld, const typename T::A* const* rp, long ng,
               const typename T::B* w, int32_t* part, bool first, bool last, const TileOut& o) {
  if constexpr (R > 1)
    if (rows < R) return tile_rows<T, R - 1, NV>(rows, x, a, ld, rp, ng, w, part, first, last, o);
  tile<T, R, NV>(x, a, ld, rp, ng, w, part, first, last, o);
}

// Whether run() reads each window's kernel rows in place (row-direct): a dense u8 source
// without x dilation holds a pixel's kw taps of one kernel row as kw x icg contiguous bytes, so
// a K chunk inside one kernel row is a run of the source, and only windows that cross the
// image's edge need gathering. The chunk `kc` divides the kernel row; 0: not row-direct.
// ResNet-50's 3x3 convs with 64 channels (one panel) spent a fifth of their time gathering
// windows that only one panel used.
template <class A, int NR, int KG>
long row_direct_kc(const ConvParams& p, long ss, long weight_bytes) {
  const long icg = p.ic / p.groups, row = long(p.kw) * icg;
  if (!std::is_same_v<A, uint8_t> || p.groups != 1 || ss != icg || p.dw != 1 || reads_in_place<A, KG>(p) ||
      row % KG != 0)
    return 0;
  const long kc_max = std::max<long>(KG, weight_bytes / (NR * long(sizeof(A))) / KG * KG);
  const long per_row = ceil_div(row, kc_max);
  return row % per_row == 0 && (row / per_row) % KG == 0 ? row / per_row : 0;
}

template <class T, int MR, int NV>
void run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  using A = typename T::A;
  using B = typename T::B;
  constexpr int NR = NV * T::W, KG = T::KG;
  const ConvParams& p = qp.conv;
  Ctx x;
  x.qp = qp;
  x.a = a;
  alignas(64) uint8_t tail[256];
  attach_tail<T>(x.a.rq, tail);
  x.ss = p.src_stride ? p.src_stride : p.ic;
  x.ds = p.dst_stride ? p.dst_stride : p.oc;
  x.rs = p.res_stride ? p.res_stride : p.oc;
  x.icg = p.ic / p.groups;
  x.ocg = p.oc / p.groups;
  x.panels_g = int(ceil_div(x.ocg, NR));
  x.K = long(p.kh) * p.kw * x.icg;
  x.Kp = ceil_div(x.K, KG) * KG;
  x.row = long(p.kw) * x.icg;
  const long M = long(p.n) * p.oh * p.ow;
  const long tiles = ceil_div(M, MR);
  A* const col = im2col_bytes<A, MR, NR, KG>(qp) ? static_cast<A*>(a.workspace) : nullptr;
  const long l1_weights =
      T::W == 16 ? weight_chunk_bytes(kL1WeightBytes, p.kh * p.kw > 1, a.residual != nullptr) : kL1WeightBytes;
  const long kc_rows = col ? 0 : row_direct_kc<A, NR, KG>(p, x.ss, l1_weights);
  const BlockGrid bg = block_grid(x.Kp, KG, long(sizeof(B)), MR, NR, tiles, x.panels_g, p.groups,
                                  std::max<long>(1, long(pthreadpool_get_threads_count(pool))), MR * NR * 4,
                                  {kBlockBytes, kMaxBlockTiles, kc_rows ? kc_rows * NR * long(sizeof(B)) : l1_weights,
                                   kMaxPartialBytes});
  const bool row_direct = kc_rows > 0 && bg.kc == kc_rows;
  static_assert(MR <= 8, "row pointers of a block: kMaxBlockTiles x 8");
  static_assert(sizeof(A) == sizeof(B), "the block and the weight chunk count the same bytes per K element");
  x.kc = bg.kc;
  x.direct = reads_in_place<A, KG>(p);
  // Small M: every window gathered once into the workspace, in blocks of rows across the pool.
  if (col) {
    constexpr long kRows = 16;
    auto fill = [&](std::size_t b) {
      const long m = long(b) * kRows;
      gather<T>(x, m, int(std::min(kRows, M - m)), 0, 0, x.Kp, col + m * (x.Kp + kIm2colSlack), x.Kp + kIm2colSlack);
    };
    pthreadpool_parallelize_1d(pool, fill, std::size_t(ceil_div(M, kRows)), kPoolFlags);
  }
  const long chunks = bg.chunks, bt = bg.bt, mblocks = bg.mblocks, pb = bg.pb, pgroups = bg.pgroups;
  const long esz = qp.out_f32 ? 4 : 1;
  // A task whose panels' weights fit L1 at once (one K chunk) runs each tile over all its panels
  // before the next: the epilogue then reads and writes each pixel's channels in one stretch,
  // a sequential stream, where panel by panel it came back for 64 bytes of every row.
  // Both measured on the zmm traits only: capped to AVX2 and AVX-VNNI, ResNet-50 ran no faster.
  constexpr bool zmm = T::W == 16;
  const bool tiles_outer = zmm && chunks == 1 && pb * x.Kp * NR * long(sizeof(B)) <= kTilesOuterWeightBytes;
  auto task = [&](std::size_t mb, std::size_t gp) {
    const int g = int(gp / pgroups);
    const long p0 = long(gp % pgroups) * pb, p1 = std::min<long>(x.panels_g, p0 + pb);
    const long t0 = long(mb) * bt, t1 = std::min(tiles, t0 + bt);
    if (p0 >= p1 || t0 >= t1) return;
    const long m0 = t0 * MR, rows = std::min(M, t1 * MR) - m0;
    alignas(64) A buf[kBlockBytes / sizeof(A) + 64];
    alignas(64) int32_t part[kMaxPartialBytes / 4];
    const A* rptr[kMaxBlockTiles * 8];
    const B* wg = static_cast<const B*>(a.weights) + long(g) * x.panels_g * x.Kp * NR;
    for (long c = 0; c < chunks; ++c) {
      const long k0 = c * x.kc, k1 = std::min(x.Kp, k0 + x.kc);
      const A* base;
      long ld;
      if (x.direct) {
        base = reinterpret_cast<const A*>(a.src + m0 * x.ss + long(g) * x.icg + k0);
        ld = x.ss;
      } else if (col) {
        ld = x.Kp + kIm2colSlack;
        base = col + m0 * ld + k0;
      } else if (row_direct) {
        point_rows<T>(x, m0, int(rows), k0, k1, buf, rptr);
        base = buf;
        ld = x.kc;
      } else {
        gather<T>(x, m0, int(rows), g, k0, k1, buf, x.kc);
        base = buf;
        ld = x.kc;
      }
      const long ch_end = long(g) * x.ocg + std::min<long>(p1 * NR, x.ocg);
      const bool last = c + 1 == chunks;
      auto one = [&](long pn, long t) {
        const long m = t * MR;
        const int r = int(std::min<long>(MR, M - m));
        const long ch = long(g) * x.ocg + pn * NR;
        if (zmm && pn == p0 && last) {  // the epilogue's rows, ahead (gemm/prefetch_rows.h)
          long lo, hi;
          prefetch_ahead(m, r, t == t0, M, &lo, &hi);
          prefetch_rows(a.residual, x.rs * esz, a.dst, x.ds * esz, lo, hi, ch * esz, ch_end * esz);
        }
        const TileOut o{m, ch, int(std::min<long>(NR, x.ocg - pn * NR))};
        tile_rows<T, MR, NV>(r, x, base + (m - m0) * ld, ld, row_direct ? rptr + (m - m0) : nullptr, (k1 - k0) / KG,
                             wg + pn * x.Kp * NR + k0 * NR,
                             chunks > 1 ? part + ((pn - p0) * bt + (t - t0)) * MR * NR : part, c == 0, last, o);
      };
      if (tiles_outer) {
        for (long t = t0; t < t1; ++t)
          for (long pn = p0; pn < p1; ++pn) one(pn, t);
      } else {
        for (long pn = p0; pn < p1; ++pn)
          for (long t = t0; t < t1; ++t) one(pn, t);
      }
    }
    lut_block(x, m0, rows, long(g) * x.ocg + p0 * NR, long(g) * x.ocg + std::min<long>(p1 * NR, x.ocg));
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(mblocks), std::size_t(p.groups * pgroups), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::qigemm

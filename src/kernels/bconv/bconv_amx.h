// bf16 implicit-GEMM NHWC conv driver for AMX-shaped tile units over a traits struct T: the
// fp32 vector ops of the igemm epilogue (VecAvx512 / VecAvx2), to_bf16 (bconv_igemm.h's gather),
// and tile operations
//   config()                    16x64-byte tiles 0..7 (palette 1)
//   tzero<t>(), tload<t>(p, ld), tstore<t>(p, ld)
//   dot<c, a, b>()              tile c (16x16 fp32) += tile a (16 rows x 32 bf16) . tile b
//                               (16 K-pairs x 16 columns x 2 bf16): tdpbf16ps
//   release()
// A tile step is 32 pixels x 32 channels x 32 K elements: two A tiles (tmm4, tmm5), two B tiles
// (tmm6, tmm7), four accumulators (tmm0..3). Weights use the vdpbf16ps kernels' K2 layout with
// 32-channel panels ([K/2][32][2] bf16: a B tile is 16 rows of it with a 128-byte stride), one
// packing for both. K runs in 32-element steps: past the window the gathered A values are zero,
// so B rows read beyond a panel's K (the next panel, or the slack packed_floats adds) add 0.
#pragma once
#include <immintrin.h>

#include <cstring>

#include "kernels/amx_block.h"
#include "kernels/amx_shifted.h"
#include "kernels/bf16_lanes.h"
#include "kernels/bconv/bconv_igemm.h"
#include "kernels/gemm/prefetch_rows.h"

namespace systolic::kernels::bamx {

constexpr int MR = 32, NR = 32, KT = 32;  // the block of amx_block.h (K in bf16 elements)
// A panel's K chunk: the vector drivers' L1 share, or the whole window where it fits
// kWholeWeightBytes (1x1 convs up to 512 channels; a 3x3 conv of 64 channels ran slower whole,
// one tile per gathered block). Tiles-outer order (below) up to twice the vector drivers' weights.
constexpr long kWholeWeightBytes = 32 * 1024, kTilesOuterWeightBytes = 64 * 1024;

// Stride-1 convs over whole 32-channel K steps and image stems run on shifted tiles
// (kernels/amx_shifted.h): every tap's A tiles read in place from a padded bf16 copy of the
// source, no window gather.
inline bool shifted(const ConvParams& p, amx::Shifted* s = nullptr) { return amx::shifted(p, 2, s); }
inline std::size_t workspace_bytes(const ConvParams& p) { return amx::shifted_workspace_bytes(p, 2); }

// The shared K2 layout (in 4-byte words), plus slack for the last panel's final K step; a
// space-to-depth stem's for its stride-1 form.
inline std::size_t packed_floats(const ConvParams& p) {
  amx::Shifted s;
  const ConvParams q = shifted(p, &s) && s.s2d ? amx::s2d_params(p, s) : p;
  return bigemm::packed_floats<NR>(q) + KT / 2 * NR;
}

inline void pack(const ConvParams& p, const float* w, float* packed) {
  amx::Shifted s;
  if (!shifted(p, &s) || !s.s2d) return bigemm::pack<NR>(p, w, packed);
  bigemm::pack<NR>(amx::s2d_params(p, s), amx::s2d_weights(p, s, w).data(), packed);
}

namespace {

// The epilogue where the residual or the output is stored as bf16 (ConvParams::bf16_io): the
// same steps as store_tile's, the output rounded to bf16 whatever the epilogue says (a bf16
// tensor holds nothing else).
template <class T, int NV>
void epilogue_bf16(const bigemm::Ctx& x, const float* c, long ldc, long m, int rows, long ch, int nvalid,
                   bool bias_in) {
  using V = typename T::V;
  constexpr int W = T::W;
  const ConvArgs& a = x.a;
  const Epilogue& ep = a.epilogue;
  const bool res16 = x.p.bf16_io & kBf16Res, dst16 = x.p.bf16_io & kBf16Dst;
  const bool vec_act = act_vectorized(ep.act);
  const V va = T::set1(ep.a), vb = T::set1(ep.b);
  for (int i = 0; i < rows; ++i) {
    const long pix = m + i;
    alignas(64) float row[NV * W];  // the row, where the activation is applied after it
    for (int j = 0; j < NV; ++j) {
      const int n = std::min(W, nvalid - j * W);
      if (n <= 0) break;
      V v = T::load(c + i * ldc + j * W);
      const long col = ch + j * W;
      if (!bias_in && a.bias) v = T::add(v, n >= W ? T::load(a.bias + col) : T::load_n(a.bias + col, n));
      if (a.residual) {
        const long r = pix * x.rs + col;
        v = T::add(v, res16      ? load_bf16<T>(reinterpret_cast<const uint16_t*>(a.residual) + r, n)
                      : n >= W ? T::load(a.residual + r)
                               : T::load_n(a.residual + r, n));
      }
      if (!vec_act) {
        T::store(row + j * W, v);
        continue;
      }
      v = act_vec<T>(v, ep.act, va, vb);
      const long d = pix * x.ds + col;
      if (dst16) store_bf16<T>(reinterpret_cast<uint16_t*>(a.dst) + d, T::round_bf16(v), n);
      else if (n >= W) T::store(a.dst + d, ep.round_bf16 ? T::round_bf16(v) : v);
      else T::store_n(a.dst + d, ep.round_bf16 ? T::round_bf16(v) : v, n);
    }
    if (vec_act) continue;
    apply_act_n(ep, row, nvalid);
    const long d = pix * x.ds + ch;
    if (dst16)
      for (int e = 0; e < nvalid; ++e) reinterpret_cast<uint16_t*>(a.dst)[d + e] = bf16_bits(row[e]);
    else std::memcpy(a.dst + d, row, std::size_t(nvalid) * 4);
  }
}

// The epilogue of `rows` pixels from m whose sums wait in c[i * ldc + column] (the bias in them
// already where bias_in): NV vectors a row, whole ones unless nvalid says fewer channels.
template <class T, int NV>
void epilogue(const bigemm::Ctx& x, const float* c, long ldc, long m, int rows, long ch, int nvalid, bool bias_in) {
  if (x.p.bf16_io & (kBf16Dst | kBf16Res)) return epilogue_bf16<T, NV>(x, c, ldc, m, rows, ch, nvalid, bias_in);
  const ConvArgs& a = x.a;
  for (int i = 0; i < rows; ++i) {
    typename T::V acc[1][NV];
    for (int j = 0; j < NV; ++j) acc[0][j] = T::load(c + i * ldc + j * T::W);
    const long pix = m + i;
    const TileOut o{a.dst + pix * x.ds + ch, x.ds, a.residual ? a.residual + pix * x.rs + ch : nullptr, x.rs,
                    bias_in || !a.bias ? nullptr : a.bias + ch, nvalid, a.epilogue};
    store_tile<T, 1, NV>(acc, o);
  }
}

// shifted()'s run: tiles of MR grid outputs, each over every tap in place, panels in pairs,
// the whole window in one K sweep (the accumulators stay in the tiles), then the epilogue of
// the tile's rows that are outputs, a run of consecutive pixels at a time.
template <class T>
void run_shifted(bigemm::Ctx& x, const amx::Shifted& s, pthreadpool_t pool) {
  constexpr int NV = NR / T::W;
  const ConvParams& p = x.p;
  const ConvArgs& a = x.a;
  uint16_t* img = reinterpret_cast<uint16_t*>(a.workspace);
  const uint16_t* zeros = nullptr;  // the bf16 image pads with zeros
  if (p.bf16_io & kBf16Src) {
    const auto* src16 = reinterpret_cast<const uint16_t*>(a.src);
    amx::fill_padded(p, s, x.ss, zeros, img, pool,
                     [&](long at, uint16_t* d, int n) { bigemm::copy16<T>(src16 + at, d, n); });
  } else {
    amx::fill_padded(p, s, x.ss, zeros, img, pool, [&](long at, uint16_t* d, int n) { T::to_bf16(a.src + at, d, n); });
  }
  amx::shifted_tasks<T>(
      p, s, x.panels_g, x.ocg, reinterpret_cast<const uint8_t*>(img), reinterpret_cast<const uint8_t*>(a.weights),
      a.bias,
      [&](long, int nvalid, long npanels) { return a.bias && nvalid == npanels * NR; },  // see run(): whole rows
      [&](const int32_t* sums, const amx::GridRun* runs, int nruns, long ch0, int nvalid, bool pair, bool bias_in) {
        const float* c = reinterpret_cast<const float*>(sums);
        for (int k = 0; k < nruns; ++k) {
          const float* cr = c + runs[k].r * 2 * NR;
          if (pair) epilogue<T, 2 * NV>(x, cr, 2 * NR, runs[k].m, runs[k].len, ch0, nvalid, bias_in);
          else epilogue<T, NV>(x, cr, 2 * NR, runs[k].m, runs[k].len, ch0, nvalid, bias_in);
        }
      },
      [](const amx::GridRun*, int, long, long) {}, pool);
}

template <class T>
void run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  using bigemm::ceil_div;
  constexpr int NV = NR / T::W;
  bigemm::Ctx x;
  x.p = p;
  x.a = a;
  x.ss = p.src_stride ? p.src_stride : p.ic;
  x.ds = p.dst_stride ? p.dst_stride : p.oc;
  x.rs = p.res_stride ? p.res_stride : p.oc;
  x.icg = p.ic / p.groups;
  x.ocg = p.oc / p.groups;
  x.panels_g = int(ceil_div(x.ocg, NR));
  x.K = long(p.kh) * p.kw * x.icg;
  x.Kp = ceil_div(x.K, 2) * 2;             // the packing's K (panel length)
  amx::Shifted sh;
  if (shifted(p, &sh)) return run_shifted<T>(x, sh, pool);
  const long Kt = ceil_div(x.K, KT) * KT;  // the tile loop's K
  const long M = long(p.n) * p.oh * p.ow;
  const long tiles = ceil_div(M, MR);
  constexpr long kTileFloats = MR * NR;
  const long weight_bytes = Kt * NR * 2 <= kWholeWeightBytes ? kWholeWeightBytes : bigemm::kL1WeightBytes;
  const BlockGrid bg = block_grid(Kt, KT, 2, MR, NR, tiles, x.panels_g, p.groups,
                                  std::max<long>(1, long(pthreadpool_get_threads_count(pool))), kTileFloats * 4,
                                  {bigemm::kBlockBytes, bigemm::kMaxBlockTiles, weight_bytes, bigemm::kMaxPartialBytes});
  x.kc = bg.kc;
  const long chunks = bg.chunks, bt = bg.bt, mblocks = bg.mblocks, pb = bg.pb, pgroups = bg.pgroups;
  // As the int8 tile driver (qconv_amx.h): where one K chunk of the task's panels fits L1, each
  // tile runs over all of them before the next, the first panel prefetching the epilogue's rows
  // ahead, and panels go in pairs, so each pixel's output is written 64 channels at a time.
  const bool tiles_outer = chunks == 1 && pb * Kt * NR * 2 <= kTilesOuterWeightBytes;
  const long step = tiles_outer ? 2 : 1;  // panels per pair() (see the int8 driver)
  // A 1x1 stride-1 conv over a bf16-stored source of whole 32-element K steps reads its A
  // tiles from the source in place (as the int8 driver does its bytes).
  const bool in_place = (p.bf16_io & kBf16Src) && p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.pad_t == 0 &&
                        p.pad_l == 0 && p.ih == p.oh && p.iw == p.ow && x.icg % KT == 0;
  auto task = [&](std::size_t mb, std::size_t gp) {
    const int g = int(gp / pgroups);
    const long p0 = long(gp % pgroups) * pb, p1 = std::min<long>(x.panels_g, p0 + pb);
    const long t0 = long(mb) * bt, t1 = std::min(tiles, t0 + bt);
    if (p0 >= p1 || t0 >= t1) return;
    const long m0 = t0 * MR, rows = std::min(M, t1 * MR) - m0;
    alignas(64) uint16_t buf[bigemm::kBlockBytes / 2 + 64];
    alignas(64) float part[bigemm::kMaxPartialBytes / 4];
    alignas(64) float c[2 * kTileFloats];  // a pair of panels' sums, 64 channels a row
    const uint16_t* wg = reinterpret_cast<const uint16_t*>(a.weights) + long(g) * x.panels_g * x.Kp * NR;
    const long ch_end = long(g) * x.ocg + std::min<long>(p1 * NR, x.ocg);
    const long rsz = p.bf16_io & kBf16Res ? 2 : 4, dsz = p.bf16_io & kBf16Dst ? 2 : 4;  // bytes an element
    // A block with a ragged last tile is gathered: tile rows past M must not be read.
    const bool direct = in_place && rows == (t1 - t0) * MR;
    T::config();
    for (long ck = 0; ck < chunks; ++ck) {
      const long k0 = ck * x.kc, k1 = std::min(Kt, k0 + x.kc);
      const bool last = ck + 1 == chunks;
      const uint16_t* ab = buf;
      long ld = x.kc;  // elements
      if (direct) ab = reinterpret_cast<const uint16_t*>(a.src) + m0 * x.ss + long(g) * x.icg + k0, ld = x.ss;
      else bigemm::gather<T>(x, m0, int(rows), g, k0, k1, buf, x.kc);
      // Panels pn0 and pn0 + 1 (where there is one) of tile t, side by side in c; tiles-outer,
      // the accumulators start from the bias (a stride-0 tile load repeats its row; elsewhere that
      // measured slower than the epilogue's add).
      auto pair = [&](long pn0, long t) {
        const long pn1 = std::min(pn0 + step, p1);
        const long ch0 = long(g) * x.ocg + pn0 * NR;
        const long m = t * MR;
        const int r = int(std::min<long>(MR, M - m));
        if (tiles_outer && pn0 == p0) {
          long lo, hi;
          prefetch_ahead(m, r, t == t0, M, &lo, &hi);
          if (rsz == dsz) {
            prefetch_rows(a.residual, x.rs * rsz, a.dst, x.ds * dsz, lo, hi, ch0 * dsz, ch_end * dsz);
          } else {  // bf16 on one side, float on the other: their byte ranges differ
            prefetch_rows(nullptr, 0, a.dst, x.ds * dsz, lo, hi, ch0 * dsz, ch_end * dsz);
            prefetch_rows(a.residual, x.rs * rsz, nullptr, 0, lo, hi, ch0 * rsz, ch_end * rsz);
          }
        }
        // A ragged pair (the group's last channels) starts from zero and takes the bias in the
        // epilogue: the tile load reads whole 32-channel rows, past the end of the bias.
        const int nvalid = int(std::min<long>(pn1 * NR, x.ocg) - pn0 * NR);
        const bool bias_in = a.bias && tiles_outer && nvalid == (pn1 - pn0) * NR;
        for (long pn = pn0; pn < pn1; ++pn) {
          const uint16_t* w = wg + pn * x.Kp * NR + k0 * NR;
          float* pt = chunks > 1 ? part + ((pn - p0) * bt + (t - t0)) * kTileFloats : part;
          if (ck > 0) amx::start<T>(pt, NR * 4);
          else amx::start<T>(bias_in ? a.bias + ch0 + (pn - pn0) * NR : nullptr, 0);
          amx::sweep<T>(reinterpret_cast<const uint8_t*>(ab + (t - t0) * MR * ld), ld * 2,
                        reinterpret_cast<const uint8_t*>(w), (k1 - k0) * 2);
          if (last) amx::store<T>(c + (pn - pn0) * NR, 2 * NR * 4);
          else amx::store<T>(pt, NR * 4);
        }
        if (!last) return;
        if (pn1 - pn0 == 2) epilogue<T, 2 * NV>(x, c, 2 * NR, m, r, ch0, nvalid, bias_in);
        else epilogue<T, NV>(x, c, 2 * NR, m, r, ch0, nvalid, bias_in);
      };
      if (tiles_outer) {
        for (long t = t0; t < t1; ++t)
          for (long pn = p0; pn < p1; pn += step) pair(pn, t);
      } else {
        for (long pn = p0; pn < p1; pn += step)
          for (long t = t0; t < t1; ++t) pair(pn, t);
      }
    }
    T::release();
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(mblocks), std::size_t(p.groups * pgroups), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::bamx

// Int8 implicit-GEMM NHWC conv driver for AMX-shaped tile units over a traits struct T: the
// epilogue traits (V, W, load32, requant, ...: qvec_epilogue_*.h) plus tile operations
//   config()                    16x64-byte tiles 0..7 (palette 1)
//   tzero<t>(), tload<t>(p, ld), tstore<t>(p, ld)
//   dot<c, a, b>()              tile c (16x16 int32) += tile a (16 rows x 64 u8) . tile b
//                               (16 K-quads x 16 columns x 4 s8): tdpbusd
//   release()
// A tile step is 32 pixels x 32 channels x 64 K bytes: two A tiles (tmm4, tmm5), two B tiles
// (tmm6, tmm7), four accumulators (tmm0..3). Weights use the VNNI kernels' K4 layout with
// 32-channel panels ([K/4][32][4] bytes per panel: a B tile is 16 rows of it with a 128-byte
// stride), so AMX and AVX512-VNNI share one packing. K runs in 64-byte steps: past the window
// the gathered A bytes are zero, so B rows read beyond a panel's K (the next panel, or the slack
// packed_bytes adds after the last) contribute nothing.
#pragma once
#include "kernels/amx_block.h"
#include "kernels/amx_shifted.h"
#include "kernels/qconv/qconv_igemm.h"

namespace systolic::kernels::qamx {

constexpr int MR = 32, NR = 32, KT = 64;  // the block of amx_block.h
// A panel's K chunk: the vector drivers' L1 share, or the whole window where it fits
// kWholeWeightBytes (a 3x3 conv of 64 channels in one chunk, gathered in kernel rows, not tap by
// tap, and run tiles-outer). Longer windows ran slower in the larger chunks (3x3 512->512 at 7x7).
constexpr long kWholeWeightBytes = 36 * 1024;

// Stride-1 convs over whole 64-channel K steps and image stems run on shifted tiles
// (kernels/amx_shifted.h): every tap's A tiles read in place from a copy of the source padded
// with its zero points, no window gather.
inline bool shifted(const ConvParams& p, amx::Shifted* s = nullptr) { return amx::shifted(p, 1, s); }
inline std::size_t workspace_bytes(const QConvParams& qp) { return amx::shifted_workspace_bytes(qp.conv, 1); }

// A space-to-depth stem's parameters as the stride-1 conv it runs.
inline QConvParams s2d_qparams(const QConvParams& qp, const amx::Shifted& s) {
  QConvParams q = qp;
  q.conv = amx::s2d_params(qp.conv, s);
  return q;
}

// The shared K4 layout, plus slack for the last panel's final 64-byte K step; a space-to-depth
// stem's for its stride-1 form.
inline std::size_t packed_bytes(const QConvParams& qp) {
  amx::Shifted s;
  const QConvParams q = shifted(qp.conv, &s) && s.s2d ? s2d_qparams(qp, s) : qp;
  return qigemm::packed_bytes<int8_t, NR, 4>(q) + std::size_t(KT) * NR;
}

inline void pack(const QConvParams& qp, const int8_t* w, void* packed) {
  amx::Shifted s;
  if (!shifted(qp.conv, &s) || !s.s2d) return qigemm::pack<int8_t, NR, 4>(qp, w, packed);
  qigemm::pack<int8_t, NR, 4>(s2d_qparams(qp, s), amx::s2d_weights(qp.conv, s, w).data(), packed);
}

namespace {

// shifted()'s run, as the bf16 driver's (bconv_amx.h): tiles of MR grid outputs over every
// tap in place, panels in pairs, the whole window in one sweep, the epilogue (and a fused
// table) on the tile's rows that are outputs. The padded image holds the input's zero points
// (the bias has them folded in, as for the gathered windows' padding).
template <class T>
void run_shifted(const qigemm::Ctx& x, const amx::Shifted& s, pthreadpool_t pool) {
  constexpr int NV = NR / T::W;
  const ConvParams& p = x.qp.conv;
  const QConvArgs& a = x.a;
  uint8_t* img = static_cast<uint8_t*>(a.workspace);
  alignas(64) uint8_t s2dpad[16] = {};  // a space-to-depth pixel of pad bytes: 4 x (pad[c], 0...)
  for (int k = 0; k < 4; ++k) std::memcpy(s2dpad + 4 * k, a.pad, std::size_t(std::min(p.ic, 4)));
  amx::fill_padded(p, s, x.ss, s.s2d ? s2dpad : a.pad, img, pool,
                   [&](long at, uint8_t* d, int n) { std::memcpy(d, a.src + at, std::size_t(n)); });
  amx::shifted_tasks<T>(
      p, s, x.panels_g, x.ocg, img, static_cast<const uint8_t*>(a.weights), a.bias,
      [&](long ch0, int nvalid, long) { return qigemm::packed_rows<T, 2 * NV>(x, qigemm::TileOut{0, ch0, nvalid}); },
      [&](const int32_t* c, const amx::GridRun* runs, int nruns, long ch0, int nvalid, bool, bool bias_in) {
        for (int k = 0; k < nruns; ++k)
          qigemm::store_sums<T, 2 * NV>(x, c + runs[k].r * 2 * NR, 2 * NR, runs[k].len,
                                        qigemm::TileOut{runs[k].m, ch0, nvalid}, bias_in);
      },
      [&](const amx::GridRun* runs, int nruns, long ch_lo, long ch_hi) {
        for (int k = 0; k < nruns; ++k) qigemm::lut_block(x, runs[k].m, runs[k].len, ch_lo, ch_hi);
      },
      pool);
}

template <class T>
void run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  using qigemm::ceil_div;
  constexpr int NV = NR / T::W;
  const ConvParams& p = qp.conv;
  qigemm::Ctx x;
  x.qp = qp;
  x.a = a;
  alignas(64) uint8_t tail[256];
  qigemm::attach_tail<T>(x.a.rq, tail);
  x.ss = p.src_stride ? p.src_stride : p.ic;
  x.ds = p.dst_stride ? p.dst_stride : p.oc;
  x.rs = p.res_stride ? p.res_stride : p.oc;
  x.icg = p.ic / p.groups;
  x.ocg = p.oc / p.groups;
  x.panels_g = int(ceil_div(x.ocg, NR));
  x.K = long(p.kh) * p.kw * x.icg;
  x.Kp = ceil_div(x.K, 4) * 4;  // the packing's K (panel length)
  x.direct = false;
  amx::Shifted sh;
  if (shifted(p, &sh)) return run_shifted<T>(x, sh, pool);
  const long Kt = ceil_div(x.K, KT) * KT;  // the tile loop's K
  const long M = long(p.n) * p.oh * p.ow;
  const long tiles = ceil_div(M, MR);
  constexpr long kTileInts = MR * NR;
  const long weight_bytes = Kt * NR <= kWholeWeightBytes ? kWholeWeightBytes : qigemm::kL1WeightBytes;
  const BlockGrid bg = block_grid(Kt, KT, 1, MR, NR, tiles, x.panels_g, p.groups,
                                  std::max<long>(1, long(pthreadpool_get_threads_count(pool))), kTileInts * 4,
                                  {qigemm::kBlockBytes, qigemm::kMaxBlockTiles, weight_bytes, qigemm::kMaxPartialBytes});
  x.kc = bg.kc;
  const long chunks = bg.chunks, bt = bg.bt, mblocks = bg.mblocks, pb = bg.pb, pgroups = bg.pgroups;
  // As in the vector drivers (qconv_igemm.h): where one K chunk of the task's panels fits L1,
  // each tile runs over all of them before the next, so the epilogue writes (and reads the
  // residual of) each pixel's channels in one stretch; the first panel prefetches the rows ahead.
  const bool tiles_outer = chunks == 1 && pb * Kt * NR <= qigemm::kTilesOuterWeightBytes;
  // Panels in pairs there (pair() below); elsewhere one at a time, each panel's K chunk alone in
  // L1 (pairs ran a 3x3 256->256 conv at 14x14 slower).
  const long step = tiles_outer ? 2 : 1;
  // A 1x1 stride-1 conv over whole 64-byte K steps reads its A tiles from the source in place.
  const bool in_place = qigemm::reads_in_place<uint8_t, KT>(p);
  auto task = [&](std::size_t mb, std::size_t gp) {
    const int g = int(gp / pgroups);
    const long p0 = long(gp % pgroups) * pb, p1 = std::min<long>(x.panels_g, p0 + pb);
    const long t0 = long(mb) * bt, t1 = std::min(tiles, t0 + bt);
    if (p0 >= p1 || t0 >= t1) return;
    const long m0 = t0 * MR, rows = std::min(M, t1 * MR) - m0;
    alignas(64) uint8_t buf[qigemm::kBlockBytes + 64];
    alignas(64) int32_t part[qigemm::kMaxPartialBytes / 4];
    alignas(64) int32_t c[2 * kTileInts];  // a pair of panels' sums, 64 channels a row
    const int8_t* wg = static_cast<const int8_t*>(a.weights) + long(g) * x.panels_g * x.Kp * NR;
    const long ch_end = long(g) * x.ocg + std::min<long>(p1 * NR, x.ocg);
    const long esz = qp.out_f32 ? 4 : 1;
    // A block with a ragged last tile is gathered: tile rows past M must not be read.
    const bool direct = in_place && rows == (t1 - t0) * MR;
    T::config();
    for (long ck = 0; ck < chunks; ++ck) {
      const long k0 = ck * x.kc, k1 = std::min(Kt, k0 + x.kc);
      const bool last = ck + 1 == chunks;
      const uint8_t* ab = buf;
      long ld = x.kc;
      if (direct) ab = a.src + m0 * x.ss + long(g) * x.icg + k0, ld = x.ss;
      else qigemm::gather<T>(x, m0, int(rows), g, k0, k1, buf, x.kc);
      // Panels pn0 and pn0 + 1 (where there is one) of tile t: their sums go side by side into
      // c, 64 channels a row, so the epilogue takes whole 64-byte rows (requant_rows_packed); there
      // the accumulators start from the bias (a stride-0 tile load repeats its row).
      auto pair = [&](long pn0, long t) {
        const long pn1 = std::min(pn0 + step, p1);
        const long ch0 = long(g) * x.ocg + pn0 * NR;
        const long m = t * MR;
        const int r = int(std::min<long>(MR, M - m));
        const qigemm::TileOut o{m, ch0, int(std::min<long>(pn1 * NR, x.ocg) - pn0 * NR)};
        const bool bias_in = qigemm::packed_rows<T, 2 * NV>(x, o);
        if (tiles_outer && pn0 == p0) {
          long lo, hi;
          prefetch_ahead(m, r, t == t0, M, &lo, &hi);
          prefetch_rows(a.residual, x.rs * esz, a.dst, x.ds * esz, lo, hi, ch0 * esz, ch_end * esz);
        }
        for (long pn = pn0; pn < pn1; ++pn) {
          const int8_t* w = wg + pn * x.Kp * NR + k0 * NR;
          int32_t* pt = chunks > 1 ? part + ((pn - p0) * bt + (t - t0)) * kTileInts : part;
          if (ck > 0) amx::start<T>(pt, NR * 4);
          else amx::start<T>(bias_in ? a.bias + ch0 + (pn - pn0) * NR : nullptr, 0);
          amx::sweep<T>(ab + (t - t0) * MR * ld, ld, reinterpret_cast<const uint8_t*>(w), k1 - k0);
          if (last) amx::store<T>(c + (pn - pn0) * NR, 2 * NR * 4);
          else amx::store<T>(pt, NR * 4);
        }
        if (last) qigemm::store_sums<T, 2 * NV>(x, c, 2 * NR, r, o, bias_in);
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
    qigemm::lut_block(x, m0, rows, long(g) * x.ocg + p0 * NR, ch_end);
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(mblocks), std::size_t(p.groups * pgroups), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::qamx

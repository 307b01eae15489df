// Int8 conv over kernel rows padded to whole dot-product groups, for convs whose kernel row
// (kw x channels) is not a multiple of the group: the 3-channel stems (7 x 3 = 21 bytes, 3 x 3 =
// 9). The implicit GEMM gathers such windows byte run by byte run into a buffer (half of
// ResNet-50's int8 stem time); here K is ordered kernel row by kernel row, each padded to rowp
// bytes, so a pixel's kernel row is read in place from the NHWC source: its padding bytes are
// the next pixels' and meet zero weights. Only rows that cross the image's edge are gathered.
// Same contract, epilogue and tiles as the implicit GEMM (qconv_igemm.h); its own packing. The
// traits' A is uint8_t: VNNI broadcasts 4 source bytes, AVX2 (QVecAvx2Bytes) 2 bytes widened to
// an int16 pair.
#pragma once
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_igemm.h"

namespace systolic::kernels::qrows {

using qigemm::ceil_div;

constexpr int kMaxKh = 11;     // kernel rows per window
constexpr long kMaxRowp = 64;  // bytes per padded kernel row

// Bytes of one kernel row padded to groups of KG.
inline long row_padded(const ConvParams& p, int KG) { return ceil_div(long(p.kw) * p.ic, KG) * KG; }

// Whether the layout applies: one group, a dense source, no x dilation, a kernel row that is not
// whole groups (else the implicit GEMM reads rows in place already), short rows and windows.
inline bool fits(const ConvParams& p, int KG, std::string* why) {
  if (p.groups != 1) return conv_reject(why, "grouped");
  if (p.src_stride && p.src_stride != p.ic) return conv_reject(why, "a channel slice of the source");
  if (p.dw != 1) return conv_reject(why, "x dilation");
  if ((long(p.kw) * p.ic) % KG == 0) return conv_reject(why, "kernel rows are whole dot-product groups");
  if (p.kh > kMaxKh || row_padded(p, KG) > kMaxRowp) return conv_reject(why, "kernel rows too long or too many");
  return true;
}

template <class B, int NR, int KG>
std::size_t packed_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  return std::size_t(ceil_div(p.oc, NR) * p.kh * row_padded(p, KG) * NR) * sizeof(B);
}

// [panel][ky][rowp / KG][NR][KG] of B (int8, or int16 for AVX2's vpmaddwd): element e of group
// g of kernel row ky is window element (ky, kx, c) with kx * ic + c = g * KG + e; past the row,
// and channels past oc, zero.
template <class B, int NR, int KG>
void pack(const QConvParams& qp, const int8_t* w, void* out_v) {
  const ConvParams& p = qp.conv;
  const long row = long(p.kw) * p.ic, rowp = row_padded(p, KG);
  auto* out = static_cast<B*>(out_v);
  for (int pn = 0; pn < ceil_div(p.oc, NR); ++pn)
    for (int ky = 0; ky < p.kh; ++ky)
      for (long g0 = 0; g0 < rowp; g0 += KG)
        for (int r = 0; r < NR; ++r)
          for (int e = 0; e < KG; ++e) {
            const long k = g0 + e;
            const int oc = pn * NR + r, kx = int(k / p.ic), c = int(k % p.ic);
            *out++ = oc < p.oc && k < row ? B(w[((long(oc) * p.ic + c) * p.kh + ky) * p.kw + kx]) : B(0);
          }
}

namespace {

using qigemm::Ctx;
using qigemm::TileOut;

// dot_tile_p over one padded kernel row of G groups (G known here), unrolled whole: the stems'
// rows are 3 (3x3) or 6 (7x7) groups, and a loop of so few trips per kernel row cost the 7x7
// stem a mispredicted exit and the row pointers' reloads 7 times a tile.
template <class T, int R, int NV, int G>
SYSTOLIC_INLINE void dot_row(const typename T::A* const* rp, const typename T::B* w, typename T::V (&acc)[R][NV]) {
  constexpr int W = T::W, KG = T::KG;
  const typename T::A* r[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) r[i] = rp[i];
#pragma GCC unroll 16
  for (int k = 0; k < G; ++k) {
    typename T::V b[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) b[j] = T::loadb(w + (k * NV + j) * W * KG);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const typename T::V av = T::bcast(r[i] + k * KG);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = T::dot(acc[i][j], av, b[j]);
    }
  }
}

// One tile of R pixels against one panel: rp[ky][i] is pixel i's padded kernel row ky, each
// gpr groups long (G where that is known at compile time, else 0).
template <class T, int R, int NV, int MR, int G>
void tile(const Ctx& x, const typename T::A* const (*rp)[MR], long gpr, const typename T::B* w, const TileOut& o) {
  constexpr int W = T::W, NR = NV * W;
  typename T::V acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = T::zero();
  for (int ky = 0; ky < x.qp.conv.kh; ++ky) {
    if constexpr (G > 0) dot_row<T, R, NV, G>(rp[ky], w + ky * G * NR * T::KG, acc);
    else qigemm::dot_tile_p<T, R, NV>(gpr, rp[ky], w + ky * gpr * NR * T::KG, acc);
  }
  alignas(64) int32_t sums[R * NV * W];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) T::store32(sums + (i * NV + j) * W, acc[i][j]);
  qigemm::store_sums<T, NV>(x, sums, NV * W, R, o);
}

template <class T, int R, int NV, int MR, int G>
void tile_rows(int rows, const Ctx& x, const typename T::A* const (*rp)[MR], long gpr, const typename T::B* w,
               const TileOut& o) {
  if constexpr (R > 1)
    if (rows < R) return tile_rows<T, R - 1, NV, MR, G>(rows, x, rp, gpr, w, o);
  tile<T, R, NV, MR, G>(x, rp, gpr, w, o);
}

// tile_rows with the kernel row's groups fixed where they are the stems' (3 or 6).
template <class T, int MR, int NV>
void tile_rows_g(int rows, const Ctx& x, const typename T::A* const (*rp)[MR], long gpr, const typename T::B* w,
                 const TileOut& o) {
  if (gpr == 6) return tile_rows<T, MR, NV, MR, 6>(rows, x, rp, gpr, w, o);
  if (gpr == 3) return tile_rows<T, MR, NV, MR, 3>(rows, x, rp, gpr, w, o);
  tile_rows<T, MR, NV, MR, 0>(rows, x, rp, gpr, w, o);
}

}  // namespace

template <class T, int MR, int NV>
void run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  using A = typename T::A;
  using B = typename T::B;
  static_assert(std::is_same_v<A, uint8_t>, "rows are read in place as bytes");
  constexpr int NR = NV * T::W, KG = T::KG;
  const ConvParams& p = qp.conv;
  Ctx x{};
  x.qp = qp;
  x.a = a;
  alignas(64) uint8_t tail[256];
  qigemm::attach_tail<T>(x.a.rq, tail);
  x.ss = p.ic;
  x.ds = p.dst_stride ? p.dst_stride : p.oc;
  x.rs = p.res_stride ? p.res_stride : p.oc;
  x.icg = p.ic;
  x.ocg = p.oc;
  x.panels_g = int(ceil_div(p.oc, NR));
  const long row = long(p.kw) * p.ic, rowp = row_padded(p, KG), gpr = rowp / KG;
  x.K = long(p.kh) * row;
  x.Kp = long(p.kh) * rowp;
  // What a kernel row entirely above or below the image reads: the pad bytes, then zeros.
  alignas(64) uint8_t padrow[kMaxRowp] = {};
  for (long k = 0; k < row; ++k) padrow[k] = a.pad[k % p.ic];
  const long M = long(p.n) * p.oh * p.ow, tiles = ceil_div(M, MR), hw = long(p.oh) * p.ow;
  constexpr long kTilesPerTask = 16;
  auto task = [&](std::size_t b) {
    const long t0 = long(b) * kTilesPerTask, t1 = std::min(tiles, t0 + kTilesPerTask);
    alignas(64) uint8_t buf[MR][kMaxKh][kMaxRowp];  // rows that cross the image's left or right edge
    const A* rp[kMaxKh][MR];
    // The pixel position runs on from tile to tile: two divisions per tile cost the 3-channel
    // stem as much as a tenth of its time.
    long img = t0 * MR / hw;
    int oy = int((t0 * MR - img * hw) / p.ow), ox = int(t0 * MR - img * hw - long(oy) * p.ow);
    const long row_step = long(p.dh) * p.iw * p.ic, pix_step = long(p.sw) * p.ic;
    // A padded kernel row is read in place where it ends inside the source row (its extra
    // bytes are the next pixels' of the same image row); a whole window where, besides, every
    // kernel row is inside the image.
    auto row_inside = [&](int ix0) { return ix0 >= 0 && long(ix0) * p.ic + rowp <= long(p.iw) * p.ic; };
    auto rows_inside = [&](int iy0) { return iy0 >= 0 && iy0 + (p.kh - 1) * p.dh < p.ih; };
    auto next_pixel = [&](int n) {
      ox += n;
      if (ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
    };
    for (long t = t0; t < t1; ++t) {
      const long m = t * MR;
      const int r = int(std::min<long>(MR, M - m));
      const int fx0 = ox * p.sw - p.pad_l, fy0 = oy * p.sh - p.pad_t;
      if (ox + r <= p.ow && row_inside(fx0) && row_inside(fx0 + (r - 1) * p.sw) && rows_inside(fy0)) {
        // The common tile: its pixels on one output row, every window inside the image: the
        // row pointers step by the stride, without a test per pixel and kernel row.
        const uint8_t* s = a.src + ((img * p.ih + fy0) * p.iw + fx0) * long(p.ic);
        for (int ky = 0; ky < p.kh; ++ky)
          for (int i = 0; i < r; ++i) rp[ky][i] = s + ky * row_step + i * pix_step;
        next_pixel(r);
      } else {
        for (int i = 0; i < r; ++i, next_pixel(1)) {
          const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
          const uint8_t* image = a.src + img * p.ih * p.iw * long(p.ic);
          const bool inside = row_inside(ix0);
          if (inside && rows_inside(iy0)) {
            const uint8_t* s = image + (long(iy0) * p.iw + ix0) * p.ic;
            for (int ky = 0; ky < p.kh; ++ky) rp[ky][i] = s + ky * row_step;
            continue;
          }
          for (int ky = 0; ky < p.kh; ++ky) {
            const int iy = iy0 + ky * p.dh;
            if (unsigned(iy) >= unsigned(p.ih)) {
              rp[ky][i] = padrow;
            } else if (inside) {
              rp[ky][i] = image + (long(iy) * p.iw + ix0) * p.ic;
            } else {
              // The pad bytes where the row leaves the image, the source's run in between,
              // zeros past the row: byte loops (a few bytes each; libc calls cost more).
              uint8_t* d = buf[i][ky];
              const long in0 = long(std::max(0, -ix0)) * p.ic, in1 = long(std::min(p.kw, p.iw - ix0)) * p.ic;
              const uint8_t* src = image + long(iy) * p.iw * p.ic;
              const long at = long(ix0) * p.ic;  // src[at + k] for k in [in0, in1): inside the row
              long k = 0;
              for (; k < in0; ++k) d[k] = padrow[k];
              for (; k < in1; ++k) d[k] = src[at + k];
              for (; k < row; ++k) d[k] = padrow[k];
              for (; k < rowp; ++k) d[k] = 0;
              rp[ky][i] = d;
            }
          }
        }
      }
      for (long pn = 0; pn < x.panels_g; ++pn) {
        const TileOut o{m, pn * NR, int(std::min<long>(NR, p.oc - pn * NR))};
        tile_rows_g<T, MR, NV>(r, x, rp, gpr, static_cast<const B*>(a.weights) + pn * x.Kp * NR, o);
      }
    }
    qigemm::lut_block(x, t0 * MR, std::min(M, t1 * MR) - t0 * MR, 0, p.oc);
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t(ceil_div(tiles, kTilesPerTask)), kPoolFlags);
}

}  // namespace systolic::kernels::qrows

// Every int8 conv kernel in qconv.inc against qconv_ref_nchw, for equality: random shapes with
// M/N/K tails, zero points 0/128/255, strides, pads, dilations, groups, channel slices,
// residuals and both output types.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "base/aligned_vector.h"
#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/qconv/qconv.h"
#include "kernels/qconv/qconv_amx.h"
#include "kernels/qlut/qlut.h"

namespace systolic::kernels {

extern const QConvKernel qconv_u8s8_igemm_6x16_k4emulated_avx2;    // k4_emulation_avx2_test.cc
extern const QConvKernel qconv_u8s8_igemm_32x32_amxemulated_avx2;  // amx_emulation_avx2_test.cc

namespace {

// The list, plus the test-only emulations of the VNNI and AMX code paths on any AVX2 machine.
std::vector<const QConvKernel*> kernels_to_check() {
  std::size_t count;
  const QConvKernel* all = qconv_kernels(&count);
  std::vector<const QConvKernel*> v;
  for (std::size_t k = 0; k < count; ++k) v.push_back(&all[k]);
  v.push_back(&qconv_u8s8_igemm_6x16_k4emulated_avx2);
  v.push_back(&qconv_u8s8_igemm_32x32_amxemulated_avx2);
  return v;
}

struct Shape {
  int n = 1, ic = 1, ih = 1, iw = 1, oc = 1, kh = 1, kw = 1, s = 1, d = 1;
  int pt = 0, pl = 0, pb = 0, pr = 0, groups = 1;
};

ConvParams make(const Shape& s) {
  ConvParams p;
  p.n = s.n, p.ic = s.ic, p.ih = s.ih, p.iw = s.iw, p.oc = s.oc, p.kh = s.kh, p.kw = s.kw;
  p.sh = p.sw = s.s, p.dh = p.dw = s.d, p.pad_t = s.pt, p.pad_l = s.pl, p.groups = s.groups;
  p.oh = (s.ih + s.pt + s.pb - s.d * (s.kh - 1) - 1) / s.s + 1;
  p.ow = (s.iw + s.pl + s.pr - s.d * (s.kw - 1) - 1) / s.s + 1;
  return p;
}

struct Options {
  int zx = 128;              // input zero point (-1: a different one per channel)
  int zp = 128;              // output zero point
  bool residual = false, out_f32 = false, relu = false;
  // Bounds between the grid's steps, two of them ties (ReLU6 in quantized units is rarely an
  // integer), and a fifth of the channels scaled past 2^31 (outputs that overflow int32).
  bool fractional_bounds = false, huge_scales = false;
  int mid = 0;  // QRequant::mid: the intermediate roundings of a QDQ model's fused conv
  int src_pad = 0, dst_pad = 0, res_pad = 0;  // extra channels around the slice (pixel stride)
  int threads = 1;
  bool lut = false;  // a table after the requantization (QRequant::lut), looked up by the fastest qlut kernel
};

std::set<std::string>& ran_names() {
  static std::set<std::string> s;
  return s;
}

// Runs every kernel of the list that accepts the shape here, expecting the oracle's bytes;
// returns how many ran.
int check(const Shape& shape, const Options& o = {}, unsigned seed = 1) {
  const ConvParams base = make(shape);
  QConvParams qp;
  qp.conv = base;
  qp.out_f32 = o.out_f32;
  const int icg = base.ic / base.groups;
  const long K = long(icg) * base.kh * base.kw;
  const long ihw = long(base.ih) * base.iw, ohw = long(base.oh) * base.ow;
  std::mt19937 rng(seed);
  auto byte = [&] { return uint8_t(rng() & 255); };
  std::vector<uint8_t> src(std::size_t(base.n) * base.ic * ihw), zx(base.ic), res_u8(std::size_t(base.n) * base.oc * ohw);
  for (auto& v : src) v = byte();
  for (int c = 0; c < base.ic; ++c) zx[c] = uint8_t(o.zx >= 0 ? o.zx : (c * 37 + 11) & 255);
  for (auto& v : res_u8) v = byte();
  std::vector<int8_t> w(std::size_t(base.oc) * K);
  for (auto& v : w) v = int8_t(int(rng() % 255) - 127);
  std::vector<int32_t> bias(base.oc);
  std::vector<float> scale(base.oc), res_f(res_u8.size());
  std::uniform_real_distribution<float> u(0.5f, 2.f);
  for (int k = 0; k < base.oc; ++k) {
    bias[k] = int32_t((int(rng() % 2001) - 1000) * 2.7f * std::sqrt(float(K)));
    scale[k] = u(rng) * 90.f / (5400.f * std::sqrt(float(K)));
  }
  for (auto& v : res_f) v = u(rng) - 1.25f;
  QRequant rq;
  rq.res_scale = 0.37f;
  rq.res_zp = 100;
  rq.lo = o.relu ? 0.f : float(-o.zp);
  rq.hi = float(255 - o.zp);
  if (o.fractional_bounds) rq.lo += 2.5f, rq.hi -= o.zp % 2 ? 7.5f : 6.3f;
  if (o.huge_scales)
    for (int k = 0; k < base.oc; k += 5) scale[k] *= 3e7f;
  rq.zp = o.zp;
  rq.mid = o.mid;
  rq.mid_lo[0] = -77.f, rq.mid_hi[0] = 178.f, rq.mid_scale[0] = 1.3f;  // zero point 77, a finer next grid
  rq.mid_lo[1] = -3.f, rq.mid_hi[1] = 252.f, rq.mid_scale[1] = 0.6f;
  uint8_t table[256];
  for (int v = 0; v < 256; ++v) table[v] = uint8_t((v * 167 + 91) & 255);  // a permutation: every byte distinct
  if (o.lut) {
    rq.lut = table;
    rq.lut_rows = qlut_select(host_cpu())->rows;
  }
  Epilogue ep;
  if (o.relu) ep.act = Act::relu;
  const void* res_nchw = !o.residual ? nullptr : o.out_f32 ? static_cast<const void*>(res_f.data()) : res_u8.data();
  const std::size_t esz = o.out_f32 ? 4 : 1;
  std::vector<uint8_t> want(res_u8.size() * esz);
  qconv_ref_nchw(qp, src.data(), zx.data(), w.data(), bias.data(), scale.data(), res_nchw, rq, ep, want.data());

  // The oracle's outputs spread over many values (a test of all-saturated outputs proves little).
  if (!o.out_f32 && want.size() >= 512) {
    std::set<uint8_t> distinct(want.begin(), want.end());
    EXPECT_GE(distinct.size(), 32u) << "degenerate test data";
  }

  // NHWC operands with pixel strides; slices sit in wider rows full of sentinels.
  QConvParams p = qp;
  p.conv.src_stride = o.src_pad ? base.ic + 2 * o.src_pad : 0;
  p.conv.dst_stride = o.dst_pad ? base.oc + 2 * o.dst_pad : 0;
  p.conv.res_stride = o.res_pad ? base.oc + 2 * o.res_pad : 0;
  const long ss = p.conv.src_stride ? p.conv.src_stride : base.ic, ds = p.conv.dst_stride ? p.conv.dst_stride : base.oc,
             rs = p.conv.res_stride ? p.conv.res_stride : base.oc;
  std::vector<uint8_t> src_nhwc(std::size_t(base.n) * ihw * ss, 0xA5);
  for (int i = 0; i < base.n; ++i)
    for (int c = 0; c < base.ic; ++c)
      for (long q = 0; q < ihw; ++q) src_nhwc[(i * ihw + q) * ss + o.src_pad + c] = src[(long(i) * base.ic + c) * ihw + q];
  std::vector<uint8_t> res_nhwc(std::size_t(base.n) * ohw * rs * esz, 0x5A);
  for (int i = 0; i < base.n; ++i)
    for (int k = 0; k < base.oc; ++k)
      for (long q = 0; q < ohw; ++q) {
        const long from = (long(i) * base.oc + k) * ohw + q, to = (i * ohw + q) * rs + o.res_pad + k;
        if (o.out_f32) reinterpret_cast<float*>(res_nhwc.data())[to] = res_f[from];
        else res_nhwc[to] = res_u8[from];
      }
  // The requantized zero points: bias - sum zx * w.
  std::vector<int32_t> folded(base.oc);
  qconv_fold_bias(base, w.data(), bias.data(), zx.data(), folded.data());
  ThreadPool pool = make_thread_pool(o.threads);

  int ran = 0;
  for (const QConvKernel* kp : kernels_to_check()) {
    const QConvKernel& kern = *kp;
    std::string why;
    if (!kern.accepts(p, host_cpu(), &why)) continue;
    AlignedBytes packed(kern.packed_bytes(p) + 64);
    kern.pack(p, w.data(), packed.data());
    AlignedBytes ws(kern.workspace_bytes(p) + 64);
    const uint8_t sentinel = 0xEE;
    std::vector<uint8_t> dst(std::size_t(base.n) * ohw * ds * esz, sentinel);
    QConvArgs a;
    a.src = src_nhwc.data() + o.src_pad;
    a.pad = zx.data();
    a.weights = packed.data();
    a.bias = folded.data();
    a.scale = scale.data();
    a.residual = o.residual ? res_nhwc.data() + o.res_pad * esz : nullptr;
    a.rq = rq;
    a.dst = dst.data() + o.dst_pad * esz;
    a.ep = ep;
    a.workspace = ws.data();
    kern.run(p, a, pool.get());
    long bad = 0;
    std::string first;
    for (int i = 0; i < base.n; ++i)
      for (long q = 0; q < ohw; ++q)
        for (long c = 0; c < ds; ++c) {
          const long at = ((i * ohw + q) * ds + c) * long(esz);
          const bool inside = c >= o.dst_pad && c < o.dst_pad + base.oc;
          bool ok;
          if (!inside) {
            ok = true;
            for (std::size_t e = 0; e < esz; ++e) ok &= dst[at + e] == sentinel;
          } else {
            const long from = ((long(i) * base.oc + (c - o.dst_pad)) * ohw + q) * long(esz);
            ok = std::memcmp(&dst[at], &want[from], esz) == 0;
          }
          if (!ok && bad++ == 0) {
            char buf[200];
            std::snprintf(buf, sizeof buf, "image %d pixel %ld channel %ld (%s)", i, q, c - o.dst_pad,
                          inside ? "differs from the reference" : "written outside the slice");
            first = buf;
          }
        }
    EXPECT_EQ(bad, 0) << kern.name << ": " << bad << " wrong outputs, first at " << first << " (n=" << base.n
                      << " ic=" << base.ic << " " << base.ih << "x" << base.iw << " oc=" << base.oc << " k=" << base.kh
                      << "x" << base.kw << " s=" << shape.s << " d=" << shape.d << " groups=" << base.groups << ")";
    ran_names().insert(kern.name);
    ++ran;
  }
  return ran;
}

TEST(QConv, PointwiseTails) {
  for (int ic : {1, 3, 4, 7, 16, 17, 64})
    for (int oc : {1, 5, 16, 17, 33, 64})
      for (int hw : {1, 5, 7}) EXPECT_GE(check({1, ic, hw, hw, oc}), 1);
}

TEST(QConv, ZeroPoints) {
  for (int zx : {0, 128, 255, -1})
    for (int zp : {0, 128, 255}) {
      Options o;
      o.zx = zx;
      o.zp = zp;
      check({1, 8, 6, 6, 24, 3, 3, 1, 1, 1, 1, 1, 1}, o, unsigned(zx * 7 + zp));
      check({2, 3, 9, 9, 16, 7, 7, 2, 1, 3, 3, 3, 3}, o, unsigned(zx * 5 + zp));
    }
}

TEST(QConv, StridesPadsDilations) {
  check({1, 16, 14, 14, 32, 3, 3, 2, 1, 1, 1, 1, 1});
  check({2, 5, 11, 9, 7, 3, 3, 1, 2, 2, 2, 2, 2});
  check({1, 32, 8, 8, 40, 1, 1, 2});
  check({1, 9, 13, 10, 19, 5, 3, 3, 1, 2, 1, 0, 1});
  check({3, 4, 5, 5, 8, 3, 3, 1, 1, 0, 0, 0, 0});
}

// Kernel rows read in place from the source (u8 traits, channels in whole K groups): windows at
// the image's edges gathered, the rest pointed at; tiles across rows and images, one and two
// chunks per kernel row, stride 2 with uneven pads, a 5x3 window.
TEST(QConv, WindowRowsReadInPlace) {
  check({2, 64, 13, 11, 72, 3, 3, 1, 1, 1, 1, 1, 1});
  check({1, 128, 10, 12, 64, 3, 3, 2, 1, 0, 1, 2, 1});
  check({1, 88, 9, 9, 40, 5, 3, 1, 1, 2, 1, 2, 1});
  Options o;
  o.residual = true, o.relu = true;
  check({2, 64, 13, 11, 72, 3, 3, 1, 1, 1, 1, 1, 1}, o, 11);
}

// 1x1 stride-1 convs over whole 64-byte channel groups: the AMX tiles read whole blocks of
// pixels in place (a ragged last block is gathered), from dense and strided sources, with the
// residual and both QDQ roundings, in pairs of 32-channel panels and a lone last one.
TEST(QConv, PointwiseRowsReadInPlace) {
  Options o;
  o.threads = 2;
  check({2, 64, 8, 8, 96}, o);    // 128 pixels: whole 32-pixel tiles
  check({1, 128, 7, 9, 64}, o);   // 63: a ragged last tile
  o.residual = true, o.relu = true, o.mid = 3, o.src_pad = 3, o.res_pad = 1;
  check({2, 64, 8, 8, 96}, o, 3);
  check({3, 192, 5, 7, 160}, o, 4);
}

TEST(QConv, Groups) {
  check({1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 4});
  check({2, 12, 7, 7, 18, 3, 3, 2, 1, 1, 1, 1, 1, 3});
  check({1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8});  // depthwise
}

TEST(QConv, LongWindowsAreChunked) {
  check({1, 256, 6, 6, 24, 3, 3, 1, 1, 1, 1, 1, 1});  // K = 2304
  check({1, 520, 3, 3, 40, 3, 3, 1, 1, 1, 1, 1, 1});  // K = 4680, tails in the last chunk
  // 1x1 convs read in place chunk by chunk (zmm: 32 KB chunks without a residual, 16 with one;
  // ResNet-50's last 1x1 convs have K of 1024-2048): ragged K and pixels, 64 and 128 channels.
  Options o;
  o.threads = 2;
  check({2, 1088, 5, 5, 128}, o, 31);
  o.residual = true, o.relu = true, o.res_pad = 1;
  check({1, 1088, 7, 7, 64}, o, 32);
  check({1, 4100, 2, 2, 17});                          // 1x1 with K past a chunk
}

// Fewer pixels than output channels: the vector kernels gather every window once into their
// workspace and the tasks split the panels.
TEST(QConv, SmallImagesGatherOnce) {
  QConvParams q;
  q.conv = make({1, 40, 5, 5, 96, 3, 3, 1, 1, 1, 1, 1, 1});
  for (const char* name : {"qconv_u8s8_igemm_6x16_avx2", "qconv_u8s8_igemm_6x64_avx512vnni"})
    EXPECT_GT(qconv_find(name)->workspace_bytes(q), 0u) << name;
  Options o;
  o.threads = 2;
  o.residual = true;
  o.src_pad = 3;
  o.dst_pad = 1;
  EXPECT_GE(check({1, 40, 5, 5, 96, 3, 3, 1, 1, 1, 1, 1, 1}, o), 2);
  EXPECT_GE(check({1, 520, 3, 3, 160, 3, 3, 1, 1, 1, 1, 1, 1}, o, 3), 2);  // several K chunks
  EXPECT_GE(check({2, 7, 4, 4, 72, 3, 3, 2, 2, 1, 1, 1, 1}, o, 5), 2);     // stride 2, ragged K
  o.src_pad = 0;  // a dense source: whole kernel rows at once (gather_window)
  EXPECT_GE(check({1, 40, 5, 5, 96, 3, 3, 1, 1, 1, 1, 1, 1}, o, 7), 2);
  EXPECT_GE(check({2, 3, 9, 9, 64, 7, 7, 2, 2, 3, 3, 3, 3}, o, 9), 2);
}

TEST(QConv, ResidualReluAndSlices) {
  Options o;
  o.residual = true;
  o.relu = true;
  o.src_pad = 3;
  o.dst_pad = 5;
  o.res_pad = 2;
  check({2, 24, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1}, o);
  check({1, 64, 5, 5, 64}, o);
  o.zp = 0;
  check({1, 32, 4, 4, 17, 1, 1, 2}, o);
}

// A QDQ model's fused conv: rounding to the conv's own grid before the residual, and to the
// sum's grid before the activation.
TEST(QConv, IntermediateRoundings) {
  for (int mid : {1, 2, 3}) {
    Options o;
    o.mid = mid;
    o.residual = mid != 2;
    o.relu = true;
    check({1, 32, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1}, o, unsigned(mid));
    check({2, 64, 5, 5, 64}, o, unsigned(mid + 7));
  }
}

// A table fused after the requantization: every kernel looks up exactly the bytes it wrote
// (packed 64-channel tiles, ragged columns, the scalar tails, depthwise rows, the stem's rows
// kernel, slices of wider rows, two threads), nothing twice.
TEST(QConv, FusedTable) {
  ran_names().clear();
  Options o;
  o.lut = true;
  for (int threads : {1, 2}) {
    o.threads = threads;
    check({2, 16, 5, 7, 64, 1, 1}, o, 21);
    check({1, 24, 6, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1}, o, 22);
    check({2, 64, 9, 9, 64, 3, 3, 1, 1, 1, 1, 1, 1, 64}, o, 23);     // depthwise
    check({1, 40, 8, 8, 40, 5, 5, 2, 1, 2, 2, 2, 2, 40}, o, 24);     // depthwise, ragged channels
    check({1, 3, 23, 21, 64, 7, 7, 2, 1, 3, 3, 3, 3}, o, 25);        // the stem's rows kernel
  }
  o.threads = 1;
  o.residual = true, o.mid = 3, o.dst_pad = 5, o.res_pad = 2;
  check({1, 32, 6, 6, 128, 1, 1}, o, 26);
  check({1, 48, 7, 7, 48, 3, 3, 1, 1, 1, 1, 1, 1, 48}, o, 27);
  EXPECT_TRUE(ran_names().count("qconv_u8s8_ref"));
  if (host_cpu().avx2) {
    EXPECT_TRUE(ran_names().count("qconv_u8s8_dw_avx2"));
  }
}

// The u8 output's last steps (clamp, round, zero point) at their edges: bounds between grid
// steps and ties, outputs past int32, every zero point; with and without a residual and the
// intermediate roundings, on the tiles' whole and ragged columns (oc 64, 32, 40).
TEST(QConv, BoundsTiesAndOverflow) {
  for (int zp : {0, 127, 255})
    for (int variant = 0; variant < 4; ++variant) {
      if (zp == 255 && variant >= 2) continue;  // relu or the mid grids leave one output value
      Options o;
      o.zp = zp;
      o.fractional_bounds = variant != 1;
      o.huge_scales = variant != 0;
      o.relu = variant == 2;
      o.residual = variant >= 2;
      o.mid = variant == 3 ? 3 : 0;
      for (int oc : {64, 32, 40})
        check({2, 16, 5, 7, oc, 1, 1}, o, unsigned(zp * 4 + variant + oc));
      check({1, 24, 6, 6, 64, 3, 3, 1, 1, 1, 1, 1, 1}, o, unsigned(zp + variant));
    }
}

// Kernel rows that are not whole dot-product groups (3-channel stems): the rows kernels read
// each padded kernel row in place where it ends inside the image row, else gather it. Windows
// at every edge, rows that end exactly at the image's right edge, M and N tails, zero points,
// residuals, the intermediate roundings, float output, two threads.
TEST(QConv, PaddedKernelRows) {
  ran_names().clear();
  for (int zx : {0, 128, 255}) {
    Options o;
    o.zx = zx;
    o.zp = 255 - zx;
    o.threads = zx == 128 ? 2 : 1;
    check({2, 3, 23, 21, 64, 7, 7, 2, 1, 3, 3, 3, 3}, o, unsigned(zx + 1));   // ResNet's stem
    // Wide rows: most tiles lie on one output row with every window inside (pointers stepped
    // by the stride), the rest straddle rows or edges.
    check({2, 3, 19, 70, 64, 7, 7, 2, 1, 3, 3, 3, 3}, o, unsigned(zx + 7));
    check({1, 3, 11, 75, 32, 3, 3, 2, 1, 1, 1, 1, 1}, o, unsigned(zx + 8));
    check({1, 3, 17, 19, 32, 3, 3, 2, 1, 1, 1, 1, 1}, o, unsigned(zx + 2));   // MobileNet's
    check({1, 3, 9, 8, 40, 3, 3, 1, 1, 0, 0, 0, 0}, o, unsigned(zx + 3));     // rows ending at the edge
    check({1, 1, 6, 11, 16, 5, 5, 1, 1, 2, 2, 2, 2}, o, unsigned(zx + 4));
    check({1, 5, 7, 7, 24, 3, 3, 1, 2, 2, 2, 2, 2}, o, unsigned(zx + 5));     // dilated: the igemm's
    check({1, 3, 4, 4, 8, 1, 1}, o, unsigned(zx + 6));                         // 1x1, three channels
  }
  Options q;
  q.residual = true;
  q.mid = 3;
  q.relu = true;
  check({1, 3, 15, 15, 64, 7, 7, 2, 1, 3, 3, 3, 3}, q, 9);
  q.out_f32 = true;
  q.mid = 0;
  check({1, 3, 15, 15, 48, 3, 3, 2, 1, 1, 1, 1, 1}, q, 10);
  const CpuFeatures& cpu = host_cpu();
  if (cpu.has_avx512_vnni()) {
    EXPECT_TRUE(ran_names().count("qconv_u8s8_rows_6x64_avx512vnni"));
    EXPECT_TRUE(ran_names().count("qconv_u8s8_rows_8x32_avx512vnni"));
  }
  if (cpu.avx_vnni) {
    EXPECT_TRUE(ran_names().count("qconv_u8s8_rows_6x16_avxvnni"));
  }
  if (cpu.has_avx2_fma()) {
    EXPECT_TRUE(ran_names().count("qconv_u8s8_rows_6x16_avx2"));  // the 32- and 16-channel shapes
  }
}

TEST(QConv, FloatOutput) {
  Options o;
  o.out_f32 = true;
  check({1, 64, 1, 1, 1000}, o);
  o.residual = true;
  o.relu = true;
  o.dst_pad = 1;
  check({2, 16, 6, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1}, o);
}

TEST(QConv, Threads) {
  Options o;
  o.threads = 2;
  check({4, 16, 10, 10, 48, 3, 3, 1, 1, 1, 1, 1, 1}, o);
  check({1, 64, 7, 7, 256}, o);
  check({1, 512, 3, 3, 72, 3, 3, 1, 1, 1, 1, 1, 1}, o);
}

// The int8 Winograds F(2x2, 3x3) and F(3x3, 3x3) (AVX2 machines without VNNI, or capped to
// AVX2; F(3x3) on vpdpwssd with AVX-VNNI and AVX512-VNNI): exact, so the reference's bytes, over
// odd sizes (ragged last tiles), pads of 0-2 on each side, tile runs across rows and images,
// per-channel zero points, the QDQ roundings, residuals in slices, a fused table and two
// threads. The ymm forms take channels in 16s, the zmm form inputs in 32s and outputs in 64s.
TEST(QConv, WinogradTilesAreExact) {
  const std::vector<Shape> shapes = {
      {1, 16, 10, 10, 16, 3, 3, 1, 1, 1, 1, 1, 1},  {2, 32, 9, 11, 48, 3, 3, 1, 1, 1, 1, 1, 1},
      {1, 16, 14, 12, 32, 3, 3, 1, 1, 0, 0, 0, 0},  {1, 48, 11, 13, 16, 3, 3, 1, 1, 1, 0, 2, 1},
      {3, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1},    {1, 256, 14, 14, 32, 3, 3, 1, 1, 1, 1, 1, 1},
      {1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1},    // F(2x2): 16 tiles, the panels split across tasks
      // The VNNI forms' (at least 48 tiles a block).
      {4, 32, 9, 11, 128, 3, 3, 1, 1, 1, 1, 1, 1},  {3, 96, 14, 12, 64, 3, 3, 1, 1, 0, 0, 0, 0},
      {3, 32, 11, 13, 64, 3, 3, 1, 1, 1, 0, 2, 1},  {2, 256, 14, 14, 192, 3, 3, 1, 1, 1, 1, 1, 1},
      // More tiles than one chunk of a panel's sums: zmm (30 a chunk), ymm (120).
      {2, 64, 29, 31, 64, 3, 3, 1, 1, 1, 1, 1, 1},  {2, 16, 40, 40, 16, 3, 3, 1, 1, 1, 1, 1, 1},
      // Several blocks split unevenly (100 tiles: zmm 48 + 52, ymm 24 + 24 + 24 + 28).
      {4, 256, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1},
      // One block of one 14x14 image's 25 tiles (VNNI on AMD).
      {1, 64, 14, 14, 128, 3, 3, 1, 1, 1, 1, 1, 1}};
  ran_names().clear();
  unsigned seed = 1;
  for (const Shape& s : shapes) {
    Options o;
    o.zx = seed % 2 ? -1 : 255;
    o.zp = seed % 3 ? 0 : 200;
    EXPECT_GE(check(s, o, seed++), 2);
    o.residual = true, o.relu = true, o.mid = 3, o.src_pad = 3, o.dst_pad = 1, o.res_pad = 2, o.threads = 2;
    EXPECT_GE(check(s, o, seed++), 2);
    o.lut = true, o.mid = 0, o.src_pad = 0;
    EXPECT_GE(check(s, o, seed++), 2);
  }
  for (const char* name : {"qconv_u8s8_winograd_f3x3_avx512vnni", "qconv_u8s8_winograd_f3x3_avxvnni",
                           "qconv_u8s8_winograd_f3x3_avx2", "qconv_u8s8_winograd_f2x3_avx2"}) {
    const QConvKernel* wino = qconv_find(name);
    ASSERT_NE(wino, nullptr) << name;
    const bool zmm = std::string(name).ends_with("avx512vnni"), vnni = std::string(name).find("vnni") != std::string::npos;
    const int cw = zmm ? 32 : 16, nr = zmm ? 64 : 16;
    std::string why;
    QConvParams q;
    q.conv = make({3, cw, 12, 12, nr, 3, 3, 1, 1, 1, 1, 1, 1});
    if (wino->accepts(q, host_cpu(), &why)) EXPECT_TRUE(ran_names().count(name)) << name;
    else std::printf("note: %s does not run here: %s\n", name, why.c_str());
    // Where it steps aside: strides, other kernels, channels off the vector width, float output.
    for (const Shape& s : {Shape{1, cw, 10, 10, nr, 3, 3, 2, 1, 1, 1, 1, 1}, Shape{1, cw, 10, 10, nr, 5, 5},
                           Shape{1, cw + 8, 10, 10, nr, 3, 3}, Shape{1, cw, 10, 10, nr + 8, 3, 3}}) {
      q.conv = make(s);
      EXPECT_FALSE(wino->accepts(q, host_cpu(), &why)) << name;
    }
    // With VNNI, not where the tiles cover too many dropped outputs (7x7: 81 for 49), nor on
    // blocks of fewer than 48 tiles (one 14x14 image: 25), 24 on AMD (one 12x12 image: 16).
    q.conv = make({3, cw, 12, 12, nr, 3, 3, 1, 1, 1, 1, 1, 1});
    const bool runs_here = wino->accepts(q, host_cpu(), &why);
    CpuFeatures intel = host_cpu(), amd = host_cpu();
    intel.amd = false, amd.amd = true;
    const Shape one14{1, cw, 14, 14, nr, 3, 3, 1, 1, 1, 1, 1, 1};
    for (const Shape& s : {Shape{8, cw, 7, 7, nr, 3, 3, 1, 1, 1, 1, 1, 1}, one14}) {
      q.conv = make(s);
      if (vnni) {
        EXPECT_FALSE(wino->accepts(q, intel, &why)) << name;
      }
    }
    for (const Shape& s : {Shape{8, cw, 7, 7, nr, 3, 3, 1, 1, 1, 1, 1, 1}, Shape{1, cw, 12, 12, nr, 3, 3, 1, 1, 1, 1, 1, 1}}) {
      q.conv = make(s);
      if (vnni) {
        EXPECT_FALSE(wino->accepts(q, amd, &why)) << name;
      }
    }
    q.conv = make(one14);
    if (vnni && runs_here) {
      EXPECT_TRUE(wino->accepts(q, amd, &why)) << name << ": " << why;
    }
    q.conv = make({3, cw, 12, 12, nr, 3, 3, 1, 1, 1, 1, 1, 1});
    q.out_f32 = 1;
    EXPECT_FALSE(wino->accepts(q, host_cpu(), &why)) << name;
  }
}

// The AMX driver's shifted tiles (stride-1 convs over whole 64-channel steps, and image stems
// in space-to-depth form: every tap's A tiles read in place from a copy of the source padded
// with its zero points): pads of every side, wide windows, a single row of taps, ragged output
// channels, a zero point per channel, slices, residuals, threads, a fused table, float output.
TEST(QConv, ShiftedTiles) {
  const Shape shapes[] = {
      {2, 64, 14, 15, 70, 3, 3, 1, 1, 1, 1, 1, 1},
      {1, 128, 20, 17, 33, 3, 3, 1, 1, 0, 2, 1, 0},
      {2, 64, 30, 28, 64, 5, 5, 1, 1, 2, 2, 2, 2},
      {1, 64, 6, 30, 48, 1, 3, 1, 1, 0, 1, 0, 1},
      {3, 64, 16, 16, 96, 3, 3},
      // Image stems: 7x7 over RGB, 3x3 over one channel, 5x5 over four with odd pads.
      {2, 3, 60, 57, 40, 7, 7, 2, 1, 3, 3, 3, 3},
      {1, 1, 40, 41, 16, 3, 3, 2, 1, 1, 1, 1, 1},
      {1, 4, 33, 36, 33, 5, 5, 2, 1, 2, 1, 1, 2},
  };
  ran_names().clear();
  unsigned seed = 40;
  for (const Shape& sh : shapes) {
    EXPECT_TRUE(qamx::shifted(make(sh))) << sh.ic << " " << sh.ih << "x" << sh.iw;
    Options per_channel;
    per_channel.zx = -1;
    check(sh, per_channel, seed++);
    Options sliced;
    sliced.zx = 3, sliced.residual = true, sliced.relu = true, sliced.src_pad = 3, sliced.dst_pad = 2;
    sliced.res_pad = 5, sliced.threads = 2;
    check(sh, sliced, seed++);
  }
  Options lut;
  lut.zx = -1, lut.lut = true, lut.mid = 2;
  check(shapes[0], lut, seed++);
  check(shapes[5], lut, seed++);
  Options f32;
  f32.out_f32 = true, f32.residual = true;
  check(shapes[1], f32, seed++);
  check(shapes[6], f32, seed++);
  // Not shifted: strided, dilated, a channel count off the 64-byte step, a grid mostly padding,
  // a strided conv of more than 4 channels.
  EXPECT_FALSE(qamx::shifted(make({1, 64, 30, 30, 64, 3, 3, 2})));
  EXPECT_FALSE(qamx::shifted(make({1, 64, 30, 30, 64, 3, 3, 1, 2})));
  EXPECT_FALSE(qamx::shifted(make({1, 96, 30, 30, 64, 3, 3})));
  EXPECT_FALSE(qamx::shifted(make({1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1})));
  EXPECT_FALSE(qamx::shifted(make({1, 8, 60, 60, 64, 7, 7, 2, 1, 3, 3, 3, 3})));
  if (host_cpu().has_avx2_fma()) {
    EXPECT_TRUE(ran_names().count("qconv_u8s8_igemm_32x32_amxemulated_avx2"));
  }
  if (host_cpu().amx_int8) {
    EXPECT_TRUE(ran_names().count("qconv_u8s8_igemm_32x32_amx"));
  }
}

TEST(QConv, RandomShapes) {
  std::mt19937 rng(42);
  for (int it = 0; it < 40; ++it) {
    Shape s;
    s.groups = rng() % 4 == 0 ? 1 + int(rng() % 3) : 1;
    s.ic = s.groups * (1 + int(rng() % 20));
    s.oc = s.groups * (1 + int(rng() % 40));
    s.kh = 1 + int(rng() % 3);
    s.kw = 1 + int(rng() % 3);
    s.s = 1 + int(rng() % 2);
    s.d = 1 + int(rng() % 2);
    s.n = 1 + int(rng() % 2);
    s.ih = s.d * (s.kh - 1) + 1 + int(rng() % 8);
    s.iw = s.d * (s.kw - 1) + 1 + int(rng() % 8);
    s.pt = int(rng() % 2), s.pl = int(rng() % 2), s.pb = int(rng() % 2), s.pr = int(rng() % 2);
    Options o;
    o.zx = int(rng() % 256);
    o.zp = int(rng() % 256);
    o.residual = rng() % 2;
    o.out_f32 = rng() % 3 == 0;
    EXPECT_GE(check(s, o, unsigned(it)), 1);
  }
}

// Every kernel that can run on this machine runs (a shape every igemm kernel takes).
TEST(QConv, EveryRunnableKernelRuns) {
  ran_names().clear();
  check({1, 16, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1});
  QConvParams p;
  p.conv = make({1, 16, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1});
  for (const QConvKernel* k : kernels_to_check()) {
    std::string why;
    if (k->accepts(p, host_cpu(), &why)) {
      EXPECT_TRUE(ran_names().count(k->name)) << k->name << " never ran";
    } else {
      std::printf("note: %s does not run here: %s\n", k->name, why.c_str());
    }
  }
}

// Depthwise convolutions (groups == ic == oc): the dw kernels' fast tiles (3x3 and 5x5, stride 1
// and 2), their per-pixel path (borders, dilations, other kernels) and ragged channel tails.
TEST(QConvDepthwise, Channels) {
  for (int c : {1, 7, 16, 17, 24, 32, 33, 144, 960})
    EXPECT_GE(check({1, c, 9, 11, c, 3, 3, 1, 1, 1, 1, 1, 1, c}, {}, unsigned(c)), 1);
}

TEST(QConvDepthwise, StridesPadsDilations) {
  for (int c : {16, 33}) {
    check({1, c, 11, 13, c, 3, 3, 2, 1, 1, 1, 1, 1, c});  // stride 2, odd sizes
    check({1, c, 12, 12, c, 3, 3, 2, 1, 0, 0, 1, 1, c});  // stride 2, pads bottom/right only
    check({2, c, 13, 10, c, 5, 5, 1, 1, 2, 2, 2, 2, c});  // 5x5, batch 2
    check({1, c, 15, 14, c, 5, 5, 2, 1, 2, 2, 2, 2, c});  // 5x5 stride 2
    check({1, c, 7, 31, c, 5, 5, 2, 1, 2, 2, 2, 2, c});  // 5x5 stride 2, rows of whole tiles
    check({1, c, 4, 40, c, 3, 3, 1, 1, 1, 1, 1, 1, c});  // 3x3, rows of whole tiles
    check({1, c, 12, 11, c, 3, 3, 1, 2, 2, 2, 2, 2, c});  // dilation 2
    check({1, c, 9, 9, c, 3, 3, 1, 1, 0, 0, 0, 0, c});  // no pads
    check({1, c, 6, 17, c, 3, 3, 1, 1, 2, 2, 2, 2, c});  // pads past the kernel: whole pad rows
    check({1, c, 10, 10, c, 3, 5, 1, 1, 1, 2, 1, 2, c});  // 3x5
    check({1, c, 13, 13, c, 7, 7, 3, 1, 3, 3, 3, 3, c});  // 7x7 stride 3
    check({1, c, 2, 3, c, 3, 3, 1, 1, 1, 1, 1, 1, c});  // smaller than a tile
    check({2, c, 1, 1, c, 1, 1, 1, 1, 0, 0, 0, 0, c});  // 1x1
    check({2, c, 7, 19, c, 1, 1, 1, 1, 0, 0, 0, 0, c});  // 1x1 over rows of whole tiles and a tail
    check({1, c, 6, 6, c, 1, 1, 2, 1, 0, 0, 0, 0, c});  // 1x1 stride 2 (per pixel)
  }
}

TEST(QConvDepthwise, ZeroPoints) {
  for (int zx : {0, 128, 255, -1})
    for (int zp : {0, 128, 255}) {
      Options o;
      o.zx = zx;
      o.zp = zp;
      check({1, 40, 8, 9, 40, 3, 3, 1, 1, 1, 1, 1, 1, 40}, o, unsigned(zx * 7 + zp));
      check({2, 17, 9, 9, 17, 5, 5, 2, 1, 2, 2, 2, 2, 17}, o, unsigned(zx * 5 + zp));
      check({1, 40, 5, 13, 40, 1, 1, 1, 1, 0, 0, 0, 0, 40}, o, unsigned(zx * 3 + zp));
    }
}

TEST(QConvDepthwise, ResidualMidAndSlices) {
  for (int mid : {0, 1, 2, 3}) {
    Options o;
    o.residual = true;
    o.relu = mid != 0;
    o.mid = mid;
    o.src_pad = 3;
    o.dst_pad = 5;
    o.res_pad = 2;
    check({1, 48, 7, 9, 48, 3, 3, 1, 1, 1, 1, 1, 1, 48}, o, unsigned(mid));
    check({2, 25, 9, 8, 25, 3, 3, 2, 1, 1, 1, 1, 1, 25}, o, unsigned(mid + 4));
    o.residual = false;
    check({1, 33, 8, 8, 33, 5, 5, 1, 1, 2, 2, 2, 2, 33}, o, unsigned(mid + 8));
    check({1, 48, 4, 11, 48, 1, 1, 1, 1, 0, 0, 0, 0, 48}, o, unsigned(mid + 12));
  }
}

TEST(QConvDepthwise, FloatOutput) {
  Options o;
  o.out_f32 = true;
  check({1, 32, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32}, o);
  o.residual = true;
  o.relu = true;
  o.dst_pad = 1;
  o.res_pad = 3;
  check({2, 41, 9, 10, 41, 3, 3, 2, 1, 1, 1, 1, 1, 41}, o);
  check({1, 17, 8, 8, 17, 3, 3, 1, 2, 2, 2, 2, 2, 17}, o);
}

TEST(QConvDepthwise, Threads) {
  Options o;
  o.threads = 2;
  check({1, 960, 7, 7, 960, 3, 3, 1, 1, 1, 1, 1, 1, 960}, o);  // few rows: split into channel chunks
  check({2, 144, 12, 12, 144, 3, 3, 2, 1, 1, 1, 1, 1, 144}, o);
  check({1, 33, 16, 16, 33, 5, 5, 1, 1, 2, 2, 2, 2, 33}, o);
}

// The depthwise kernel is the one dispatch picks here, it ran above, and it turns down the rest.
TEST(QConvDepthwise, KernelRunsAndRejects) {
  const bool avx2 = host_cpu().has_avx2_fma();
  ran_names().clear();
  check({1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16});
  const char* want = host_cpu().has_avx512() ? "qconv_u8s8_dw_avx512" : "qconv_u8s8_dw_avx2";
  if (avx2) {
    EXPECT_TRUE(ran_names().count(want)) << want << " never ran";
  }
  QConvParams p;
  p.conv = make({1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16});
  if (avx2) {
    EXPECT_STREQ(qconv_select(p, host_cpu())->name, want);
  }
  std::string why;
  p.conv = make({1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 16});  // channel multiplier 2
  CpuFeatures cpu = host_cpu();
  cpu.avx2 = cpu.fma = true;
  EXPECT_FALSE(qconv_find("qconv_u8s8_dw_avx2")->accepts(p, cpu, &why));
  EXPECT_EQ(why, "not depthwise (groups == ic == oc)");
  p.conv = make({1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1, 4});
  EXPECT_FALSE(qconv_find("qconv_u8s8_dw_avx2")->accepts(p, cpu, &why));
  EXPECT_EQ(why, "not depthwise (groups == ic == oc)");
}

}  // namespace
}  // namespace systolic::kernels

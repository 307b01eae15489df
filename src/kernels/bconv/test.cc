// bf16 convolution: the rounding helper (exact), and every bf16-capable kernel against
// conv_ref_bf16_nchw within fp32 accumulation error: the fp32 family fed bf16 values with the
// rounding epilogue (how bf16 plans run without vdpbf16ps), the bconv list, and the bconv driver
// with vdpbf16ps emulated on AVX2.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/bconv/bconv.h"
#include "kernels/bconv/bconv_amx.h"

namespace systolic::kernels {

extern const ConvKernel conv_bf16_igemm_6x16_k2emulated_avx2;
extern const ConvKernel conv_bf16_igemm_32x32_amxemulated_avx2;  // amx_emulation_avx2_test.cc

namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

float from_bits(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

TEST(RoundBf16, TiesToEvenAndSpecials) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1). 1 + 3 * 2^-8: halfway, up to the even 1 + 2^-6.
  EXPECT_EQ(round_bf16(1.f + 0x1p-8f), 1.f);
  EXPECT_EQ(round_bf16(1.f + 3 * 0x1p-8f), 1.f + 0x1p-6f);
  EXPECT_EQ(round_bf16(1.f + 0x1p-8f + 0x1p-20f), 1.f + 0x1p-7f);  // past the tie: up
  EXPECT_EQ(round_bf16(1.f + 0x1p-8f - 0x1p-20f), 1.f);            // below it: down
  EXPECT_EQ(round_bf16(-(1.f + 3 * 0x1p-8f)), -(1.f + 0x1p-6f));
  EXPECT_EQ(bits(round_bf16(-0.f)), 0x80000000u);
  EXPECT_EQ(bits(round_bf16(0.f)), 0u);
  EXPECT_EQ(round_bf16(INFINITY), INFINITY);
  EXPECT_EQ(round_bf16(-INFINITY), -INFINITY);
  EXPECT_EQ(round_bf16(std::numeric_limits<float>::max()), INFINITY);  // past the largest bf16
  EXPECT_EQ(bits(round_bf16(from_bits(0x7F7F0000u))), 0x7F7F0000u);   // the largest bf16 stays
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFF800001u, 0x7FBFFFFFu, 0xFFFFFFFFu}) {
    const float r = round_bf16(from_bits(nan));
    EXPECT_TRUE(std::isnan(r)) << std::hex << nan;
    EXPECT_EQ(bits(r) & 0xFFFFu, 0u);
    EXPECT_EQ(bits(r) >> 31, nan >> 31);
  }
  // Denormals round like normals (no flush); the smallest ones round to zero or up.
  EXPECT_EQ(bits(round_bf16(from_bits(0x00008000u))), 0u);
  EXPECT_EQ(bits(round_bf16(from_bits(0x00018000u))), 0x00020000u);
  EXPECT_EQ(bits(round_bf16(from_bits(0x00008001u))), 0x00010000u);
  // Exhaustive over one binade's low halves: the result is the nearest bf16, ties to even.
  for (uint32_t lo = 0; lo < 0x10000u; ++lo) {
    const uint32_t u = 0x3F810000u | lo;
    const uint32_t r = bits(round_bf16(from_bits(u)));
    const uint32_t down = u & 0xFFFF0000u, up = down + 0x10000u;
    const uint32_t want = lo < 0x8000u ? down : lo > 0x8000u ? up : ((down >> 16) & 1 ? up : down);
    ASSERT_EQ(r, want) << std::hex << u;
  }
  EXPECT_EQ(bf16_bits(1.f), 0x3F80);
  EXPECT_EQ(bf16_value(0x3F80), 1.f);
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

std::vector<float> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

struct Options {
  Epilogue ep;
  bool residual = false;
  int src_pad = 0, dst_pad = 0, res_pad = 0;  // extra channels around the slice (pixel stride)
  int threads = 1;
};

// Max |got - want| / tolerance; > 1 fails. The tolerance is fp32 accumulation's (as the fp32
// conv tests), plus one bf16 step of the output where it is rounded: sums a few ulp apart may
// round to neighbouring bf16 values.
double worst(const std::vector<float>& got, const std::vector<float>& want, long K, bool rounded) {
  double w = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    double tol = 1e-5 * std::sqrt(double(K)) * (1.0 + std::fabs(want[i]));
    if (rounded) tol += std::ldexp(std::fabs(want[i]), -7);
    const double e = std::isfinite(got[i]) ? std::fabs(got[i] - want[i]) / tol : 1e30;
    w = std::max(w, e);
  }
  return w;
}

std::set<std::string>& ran_names() {
  static std::set<std::string> s;
  return s;
}

// Every bf16-capable kernel that accepts the shape here, on the same inputs; returns how many
// ran. fp32-family kernels get bf16-rounded src and weights (what a bf16 plan gives them);
// bconv kernels get the raw values and round them themselves.
int check(const Shape& shape, const Options& o = {}, unsigned seed = 1) {
  const ConvParams base = make(shape);
  const int icg = base.ic / base.groups;
  const long K = long(icg) * base.kh * base.kw;
  const int ihw = base.ih * base.iw, ohw = base.oh * base.ow;
  const auto src = random(std::size_t(base.n) * base.ic * ihw, seed);
  const auto w = random(std::size_t(base.oc) * K, seed + 1);
  const auto bias = random(base.oc, seed + 2);
  const auto res = random(std::size_t(base.n) * base.oc * ohw, seed + 3);
  std::vector<float> src_r = src, w_r = w;
  for (float& v : src_r) v = round_bf16(v);
  for (float& v : w_r) v = round_bf16(v);
  std::vector<float> want(res.size());
  conv_ref_bf16_nchw(base, src.data(), w.data(), bias.data(), o.residual ? res.data() : nullptr, o.ep, want.data());

  ConvParams p = base;
  p.src_stride = o.src_pad ? base.ic + 2 * o.src_pad : 0;
  p.dst_stride = o.dst_pad ? base.oc + 2 * o.dst_pad : 0;
  p.res_stride = o.res_pad ? base.oc + 2 * o.res_pad : 0;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  auto nhwc = [&](const std::vector<float>& x, int c, int hw, long stride, int off) {
    std::vector<float> y(std::size_t(base.n) * hw * stride, NAN);
    for (int i = 0; i < base.n; ++i)
      for (int k = 0; k < c; ++k)
        for (int q = 0; q < hw; ++q) y[(long(i) * hw + q) * stride + off + k] = x[(long(i) * c + k) * hw + q];
    return y;
  };
  const auto src_nhwc = nhwc(src, base.ic, ihw, ss, o.src_pad), src_r_nhwc = nhwc(src_r, base.ic, ihw, ss, o.src_pad);
  const auto res_nhwc = nhwc(res, base.oc, ohw, rs, o.res_pad);
  ThreadPool pool = make_thread_pool(o.threads);

  std::vector<const ConvKernel*> kernels;
  std::size_t count;
  const ConvKernel* all = conv_kernels(&count);
  for (std::size_t k = 0; k < count; ++k) kernels.push_back(&all[k]);
  const ConvKernel* ball = bconv_kernels(&count);
  const std::size_t fp32_count = kernels.size();
  for (std::size_t k = 0; k < count; ++k) kernels.push_back(&ball[k]);
  kernels.push_back(&conv_bf16_igemm_6x16_k2emulated_avx2);
  kernels.push_back(&conv_bf16_igemm_32x32_amxemulated_avx2);
  int ran = 0;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const ConvKernel& kern = *kernels[k];
    const bool fp32_family = k < fp32_count;
    if (!kern.accepts(p, host_cpu(), nullptr)) continue;
    std::vector<float> packed(kern.packed_floats(p) + 1);
    kern.pack(p, fp32_family ? w_r.data() : w.data(), packed.data());
    const std::size_t ws = kern.workspace_bytes(p);
    std::unique_ptr<float, decltype(&std::free)> work(
        static_cast<float*>(ws ? std::aligned_alloc(64, (ws + 63) / 64 * 64) : nullptr), std::free);
    std::vector<float> dst(std::size_t(base.n) * ohw * ds, -7.f);
    ConvArgs a;
    a.src = (fp32_family ? src_r_nhwc : src_nhwc).data() + o.src_pad;
    a.weights = packed.data();
    a.bias = bias.data();
    a.residual = o.residual ? res_nhwc.data() + o.res_pad : nullptr;
    a.dst = dst.data() + o.dst_pad;
    a.epilogue = o.ep;
    a.workspace = work.get();
    kern.run(p, a, pool.get());
    std::vector<float> got(want.size());
    long outside = 0, unrounded = 0;
    for (int i = 0; i < base.n; ++i)
      for (int q = 0; q < ohw; ++q)
        for (long c = 0; c < ds; ++c) {
          const float v = dst[(long(i) * ohw + q) * ds + c];
          if (c < o.dst_pad || c >= o.dst_pad + p.oc) outside += v != -7.f;
          else got[(long(i) * base.oc + c - o.dst_pad) * ohw + q] = v, unrounded += o.ep.round_bf16 && (bits(v) & 0xFFFF);
        }
    EXPECT_LE(worst(got, want, K, o.ep.round_bf16), 1.0)
        << kern.name << " ic=" << p.ic << " oc=" << p.oc << " " << p.kh << "x" << p.kw << " s" << p.sh << " g"
        << p.groups << " act=" << int(o.ep.act) << " round=" << o.ep.round_bf16;
    EXPECT_EQ(outside, 0) << kern.name << " wrote outside the dst slice";
    EXPECT_EQ(unrounded, 0) << kern.name << " stored values that are not bf16";
    ran_names().insert(kern.name);
    ++ran;
  }
  return ran;
}

const Epilogue kRounded[] = {{Act::none, 0.f, 0.f, true},       {Act::relu, 0.f, 0.f, true},
                             {Act::clip, -0.5f, 0.5f, true},    {Act::leaky_relu, 0.1f, 0.f, true},
                             {Act::sigmoid, 0.f, 0.f, true},    {Act::hard_swish, 0.f, 0.f, true},
                             {Act::tanh, 0.f, 0.f, true},       {Act::hard_sigmoid, 0.2f, 0.5f, true},
                             {Act::silu, 0.f, 0.f, true}};

TEST(Bf16Conv, Shapes) {
  ran_names().clear();
  const Options r{.ep = {Act::relu, 0.f, 0.f, true}};
  // Odd windows (K padded to a pair), 1/3/7/17/1000 channels, one pixel, one output.
  EXPECT_GE(check({.ic = 7, .ih = 9, .iw = 11, .oc = 17, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, r), 3);
  check({.ic = 1, .ih = 5, .iw = 5, .oc = 1, .kh = 3, .kw = 3}, r);
  check({.ic = 3, .ih = 6, .iw = 7, .oc = 3, .kh = 1, .kw = 1});
  check({.ic = 1000, .ih = 3, .iw = 2, .oc = 7, .kh = 1, .kw = 1}, r);
  check({.ic = 17, .ih = 3, .iw = 5, .oc = 1000, .kh = 1, .kw = 1}, r);
  check({.n = 2, .ic = 16, .ih = 7, .iw = 7, .oc = 32, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, r);
  // Strides, pads, dilation, the stem, grouped and depthwise.
  check({.ic = 3, .ih = 29, .iw = 31, .oc = 64, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3}, r);
  check({.ic = 6, .ih = 11, .iw = 13, .oc = 18, .kh = 3, .kw = 3, .d = 2, .pt = 2, .pl = 1, .pb = 2, .pr = 3}, r);
  check({.ic = 8, .ih = 12, .iw = 9, .oc = 24, .kh = 3, .kw = 2, .s = 2, .pt = 0, .pl = 2, .pb = 1, .pr = 0}, r);
  check({.ic = 34, .ih = 6, .iw = 5, .oc = 34, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .groups = 2}, r);
  for (int c : {3, 17, 40})
    check({.ic = c, .ih = 9, .iw = 10, .oc = c, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = c}, r);
  check({.ic = 24, .ih = 11, .iw = 9, .oc = 24, .kh = 5, .kw = 5, .s = 2, .pt = 2, .pl = 2, .pb = 2, .pr = 2, .groups = 24}, r);
  // Fully connected (1x1 over [M,K,1,1]), and long K over several chunks with a residual.
  for (int m : {1, 3, 16}) check({.n = m, .ic = 2048, .oc = 1000});
  check({.n = 2, .ic = 1500, .oc = 70}, {.ep = {Act::relu, 0.f, 0.f, true}, .residual = true, .threads = 2});
  check({.ic = 300, .ih = 5, .iw = 6, .oc = 40, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
        {.ep = {Act::relu, 0.f, 0.f, true}, .residual = true});
  // Winograd-sized 3x3s (the fp32 family's transforms on bf16 values).
  check({.n = 4, .ic = 33, .ih = 7, .iw = 9, .oc = 70, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, r);
  check({.n = 2, .ic = 64, .ih = 40, .iw = 40, .oc = 130, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
        {.ep = {Act::relu, 0.f, 0.f, true}, .residual = true, .threads = 2});
  if (host_cpu().has_avx2_fma()) {
    for (const char* k : {"conv_bf16_igemm_6x16_k2emulated_avx2", "conv_bf16_igemm_32x32_amxemulated_avx2",
                          "conv_f32_igemm_6x16_avx2", "conv_f32_dw_avx2",
                          "conv_f32_winograd_f4x3_avx2"})
      EXPECT_TRUE(ran_names().count(k)) << k;
  }
  EXPECT_TRUE(ran_names().count("conv_bf16_ref"));
}

// Every activation then the rounding (in registers or with the scalar activation), with and
// without a residual, channel slices and two threads, on the direct, depthwise and Winograd paths.
TEST(Bf16Conv, Epilogues) {
  const Shape s{.ic = 16, .ih = 7, .iw = 9, .oc = 21, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  const Shape dws{.n = 2, .ic = 48, .ih = 11, .iw = 17, .oc = 48, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 48};
  const Shape wino{.n = 3, .ic = 64, .ih = 13, .iw = 11, .oc = 64, .kh = 3, .kw = 3, .pt = 0, .pl = 2, .pb = 1, .pr = 0};
  for (const Epilogue& e : kRounded)
    for (bool res : {false, true})
      for (const Shape& sh : {s, dws, wino}) {
        check(sh, {.ep = e, .residual = res});
        check(sh, {.ep = e, .residual = res, .src_pad = 3, .dst_pad = 2, .res_pad = 5, .threads = 2});
      }
}

TEST(Bf16Conv, AcceptsSaysWhyNot) {
  std::string why;
  const ConvParams p = make({.ic = 64, .ih = 8, .iw = 8, .oc = 64, .kh = 3, .kw = 3});
  const ConvKernel* k = bconv_find("conv_bf16_igemm_8x32_avx512bf16");
  ASSERT_NE(k, nullptr);
  CpuFeatures cpu;
  cpu.avx2 = cpu.fma = cpu.avx512f = cpu.avx512bw = cpu.avx512vl = cpu.avx512dq = true;
  EXPECT_FALSE(k->accepts(p, cpu, &why));
  EXPECT_EQ(why, "needs avx512-bf16");
  cpu.avx512bf16 = true;
  cpu.bf16_rate = {189.0, 363.0};
  EXPECT_FALSE(k->accepts(p, cpu, &why));
  EXPECT_EQ(why, "vdpbf16ps measured slower than FMA here: 189 vs 363 GFLOP/s");
  cpu.bf16_rate = {700.0, 350.0};
  EXPECT_TRUE(k->accepts(p, cpu, &why)) << why;
  cpu.bf16_rate = {};  // not measured: capability only (a plan's kernel at load)
  EXPECT_TRUE(k->accepts(p, cpu, &why)) << why;
  ConvParams img = p;
  img.src_u8 = 1;
  EXPECT_FALSE(k->accepts(img, cpu, &why));
  const ConvParams dw = make({.ic = 32, .ih = 8, .iw = 8, .oc = 32, .kh = 3, .kw = 3, .groups = 32});
  EXPECT_FALSE(k->accepts(dw, cpu, &why));
  EXPECT_NE(why.find("depthwise"), std::string::npos) << why;
  // Dispatch never returns the reference to a plan by accident: it is marked.
  std::string log;
  const ConvKernel* chosen = bconv_select(p, CpuFeatures{}, &log);
  EXPECT_TRUE(bconv_is_reference(chosen)) << (chosen ? chosen->name : "none");
  EXPECT_NE(log.find("kernel conv_bf16_igemm_6x64_avx512bf16 rejected: needs avx512-bf16"), std::string::npos) << log;
}

// Tensors stored as bf16 (ConvParams::bf16_io): the kernels that take them give exactly the
// values they give on float storage of the same bf16 values, source, residual and output
// each way, through the gathered windows, the 1x1 sources read in place (whole and ragged
// blocks), strided slices, ragged channels, and an activation applied after the row.
TEST(Bf16Conv, StorageAsBf16GivesTheSameValues) {
  struct Case {
    Shape s;
    int ss_pad, ds_pad, rs_pad;
    Act act;
  };
  const Case cases[] = {
      {{.n = 2, .ic = 64, .ih = 8, .iw = 8, .oc = 96}, 0, 0, 0, Act::relu},          // 128 pixels, in place
      {{.n = 1, .ic = 64, .ih = 7, .iw = 9, .oc = 80}, 0, 0, 0, Act::relu},          // a ragged block
      {{.n = 1, .ic = 96, .ih = 6, .iw = 6, .oc = 64}, 32, 3, 5, Act::none},         // strided
      {{.n = 2, .ic = 40, .ih = 9, .iw = 7, .oc = 72, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
       0, 0, 0, Act::relu},
      {{.n = 1, .ic = 64, .ih = 10, .iw = 10, .oc = 64, .kh = 1, .kw = 1, .s = 2}, 0, 0, 0, Act::relu},
      {{.n = 1, .ic = 32, .ih = 8, .iw = 8, .oc = 48, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
       0, 0, 0, Act::sigmoid},  // not vectorized: applied to the row, then stored
      {{.n = 2, .ic = 64, .ih = 14, .iw = 14, .oc = 72, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
       32, 3, 5, Act::relu},  // shifted tiles (bamx::shifted) over a strided source
      {{.ic = 3, .ih = 40, .iw = 40, .oc = 64, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3},
       1, 0, 0, Act::relu},  // a space-to-depth stem over a strided source
  };
  std::vector<const ConvKernel*> kernels;
  std::size_t count;
  const ConvKernel* ball = bconv_kernels(&count);
  for (std::size_t k = 0; k < count; ++k) kernels.push_back(&ball[k]);
  kernels.push_back(&conv_bf16_igemm_32x32_amxemulated_avx2);
  auto hi = [](float v) { return uint16_t(bits(v) >> 16); };
  int ran = 0;
  for (const Case& c : cases) {
    ConvParams p = make(c.s);
    p.src_stride = c.ss_pad ? p.ic + c.ss_pad : 0;
    p.dst_stride = c.ds_pad ? p.oc + c.ds_pad : 0;
    p.res_stride = c.rs_pad ? p.oc + c.rs_pad : 0;
    const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc;
    const long rs = p.res_stride ? p.res_stride : p.oc;
    const long in_px = long(p.n) * p.ih * p.iw, out_px = long(p.n) * p.oh * p.ow;
    std::vector<float> src = random(in_px * ss, 1), res = random(out_px * rs, 2), w = random(long(p.oc) * p.ic * p.kh * p.kw, 3);
    std::vector<float> bias = random(p.oc, 4);
    for (float& v : src) v = round_bf16(v);
    for (float& v : res) v = round_bf16(v);
    std::vector<uint16_t> src16(src.size()), res16(res.size());
    for (std::size_t i = 0; i < src.size(); ++i) src16[i] = hi(src[i]);
    for (std::size_t i = 0; i < res.size(); ++i) res16[i] = hi(res[i]);
    ConvParams stored = p;
    stored.bf16_io = kBf16Src | kBf16Dst | kBf16Res;
    for (const ConvKernel* kp : kernels) {
      std::string why;
      if (!kp->accepts(stored, host_cpu(), &why)) continue;
      std::vector<float> packed(kp->packed_floats(p) + 1);
      kp->pack(p, w.data(), packed.data());
      ThreadPool pool = make_thread_pool(2);
      ConvArgs a;
      std::vector<float> work(kp->workspace_bytes(p) / 4 + 1);
      a.workspace = work.data();
      a.weights = packed.data(), a.bias = bias.data();
      a.epilogue.act = c.act, a.epilogue.round_bf16 = true;
      std::vector<float> want(out_px * ds, -7.f);
      a.src = src.data(), a.residual = res.data(), a.dst = want.data();
      kp->run(p, a, pool.get());
      for (int io = 1; io < 8; ++io) {  // every mix of bf16 and float storage
        ConvParams q = p;
        q.bf16_io = io;
        std::vector<float> got32(out_px * ds, -7.f);
        std::vector<uint16_t> got16(out_px * ds, 0xABCD);
        a.src = io & kBf16Src ? reinterpret_cast<const float*>(src16.data()) : src.data();
        a.residual = io & kBf16Res ? reinterpret_cast<const float*>(res16.data()) : res.data();
        a.dst = io & kBf16Dst ? reinterpret_cast<float*>(got16.data()) : got32.data();
        kp->run(q, a, pool.get());
        long bad = 0, outside = 0;
        for (long px = 0; px < out_px; ++px)
          for (long ch = 0; ch < ds; ++ch) {
            const long at = px * ds + ch;
            if (ch >= p.oc) {
              outside += io & kBf16Dst ? got16[at] != 0xABCD : got32[at] != -7.f;
              continue;
            }
            bad += io & kBf16Dst ? got16[at] != hi(want[at]) || (bits(want[at]) & 0xFFFF) : bits(got32[at]) != bits(want[at]);
          }
        EXPECT_EQ(bad, 0) << kp->name << " bf16_io=" << io << " ic=" << p.ic << " oc=" << p.oc << " " << p.kh << "x"
                          << p.kw << " s" << p.sh;
        EXPECT_EQ(outside, 0) << kp->name << " bf16_io=" << io << " wrote outside its slice";
      }
      ++ran;
    }
    // Every other kernel refuses bf16 storage rather than misreading it.
    std::size_t n32;
    const ConvKernel* all = conv_kernels(&n32);
    for (std::size_t k = 0; k < n32; ++k) EXPECT_FALSE(all[k].accepts(stored, host_cpu(), nullptr)) << all[k].name;
  }
  EXPECT_GE(ran, int(std::size(cases)));  // the emulated AMX driver at least, everywhere
}

// The AMX driver's shifted tiles (stride-1 convs over whole 32-channel steps, and image stems
// in space-to-depth form: every tap's A tiles read in place from a padded copy of the source):
// pads of every side, wide windows, a single row of taps, ragged output channels, slices,
// residuals and threads, against the reference; the grid's dropped rows and columns must leave
// the slices' other channels alone.
TEST(Bf16Conv, ShiftedTiles) {
  const Shape shapes[] = {
      {.n = 2, .ic = 32, .ih = 14, .iw = 15, .oc = 70, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
      {.ic = 64, .ih = 20, .iw = 17, .oc = 33, .kh = 3, .kw = 3, .pt = 0, .pl = 2, .pb = 1, .pr = 0},
      {.n = 2, .ic = 32, .ih = 30, .iw = 28, .oc = 32, .kh = 5, .kw = 5, .pt = 2, .pl = 2, .pb = 2, .pr = 2},
      {.ic = 96, .ih = 6, .iw = 30, .oc = 48, .kh = 1, .kw = 3, .pl = 1, .pr = 1},
      {.n = 3, .ic = 32, .ih = 16, .iw = 16, .oc = 64, .kh = 3, .kw = 3},
      // Image stems in space-to-depth form: 7x7, 3x3 over one channel, 5x5 over four, odd pads.
      {.n = 2, .ic = 3, .ih = 60, .iw = 57, .oc = 40, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3},
      {.ic = 1, .ih = 40, .iw = 41, .oc = 16, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
      {.ic = 4, .ih = 33, .iw = 36, .oc = 33, .kh = 5, .kw = 5, .s = 2, .pt = 2, .pl = 1, .pb = 1, .pr = 2},
  };
  ran_names().clear();
  for (const Shape& sh : shapes) {
    EXPECT_TRUE(bamx::shifted(make(sh))) << sh.ic << " " << sh.ih << "x" << sh.iw;
    check(sh, {.ep = {Act::relu, 0.f, 0.f, true}});
    check(sh, {.ep = {Act::none, 0.f, 0.f, true}, .residual = true, .src_pad = 3, .dst_pad = 2, .res_pad = 5,
               .threads = 2});
  }
  // Not shifted: strided, dilated, a channel count off the 32-element step, a grid mostly padding,
  // a strided conv of more than 4 channels.
  EXPECT_FALSE(bamx::shifted(make({.ic = 64, .ih = 30, .iw = 30, .oc = 64, .kh = 3, .kw = 3, .s = 2})));
  EXPECT_FALSE(bamx::shifted(make({.ic = 64, .ih = 30, .iw = 30, .oc = 64, .kh = 3, .kw = 3, .d = 2})));
  EXPECT_FALSE(bamx::shifted(make({.ic = 48, .ih = 30, .iw = 30, .oc = 64, .kh = 3, .kw = 3})));
  EXPECT_FALSE(bamx::shifted(make({.ic = 64, .ih = 7, .iw = 7, .oc = 64, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1})));
  EXPECT_FALSE(bamx::shifted(make({.ic = 8, .ih = 60, .iw = 60, .oc = 64, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3})));
  if (host_cpu().has_avx2_fma()) {
    EXPECT_TRUE(ran_names().count("conv_bf16_igemm_32x32_amxemulated_avx2"));
  }
  if (host_cpu().amx_bf16) {
    EXPECT_TRUE(ran_names().count("conv_bf16_igemm_32x32_amx"));
  }
}

// The comparison must be able to fail: one bf16 step too many is caught.
TEST(Bf16Conv, ComparatorCatchesErrors) {
  std::vector<float> want(10, 1.f), got = want;
  EXPECT_LE(worst(got, want, 100, true), 1.0);
  got[3] = 1.f + 2 * 0x1p-7f;
  EXPECT_GT(worst(got, want, 100, true), 1.0);
  got[3] = 1.f + 0x1p-9f;
  EXPECT_GT(worst(got, want, 100, false), 1.0);
}

}  // namespace
}  // namespace systolic::kernels

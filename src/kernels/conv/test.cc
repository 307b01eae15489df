// Every conv kernel in conv.inc against conv_ref_nchw on random shapes, epilogues and strides.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/conv/conv.h"

namespace systolic::kernels {
namespace {

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

// NCHW <-> NHWC with a pixel stride and channel offset on the NHWC side.
void to_nhwc(const float* src, int n, int c, int hw, long stride, int off, float* dst) {
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k)
      for (int q = 0; q < hw; ++q) dst[(long(i) * hw + q) * stride + off + k] = src[(long(i) * c + k) * hw + q];
}
void to_nchw(const float* src, int n, int c, int hw, long stride, int off, float* dst) {
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k)
      for (int q = 0; q < hw; ++q) dst[(long(i) * c + k) * hw + q] = src[(long(i) * hw + q) * stride + off + k];
}

struct Options {
  Epilogue ep;
  bool bias = true, residual = false;
  int src_pad = 0, dst_pad = 0, res_pad = 0;  // extra channels around the slice (pixel stride)
  int threads = 1;
};

// Max |got - want| / tolerance over all outputs; > 1 fails.
double worst(const std::vector<float>& got, const std::vector<float>& want, long K) {
  double w = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double tol = 1e-5 * std::sqrt(double(K)) * (1.0 + std::fabs(want[i]));
    const double e = std::isfinite(got[i]) ? std::fabs(got[i] - want[i]) / tol : 1e30;
    w = std::max(w, e);
  }
  return w;
}

// Names of the kernels check() has run.
std::set<std::string>& ran_names() {
  static std::set<std::string> s;
  return s;
}

std::set<std::string>& skipped() {
  static std::set<std::string> s;
  return s;
}

// Runs every kernel of the list that accepts the shape here; returns how many ran.
int check(const Shape& shape, const Options& o = {}, unsigned seed = 1) {
  const ConvParams base = make(shape);
  const int icg = base.ic / base.groups;
  const long K = long(icg) * base.kh * base.kw;
  const int ihw = base.ih * base.iw, ohw = base.oh * base.ow;
  const auto src = random(std::size_t(base.n) * base.ic * ihw, seed);
  const auto w = random(std::size_t(base.oc) * K, seed + 1);
  const auto bias = random(base.oc, seed + 2);
  const auto res = random(std::size_t(base.n) * base.oc * ohw, seed + 3);
  std::vector<float> want(res.size());
  conv_ref_nchw(base, src.data(), w.data(), o.bias ? bias.data() : nullptr,
                o.residual ? res.data() : nullptr, o.ep, want.data());

  ConvParams p = base;
  p.src_stride = o.src_pad ? base.ic + 2 * o.src_pad : 0;
  p.dst_stride = o.dst_pad ? base.oc + 2 * o.dst_pad : 0;
  p.res_stride = o.res_pad ? base.oc + 2 * o.res_pad : 0;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  std::vector<float> src_nhwc(std::size_t(base.n) * ihw * ss, NAN), res_nhwc(res.size() / base.oc * rs, NAN);
  to_nhwc(src.data(), base.n, base.ic, ihw, ss, o.src_pad, src_nhwc.data());
  to_nhwc(res.data(), base.n, base.oc, ohw, rs, o.res_pad, res_nhwc.data());
  ThreadPool pool = make_thread_pool(o.threads);

  std::size_t count;
  const ConvKernel* all = conv_kernels(&count);
  int ran = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const ConvKernel& kern = all[k];
    std::string why;
    if (!kern.accepts(p, host_cpu(), &why)) {
      if (skipped().insert(std::string(kern.name) + ": " + why).second)
        std::printf("note: %s skipped: %s\n", kern.name, why.c_str());
      continue;
    }
    std::vector<float> packed(kern.packed_floats(p) + 1);
    kern.pack(p, w.data(), packed.data());
    const std::size_t ws = kern.workspace_bytes(p);
    std::unique_ptr<float, decltype(&std::free)> work(
        static_cast<float*>(ws ? std::aligned_alloc(64, (ws + 63) / 64 * 64) : nullptr), std::free);
    std::vector<float> dst(std::size_t(base.n) * ohw * ds, -7.f);
    ConvArgs a;
    a.src = src_nhwc.data() + o.src_pad;
    a.weights = packed.data();
    a.bias = o.bias ? bias.data() : nullptr;
    a.residual = o.residual ? res_nhwc.data() + o.res_pad : nullptr;
    a.dst = dst.data() + o.dst_pad;
    a.epilogue = o.ep;
    a.workspace = work.get();
    kern.run(p, a, pool.get());
    std::vector<float> got(want.size());
    to_nchw(dst.data(), base.n, base.oc, ohw, ds, o.dst_pad, got.data());
    EXPECT_LE(worst(got, want, K), 1.0) << kern.name << " ic=" << p.ic << " oc=" << p.oc
                                        << " " << p.kh << "x" << p.kw << " s" << p.sh << " g"
                                        << p.groups << " act=" << int(o.ep.act);
    // Nothing outside the destination slice was written.
    long outside = 0;
    for (long q = 0; q < long(base.n) * ohw; ++q)
      for (long c = 0; c < ds; ++c)
        outside += (c < o.dst_pad || c >= o.dst_pad + p.oc) && dst[q * ds + c] != -7.f;
    EXPECT_EQ(outside, 0) << kern.name << " wrote outside the dst slice";
    ran_names().insert(kern.name);
    ++ran;
  }
  return ran;
}

TEST(Conv, Basic) {
  EXPECT_GE(check({.ic = 7, .ih = 9, .iw = 11, .oc = 17, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}), 2);
  check({.ic = 1, .ih = 5, .iw = 5, .oc = 1, .kh = 3, .kw = 3});
  check({.ic = 3, .ih = 6, .iw = 7, .oc = 3, .kh = 1, .kw = 1});
  check({.ic = 1000, .ih = 3, .iw = 2, .oc = 7, .kh = 1, .kw = 1});
  check({.ic = 17, .ih = 3, .iw = 5, .oc = 1000, .kh = 1, .kw = 1});
  check({.n = 2, .ic = 16, .ih = 7, .iw = 7, .oc = 32, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
}

TEST(Conv, StridesPadsDilation) {
  check({.ic = 3, .ih = 29, .iw = 31, .oc = 64, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3});
  check({.ic = 5, .ih = 13, .iw = 11, .oc = 19, .kh = 3, .kw = 3, .s = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  check({.ic = 8, .ih = 12, .iw = 9, .oc = 24, .kh = 3, .kw = 2, .s = 2, .pt = 0, .pl = 2, .pb = 1, .pr = 0});
  check({.ic = 6, .ih = 11, .iw = 13, .oc = 18, .kh = 3, .kw = 3, .d = 2, .pt = 2, .pl = 1, .pb = 2, .pr = 3});
  check({.ic = 4, .ih = 3, .iw = 3, .oc = 5, .kh = 5, .kw = 5, .pt = 4, .pl = 4, .pb = 4, .pr = 4});
  check({.ic = 64, .ih = 15, .iw = 15, .oc = 64, .kh = 1, .kw = 1, .s = 2});
}

// 16 or fewer output channels (a text detector's heads, 16-channel stems) on 16-wide panels:
// M tails of every length up to the 14-row tile, a K split, groups, strides, a residual.
TEST(Conv, NarrowOutputs) {
  ran_names().clear();
  const Options o{.ep = {Act::relu}, .residual = true, .threads = 2};
  for (int iw : {13, 14, 15, 19, 27})
    check({.ic = 64, .ih = 5, .iw = iw, .oc = 16, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
  check({.ic = 3, .ih = 33, .iw = 35, .oc = 16, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
  check({.ic = 900, .ih = 6, .iw = 9, .oc = 11, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
  check({.ic = 32, .ih = 7, .iw = 9, .oc = 24, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 2}, o);
  check({.ic = 16, .ih = 9, .iw = 9, .oc = 1, .kh = 1, .kw = 1});
  if (host_cpu().has_avx512()) {
    EXPECT_TRUE(ran_names().count("conv_f32_igemm_14x16_avx512"));
  }
}

// Dilations so wide that most tiles see some taps only as padding (the kernels skip those):
// DeepLabV3's ASPP (3x3 dilated by 12 on 14x14), at a long K that splits into blocks, with a
// residual and an activation, on one and two threads; and off-centre taps that miss entirely.
TEST(Conv, TapsOnlyPaddingForSomeTiles) {
  for (int threads : {1, 2}) {
    const Options o{.ep = {Act::relu}, .residual = true, .threads = threads};
    check({.ic = 40, .ih = 14, .iw = 14, .oc = 72, .kh = 3, .kw = 3, .d = 12, .pt = 12, .pl = 12, .pb = 12, .pr = 12}, o);
    check({.ic = 640, .ih = 14, .iw = 14, .oc = 80, .kh = 3, .kw = 3, .d = 12, .pt = 12, .pl = 12, .pb = 12, .pr = 12}, o);
    check({.n = 2, .ic = 24, .ih = 9, .iw = 11, .oc = 16, .kh = 3, .kw = 3, .d = 7, .pt = 7, .pl = 7, .pb = 7, .pr = 7}, o);
    check({.ic = 16, .ih = 6, .iw = 6, .oc = 32, .kh = 3, .kw = 3, .d = 9, .pt = 9, .pl = 9, .pb = 9, .pr = 9}, o);
  }
}

TEST(Conv, Groups) {
  check({.ic = 6, .ih = 7, .iw = 9, .oc = 9, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 3});
  check({.ic = 34, .ih = 6, .iw = 5, .oc = 34, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .groups = 2});
  check({.ic = 64, .ih = 5, .iw = 5, .oc = 128, .kh = 1, .kw = 1, .groups = 2});
}

TEST(Conv, Depthwise) {
  std::string log;
  ConvParams dwp = make({.ic = 32, .ih = 8, .iw = 8, .oc = 32, .kh = 3, .kw = 3, .groups = 32});
  const ConvKernel* k = conv_select(dwp, host_cpu(), &log);
  ASSERT_NE(k, nullptr);
  if (host_cpu().has_avx2_fma()) {
    EXPECT_NE(std::string(k->name).find("dw"), std::string::npos) << log;
  }
  EXPECT_EQ(conv_find(k->name), k);
  for (int c : {1, 3, 17, 32, 40, 100}) {
    check({.ic = c, .ih = 9, .iw = 10, .oc = c, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = c});
    check({.ic = c, .ih = 11, .iw = 9, .oc = c, .kh = 5, .kw = 5, .s = 2, .pt = 2, .pl = 2, .pb = 2, .pr = 2, .groups = c});
  }
  check({.n = 2, .ic = 24, .ih = 9, .iw = 7, .oc = 24, .kh = 3, .kw = 3, .s = 2, .d = 2, .pt = 0, .pl = 3, .pb = 2, .pr = 1, .groups = 24});
  check({.ic = 8, .ih = 7, .iw = 7, .oc = 16, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 8});  // multiplier 2
}

// The register-tiled interior path: its edges (tiny and narrow images, 1x1 spatial, asymmetric
// pads), row tails, channel tails, 5x5, residual and every epilogue, slices and two threads.
TEST(Conv, DepthwiseTiled) {
  for (int c : {8, 20, 64, 72}) {
    for (int s : {1, 2}) {
      check({.ic = c, .ih = 1, .iw = 1, .oc = c, .kh = 3, .kw = 3, .s = s, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = c});
      check({.ic = c, .ih = 5, .iw = 2, .oc = c, .kh = 3, .kw = 3, .s = s, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = c});
      check({.ic = c, .ih = 4, .iw = 3, .oc = c, .kh = 3, .kw = 3, .s = s, .groups = c});
      check({.ic = c, .ih = 13, .iw = 23, .oc = c, .kh = 3, .kw = 3, .s = s, .pt = 0, .pl = 0, .pb = 1, .pr = 1, .groups = c});
      check({.ic = c, .ih = 12, .iw = 19, .oc = c, .kh = 5, .kw = 5, .s = s, .pt = 2, .pl = 2, .pb = 2, .pr = 2, .groups = c});
    }
  }
  // Activations in the fast path's registers (none, relu, clip, leaky relu, hard swish) and
  // after its stores (sigmoid, silu), 3x3 and 5x5 (MobileNetV3), with and without bf16 rounding.
  const Epilogue eps[] = {{Act::none}, {Act::relu}, {Act::clip, 0.f, 6.f}, {Act::leaky_relu, 0.1f}, {Act::hard_swish},
                          {Act::sigmoid}, {Act::silu}, {Act::hard_swish, 0.f, 0.f, true}};
  for (const Epilogue& e : eps)
    for (int s : {1, 2}) {
      const Options o{.ep = e, .residual = s == 1, .src_pad = 3, .dst_pad = 2, .res_pad = 5, .threads = 2};
      check({.n = 2, .ic = 48, .ih = 11, .iw = 17, .oc = 48, .kh = 3, .kw = 3, .s = s, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 48}, o);
      check({.n = 3, .ic = 200, .ih = 7, .iw = 7, .oc = 200, .kh = 3, .kw = 3, .s = s, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 200}, o);
      check({.n = 2, .ic = 40, .ih = 13, .iw = 14, .oc = 40, .kh = 5, .kw = 5, .s = s, .pt = 2, .pl = 2, .pb = 2, .pr = 2, .groups = 40}, o);
    }
}

TEST(Conv, Gemm) {
  for (int m : {1, 3, 16}) check({.n = m, .ic = 2048, .oc = 1000});
  check({.n = 7, .ic = 5, .oc = 33});
}

TEST(Conv, Epilogues) {
  const Shape s{.ic = 16, .ih = 7, .iw = 9, .oc = 24, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  const Shape t{.ic = 16, .ih = 7, .iw = 9, .oc = 21, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  const Shape dws{.ic = 21, .ih = 7, .iw = 9, .oc = 21, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 21};
  const Epilogue eps[] = {{Act::none}, {Act::relu}, {Act::clip, 0.f, 0.5f}, {Act::leaky_relu, 0.1f},
                          {Act::sigmoid}, {Act::hard_sigmoid, 0.2f, 0.5f}, {Act::hard_swish}, {Act::tanh},
                          {Act::gelu}, {Act::gelu, 1.f}, {Act::silu}};
  for (const Epilogue& e : eps)
    for (bool res : {false, true})
      for (const Shape& sh : {s, t, dws}) {
        check(sh, {.ep = e, .bias = true, .residual = res});
        check(sh, {.ep = e, .bias = false, .residual = res});
      }
}

TEST(Conv, ChannelSlices) {
  const Options o{.ep = {Act::relu}, .residual = true, .src_pad = 3, .dst_pad = 2, .res_pad = 5};
  check({.ic = 7, .ih = 6, .iw = 5, .oc = 17, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
  check({.ic = 32, .ih = 6, .iw = 5, .oc = 40, .kh = 1, .kw = 1}, o);
  check({.ic = 19, .ih = 6, .iw = 5, .oc = 19, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .groups = 19}, o);
  check({.n = 3, .ic = 64, .oc = 50}, o);
}

// Long K (panel-outer order), many small taps (packed rows), residual and channel slices.
TEST(Conv, LongK) {
  const Options dense{.ep = {Act::relu}, .residual = true};
  const Options slices{.ep = {Act::relu}, .residual = true, .src_pad = 3, .dst_pad = 2, .res_pad = 5};
  for (const Options& o : {dense, slices}) {
    check({.ic = 300, .ih = 5, .iw = 6, .oc = 40, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
    check({.ic = 64, .ih = 8, .iw = 7, .oc = 200, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
    check({.ic = 8, .ih = 9, .iw = 11, .oc = 130, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3}, o);
    check({.n = 2, .ic = 1500, .oc = 70}, o);
  }
}

// 1x1 convs long enough to be split along K (partial sums kept in dst): channel chunks with a
// short last one, strided and dense sources, partial panels, every epilogue kind applied only
// after the last block, slices, and both 64- and 32-wide panels.
TEST(Conv, KSplit) {
  const Epilogue eps[] = {{Act::relu}, {Act::sigmoid}, {Act::hard_swish}, {Act::clip, -0.5f, 0.5f}};
  for (const Epilogue& e : eps) {
    const Options o{.ep = e, .residual = true, .src_pad = 1, .dst_pad = 3, .res_pad = 2, .threads = 2};
    EXPECT_GE(check({.n = 2, .ic = 700, .ih = 5, .iw = 7, .oc = 64, .kh = 1, .kw = 1}, o), 2);
    check({.ic = 300, .ih = 9, .iw = 8, .oc = 70, .kh = 1, .kw = 1, .s = 2}, o);
    check({.n = 3, .ic = 513, .oc = 1000}, {.ep = e, .threads = 2});
    // Multi-tap convs with few tiles split too: whole taps, merged kernel rows, channel chunks.
    check({.ic = 64, .ih = 6, .iw = 7, .oc = 128, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
    check({.ic = 12, .ih = 9, .iw = 8, .oc = 64, .kh = 11, .kw = 5, .pt = 5, .pl = 2, .pb = 5, .pr = 2}, o);
    check({.ic = 520, .ih = 4, .iw = 5, .oc = 64, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
  }
}

// The residual may be the destination itself (an in-place add): the K split must not keep
// partial sums in a buffer the epilogue still has to read.
TEST(Conv, ResidualInPlace) {
  const ConvParams p = make({.n = 2, .ic = 600, .ih = 6, .iw = 5, .oc = 128, .kh = 1, .kw = 1});
  const long K = p.ic, M = long(p.n) * p.oh * p.ow;
  const auto src = random(std::size_t(M) * p.ic, 11), w = random(std::size_t(p.oc) * K, 12);
  const auto res = random(std::size_t(M) * p.oc, 13);
  // Reference: the same kernel with a separate residual buffer is checked against the
  // reference elsewhere; here NHWC 1x1 is a plain GEMM, computed directly.
  std::vector<float> want(res.size());
  for (long m = 0; m < M; ++m)
    for (int k = 0; k < p.oc; ++k) {
      double acc = res[m * p.oc + k];
      for (long c = 0; c < K; ++c) acc += double(src[m * K + c]) * w[k * K + c];
      want[m * p.oc + k] = float(acc);
    }
  ThreadPool pool = make_thread_pool(2);
  std::size_t count;
  const ConvKernel* all = conv_kernels(&count);
  int ran = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (!all[i].accepts(p, host_cpu(), nullptr)) continue;
    std::vector<float> packed(all[i].packed_floats(p) + 1), work(all[i].workspace_bytes(p) / 4 + 16);
    all[i].pack(p, w.data(), packed.data());
    std::vector<float> dst = res;
    ConvArgs a;
    a.src = src.data(), a.weights = packed.data(), a.residual = dst.data(), a.dst = dst.data();
    a.workspace = work.data();
    all[i].run(p, a, pool.get());
    EXPECT_LE(worst(dst, want, K), 1.0) << all[i].name;
    ++ran;
  }
  EXPECT_GE(ran, 2);
}

// Winograd F(4x4,3x3): channel tails in both transforms, partial edge tiles, asymmetric pads,
// several tile blocks and panels, every epilogue after the output transform, slices, threads.
TEST(Conv, Winograd) {
  ran_names().clear();
  const Epilogue eps[] = {{Act::none}, {Act::relu}, {Act::clip, -0.5f, 0.5f}, {Act::leaky_relu, 0.1f},
                          {Act::sigmoid}, {Act::hard_swish}};
  for (const Epilogue& e : eps) {
    const Options o{.ep = e, .residual = true, .src_pad = 3, .dst_pad = 2, .res_pad = 5, .threads = 2};
    check({.n = 4, .ic = 33, .ih = 7, .iw = 9, .oc = 70, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
    check({.n = 3, .ic = 64, .ih = 13, .iw = 11, .oc = 64, .kh = 3, .kw = 3, .pt = 0, .pl = 2, .pb = 1, .pr = 0}, o);
    check({.n = 6, .ic = 200, .ih = 6, .iw = 6, .oc = 40, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, {.ep = e});
  }
  check({.n = 2, .ic = 64, .ih = 40, .iw = 40, .oc = 130, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1},
        {.ep = {Act::relu}, .residual = true, .threads = 2});
  check({.n = 24, .ic = 32, .ih = 3, .iw = 3, .oc = 32, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  for (const char* f : {"f4x3", "f2x3"}) {
    if (host_cpu().has_avx2_fma()) {
      EXPECT_TRUE(ran_names().count(std::string("conv_f32_winograd_") + f + "_avx2"));
    }
    if (host_cpu().has_avx512()) {
      EXPECT_TRUE(ran_names().count(std::string("conv_f32_winograd_") + f + "_avx512"));
    }
  }
  // Shapes where it would lose go to the direct kernels. Too few tiles per block for the
  // larger packed weights: F(4x4) at 256 channels, 14x14 (16 tiles) and 512 channels at any
  // batch (blocks of 12 tiles at most); F(2x2) at 512 channels, 7x7, batch 1 (16 tiles).
  const Shape c256{.ic = 256, .ih = 14, .iw = 14, .oc = 256, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  Shape c512{.n = 16, .ic = 512, .ih = 7, .iw = 7, .oc = 512, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  std::size_t count;
  const ConvKernel* all = conv_kernels(&count);
  for (std::size_t k = 0; k < count; ++k) {
    const std::string name = all[k].name;
    if (name.find("winograd") == std::string::npos) continue;
    auto takes = [&](const Shape& sh) { return all[k].accepts(make(sh), host_cpu(), nullptr); };
    EXPECT_FALSE(takes({.ic = 16, .ih = 8, .iw = 8, .oc = 64, .kh = 3, .kw = 3})) << name;
    EXPECT_FALSE(takes({.n = 64, .ic = 64, .ih = 4, .iw = 4, .oc = 64, .kh = 3, .kw = 3, .s = 2})) << name;
    EXPECT_FALSE(takes({.ic = 64, .ih = 4, .iw = 4, .oc = 64, .kh = 3, .kw = 3})) << name;
    if (name.find("avx512") == std::string::npos || !host_cpu().has_avx512()) continue;  // AVX-512 block sizes
    const bool f4 = name.find("f4x3") != std::string::npos;
    EXPECT_EQ(takes(c256), !f4) << name;
    EXPECT_EQ(takes(c512), !f4) << name;
    c512.n = 1;
    EXPECT_FALSE(takes(c512)) << name;
    c512.n = 16;
  }
}

TEST(Conv, TwoThreads) {
  const Options o{.ep = {Act::relu}, .residual = true, .threads = 2};
  check({.ic = 32, .ih = 14, .iw = 14, .oc = 48, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, o);
  check({.ic = 64, .ih = 14, .iw = 14, .oc = 16, .kh = 1, .kw = 1}, o);
  check({.n = 1, .ic = 512, .oc = 1000}, o);
  check({.ic = 40, .ih = 9, .iw = 9, .oc = 40, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1, .groups = 40}, o);
  // Small weights over several panels: each task takes every panel (M split only), ragged M.
  check({.n = 2, .ic = 64, .ih = 13, .iw = 11, .oc = 200, .kh = 1, .kw = 1}, o);
  // The stem on one panel (merged row pointers) and on two (packed rows), split over threads.
  check({.ic = 3, .ih = 29, .iw = 31, .oc = 64, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3}, o);
  check({.ic = 3, .ih = 29, .iw = 31, .oc = 128, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3}, o);
}

// A uint8 NHWC image source read as float(u) - offset[c] (input normalisation folded into the
// first conv), against the NCHW reference on the converted image: every kernel that accepts.
int check_u8(const Shape& shape, int threads, unsigned seed) {
  ConvParams p = make(shape);
  p.src_u8 = 1;
  const long K = long(p.ic / p.groups) * p.kh * p.kw;
  const int ihw = p.ih * p.iw, ohw = p.oh * p.ow;
  std::mt19937 rng(seed);
  std::vector<uint8_t> img(std::size_t(p.n) * ihw * p.ic);
  for (uint8_t& v : img) v = uint8_t(rng() & 255);
  const auto offset = random(p.ic, seed + 1);
  std::vector<float> nchw(img.size());
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.ic; ++c)
      for (int q = 0; q < ihw; ++q)
        nchw[(long(n) * p.ic + c) * ihw + q] = float(img[(long(n) * ihw + q) * p.ic + c]) - 100.f * offset[c];
  std::vector<float> off(p.ic);
  for (int c = 0; c < p.ic; ++c) off[c] = 100.f * offset[c];
  const auto w = random(std::size_t(p.oc) * K, seed + 2);
  const auto bias = random(p.oc, seed + 3);
  std::vector<float> want(std::size_t(p.n) * p.oc * ohw);
  const Epilogue ep{Act::relu};
  conv_ref_nchw(p, nchw.data(), w.data(), bias.data(), nullptr, ep, want.data());
  ThreadPool pool = make_thread_pool(threads);
  std::size_t count;
  const ConvKernel* all = conv_kernels(&count);
  int ran = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if (!all[k].accepts(p, host_cpu(), nullptr)) continue;
    std::vector<float> packed(all[k].packed_floats(p) + 1);
    all[k].pack(p, w.data(), packed.data());
    const std::size_t ws = all[k].workspace_bytes(p);
    std::unique_ptr<float, decltype(&std::free)> work(
        static_cast<float*>(ws ? std::aligned_alloc(64, (ws + 63) / 64 * 64) : nullptr), std::free);
    std::vector<float> dst(std::size_t(p.n) * ohw * p.oc, -7.f), got(want.size());
    ConvArgs a;
    a.src_u8 = img.data();
    a.src_offset = off.data();
    a.weights = packed.data();
    a.bias = bias.data();
    a.dst = dst.data();
    a.epilogue = ep;
    a.workspace = work.get();
    all[k].run(p, a, pool.get());
    to_nchw(dst.data(), p.n, p.oc, ohw, p.oc, 0, got.data());
    // Inputs are ~100x the float tests' scale.
    std::vector<float> scaled_got(got.size()), scaled_want(want.size());
    for (std::size_t i = 0; i < got.size(); ++i) scaled_got[i] = got[i] / 100.f, scaled_want[i] = want[i] / 100.f;
    EXPECT_LE(worst(scaled_got, scaled_want, K), 1.0) << all[k].name << " u8 " << p.kh << "x" << p.kw << " s" << p.sh;
    ++ran;
  }
  return ran;
}

TEST(Conv, Uint8Source) {
  const int vector_kernels = host_cpu().has_avx2_fma() ? 1 : 0;
  // ResNet's and MobileNet's stems, odd sizes, batches, and two threads.
  EXPECT_GE(check_u8({.n = 2, .ic = 3, .ih = 29, .iw = 31, .oc = 64, .kh = 7, .kw = 7, .s = 2, .pt = 3, .pl = 3, .pb = 3, .pr = 3}, 2, 5),
            1 + vector_kernels);
  EXPECT_GE(check_u8({.ic = 3, .ih = 17, .iw = 16, .oc = 32, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, 1, 6),
            1 + vector_kernels);
  EXPECT_GE(check_u8({.n = 3, .ic = 1, .ih = 9, .iw = 7, .oc = 5, .kh = 3, .kw = 3, .pt = 0, .pl = 2, .pb = 1, .pr = 0}, 2, 7),
            1 + vector_kernels);
  // Paths that cannot convert on the fly leave it to the reference (which always accepts).
  ConvParams grouped = make({.ic = 4, .ih = 5, .iw = 5, .oc = 4, .kh = 3, .kw = 3, .groups = 2});
  grouped.src_u8 = 1;
  std::string log;
  const ConvKernel* k = conv_select(grouped, host_cpu(), &log);
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "conv_f32_ref") << log;
  EXPECT_EQ(check_u8({.ic = 4, .ih = 5, .iw = 5, .oc = 4, .kh = 3, .kw = 3, .groups = 2}, 1, 8), 1);
}

TEST(Conv, SelectLogsRejections) {
  std::string log;
  CpuFeatures none;  // no vector ISA: only the reference remains
  const ConvKernel* k = conv_select(make({.ic = 8, .ih = 4, .iw = 4, .oc = 8}), none, &log);
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "conv_f32_ref");
  EXPECT_NE(log.find("kernel conv_f32_igemm_6x16_avx2 rejected: needs avx2+fma"), std::string::npos) << log;
  EXPECT_EQ(conv_find("no_such_kernel"), nullptr);
}

// Winograd steps aside for few output channels on few tiles, where the AVX-512 direct kernels
// measured faster (DenseNet's 128 -> 32 convs at 14x14), and keeps them in a batch of 16.
TEST(Conv, WinogradLeavesNarrowSmallConvsToDirectKernels) {
  CpuFeatures cpu = host_cpu();
  if (!cpu.has_avx512()) GTEST_SKIP() << "the rule concerns the AVX-512 kernels";
  std::string log;
  const Shape narrow{.ic = 128, .ih = 14, .iw = 14, .oc = 32, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  const ConvKernel* k = conv_select(make(narrow), cpu, &log);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(std::string(k->name).find("winograd"), std::string::npos) << k->name << "\n" << log;
  EXPECT_NE(log.find("under 64 output channels"), std::string::npos) << log;
  Shape batch = narrow;
  batch.n = 16;
  k = conv_select(make(batch), cpu, nullptr);
  ASSERT_NE(k, nullptr);
  EXPECT_NE(std::string(k->name).find("winograd"), std::string::npos) << k->name;
  Shape wide = narrow;
  wide.oc = 64;
  k = conv_select(make(wide), cpu, nullptr);
  ASSERT_NE(k, nullptr);
  EXPECT_NE(std::string(k->name).find("winograd"), std::string::npos) << k->name;
}

// The comparison must be able to fail: a wrong answer is caught.
TEST(Conv, ComparatorCatchesErrors) {
  std::vector<float> want(10, 1.f), got = want;
  EXPECT_LE(worst(got, want, 100), 1.0);
  got[3] += 0.01f;
  EXPECT_GT(worst(got, want, 100), 1.0);
}

}  // namespace
}  // namespace systolic::kernels

// The int8 depthwise template at 16 int32 lanes per vector (32 channels per step: the AVX-512
// kernel's blocking, permuted lane order and packing), with the zmm instructions emulated in
// scalar code, against qconv_u8s8_ref on any machine. Test-only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_vector.h"
#include "base/threadpool.h"
#include "kernels/qconv/qconv.h"
#include "kernels/qconv/qconv_dw.h"

namespace systolic::kernels {
namespace {

// What QDwAvx512 does, lane by lane, as the instructions define it.
struct QDwW16 {
  struct V {
    int32_t l[16];
  };
  static constexpr int W = 16, OX = 6;
  static V zero() { return V{}; }
  static V load32(const int32_t* p) {
    V v;
    std::memcpy(v.l, p, sizeof v.l);
    return v;
  }
  static void store32(int32_t* p, V v) { std::memcpy(p, v.l, sizeof v.l); }
  static int32_t pair(uint8_t a, uint8_t b) { return int32_t(uint32_t(a) | uint32_t(b) << 16); }

  // vpmovzxbw of 32 bytes, then vpunpck{l,h}wd: 128-bit lane k of the low half holds channels
  // 8k..8k+3, of the high half 8k+4..8k+7. One vector: 16 channels in order.
  template <int NV>
  static void pairs(const uint8_t* a, const uint8_t* b, V (&out)[NV]) {
    if constexpr (NV == 2) {
      for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 4; ++j) {
          out[0].l[4 * k + j] = pair(a[8 * k + j], b[8 * k + j]);
          out[1].l[4 * k + j] = pair(a[8 * k + 4 + j], b[8 * k + 4 + j]);
        }
    } else {
      for (int i = 0; i < 16; ++i) out[0].l[i] = pair(a[i], b[i]);
    }
  }
  template <int NV>
  static void singles(const uint8_t* a, V (&out)[NV]) {
    const uint8_t zeros[32] = {};
    pairs<NV>(a, zeros, out);
  }
  // vpermt2d with the kernel's index vectors.
  static void permute(V (&v)[2], const int (&i0)[16], const int (&i1)[16]) {
    int32_t all[32];
    std::memcpy(all, v[0].l, 64);
    std::memcpy(all + 16, v[1].l, 64);
    for (int i = 0; i < 16; ++i) v[0].l[i] = all[i0[i]], v[1].l[i] = all[i1[i]];
  }
  static void to_perm(V (&v)[2]) {
    permute(v, {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27},
            {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31});
  }
  static void from_perm(V (&v)[2]) {
    permute(v, {0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23},
            {8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31});
  }
  // vpmaddwd + vpaddd.
  static V madd(V acc, V x, const int16_t* w) {
    for (int i = 0; i < 16; ++i)
      acc.l[i] += int32_t(int16_t(x.l[i] & 0xFFFF)) * w[2 * i] + int32_t(int16_t(uint32_t(x.l[i]) >> 16)) * w[2 * i + 1];
    return acc;
  }
  // The zmm epilogue's lane arithmetic (vmaxps/vminps return the second operand on NaN), then
  // vpackusdw of the two vectors per 128-bit lane and vpmovwb.
  static void requant2(const V (&acc)[2], const V (&sc)[2], const QRequant& rq, uint8_t* dst) {
    auto q = [&](int32_t a, int32_t s_bits) {
      float s;
      std::memcpy(&s, &s_bits, 4);
      float t = float(a) * s;
      t = t > rq.lo ? t : rq.lo;
      t = t < rq.hi ? t : rq.hi;
      return int32_t(std::nearbyint(t)) + rq.zp;
    };
    auto sat = [](int32_t v) { return uint8_t(std::clamp(v, 0, 255)); };
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < 4; ++j) {
        dst[8 * k + j] = sat(q(acc[0].l[4 * k + j], sc[0].l[4 * k + j]));
        dst[8 * k + 4 + j] = sat(q(acc[1].l[4 * k + j], sc[1].l[4 * k + j]));
      }
  }
  // The helpers' vector forms equal their scalar forms (qconv tests), which stand in here.
  static void requant(V acc, const float* scale, const uint8_t* res, const QRequant& rq, uint8_t* dst) {
    qconv_requant_n(acc.l, 16, scale, res, rq, dst);
  }
  static void dequant(V acc, const float* scale, const float* res, const Epilogue& ep, float* dst) {
    qconv_dequant_n(acc.l, 16, scale, res, ep, dst);
  }
};

void run_w16(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) { qdw::run<QDwW16>(p, a, pool); }

struct Case {
  int n, c, ih, iw, k, s, d, pad;
  bool residual = false, out_f32 = false;
  int mid = 0, src_pad = 0, dst_pad = 0, threads = 1;
};

// The emulated kernel and qconv_u8s8_ref on the same NHWC operands: the same bytes.
void expect_same(const Case& t, unsigned seed) {
  QConvParams qp;
  ConvParams& p = qp.conv;
  p.n = t.n, p.ic = p.oc = p.groups = t.c, p.ih = t.ih, p.iw = t.iw, p.kh = p.kw = t.k;
  p.sh = p.sw = t.s, p.dh = p.dw = t.d, p.pad_t = p.pad_l = t.pad;
  p.oh = (t.ih + 2 * t.pad - t.d * (t.k - 1) - 1) / t.s + 1;
  p.ow = (t.iw + 2 * t.pad - t.d * (t.k - 1) - 1) / t.s + 1;
  p.src_stride = t.c + 2 * t.src_pad, p.dst_stride = t.c + 2 * t.dst_pad, p.res_stride = t.c;
  qp.out_f32 = t.out_f32;
  const long pix_in = long(t.n) * t.ih * t.iw, pix_out = long(t.n) * p.oh * p.ow;
  std::mt19937 rng(seed);
  std::vector<uint8_t> src(pix_in * p.src_stride), pad(t.c), res_u8(pix_out * t.c);
  for (auto& v : src) v = uint8_t(rng());
  for (auto& v : pad) v = uint8_t(rng());
  for (auto& v : res_u8) v = uint8_t(rng());
  std::vector<float> res_f(pix_out * t.c), scale(t.c);
  for (auto& v : res_f) v = float(int(rng() % 2001) - 1000) / 512.f;
  std::vector<int8_t> w(std::size_t(t.c) * t.k * t.k);
  for (auto& v : w) v = int8_t(int(rng() % 255) - 127);
  std::vector<int32_t> bias(t.c);
  for (int c = 0; c < t.c; ++c) {
    bias[c] = int32_t(rng() % 200001) - 100000;
    scale[c] = float(1 + rng() % 1000) / (3000.f * t.k * t.k);
  }
  QConvArgs a;
  a.src = src.data() + t.src_pad, a.pad = pad.data(), a.bias = bias.data(), a.scale = scale.data();
  a.residual = !t.residual ? nullptr : t.out_f32 ? static_cast<const void*>(res_f.data()) : res_u8.data();
  a.rq.res_scale = 0.37f, a.rq.res_zp = 100, a.rq.mid = t.mid, a.rq.zp = 70, a.rq.lo = -50.f, a.rq.hi = 170.f;
  a.rq.mid_lo[0] = -77.f, a.rq.mid_hi[0] = 178.f, a.rq.mid_scale[0] = 1.3f;
  a.rq.mid_lo[1] = -3.f, a.rq.mid_hi[1] = 252.f, a.rq.mid_scale[1] = 0.6f;
  a.ep.act = Act::relu;
  const std::size_t esz = t.out_f32 ? 4 : 1;
  auto run = [&](std::size_t (*bytes)(const QConvParams&), void (*pk)(const QConvParams&, const int8_t*, void*),
                 void (*fn)(const QConvParams&, const QConvArgs&, pthreadpool_t)) {
    AlignedBytes packed(bytes(qp) + 64);
    pk(qp, w.data(), packed.data());
    std::vector<uint8_t> dst(pix_out * p.dst_stride * esz, 0xEE);
    QConvArgs b = a;
    b.weights = packed.data();
    b.dst = dst.data() + t.dst_pad * esz;
    ThreadPool pool = make_thread_pool(t.threads);
    fn(qp, b, pool.get());
    return dst;
  };
  const QConvKernel* ref = qconv_find("qconv_u8s8_ref");
  ASSERT_NE(ref, nullptr);
  const std::vector<uint8_t> want = run(ref->packed_bytes, ref->pack, ref->run);
  const std::vector<uint8_t> got = run(qdw::packed_bytes<32>, qdw::pack<32>, run_w16);
  long bad = 0, first = -1;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && bad++ == 0) first = long(i);
  EXPECT_EQ(bad, 0) << bad << " bytes differ, first at byte " << first << " (n=" << t.n << " c=" << t.c << " "
                    << t.ih << "x" << t.iw << " k=" << t.k << " s=" << t.s << " d=" << t.d << " pad=" << t.pad
                    << " residual=" << t.residual << " f32=" << t.out_f32 << " mid=" << t.mid << ")";
}

TEST(QConvDepthwiseW16, Channels) {
  for (int c : {1, 15, 16, 17, 31, 32, 33, 48, 64, 80, 144})
    for (int s : {1, 2}) expect_same({1, c, 9, 16, 3, s, 1, 1}, unsigned(c * 3 + s));
}

TEST(QConvDepthwiseW16, KernelsStridesDilations) {
  for (int c : {32, 57}) {
    expect_same({2, c, 11, 17, 5, 1, 1, 2}, 1);
    expect_same({1, c, 13, 31, 5, 2, 1, 2}, 2);
    expect_same({1, c, 12, 11, 3, 1, 2, 2}, 3);
    expect_same({1, c, 6, 17, 3, 1, 1, 2}, 4);
    expect_same({1, c, 13, 13, 7, 3, 1, 3}, 5);
    expect_same({1, c, 2, 3, 3, 1, 1, 1}, 6);
  }
}

TEST(QConvDepthwiseW16, EpiloguesSlicesThreads) {
  for (int mid : {0, 1, 2, 3})
    for (bool f32 : {false, true}) {
      Case t{2, 80, 7, 15, 3, 1, 1, 1};
      t.residual = true, t.out_f32 = f32, t.mid = f32 ? 0 : mid, t.src_pad = 3, t.dst_pad = 5, t.threads = 2;
      expect_same(t, unsigned(mid * 2 + f32));
      t.residual = false, t.c = 48, t.s = 2;
      expect_same(t, unsigned(mid * 2 + f32 + 8));
    }
}

}  // namespace
}  // namespace systolic::kernels

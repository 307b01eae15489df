// AMX int8 implicit-GEMM conv run (tdpbusd, 32 pixels x 32 channels per tile step) and its
// start-up self-test: one conv with M, N and K tails against the reference, bytes equal.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the epilogue
// is inlined into the tile loop: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <random>
#include <vector>

#include "base/aligned_vector.h"
#include "kernels/qconv/qconv_amx.h"
#include "kernels/qconv/qvec_amx.h"

namespace systolic::kernels {

extern const QConvKernel qconv_u8s8_ref;

void qconv_igemm_32x32_amx_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qamx::run<QTilesAmx>(p, a, pool);
}

bool qconv_amx_self_test() {
  QConvParams qp;
  ConvParams& p = qp.conv;
  p.n = 1, p.ic = 70, p.ih = 9, p.iw = 7, p.oc = 40, p.kh = p.kw = 3, p.sh = p.sw = 1, p.dh = p.dw = 1;
  p.pad_t = p.pad_l = 1, p.groups = 1, p.oh = 9, p.ow = 7;
  std::mt19937 rng(1);
  std::vector<uint8_t> src(long(p.ih) * p.iw * p.ic), pad(p.ic, 3);
  std::vector<int8_t> w(long(p.oc) * p.ic * 9);
  std::vector<int32_t> bias(p.oc);
  std::vector<float> scale(p.oc);
  for (auto& v : src) v = uint8_t(rng());
  for (auto& v : w) v = int8_t(rng());
  for (auto& v : bias) v = int32_t(rng() % 20001) - 10000;
  for (auto& v : scale) v = 1.f / float(2000 + rng() % 3000);
  QConvArgs a;
  a.src = src.data(), a.pad = pad.data(), a.bias = bias.data(), a.scale = scale.data();
  a.rq.lo = -3.f, a.rq.hi = 252.f, a.rq.zp = 3;
  std::vector<uint8_t> got(long(p.oh) * p.ow * p.oc), want(got.size(), 1);
  AlignedBytes wa(qamx::packed_bytes(qp)), wr(qconv_u8s8_ref.packed_bytes(qp));
  qamx::pack(qp, w.data(), wa.data());
  qconv_u8s8_ref.pack(qp, w.data(), wr.data());
  a.weights = wa.data(), a.dst = got.data();
  qconv_igemm_32x32_amx_run(qp, a, nullptr);
  a.weights = wr.data(), a.dst = want.data();
  qconv_u8s8_ref.run(qp, a, nullptr);
  return got == want;
}

}  // namespace systolic::kernels

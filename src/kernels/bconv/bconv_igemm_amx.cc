// AMX-BF16 implicit-GEMM conv run (tdpbf16ps, 32 pixels x 32 channels per tile step) and its
// start-up self-test: one conv with M, N and K tails against the bf16 reference.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the epilogue
// is inlined into the tile loop: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>
#include <random>
#include <vector>

#include "kernels/bconv/bconv_amx.h"
#include "kernels/bconv/bvec_amx.h"

namespace systolic::kernels {

extern const ConvKernel conv_bf16_ref;

void bconv_igemm_32x32_amx_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  bamx::run<BTilesAmx>(p, a, pool);
}

bool bconv_amx_self_test() {
  ConvParams p;
  p.n = 1, p.ic = 70, p.ih = 9, p.iw = 7, p.oc = 40, p.kh = p.kw = 3, p.sh = p.sw = 1, p.dh = p.dw = 1;
  p.pad_t = p.pad_l = 1, p.groups = 1, p.oh = 9, p.ow = 7;
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> src(long(p.ih) * p.iw * p.ic), w(long(p.oc) * p.ic * 9), bias(p.oc);
  for (auto& v : src) v = d(rng);
  for (auto& v : w) v = d(rng);
  for (auto& v : bias) v = d(rng);
  std::vector<float> got(long(p.oh) * p.ow * p.oc), want(got.size());
  std::vector<float> wa(bamx::packed_floats(p)), wr(conv_bf16_ref.packed_floats(p));
  bamx::pack(p, w.data(), wa.data());
  conv_bf16_ref.pack(p, w.data(), wr.data());
  ConvArgs a;
  a.src = src.data(), a.bias = bias.data();
  a.weights = wa.data(), a.dst = got.data();
  bconv_igemm_32x32_amx_run(p, a, nullptr);
  a.weights = wr.data(), a.dst = want.data();
  conv_bf16_ref.run(p, a, nullptr);
  // Both sum the same bf16 products in fp32, in different orders: a few ulp of the sums apart.
  double scale = 0, err = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    scale = std::max(scale, double(std::fabs(want[i]))), err = std::max(err, double(std::fabs(got[i] - want[i])));
  return scale > 0 && err <= 1e-4 * scale;
}

}  // namespace systolic::kernels

// AVX2 (8-lane) softmax / layer normalization run.
#include "kernels/gemm/vec_avx2.h"
#include "kernels/norm/norm_impl.h"

namespace systolic::kernels {

namespace {

struct NormAvx2 : VecAvx2 {
  static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
};

}  // namespace

void norm_avx2_run(const NormParams& p, const float* x, const float* scale, const float* bias, float* y,
                   pthreadpool_t pool) {
  norm::run<NormAvx2>(p, x, scale, bias, y, pool);
}

}  // namespace systolic::kernels

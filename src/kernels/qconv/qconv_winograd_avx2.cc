// AVX2 int8 Winograd F(2x2, 3x3) and F(3x3, 3x3) conv runs (qconv_winograd_run.h): 16 channels
// of input transform at a time, the element GEMMs on the AVX2 tile (6 tiles x 16 channels,
// vpmaddwd + vpaddd).
#include "kernels/qconv/qconv_winograd_run.h"
#include "kernels/qconv/qvec_avx2.h"

namespace systolic::kernels {
namespace {

struct WinogradAvx2 {
  using T = QVecAvx2;
  using S = qwinograd::Ymm;
  typedef int16_t I16 __attribute__((vector_size(32)));
  typedef uint32_t U32 __attribute__((vector_size(32)));
  typedef int32_t S32 __attribute__((vector_size(32)));
  static I16 widen16(const uint8_t* p) {
    return I16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

}  // namespace

void qconv_winograd_f2x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F2, WinogradAvx2>(qp, a, pool);
}

void qconv_winograd_f3x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F3, WinogradAvx2>(qp, a, pool);
}

}  // namespace systolic::kernels

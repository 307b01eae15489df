// AVX512-VNNI int8 Winograd F(3x3, 3x3) conv run (qconv_winograd_run.h): 32 channels of input
// transform at a time, the element GEMMs on a 6 tiles x 64 channels tile (24 zmm int32
// accumulators, vpdpwssd), the four-column requantizing epilogue.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the epilogue
// is inlined: a false positive (as in qconv_igemm_avx512vnni.cc).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/qconv/qconv_winograd_run.h"
#include "kernels/qconv/qvec_avx512vnni.h"

namespace systolic::kernels {
namespace {

struct WinogradAvx512Vnni {
  using T = QVecAvx512Wssd;
  using S = qwinograd::Zmm;
  typedef int16_t I16 __attribute__((vector_size(64)));
  typedef uint32_t U32 __attribute__((vector_size(64)));
  typedef int32_t S32 __attribute__((vector_size(64)));
  static I16 widen16(const uint8_t* p) {
    return I16(_mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
  }
};

}  // namespace

void qconv_winograd_f3x3_avx512vnni_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F3, WinogradAvx512Vnni>(qp, a, pool);
}

}  // namespace systolic::kernels

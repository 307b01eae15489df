// AVX-VNNI int8 Winograd F(3x3, 3x3) conv run (qconv_winograd_run.h): AVX2's transforms and
// tile (6 tiles x 16 channels) with each pair of int16 products summed into its lane by one
// vpdpwssd.
#include "kernels/qconv/qconv_winograd_run.h"
#include "kernels/qconv/qvec_avxvnni.h"

namespace systolic::kernels {
namespace {

struct WinogradAvxVnni {
  using T = QVecAvxVnniWssd;
  using S = qwinograd::Ymm;
  typedef int16_t I16 __attribute__((vector_size(32)));
  typedef uint32_t U32 __attribute__((vector_size(32)));
  typedef int32_t S32 __attribute__((vector_size(32)));
  static I16 widen16(const uint8_t* p) {
    return I16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

}  // namespace

void qconv_winograd_f3x3_avxvnni_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F3, WinogradAvxVnni>(qp, a, pool);
}

}  // namespace systolic::kernels

// The AMX tile driver (qconv_amx.h) with the tile unit emulated in scalar code (tdpbusd as the
// instruction set reference defines it) and the AVX2 epilogue, so the AMX kernel's blocking,
// K steps, padding and shared K4 packing run against the reference on any AVX2 machine.
// Test-only: the qconv tests add this kernel to the list they check.
#include <cstring>

#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_amx.h"
#include "kernels/qconv/qvec_epilogue_avx2.h"

namespace systolic::kernels {
namespace {

struct QTilesEmulated : QEpilogueAvx2 {
  using A = uint8_t;
  static void widen(const uint8_t* s, uint8_t* d, int n) { std::memcpy(d, s, n); }

  static thread_local uint8_t tmm[8][16][64];
  static void config() { std::memset(tmm, 0xA5, sizeof tmm); }  // tile contents start undefined
  template <int t> static void tzero() { std::memset(tmm[t], 0, sizeof tmm[t]); }
  template <int t> static void tload(const void* p, long ld) {
    for (int r = 0; r < 16; ++r) std::memcpy(tmm[t][r], static_cast<const uint8_t*>(p) + r * ld, 64);
  }
  template <int t> static void tstore(void* p, long ld) {
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<uint8_t*>(p) + r * ld, tmm[t][r], 64);
  }
  // C[m][n] += sum over K-quads k and bytes e of u8(A[m][4k+e]) * s8(B[k][4n+e]), int32 wrapping.
  template <int c, int a, int b> static void dot() {
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        int32_t acc;
        std::memcpy(&acc, &tmm[c][m][4 * n], 4);
        for (int k = 0; k < 16; ++k)
          for (int e = 0; e < 4; ++e)
            acc += int32_t(tmm[a][m][4 * k + e]) * int32_t(int8_t(tmm[b][k][4 * n + e]));
        std::memcpy(&tmm[c][m][4 * n], &acc, 4);
      }
  }
  static void release() {}
};

thread_local uint8_t QTilesEmulated::tmm[8][16][64];

void run_emulated(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) { qamx::run<QTilesEmulated>(p, a, pool); }

bool accepts_emulated(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  if (p.conv.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  return conv_well_formed(p.conv, why);
}

}  // namespace

extern const QConvKernel qconv_u8s8_igemm_32x32_amxemulated_avx2 = {
    "qconv_u8s8_igemm_32x32_amxemulated_avx2", accepts_emulated, qamx::packed_bytes,
    qamx::pack, qamx::workspace_bytes, run_emulated};

}  // namespace systolic::kernels

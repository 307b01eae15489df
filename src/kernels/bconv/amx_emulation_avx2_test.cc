// The bf16 tile driver (bconv_amx.h) with the tile unit emulated in scalar code (tdpbf16ps: per
// fp32 lane, the two bf16 products of a K pair added to the accumulator) and the AVX2
// epilogue, so the AMX-BF16 kernel's blocking, K steps, padding and shared K2 packing run
// against the reference on any AVX2 machine. Test-only: the bconv tests add this kernel.
#include <cstring>

#include "kernels/bconv/bconv_amx.h"
#include "kernels/conv/conv_util.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {
namespace {

struct BTilesEmulated : VecAvx2 {
  static void to_bf16(const float* s, uint16_t* d, int n) {
    for (int i = 0; i < n; ++i) d[i] = bf16_bits(s[i]);
  }
  static thread_local uint8_t tmm[8][16][64];
  static void config() { std::memset(tmm, 0xA5, sizeof tmm); }  // tile contents start undefined
  template <int t> static void tzero() { std::memset(tmm[t], 0, sizeof tmm[t]); }
  template <int t> static void tload(const void* p, long ld) {
    for (int r = 0; r < 16; ++r) std::memcpy(tmm[t][r], static_cast<const uint8_t*>(p) + r * ld, 64);
  }
  template <int t> static void tstore(void* p, long ld) {
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<uint8_t*>(p) + r * ld, tmm[t][r], 64);
  }
  static float value(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16_value(h);
  }
  // C[m][n] += sum over K-pairs k of A[m][2k] B[k][2n] + A[m][2k+1] B[k][2n+1] (fp32).
  template <int c, int a, int b> static void dot() {
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float acc;
        std::memcpy(&acc, &tmm[c][m][4 * n], 4);
        for (int k = 0; k < 16; ++k)
          acc += value(&tmm[a][m][4 * k]) * value(&tmm[b][k][4 * n]) +
                 value(&tmm[a][m][4 * k + 2]) * value(&tmm[b][k][4 * n + 2]);
        std::memcpy(&tmm[c][m][4 * n], &acc, 4);
      }
  }
  static void release() {}
};

thread_local uint8_t BTilesEmulated::tmm[8][16][64];

void run_emulated(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) { bamx::run<BTilesEmulated>(p, a, pool); }

bool accepts_emulated(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  if (p.src_u8) return conv_reject(why, "a uint8 image source is the fp32 family's");
  return conv_well_formed(p, why, true);
}

}  // namespace

extern const ConvKernel conv_bf16_igemm_32x32_amxemulated_avx2 = {
    "conv_bf16_igemm_32x32_amxemulated_avx2", accepts_emulated, bamx::packed_floats, bamx::pack,
    bamx::workspace_bytes, run_emulated};

}  // namespace systolic::kernels

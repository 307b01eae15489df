// CPU features and cache sizes of the host, detected once with cpuinfo.
#pragma once
#include <cstddef>
#include <string>

namespace systolic {

// Passed by value into kernels and dispatch: kernels never query the OS themselves.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512bf16 = false;
  bool avx512vnni = false;
  bool avx512vbmi = false;  // vpermi2b: byte permutes across a register pair (uint8 tables)
  bool avx_vnni = false;  // VEX-encoded vpdpbusd on ymm (Alder Lake, Zen 5 and later)
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  // Where avx512bf16 is: vdpbf16ps and vfmadd231ps throughput on one core (GFLOP/s), measured
  // once at detection (bf16_rate_avx512bf16.cc); zero: not measured. A bf16 plan takes the
  // vdpbf16ps kernels only where dpbf16ps > fma.
  struct Bf16Rate {
    double dpbf16ps = 0, fma = 0;
    // Measured, and vdpbf16ps no faster: bf16 plans take the fp32 kernels.
    bool fma_wins() const { return fma > 0 && dpbf16ps <= fma; }
  } bf16_rate;
  // An AMD core (Zen), whose L3 is its core complex's own: where the int8 Winograd's weights
  // stream from L3 at batch 1, the Zen 4 measured the other way round from the Xeons.
  bool amd = false;
  int cores = 1;
  std::size_t l1d_bytes = 32 * 1024;
  std::size_t l2_bytes = 1024 * 1024;
  std::size_t l3_bytes = 8 * 1024 * 1024;
  std::string name;

  bool has_avx2_fma() const { return avx2 && fma; }
  bool has_avx512() const { return avx512f && avx512bw && avx512vl && avx512dq; }
  bool has_avx512_vnni() const { return has_avx512() && avx512vnni; }
};

// The host's features. Honors SYSTOLIC_ISA=ref|avx2|avxvnni|avx512|avx512vnni|amx to cap the
// instruction set (for testing fallbacks on a machine that has more).
const CpuFeatures& host_cpu();

// The measurement behind CpuFeatures::bf16_rate (about 1 ms); call only where avx512bf16 is.
CpuFeatures::Bf16Rate measure_bf16_rate();

// Features with everything above `isa` switched off. The ladder: "ref" (plain C++), "avx2"
// (AVX2+FMA), "avxvnni" (+ AVX-VNNI), "avx512" (AVX-512 F/BW/VL/DQ, no VNNI, BF16 or VBMI),
// "avx512vnni" (+ VNNI, BF16 and VBMI), "amx" or "native" (everything detected).
CpuFeatures cap_isa(CpuFeatures f, const std::string& isa);

}  // namespace systolic

// Host CPU detection: cpuinfo for instruction sets and caches, CPUID for AMX
// (the packaged cpuinfo predates AMX), and Linux's permission request for tile data.
#include "base/cpu.h"

#include <cpuid.h>
#include <cpuinfo.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

namespace systolic {
namespace {

bool cpuid_amx(bool* tile, bool* bf16, bool* int8) {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  *bf16 = (d >> 22) & 1;
  *tile = (d >> 24) & 1;
  *int8 = (d >> 25) & 1;
  return *tile;
}

// CPUID.(7,1):EAX bit 4; the packaged cpuinfo predates AVX-VNNI too.
bool cpuid_avx_vnni() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
  return (a >> 4) & 1;
}

// Tile state must be enabled by the OS (XCR0 bits 17, 18) and granted to this process.
bool amx_usable() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !((c >> 27) & 1)) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if (((lo >> 17) & 3) != 3) return false;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  if (!cpuinfo_initialize()) {
    f.cores = static_cast<int>(std::thread::hardware_concurrency());
    return f;
  }
  f.avx2 = cpuinfo_has_x86_avx2();
  f.fma = cpuinfo_has_x86_fma3();
  f.avx512f = cpuinfo_has_x86_avx512f();
  f.avx512bw = cpuinfo_has_x86_avx512bw();
  f.avx512vl = cpuinfo_has_x86_avx512vl();
  f.avx512dq = cpuinfo_has_x86_avx512dq();
  f.avx512bf16 = cpuinfo_has_x86_avx512bf16();
  f.avx512vnni = cpuinfo_has_x86_avx512vnni();
  f.avx512vbmi = cpuinfo_has_x86_avx512vbmi();
  f.avx_vnni = f.avx2 && cpuid_avx_vnni();
  if (f.avx512bf16 && f.avx512f) f.bf16_rate = measure_bf16_rate();
  bool tile = false, bf16 = false, int8 = false;
  if (cpuid_amx(&tile, &bf16, &int8) && amx_usable()) {
    f.amx_tile = tile;
    f.amx_bf16 = bf16;
    f.amx_int8 = int8;
  }
  f.cores = static_cast<int>(cpuinfo_get_processors_count());
  if (const cpuinfo_cache* c = cpuinfo_get_l1d_cache(0)) f.l1d_bytes = c->size;
  if (const cpuinfo_cache* c = cpuinfo_get_l2_cache(0)) f.l2_bytes = c->size;
  if (cpuinfo_get_l3_caches_count() > 0) {
    if (const cpuinfo_cache* c = cpuinfo_get_l3_cache(0)) f.l3_bytes = c->size;
  }
  if (const cpuinfo_package* p = cpuinfo_get_package(0)) f.name = p->name;
  if (const cpuinfo_core* c = cpuinfo_get_core(0)) f.amd = c->vendor == cpuinfo_vendor_amd;
  return f;
}

}  // namespace

CpuFeatures cap_isa(CpuFeatures f, const std::string& isa) {
  static const char* kLadder[] = {"ref", "avx2", "avxvnni", "avx512", "avx512vnni", "amx", "native"};
  int level = -1;
  for (int i = 0; i < 7; ++i)
    if (isa == kLadder[i]) level = i;
  if (level < 0) return f;  // an unknown name caps nothing
  if (level < 5) f.amx_tile = f.amx_bf16 = f.amx_int8 = false;
  if (level < 4) f.avx512bf16 = f.avx512vnni = f.avx512vbmi = false, f.bf16_rate = {};
  if (level < 3) f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = false;
  if (level < 2 || level == 3) f.avx_vnni = false;
  if (level < 1) f.avx2 = f.fma = false;
  return f;
}

const CpuFeatures& host_cpu() {
  static const CpuFeatures f = [] {
    CpuFeatures d = detect();
    if (const char* isa = std::getenv("SYSTOLIC_ISA")) d = cap_isa(d, isa);
    return d;
  }();
  return f;
}

}  // namespace systolic

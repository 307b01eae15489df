// `systolic info`: the detected target and its measured fp32 peak.
#include <cstdio>

#include "plan/program.h"
#include "tools/commands.h"
#include "tools/peak.h"

namespace systolic::tools {

void register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "print the detected hardware target");
  cmd->callback([] {
    const CpuFeatures& c = host_cpu();
    std::printf("cpu         %s\n", c.name.c_str());
    std::printf("cores       %d\n", c.cores);
    std::printf("caches      L1d %zu KiB, L2 %zu KiB, L3 %zu KiB\n", c.l1d_bytes / 1024, c.l2_bytes / 1024, c.l3_bytes / 1024);
    std::printf("isa         avx2 %s, fma %s, avx512 %s, avx512-bf16 %s, avx512-vnni %s, amx-tile %s, amx-bf16 %s, amx-int8 %s\n",
                c.avx2 ? "yes" : "no", c.fma ? "yes" : "no", c.has_avx512() ? "yes" : "no", c.avx512bf16 ? "yes" : "no",
                c.avx512vnni ? "yes" : "no", c.amx_tile ? "yes" : "no", c.amx_bf16 ? "yes" : "no", c.amx_int8 ? "yes" : "no");
    std::printf("kernels     %s\n", plan::isa_name(c).c_str());
    std::printf("fp32 peak   %.0f GFLOP/s on %d threads (measured)\n", measured_fp32_peak_gflops(c.cores), c.cores);
  });
}

}  // namespace systolic::tools

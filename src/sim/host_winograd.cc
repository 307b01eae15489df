// conv_winograd.h's tasks replayed for the cost model; see host_winograd.h.
#include "sim/host_winograd.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/conv/winograd_blocking.h"

namespace systolic::sim {

int winograd_tile_of(const std::string& kernel) {
  if (kernel.find("winograd_f4x3") != std::string::npos) return 4;
  if (kernel.find("winograd_f2x3") != std::string::npos) return 2;
  return 0;
}

HostConvTime host_winograd_time(const kernels::ConvParams& p, int tile, const target::Target& t, double step_cycles,
                                bool weights_from_dram) {
  HostConvTime out;
  const auto& h = t.host_conv;
  if (!h.enabled || tile <= 0) return out;
  const int threads = std::max(1, t.cores), mr = std::max(1, h.mr), nr = std::max(1, h.nr);
  const int elems = (tile + 2) * (tile + 2);
  // The transforms' cost per float: F(2x2)'s own when measured.
  const double per_float = tile == 2 && h.wino2_float_cycles >= 0 ? h.wino2_float_cycles : h.wino_float_cycles;
  const long l2_input = h.l2_input_bytes > 0 ? h.l2_input_bytes : kernels::igemm::kBlockingAvx2.l2_input;
  const kernels::winograd::Grid g = kernels::winograd::grid(p, tile, elems, mr, nr, threads, {0, l2_input});
  const double panel_bytes = double(p.ic) * nr * 4;  // one element's weights of one panel
  const double dram = h.dram_gbs > 0 ? h.dram_gbs : t.offchip_gbs;
  // Every task of a panel group reads the group's weights, element by element in the same order,
  // and the threads start their blocks together: with fewer groups than threads they read the
  // same bytes at about the same time and share one stream instead of splitting the bandwidth.
  const int streams = std::max(1, std::min(threads, g.groups));
  const double first_gbs = (weights_from_dram ? dram : h.l3_gbs > 0 ? h.l3_gbs : dram) / streams;
  const double again_gbs = host_reread_gbs(panel_bytes * elems * g.panels, t) / streams;
  const double kstep = double(p.ic) * step_cycles;
  std::vector<double> costs;
  costs.reserve(static_cast<std::size_t>(g.blocks * g.groups));
  for (long b = 0; b < g.blocks; ++b) {
    const long nt = kernels::winograd::block_start(g, b + 1, mr) - kernels::winograd::block_start(g, b, mr);
    const long calls = (nt + mr - 1) / mr;
    double share = 0;  // full-tile equivalents of the block's GEMM tiles (MR rows each, the last shorter)
    for (long r = 0; r < nt; r += mr) share += host_tile_share(std::min<long>(mr, nt - r), mr);
    const double first_tile = host_tile_share(std::min<long>(mr, nt), mr) * kstep;
    const double transfer = panel_bytes / (b == 0 ? first_gbs : again_gbs) * t.clock_ghz;  // bytes / (GB/s) = ns
    for (int gi = 0; gi < g.groups; ++gi) {
      const int pn0 = int(long(gi) * g.panels / g.groups), pn1 = int(long(gi + 1) * g.panels / g.groups);
      const int channels = std::min(p.oc, pn1 * nr) - pn0 * nr;
      // One element of one panel: its calls store raw sums into the element's scratch (no bias,
      // residual or activation), as a K split's partial calls do. (At the full call's cost,
      // the 128-channel calibration folded the difference into the transform cost: ResNet-50's
      // 64-channel layer1 convs came out 4-6 points further over, its 256-channel layer3 ones
      // ~2 further under at batch 1.)
      const double chunk = share * kstep + calls * h.partial_call_cycles;
      const double gemm = double(pn1 - pn0) * elems * chunk;
      // The kernel fetches the next element's (or panel's) weights while it runs the current
      // one (conv_winograd.h): only the task's first waits beyond its first tile.
      const double wait = std::max(0.0, transfer - first_tile) +
                          (double(pn1 - pn0) * elems - 1) * std::max(0.0, transfer - chunk);
      const double transforms = double(nt) * elems * (p.ic + channels) * per_float;
      out.weight_wait += wait;
      out.busy += gemm + wait + transforms;
      costs.push_back(gemm + wait + transforms);
    }
  }
  out.tasks = static_cast<int64_t>(costs.size());
  out.cycles = pool_makespan(costs, threads);
  return out;
}

}  // namespace systolic::sim

// SCALE-Sim compatibility: its topology CSV (one conv layer a row) simulated on a Target.
#pragma once
#include <string>
#include <vector>

#include "sim/simulate.h"

namespace systolic::sim {

struct TopologyLayer {
  std::string name;
  int64_t ifmap_h = 1, ifmap_w = 1, filter_h = 1, filter_w = 1, channels = 1, num_filters = 1;
  int64_t stride_h = 1, stride_w = 1;
  // SCALE-Sim's output size (no padding, rounded up): ceil((H - FH + S) / S).
  int64_t ofmap_h() const { return (ifmap_h - filter_h + 2 * stride_h - 1) / stride_h; }
  int64_t ofmap_w() const { return (ifmap_w - filter_w + 2 * stride_w - 1) / stride_w; }
  // The layer as SCALE-Sim's GEMM: M = OH*OW (batch 1), K = FH*FW*C, N = filters.
  GemmShape gemm() const;
};

// "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter,
// Strides," with a header row and optional trailing commas; a second stride column is allowed.
Expected<std::vector<TopologyLayer>> parse_topology_csv_text(const std::string& text, const std::string& where);
Expected<std::vector<TopologyLayer>> parse_topology_csv(const std::string& path);

// Every layer reads its operands from and writes its outputs to off-chip memory, as in
// SCALE-Sim; `o.batch` > 1 multiplies M.
Expected<SimReport> simulate_topology(const std::vector<TopologyLayer>& layers, const target::Target& t,
                                      const SimOptions& o);

}  // namespace systolic::sim

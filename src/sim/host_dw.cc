// conv_dw.h's row segments replayed for the cost model; see host_dw.h.
#include "sim/host_dw.h"

#include <algorithm>

#include "kernels/conv/dw_layout.h"

namespace systolic::sim {

double host_dw_segments(const kernels::ConvParams& p) {
  const int vectors = kernels::dw::padded(p.oc) / kernels::dw::kChannelPad;
  return double(p.n) * p.oh * vectors;
}

double host_dw_cycles(const kernels::ConvParams& p, double read, double written, const target::Target& t) {
  const auto& h = t.host_conv;
  if (h.dw_read_gbs <= 0 || h.dw_write_gbs <= 0) return 0;
  const double stream = (read / h.dw_read_gbs + written / h.dw_write_gbs) * t.clock_ghz;  // bytes / (GB/s) = ns
  return stream + host_dw_segments(p) * std::max(0.0, h.dw_row_cycles) / std::max(1, t.cores);
}

}  // namespace systolic::sim

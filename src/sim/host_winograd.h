// The CPU runtime's Winograd conv kernels (kernels/conv/conv_winograd.h) as a cost structure:
// the same tile blocks and panel groups (kernels/conv/winograd_blocking.h), per task the input
// transform, (tile+2)^2 GEMMs on the implicit-GEMM microkernel's calibrated K-step rate and
// partial-call cost (raw stores), the output transform, and the waits for each GEMM's packed
// weights; then the busiest thread of the pool's schedule.
#pragma once
#include "kernels/conv/conv.h"
#include "sim/host_conv.h"
#include "target/target.h"

namespace systolic::sim {

// The output tile side of a Winograd kernel of conv.inc by name (4 for F(4x4,3x3), 2 for
// F(2x2,3x3)); 0 for any other kernel.
int winograd_tile_of(const std::string& kernel);

// One Winograd conv with output tiles of side `tile` on the measured host, in core-cycles at
// t.clock_ghz (fields as host_conv_time's). A transform costs t.host_conv.wino_float_cycles per
// float of each tile's transformed input and output (loads, arithmetic and stores together);
// tiles of 2 cost wino2_float_cycles instead when that is measured (>= 0).
// A task's GEMMs read each panel's packed weights of each element from the L3 (DRAM when
// `weights_from_dram`) in the conv's first tile block, from where host_reread_gbs says in later
// ones, the threads sharing the bandwidth only when they read different panel groups; what the
// first tile's FMAs do not cover is waited for. Zero unless t.host_conv.enabled.
HostConvTime host_winograd_time(const kernels::ConvParams& p, int tile, const target::Target& t, double step_cycles,
                                bool weights_from_dram);

}  // namespace systolic::sim

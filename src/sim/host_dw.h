// The CPU runtime's depthwise conv kernel (kernels/conv/conv_dw.h) as a cost structure: the
// bytes it reads and the bytes it writes, each at the kernel's calibrated rate (writes cost more:
// a line is read for ownership before it is written), plus a fixed cost per output row segment,
// one output row of 16 channels: its weight loads, its two border pixels on the generic path and
// the misses on its rows' first lines. Rows of 7 pixels pay that every 7 outputs, rows of 56
// every 56.
#pragma once
#include "kernels/conv/conv.h"
#include "target/target.h"

namespace systolic::sim {

// Output row segments of 16 channels (the packed channel pad, kernels/conv/dw_layout.h) a
// depthwise conv runs: images x output rows x channel groups of 16.
double host_dw_segments(const kernels::ConvParams& p);

// One depthwise conv on the measured host, in core-cycles at t.clock_ghz, elapsed: `read` bytes
// (input and residual) at t.host_conv.dw_read_gbs, `written` bytes at dw_write_gbs, and
// host_dw_segments x dw_row_cycles shared by t.cores threads. 0 when the rates are not measured.
double host_dw_cycles(const kernels::ConvParams& p, double read, double written, const target::Target& t);

}  // namespace systolic::sim

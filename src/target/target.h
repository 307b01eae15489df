// Hardware as data: a `Target` record (matrix units, dataflow, precisions, memories, vector
// unit), the built-in presets (TPU generations, the host CPU) and user JSON presets.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/cpu.h"
#include "base/status.h"

namespace systolic::target {

// Which operand stays in the array while the others stream through it.
enum class Dataflow : uint8_t { weight_stationary, output_stationary, input_stationary };
const char* dataflow_name(Dataflow d);  // "ws", "os", "is"
Expected<Dataflow> parse_dataflow(const std::string& s);

// One precision the matrix units run: MACs per processing element per cycle (2 for an int8
// rate twice the bf16 one, 1/3 for fp32 emulated in three bf16 passes) and operand bytes.
struct PrecisionRate {
  std::string name;  // "bf16", "int8", "fp32"
  double macs_per_pe_cycle = 1;
  int bytes = 2;
  // A GPU's tensor-core MMA instruction for this precision, M x N x K per warp (mma.sync
  // m16n8k16 for bf16, m16n8k32 for int8, m16n8k8 for tf32); K is what a GEMM's reduction is
  // padded to. Zeros: not a tensor-core precision (or not a GPU).
  int mma_m = 0, mma_n = 0, mma_k = 0;
};

// A GPU (Target::gpu): how a conv or GEMM tiles onto its SMs (sim/gpu_model.h). The SMs are
// Target::cores, their tensor cores Target::arrays_per_core, one tensor core's dense MACs per
// cycle rows x cols x macs_per_pe_cycle; the L2 is the on-chip level.
struct GpuModel {
  bool enabled = false;
  // Thread-block (CTA) tiles the kernel library picks from, M x N; the best one is taken per
  // layer (TensorRT and cuDNN time their tactics and keep the fastest).
  std::vector<std::array<int, 2>> cta_tiles;
  int k_stage_bytes = 64;    // K bytes per pipeline stage (bk = this / operand bytes)
  int stages = 3;            // shared-memory pipeline depth
  int64_t smem_per_sm = 0;   // shared memory a kernel may use per SM
  int64_t regs_per_sm = 256 << 10;  // register file per SM, bytes
  int max_ctas_per_sm = 4;
  // A warp's share of the CTA tile (CUTLASS's warp tile): what each warp reads from shared
  // memory per K step, at smem_bytes_per_cycle per SM, is what small CTA tiles wait on.
  int warp_m = 64, warp_n = 64;
  double smem_bytes_per_cycle = 128;
  // Per CTA tile beyond its K loop, core-cycles: the pipeline's first loads (DRAM latency
  // order) before the tensor cores start; other CTAs on the SM hide it when they can.
  double tile_prologue_cycles = 600;
  double store_bytes_per_cycle = 128;  // per SM: the epilogue's writes of a tile's outputs
  int split_k_max = 16;                // the most K slices a small GEMM is cut into
};

// One on-chip memory level (innermost first): capacity per chip and bandwidth to the arrays.
struct MemoryLevel {
  std::string name;
  int64_t capacity_bytes = 0;
  double bandwidth_gbs = 0;
};

// The buffer sizes whose immediate re-read bandwidth the host check measures (2, 4, 8, 16 MiB).
constexpr std::array<std::size_t, 4> kRereadProbes = {std::size_t{2} << 20, std::size_t{4} << 20,
                                                      std::size_t{8} << 20, std::size_t{16} << 20};

// The CPU runtime's conv kernel beyond its FMAs (sim/host_conv.h): its register tile, the
// measured cost of one row-pointer setup (per tile x panel x tap) and of one row gather (per tile
// x tap, packed path), in core-cycles, and where weight re-reads per M block come from.
struct HostConvModel {
  bool enabled = false;
  int mr = 6, nr = 16;
  double setup_cycles = 0, gather_cycles = 0;
  // Per tile x panel x tap when a tap is one merged kernel row of a few channels (kw * icg <= 64
  // floats, the stems), core-cycles (< 0: setup_cycles). Timed on a 2-core Zen 5, such taps of
  // 6-27 floats cost 32-45 cycles each where the narrow calibration's 24-channel taps cost 14.
  double merged_setup_cycles = -1;
  // Extra per full-tile K step when a tile's MR rows have gaps between them (a kernel narrower
  // than its x stride on the row-pointer path: the 1x1 stride-2 downsamples), core-cycles.
  // Measured against stride-1 twins, such convs ran 5-11% longer at K = 192..1024 alike: a
  // cost per K step, not per row restart.
  double strided_step_cycles = 0;
  // Per tile x panel call of the microkernel, core-cycles: its store, epilogue and loop setup,
  // beyond what the calibrated K-step rate holds (which amortises them over a 1152-step call).
  double call_cycles = 0;
  // Per tile x panel call of a K-split conv's blocks before the last, core-cycles: they store
  // raw partial sums that stay in cache (no epilogue, no trip to memory).
  double partial_call_cycles = 0;
  // Winograd kernels (sim/host_winograd.h): per float of a tile's transformed input or output,
  // core-cycles.
  double wino_float_cycles = 0;
  // The same for the F(2x2) kernels (output tiles of 2) when measured on their own (< 0:
  // wino_float_cycles). On a 2-core Zen 5, costed at the F(4x4) kernel's cost per float, F(2x2)
  // came out 17-20% further over than F(4x4) on the same shapes (128 channels, 28x28 and 32x32).
  double wino2_float_cycles = -1;
  // A depthwise conv kernel (kernels/conv/conv_dw.h, sim/host_dw.h): what it reads and what it
  // writes per second, all threads (0: not measured; it then streams every byte at vector_gbs),
  // and its fixed cost per output row of 16 channels on one thread, core-cycles. MobileNetV2's
  // depthwise convs ran at 20-43 GB/s of both together where memcpy gives 50-55, its 7x7 ones
  // at 15.
  double dw_read_gbs = 0, dw_write_gbs = 0, dw_row_cycles = 0;
  double l2_gbs = 0, l3_gbs = 0;  // measured read bandwidth, all threads (0: DRAM's)
  double dram_gbs = 0;            // measured read bandwidth of a buffer past the L3 (0: offchip_gbs)
  // What a conv's activations past the caches (beyond the largest re-read probe) stream in at,
  // all threads (0: dram_gbs). Read from the start just after a layer wrote them to the end, they
  // come in well below a plain read pass: on a 2-core Zen 5 ResNet-50's 51 MB inputs at batch 16
  // came in at 15-21 GB/s where one read pass gives 45-55, and the 1x1s reading them came out
  // 10-20% under at the plain rate.
  double act_dram_gbs = 0;
  // Measured bandwidth of reading again, right away, kRereadProbes[i] bytes that one pass has
  // just streamed in from memory (0: not measured; then the L3 is taken to keep what fits it).
  std::array<double, 4> reread_gbs{};
  int64_t l2_bytes_per_core = 0, l3_bytes = 0;
  // The kernel's cache budgets (kernels/conv/igemm_blocking.h; 0: the AVX2 kernel's).
  int64_t l1_weights_bytes = 0, l2_input_bytes = 0;
  int64_t all_panels_bytes = 0;  // igemm::Blocking::all_panels_weights (0: never)
};

struct Target {
  std::string name;
  std::string description;
  std::string source;               // where the figures come from
  int cores = 1;                    // TensorCores (or CPU cores)
  int arrays_per_core = 1;          // MXUs per core
  int rows = 128, cols = 128;       // one array: R x C processing elements
  Dataflow dataflow = Dataflow::weight_stationary;
  double clock_ghz = 1.0;
  std::vector<PrecisionRate> precisions;
  std::string default_precision = "bf16";
  std::vector<MemoryLevel> on_chip;
  double offchip_gbs = 0;
  int64_t offchip_bytes = 0;
  double vector_elems_per_cycle = 1024;  // per core, element-wise / pooling work
  double launch_overhead_us = 0;         // fixed cost of every op that runs
  // Host-style targets: vector steps stream every byte they touch at this bandwidth (0: the
  // on-chip/off-chip memory model), and layout Reorders are real copies rather than free.
  double vector_gbs = 0;
  bool reorders_cost = false;
  // The measured host: the runtime's Reorder loop per element, on the caller's thread (0: not
  // measured, its bytes at vector_gbs). An NCHW -> NHWC copy of a 3-channel image takes 0.3-0.4
  // ns per element on a 2-core Zen 5, five times its bytes at the memcpy bandwidth.
  double reorder_elem_ns = 0;
  HostConvModel host_conv;  // enabled only on the measured host (`--check`)
  GpuModel gpu;             // enabled on GPU presets (a100-*, h100-sxm, h200)

  int arrays() const { return cores * arrays_per_core; }
  // The rate for `precision`, or null when the target has none.
  const PrecisionRate* rate(const std::string& precision) const;
  // Peak MAC/s of all arrays at `precision` (0 when unsupported).
  double peak_macs_per_s(const std::string& precision) const;
  // The largest on-chip level's capacity (what decides off-chip re-fetches).
  int64_t onchip_capacity() const;
  // Bandwidth between the innermost on-chip level and the arrays (GB/s).
  double onchip_bandwidth_gbs() const;
};

// Built-in preset names: tpu-v1 ... tpu-v6e, the GPUs (a100-sxm4-40gb, a100-sxm4-80gb,
// h100-sxm, h200) and "host"; "a100" is also accepted for a100-sxm4-80gb, "h100" for h100-sxm.
std::vector<std::string> preset_names();
// A built-in preset, or a JSON file when `name_or_path` ends in .json.
// `host_peak_gflops` is the measured fp32 peak used for the host preset (0: nominal 3 GHz).
Expected<Target> load_target(const std::string& name_or_path, double host_peak_gflops = 0);
Expected<Target> builtin_preset(const std::string& name);
// The host as a target: FMA units as a 1 x W array per core (or AMX tiles), L1/L2 on chip.
Target host_target(const CpuFeatures& cpu, double measured_fp32_gflops);

// What was measured on the host (sim/host_check.h); zeros mean "not measured".
struct HostMeasurements {
  int threads = 0;                 // cores the runtime uses (0: all)
  double fp32_peak_gflops = 0;     // FMA loop on all threads (0: nominal 3 GHz)
  double dram_gbs = 0;             // memcpy bandwidth (0: assumed max(20, 8 x cores))
  double conv_efficiency = 0;      // conv kernel GFLOP/s on a calibration shape / peak (0: 1)
  double launch_us = -1;           // thread-pool dispatch per op (< 0: 1 us)
  int tile_rows = 0, tile_cols = 0;  // the conv microkernel's register tile (0: 1 x FMA width)
  // Conv kernel structure (sim/host_conv.h), from the calibration convs; < 0: not measured.
  double tap_setup_cycles = -1;    // per tile x panel x tap (row-pointer path), core-cycles
  double merged_setup_cycles = -1; // the same for merged kernel-row taps (HostConvModel)
  double gather_cycles = -1;       // per tile x tap (packed path), core-cycles
  double strided_step_cycles = -1; // per full-tile K step on strided rows (HostConvModel), core-cycles
  double call_cycles = -1;         // per tile x panel microkernel call (HostConvModel), core-cycles
  double partial_call_cycles = -1; // the same for a K-split conv's partial calls (< 0: call_cycles)
  double wino_float_cycles = -1;   // per transformed float (HostConvModel), core-cycles
  double wino2_float_cycles = -1;  // the same for F(2x2) (HostConvModel; < 0: not measured)
  double dw_read_gbs = 0, dw_write_gbs = 0, dw_row_cycles = 0;  // HostConvModel's (0: not measured)
  double l2_read_gbs = 0, l3_read_gbs = 0;  // read bandwidth of an L2- / L3-resident buffer
  double dram_read_gbs = 0;                 // read bandwidth of a buffer larger than the L3
  double act_dram_gbs = 0;                  // HostConvModel::act_dram_gbs (0: not measured)
  double reorder_elem_ns = 0;               // Target::reorder_elem_ns (0: not measured)
  std::array<double, 4> reread_gbs{};       // HostConvModel::reread_gbs
  int64_t l1_weights_bytes = 0, l2_input_bytes = 0;  // HostConvModel's (0: its defaults)
  int64_t all_panels_bytes = 0;                      // HostConvModel's
};
// The host as the CPU runtime runs it: fp32 on the FMA units (also with AMX), the conv
// microkernel's MR x NR register tile as the array, rates and bandwidth from `m`.
Target host_target(const CpuFeatures& cpu, const HostMeasurements& m);

// JSON presets (nlohmann json); every field optional except name, with errors naming the field.
Expected<Target> target_from_json_text(const std::string& text, const std::string& where);
Expected<Target> target_from_json_file(const std::string& path);
std::string target_to_json(const Target& t);

// "64MiB", "28 MiB", "1.5GB", "4096" -> bytes.
Expected<int64_t> parse_bytes(const std::string& s);
std::string format_bytes(double bytes);

// Varies one parameter: "array=256x256", "sram=64MiB", "hbm_bw=2000" (GB/s), "clock=1.5"
// (GHz), "cores=4", "mxus=2", "dataflow=os", "vector=2048", "launch_us=1".
Status apply_what_if(Target* t, const std::string& assignment);

}  // namespace systolic::target

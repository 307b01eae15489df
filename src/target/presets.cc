// Built-in targets: Google TPU generations (published figures, see docs/simulator.md for
// sources and the assumptions behind the unpublished ones), the GPUs (gpu_presets.cc) and the
// host CPU.
#include <algorithm>

#include "target/gpu_presets.h"
#include "target/target.h"

namespace systolic::target {
namespace {

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGiB = 1024 * kMiB;

// Assumed on-chip bandwidth: enough to stream inputs, weights and outputs to every array at
// full rate (three operand streams of R elements of `bytes` per array per cycle).
double feed_gbs(const Target& t, int bytes) { return 3.0 * t.arrays() * t.rows * bytes * t.clock_ghz; }

Target tpu(const char* name, const char* desc, const char* src, int cores, int mxus, int dim, double ghz) {
  Target t;
  t.name = name;
  t.description = desc;
  t.source = src;
  t.cores = cores;
  t.arrays_per_core = mxus;
  t.rows = t.cols = dim;
  t.clock_ghz = ghz;
  t.dataflow = Dataflow::weight_stationary;
  t.vector_elems_per_cycle = 1024;  // 8 sublanes x 128 lanes per core (assumed for all generations)
  t.launch_overhead_us = 0.5;       // assumed per-op fixed cost
  return t;
}

// bf16 at one MAC per PE per cycle, int8 at `int8_rate`, fp32 as three bf16 passes.
void modern_precisions(Target* t, double int8_rate) {
  t->precisions = {{"bf16", 1.0, 2}, {"int8", int8_rate, 1}, {"fp32", 1.0 / 3, 4}};
  t->default_precision = "bf16";
}

Target tpu_v1() {
  Target t = tpu("tpu-v1", "TPU v1 (2015): one 256x256 int8 MXU, 28 MiB on-chip SRAM, DDR3",
                 "Jouppi et al., In-Datacenter Performance Analysis of a Tensor Processing Unit, ISCA 2017", 1, 1, 256, 0.7);
  t.precisions = {{"int8", 1.0, 1}};
  t.default_precision = "int8";
  t.vector_elems_per_cycle = 256;  // the activation pipeline takes one 256-wide row per cycle
  t.on_chip = {{"unified-buffer", 24 * kMiB, feed_gbs(t, 1)}, {"accumulators", 4 * kMiB, feed_gbs(t, 4)}};
  t.offchip_gbs = 34;
  t.offchip_bytes = 8 * kGiB;
  return t;
}

Target tpu_v2() {
  Target t = tpu("tpu-v2", "TPU v2 (2017): 2 TensorCores x 1 MXU 128x128, 16 GiB HBM",
                 "Jouppi et al., A Domain-Specific Supercomputer for Training DNNs, CACM 2020; Cloud TPU docs", 2, 1, 128, 0.7);
  t.precisions = {{"bf16", 1.0, 2}, {"fp32", 1.0 / 3, 4}};
  t.on_chip = {{"vmem", 32 * kMiB, feed_gbs(t, 2)}};
  t.offchip_gbs = 600;
  t.offchip_bytes = 16 * kGiB;
  return t;
}

Target tpu_v3() {
  Target t = tpu("tpu-v3", "TPU v3 (2018): 2 TensorCores x 2 MXUs 128x128, 32 GiB HBM",
                 "Jouppi et al., CACM 2020; Cloud TPU system architecture docs", 2, 2, 128, 0.94);
  t.precisions = {{"bf16", 1.0, 2}, {"fp32", 1.0 / 3, 4}};
  t.on_chip = {{"vmem", 32 * kMiB, feed_gbs(t, 2)}};
  t.offchip_gbs = 900;
  t.offchip_bytes = 32 * kGiB;
  return t;
}

Target tpu_v4() {
  Target t = tpu("tpu-v4", "TPU v4 (2021): 2 TensorCores x 4 MXUs 128x128, 128 MiB CMEM, 32 GiB HBM2",
                 "Jouppi et al., TPU v4, ISCA 2023; Cloud TPU v4 docs (275 TFLOPS bf16/int8, 1200 GB/s)", 2, 4, 128, 1.05);
  modern_precisions(&t, 1.0);  // int8 at the bf16 rate on v4
  t.on_chip = {{"vmem", 32 * kMiB, feed_gbs(t, 2)}, {"cmem", 128 * kMiB, 2.0 * 1200}};
  t.offchip_gbs = 1200;
  t.offchip_bytes = 32 * kGiB;
  return t;
}

Target tpu_v5e() {
  Target t = tpu("tpu-v5e", "TPU v5e (2023): 1 TensorCore x 4 MXUs 128x128, 16 GiB HBM2e",
                 "Cloud TPU v5e docs (197 TFLOPS bf16, 393 TOPS int8, 819 GB/s)", 1, 4, 128, 1.5);
  modern_precisions(&t, 2.0);
  t.on_chip = {{"vmem", 32 * kMiB, feed_gbs(t, 2)}};
  t.offchip_gbs = 819;
  t.offchip_bytes = 16 * kGiB;
  return t;
}

Target tpu_v5p() {
  Target t = tpu("tpu-v5p", "TPU v5p (2023): 2 TensorCores x 4 MXUs 128x128, 95 GiB HBM2e",
                 "Cloud TPU v5p docs (459 TFLOPS bf16, 918 TOPS int8, 2765 GB/s)", 2, 4, 128, 1.75);
  modern_precisions(&t, 2.0);
  t.on_chip = {{"vmem", 64 * kMiB, feed_gbs(t, 2)}};
  t.offchip_gbs = 2765;
  t.offchip_bytes = 95 * kGiB;
  return t;
}

Target tpu_v6e() {
  Target t = tpu("tpu-v6e", "TPU v6e Trillium (2024): 1 TensorCore x 4 MXUs 256x256, 32 GiB HBM",
                 "Cloud TPU v6e docs (918 TFLOPS bf16, 1836 TOPS int8, 1640 GB/s)", 1, 4, 256, 1.75);
  modern_precisions(&t, 2.0);
  t.on_chip = {{"vmem", 32 * kMiB, feed_gbs(t, 2)}};
  t.offchip_gbs = 1640;
  t.offchip_bytes = 32 * kGiB;
  return t;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names = {"tpu-v1", "tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"};
  for (const auto& g : gpu_preset_names()) names.push_back(g);
  names.push_back("host");
  return names;
}

Expected<Target> builtin_preset(const std::string& name) {
  if (name == "tpu-v1") return tpu_v1();
  if (name == "tpu-v2") return tpu_v2();
  if (name == "tpu-v3") return tpu_v3();
  if (name == "tpu-v4") return tpu_v4();
  if (name == "tpu-v5e") return tpu_v5e();
  if (name == "tpu-v5p") return tpu_v5p();
  if (name == "tpu-v6e") return tpu_v6e();
  if (name == "host") return host_target(host_cpu(), 0);
  if (auto g = gpu_preset(name)) return *g;
  std::string names;
  for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
  return Err("unknown target '%s' (built-in: %s, or a .json file)", name.c_str(), names.c_str());
}

Target host_target(const CpuFeatures& cpu, double measured_fp32_gflops) {
  HostMeasurements m;
  m.fp32_peak_gflops = measured_fp32_gflops;
  Target t = host_target(cpu, m);
  t.vector_gbs = 0;  // the plain preset keeps the generic memory model
  t.reorders_cost = false;
  return t;
}

Target host_target(const CpuFeatures& cpu, const HostMeasurements& m) {
  Target t;
  t.name = "host";
  t.source = "detected with cpuinfo; clock from the measured fp32 peak";
  t.cores = std::max(1, m.threads > 0 ? m.threads : cpu.cores);
  const int lanes = cpu.has_avx512() ? 16 : cpu.has_avx2_fma() ? 8 : 4;
  const int fma_width = 2 * lanes;  // two FMA ports per core, `lanes` fp32 each
  const bool amx = cpu.amx_tile && cpu.amx_bf16;
  const bool tile = m.tile_rows > 0 && m.tile_cols > 0;
  // The array: the conv microkernel's register tile when known (what the runtime computes
  // per inner loop), else AMX's 16x16 tile multiplier, else the FMA units as a 1 x W array.
  t.rows = tile ? m.tile_rows : amx ? 16 : 1;
  t.cols = tile ? m.tile_cols : amx ? 16 : fma_width;
  const double pes = static_cast<double>(t.rows) * t.cols;
  // Rates in MACs per core-cycle, spread over the array's PEs. fp32 runs on the FMA units at
  // the calibrated fraction of their peak.
  const double eff = m.conv_efficiency > 0 ? std::min(1.0, m.conv_efficiency) : 1.0;
  t.precisions = {{"fp32", eff * fma_width / pes, 4}};
  if (amx) t.precisions.push_back({"bf16", 512 / pes, 2});
  else if (cpu.avx512bf16) t.precisions.push_back({"bf16", 2.0 * fma_width / pes, 2});
  if (amx && cpu.amx_int8) t.precisions.push_back({"int8", 1024 / pes, 1});
  else if (cpu.avx512vnni) t.precisions.push_back({"int8", 4.0 * fma_width / pes, 1});
  t.default_precision = "fp32";
  t.dataflow = Dataflow::output_stationary;  // register-blocked microkernels keep C in registers
  t.clock_ghz = m.fp32_peak_gflops > 0 ? m.fp32_peak_gflops / (2.0 * t.cores * fma_width) : 3.0;
  t.description = std::string(tile ? "host CPU, conv register tile as the array" : amx ? "host CPU with AMX tiles"
                                                                                       : "host CPU, FMA units as a 1xW array") +
                  (cpu.name.empty() ? "" : " (" + cpu.name + ")");
  const double core_ghz = t.clock_ghz * t.cores;
  t.on_chip = {{"l1d", static_cast<int64_t>(cpu.l1d_bytes) * t.cores, 128.0 * core_ghz},
               {"l2", static_cast<int64_t>(cpu.l2_bytes) * t.cores, 64.0 * core_ghz},
               {"l3", static_cast<int64_t>(cpu.l3_bytes), 32.0 * core_ghz}};
  t.offchip_gbs = m.dram_gbs > 0 ? m.dram_gbs : std::max(20.0, 8.0 * t.cores);
  t.offchip_bytes = 16 * kGiB;
  t.vector_elems_per_cycle = lanes * 2.0;
  t.launch_overhead_us = m.launch_us >= 0 ? m.launch_us : 1.0;
  // The runtime's pooling, element-wise and reorder loops stream from memory.
  t.vector_gbs = t.offchip_gbs;
  t.reorders_cost = true;
  t.reorder_elem_ns = std::max(0.0, m.reorder_elem_ns);
  if (tile && m.tap_setup_cycles >= 0 && m.gather_cycles >= 0) {
    t.host_conv.enabled = true;
    t.host_conv.mr = m.tile_rows;
    t.host_conv.nr = m.tile_cols;
    t.host_conv.setup_cycles = m.tap_setup_cycles;
    t.host_conv.gather_cycles = m.gather_cycles;
    t.host_conv.merged_setup_cycles = m.merged_setup_cycles;
    t.host_conv.strided_step_cycles = std::max(0.0, m.strided_step_cycles);
    t.host_conv.call_cycles = std::max(0.0, m.call_cycles);
    t.host_conv.partial_call_cycles = m.partial_call_cycles >= 0 ? m.partial_call_cycles : t.host_conv.call_cycles;
    t.host_conv.wino_float_cycles = std::max(0.0, m.wino_float_cycles);
    t.host_conv.wino2_float_cycles = m.wino2_float_cycles;
    t.host_conv.dw_read_gbs = std::max(0.0, m.dw_read_gbs);
    t.host_conv.dw_write_gbs = std::max(0.0, m.dw_write_gbs);
    t.host_conv.dw_row_cycles = std::max(0.0, m.dw_row_cycles);
    // A nearer level is never slower than a farther one: a read test that a scheduler stall hit
    // (another process holding a core) must not make it so.
    t.host_conv.l3_gbs = std::max(m.l3_read_gbs, m.dram_read_gbs);
    t.host_conv.l2_gbs = std::max(m.l2_read_gbs, t.host_conv.l3_gbs);
    t.host_conv.dram_gbs = m.dram_read_gbs;
    t.host_conv.act_dram_gbs = std::max(0.0, m.act_dram_gbs);
    t.host_conv.reread_gbs = m.reread_gbs;
    t.host_conv.l2_bytes_per_core = static_cast<int64_t>(cpu.l2_bytes);
    t.host_conv.l3_bytes = static_cast<int64_t>(cpu.l3_bytes);
    t.host_conv.l1_weights_bytes = m.l1_weights_bytes;
    t.host_conv.l2_input_bytes = m.l2_input_bytes;
    t.host_conv.all_panels_bytes = m.all_panels_bytes;
  }
  if (m.fp32_peak_gflops > 0 && m.dram_gbs > 0)
    t.source = "measured on this machine: fp32 peak, memcpy bandwidth, conv calibration, pool dispatch";
  return t;
}

}  // namespace systolic::target

// NVIDIA data-center GPUs from their published figures (docs/simulator.md lists the sources).
// An SM is a core, its 4 tensor cores the arrays; one tensor core's dense MACs per cycle are
// rows x cols at bf16 (A100: 256 FMA/clk, H100: 512), other precisions relative to that. Clocks
// are the ones the published tensor-core peaks imply (A100 1410 MHz, H100/H200 1830 MHz).
#include "target/gpu_presets.h"

namespace systolic::target {
namespace {

constexpr int64_t kKiB = 1024, kMiB = 1024 * kKiB, kGiB = 1024 * kMiB;

Target gpu(const char* name, const char* desc, const char* src, int sms, int rows, int cols, double ghz) {
  Target t;
  t.name = name;
  t.description = desc;
  t.source = src;
  t.cores = sms;
  t.arrays_per_core = 4;  // tensor cores per SM (Ampere, Hopper)
  t.rows = rows;
  t.cols = cols;
  t.clock_ghz = ghz;
  t.dataflow = Dataflow::output_stationary;  // a CTA keeps its output tile in registers
  t.default_precision = "bf16";
  t.launch_overhead_us = 1.0;  // assumed gap between dependent kernels in one stream
  t.gpu.enabled = true;
  return t;
}

Target a100(const char* name, const char* desc, double hbm_gbs, int64_t hbm_bytes) {
  Target t = gpu(name, desc,
                 "NVIDIA A100 datasheet and Ampere architecture whitepaper (312 TFLOPS bf16, 624 TOPS int8, 156 TFLOPS "
                 "tf32 dense; 108 SMs, 1410 MHz, 40 MB L2 at 5120 B/clk, 164 KB shared memory per SM)",
                 108, 16, 16, 1.41);
  // fp32 convs run as TF32 on the tensor cores (cuDNN's default for convolutions).
  t.precisions = {{"bf16", 1.0, 2, 16, 8, 16}, {"int8", 2.0, 1, 16, 8, 32}, {"fp32", 0.5, 4, 16, 8, 8}};
  t.on_chip = {{"l2", 40 * kMiB, 5120 * t.clock_ghz}};
  t.offchip_gbs = hbm_gbs;
  t.offchip_bytes = hbm_bytes;
  t.vector_elems_per_cycle = 64;  // FP32 lanes per SM
  t.gpu.cta_tiles = {{256, 128}, {128, 256}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}, {64, 64}};
  t.gpu.stages = 3;
  t.gpu.smem_per_sm = 164 * kKiB;
  return t;
}

Target hopper(const char* name, const char* desc, const char* src, double hbm_gbs, int64_t hbm_bytes) {
  Target t = gpu(name, desc, src, 132, 16, 32, 1.83);
  // Warpgroup MMA (wgmma) shapes: m64 x n(up to 256) x k16 (bf16), k32 (int8), k8 (tf32).
  t.precisions = {{"bf16", 1.0, 2, 64, 256, 16}, {"int8", 2.0, 1, 64, 256, 32}, {"fp32", 0.5, 4, 64, 256, 8}};
  // The L2 bandwidth is not published: A100's 5120 B/clk scaled by the SM count (assumed).
  t.on_chip = {{"l2", 50 * kMiB, 5120.0 * 132 / 108 * t.clock_ghz}};
  t.offchip_gbs = hbm_gbs;
  t.offchip_bytes = hbm_bytes;
  t.vector_elems_per_cycle = 128;  // FP32 lanes per SM
  t.gpu.cta_tiles = {{256, 128}, {128, 256}, {128, 128}, {256, 64}, {64, 256}, {128, 64}, {64, 128}, {64, 64}};
  t.gpu.stages = 4;
  t.gpu.smem_per_sm = 228 * kKiB;
  t.gpu.warp_n = 128;  // a warpgroup's wgmma covers 64 x up to 256 of the tile, B read once for four warps
  return t;
}

}  // namespace

std::vector<std::string> gpu_preset_names() { return {"a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm", "h200"}; }

std::optional<Target> gpu_preset(const std::string& name) {
  if (name == "a100-sxm4-40gb")
    return a100("a100-sxm4-40gb", "NVIDIA A100 SXM4 40GB (2020): 108 SMs x 4 tensor cores, 40 MB L2, 1555 GB/s HBM2", 1555,
                40 * kGiB);
  if (name == "a100-sxm4-80gb" || name == "a100")
    return a100("a100-sxm4-80gb", "NVIDIA A100 SXM4 80GB (2020): 108 SMs x 4 tensor cores, 40 MB L2, 2039 GB/s HBM2e", 2039,
                80 * kGiB);
  if (name == "h100-sxm" || name == "h100")
    return hopper("h100-sxm", "NVIDIA H100 SXM5 80GB (2022): 132 SMs x 4 tensor cores, 50 MB L2, 3350 GB/s HBM3",
                  "NVIDIA H100 datasheet and Hopper architecture whitepaper (989 TFLOPS bf16, 1979 TOPS int8, 495 TFLOPS "
                  "tf32 dense; 132 SMs, 50 MB L2, 228 KB shared memory per SM, 3.35 TB/s)",
                  3350, 80 * kGiB);
  if (name == "h200")
    return hopper("h200", "NVIDIA H200 SXM 141GB (2024): the H100's GH100 with 141 GB HBM3e at 4800 GB/s",
                  "NVIDIA H200 datasheet (same compute as H100 SXM; 141 GB HBM3e, 4.8 TB/s)", 4800, 141000000000LL);
  return std::nullopt;
}

}  // namespace systolic::target

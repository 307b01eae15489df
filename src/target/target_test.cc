// Targets: the presets reproduce the published peaks, JSON presets load with clear errors,
// what-if edits and SCALE-Sim .cfg files parse.
#include <gtest/gtest.h>

#include "target/scalesim_cfg.h"
#include "target/target.h"

namespace systolic::target {
namespace {

double peak_tops(const std::string& name, const std::string& prec) {
  auto t = builtin_preset(name);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return 2 * t->peak_macs_per_s(prec) / 1e12;
}

TEST(Target, PresetsMatchPublishedPeaks) {
  EXPECT_NEAR(peak_tops("tpu-v1", "int8"), 92, 1);
  EXPECT_EQ(peak_tops("tpu-v1", "bf16"), 0);  // v1 has no bf16
  EXPECT_NEAR(peak_tops("tpu-v2", "bf16"), 45, 1.5);
  EXPECT_NEAR(peak_tops("tpu-v3", "bf16"), 123, 1.5);
  EXPECT_NEAR(peak_tops("tpu-v4", "bf16"), 275, 1.5);
  EXPECT_NEAR(peak_tops("tpu-v4", "int8"), 275, 1.5);
  EXPECT_NEAR(peak_tops("tpu-v5e", "bf16"), 197, 1.5);
  EXPECT_NEAR(peak_tops("tpu-v5e", "int8"), 393, 3);
  EXPECT_NEAR(peak_tops("tpu-v5p", "bf16"), 459, 2);
  EXPECT_NEAR(peak_tops("tpu-v6e", "bf16"), 918, 3);
  auto v4 = builtin_preset("tpu-v4");
  EXPECT_EQ(v4->arrays(), 8);
  EXPECT_EQ(v4->onchip_capacity(), 128LL << 20);
  EXPECT_EQ(v4->offchip_gbs, 1200);
  auto v6 = builtin_preset("tpu-v6e");
  EXPECT_EQ(v6->rows, 256);
  for (const auto& n : preset_names()) EXPECT_TRUE(load_target(n, 100).ok()) << n;
}

// Dense tensor-core peaks from the datasheets; fp32 is TF32 on the tensor cores.
TEST(Target, GpuPresetsMatchPublishedPeaks) {
  for (const char* a100 : {"a100-sxm4-40gb", "a100-sxm4-80gb", "a100"}) {
    EXPECT_NEAR(peak_tops(a100, "bf16"), 312, 1) << a100;
    EXPECT_NEAR(peak_tops(a100, "int8"), 624, 2) << a100;
    EXPECT_NEAR(peak_tops(a100, "fp32"), 156, 1) << a100;
  }
  for (const char* h : {"h100-sxm", "h100", "h200"}) {
    EXPECT_NEAR(peak_tops(h, "bf16"), 989, 2) << h;
    EXPECT_NEAR(peak_tops(h, "int8"), 1979, 3) << h;
    EXPECT_NEAR(peak_tops(h, "fp32"), 495, 1) << h;
  }
  EXPECT_EQ(builtin_preset("a100-sxm4-40gb")->offchip_gbs, 1555);
  EXPECT_EQ(builtin_preset("a100")->offchip_gbs, 2039);
  EXPECT_EQ(builtin_preset("a100")->name, "a100-sxm4-80gb");
  EXPECT_EQ(builtin_preset("h100-sxm")->offchip_gbs, 3350);
  EXPECT_EQ(builtin_preset("h200")->offchip_gbs, 4800);
  auto h = builtin_preset("h100");
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->gpu.enabled);
  EXPECT_EQ(h->cores, 132);
  EXPECT_EQ(h->onchip_capacity(), 50LL << 20);
  EXPECT_EQ(h->rate("int8")->mma_k, 32);
  EXPECT_EQ(builtin_preset("a100")->rate("bf16")->mma_k, 16);
  EXPECT_EQ(builtin_preset("a100")->onchip_capacity(), 40LL << 20);
  EXPECT_FALSE(builtin_preset("tpu-v4")->gpu.enabled);
  // A GPU preset survives a JSON round trip, tiles and MMA shapes included, and a user's GPU
  // can start from one.
  auto round = target_from_json_text(target_to_json(*h), "h.json");
  ASSERT_TRUE(round.ok()) << round.status().message();
  EXPECT_TRUE(round->gpu.enabled);
  EXPECT_EQ(round->gpu.cta_tiles, h->gpu.cta_tiles);
  EXPECT_EQ(round->gpu.warp_n, 128);
  EXPECT_EQ(round->rate("int8")->mma_k, 32);
  EXPECT_NEAR(round->peak_macs_per_s("int8"), h->peak_macs_per_s("int8"), 1);
  auto mine = target_from_json_text(
      R"({"name": "my-gpu", "base": "a100", "cores": 54, "gpu": {"cta_tiles": [[128, 128]], "stages": 4}})", "g.json");
  ASSERT_TRUE(mine.ok()) << mine.status().message();
  EXPECT_EQ(mine->gpu.cta_tiles.size(), 1u);
  EXPECT_EQ(mine->gpu.stages, 4);
  EXPECT_EQ(mine->gpu.smem_per_sm, 164 << 10);  // kept from the base
  auto bad = target_from_json_text(R"({"name": "g", "base": "a100", "gpu": {"cta_tiles": [[128]]}})", "g.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("gpu.cta_tiles"), std::string::npos);
  bad = target_from_json_text(R"({"name": "g", "base": "a100", "gpu": {"warps": 4}})", "g.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown field \"gpu.warps\""), std::string::npos);
}

TEST(Target, HostIsAOneByWArrayOrAmxTiles) {
  CpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  avx2.cores = 4;
  Target t = host_target(avx2, 4 * 2 * 16 * 3.0);  // 4 cores x 16 MACs x 3 GHz
  EXPECT_EQ(t.rows, 1);
  EXPECT_EQ(t.cols, 16);
  EXPECT_NEAR(t.clock_ghz, 3.0, 1e-9);
  EXPECT_NEAR(t.peak_macs_per_s("fp32") * 2 / 1e9, 384, 1e-6);
  EXPECT_EQ(t.rate("bf16"), nullptr);
  CpuFeatures amx = avx2;
  amx.avx512f = amx.avx512bw = amx.avx512vl = amx.avx512dq = true;
  amx.amx_tile = amx.amx_bf16 = amx.amx_int8 = true;
  Target a = host_target(amx, 0);
  EXPECT_EQ(a.rows, 16);
  EXPECT_EQ(a.cols, 16);
  // bf16 on AMX is 16x the fp32 FMA rate (512 vs 32 MACs per cycle per core).
  EXPECT_NEAR(a.peak_macs_per_s("bf16") / a.peak_macs_per_s("fp32"), 16, 1e-9);
}

TEST(Target, HostFromMeasurementsUsesTheMeasuredRates) {
  CpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  avx2.cores = 8;
  avx2.l1d_bytes = 32 << 10;
  avx2.l2_bytes = 1 << 20;
  HostMeasurements m;
  m.threads = 2;  // the runtime's threads, not the machine's cores
  m.fp32_peak_gflops = 2 * 2 * 16 * 3.0;  // 2 threads x 16 MACs x 2 FLOP x 3 GHz
  m.dram_gbs = 17.5;
  m.conv_efficiency = 0.75;
  m.launch_us = 4.0;
  m.tile_rows = 6;
  m.tile_cols = 16;
  Target t = host_target(avx2, m);
  EXPECT_EQ(t.cores, 2);
  EXPECT_EQ(t.rows, 6);
  EXPECT_EQ(t.cols, 16);
  EXPECT_NEAR(t.clock_ghz, 3.0, 1e-9);
  // fp32 peak as simulated = measured peak x calibrated conv efficiency.
  EXPECT_NEAR(t.peak_macs_per_s("fp32") * 2 / 1e9, 192 * 0.75, 1e-6);
  EXPECT_EQ(t.default_precision, "fp32");
  EXPECT_DOUBLE_EQ(t.offchip_gbs, 17.5);
  EXPECT_DOUBLE_EQ(t.vector_gbs, 17.5);
  EXPECT_DOUBLE_EQ(t.launch_overhead_us, 4.0);
  EXPECT_TRUE(t.reorders_cost);
  EXPECT_EQ(t.onchip_capacity(), 8 << 20);  // the L3 (default 8 MiB) is the largest level
  EXPECT_FALSE(t.host_conv.enabled);  // no conv calibration: the array model alone
  // With the conv calibration the conv model is on, with its rates; a read test that a stall
  // made slower than a farther level's is raised to that level's.
  m.tap_setup_cycles = 30;
  m.gather_cycles = 120;
  m.strided_step_cycles = 150;
  m.call_cycles = 90;
  m.l2_read_gbs = 0.6;  // a scheduler stall
  m.l3_read_gbs = 55;
  m.dram_read_gbs = 22;
  m.reread_gbs = {50, 48, 40, 30};
  const Target c = host_target(avx2, m);
  ASSERT_TRUE(c.host_conv.enabled);
  EXPECT_DOUBLE_EQ(c.host_conv.setup_cycles, 30);
  EXPECT_DOUBLE_EQ(c.host_conv.gather_cycles, 120);
  EXPECT_DOUBLE_EQ(c.host_conv.strided_step_cycles, 150);
  EXPECT_DOUBLE_EQ(c.host_conv.call_cycles, 90);
  EXPECT_DOUBLE_EQ(c.host_conv.l2_gbs, 55);
  EXPECT_DOUBLE_EQ(c.host_conv.l3_gbs, 55);
  EXPECT_DOUBLE_EQ(c.host_conv.dram_gbs, 22);
  EXPECT_DOUBLE_EQ(c.host_conv.reread_gbs[2], 40);
  // Nothing measured: the nominal defaults.
  Target d = host_target(avx2, HostMeasurements{});
  EXPECT_EQ(d.cores, 8);
  EXPECT_EQ(d.rows, 1);
  EXPECT_NEAR(d.clock_ghz, 3.0, 1e-9);
  EXPECT_DOUBLE_EQ(d.offchip_gbs, 64);
  EXPECT_DOUBLE_EQ(d.launch_overhead_us, 1.0);
  // The plain preset keeps the generic memory model.
  EXPECT_FALSE(host_target(avx2, 100.0).reorders_cost);
}

TEST(Target, JsonPresetOverridesABase) {
  auto t = target_from_json_text(R"({"name": "big-v4", "base": "tpu-v4", "array": "256x256",
      "on_chip": [{"name": "sram", "capacity": "64MiB", "bandwidth_gbs": 5000}], "offchip_gbs": 2000})", "x.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->name, "big-v4");
  EXPECT_EQ(t->rows, 256);
  EXPECT_EQ(t->cores, 2);
  EXPECT_EQ(t->onchip_capacity(), 64LL << 20);
  EXPECT_EQ(t->offchip_gbs, 2000);
  auto round = target_from_json_text(target_to_json(*t), "round.json");
  ASSERT_TRUE(round.ok()) << round.status().message();
  EXPECT_EQ(round->rows, 256);
  EXPECT_NEAR(round->peak_macs_per_s("bf16"), t->peak_macs_per_s("bf16"), 1);
}

void expect_error(const std::string& json, const std::string& needle) {
  auto t = target_from_json_text(json, "bad.json");
  ASSERT_FALSE(t.ok()) << json;
  EXPECT_NE(t.status().message().find(needle), std::string::npos) << t.status().message();
  EXPECT_EQ(t.status().message().rfind("bad.json", 0), 0u) << t.status().message();
}

TEST(Target, JsonErrorsNameTheField) {
  expect_error("{not json", "not valid JSON");
  expect_error("[1, 2]", "JSON object");
  expect_error(R"({"base": "tpu-v4"})", "\"name\"");
  expect_error(R"({"name": "x", "base": "tpu-v4", "cores": -2})", "\"cores\" must be a positive integer");
  expect_error(R"({"name": "x", "base": "tpu-v4", "clock_ghz": "fast"})", "\"clock_ghz\"");
  expect_error(R"({"name": "x", "base": "tpu-v4", "colums": 3})", "unknown field \"colums\"");
  expect_error(R"({"name": "x", "base": "tpu-v9"})", "unknown target 'tpu-v9'");
  expect_error(R"({"name": "x", "base": "tpu-v4", "dataflow": "diagonal"})", "unknown dataflow");
  expect_error(R"({"name": "x", "base": "tpu-v4", "on_chip": [{"capacity": "12 parsecs"}]})", "unknown size unit");
  expect_error(R"({"name": "x", "offchip_gbs": 10})", "no \"precisions\"");
  // Values past int are refused, not truncated; a field of the wrong type is an error.
  expect_error(R"({"name": "x", "base": "tpu-v4", "cores": 4294967297})", "\"cores\" must be a positive integer");
  expect_error(R"({"name": "x", "base": "tpu-v4", "clock_ghz": -1e308})", "\"clock_ghz\" must be a positive number");
  expect_error(R"({"name": "x", "base": "h100", "precisions": {"fp16": {"mma": [16, 8, 4294967312]}}})", ".mma");
  expect_error(R"({"name": "x", "base": "tpu-v4", "on_chip": [{"name": 7, "capacity": 1024}]})", "on_chip[0].name");
  expect_error(R"({"name": "x", "base": "tpu-v4", "launch_overhead_us": -0.5})", "launch_overhead_us");
  EXPECT_FALSE(target_from_json_file("/nonexistent/t.json").ok());
}

TEST(Target, BytesAndWhatIf) {
  EXPECT_EQ(*parse_bytes("64MiB"), 64LL << 20);
  EXPECT_EQ(*parse_bytes("28 MiB"), 28LL << 20);
  EXPECT_EQ(*parse_bytes("1.5GB"), 1500000000LL);
  EXPECT_EQ(*parse_bytes("4096"), 4096);
  EXPECT_FALSE(parse_bytes("MiB").ok());
  Target t = *builtin_preset("tpu-v4");
  ASSERT_TRUE(apply_what_if(&t, "array=256x64").ok());
  EXPECT_EQ(t.rows, 256);
  EXPECT_EQ(t.cols, 64);
  ASSERT_TRUE(apply_what_if(&t, "sram=8MiB").ok());
  EXPECT_EQ(t.onchip_capacity(), 32LL << 20);  // the largest level (CMEM) shrank below VMEM
  ASSERT_TRUE(apply_what_if(&t, "hbm_bw=300").ok());
  EXPECT_EQ(t.offchip_gbs, 300);
  EXPECT_FALSE(apply_what_if(&t, "array=big").ok());
  EXPECT_FALSE(apply_what_if(&t, "warp=9").ok());
  EXPECT_FALSE(apply_what_if(&t, "clock=-1").ok());
  EXPECT_FALSE(apply_what_if(&t, "clock=inf").ok());
  EXPECT_FALSE(apply_what_if(&t, "array=256x256x2").ok());
  // Counts are whole numbers: half a core would have made utilization infinite.
  ASSERT_TRUE(apply_what_if(&t, "cores=4").ok());
  EXPECT_EQ(t.cores, 4);
  ASSERT_TRUE(apply_what_if(&t, "mxus=2").ok());
  EXPECT_EQ(t.arrays_per_core, 2);
  for (const char* bad : {"cores=0.5", "cores=0", "cores=1e12", "mxus=1.5", "mxus=-2"}) {
    const Status st = apply_what_if(&t, bad);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("is not a whole number"), std::string::npos) << st.message();
  }
  EXPECT_EQ(t.cores, 4);
  EXPECT_EQ(t.arrays_per_core, 2);
}

TEST(Target, ScaleSimConfig) {
  auto t = target_from_scalesim_cfg_text(
      "[general]\nrun_name = tiny\n[architecture_presets]\nArrayHeight: 32\nArrayWidth : 16\n"
      "IfmapSramSzkB: 64\nFilterSramSzkB: 64\nOfmapSramSzkB: 32\nBandwidth : 10\nDataflow : os # comment\n", "a.cfg");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->name, "tiny");
  EXPECT_EQ(t->rows, 32);
  EXPECT_EQ(t->cols, 16);
  EXPECT_EQ(t->dataflow, Dataflow::output_stationary);
  EXPECT_EQ(t->onchip_capacity(), 160 * 1024);
  EXPECT_EQ(t->offchip_gbs, 10);
  auto bad = target_from_scalesim_cfg_text("[architecture_presets]\nArrayWidth: 8\n", "b.cfg");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ArrayHeight"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(target_from_scalesim_cfg_text("ArrayHeight: 8\nArrayWidth: 8\nDataflow: xs\n", "c.cfg").ok());
}

}  // namespace
}  // namespace systolic::target

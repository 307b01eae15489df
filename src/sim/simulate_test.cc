// The simulator over a compiled zoo ResNet-50: fused epilogues cost nothing, every preset sweeps
// it, and `systolic simulate` prints the documented JSON. Its speed is in src/sim/bench.cc.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "frontend/onnx/import.h"
#include "base/cpu.h"
#include "sim/simulate.h"
#include "target/target.h"
#include "tools/zoo/zoo.h"

namespace systolic::sim {
namespace {

const plan::Program& resnet50() {
  static std::shared_ptr<plan::Program> p = [] {
    onnx::ModelProto m;
    EXPECT_TRUE(zoo::zoo_build("resnet50", 0, &m).ok());
    auto g = frontend::import_onnx_bytes(m.SerializeAsString(), "");
    EXPECT_TRUE(g.ok());
    plan::CompileOptions co;
    auto prog = plan::compile(std::move(*g), co);
    EXPECT_TRUE(prog.ok()) << prog.status().message();
    return *prog;
  }();
  return *p;
}

TEST(Simulate, ResNet50OnTpuV4) {
  const plan::Program& p = resnet50();
  const target::Target t = *target::builtin_preset("tpu-v4");
  auto r = simulate_program(p, t, SimOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  int convs = 0;
  for (const auto& l : r->layers) {
    convs += l.matrix;
    EXPECT_NE(l.op, "eltwise") << l.name << ": ReLU and residual Add are fused into the convs";
    EXPECT_GT(l.total_cycles, 0) << l.name;
  }
  EXPECT_EQ(convs, 54);  // 53 convolutions + the classifier as a 1x1 conv
  EXPECT_NEAR(r->macs / 1e9, 4.09, 0.05);
  EXPECT_EQ(r->precision, "fp32");  // the plan's: a float plan runs fp32 (three bf16 passes on a TPU)
  // Latency is at least the ideal time at peak and utilization is a fraction.
  EXPECT_GT(r->latency_us, r->macs / t.peak_macs_per_s("fp32") * 1e6);
  EXPECT_GT(r->mxu_util, 0.05);
  EXPECT_LT(r->mxu_util, 1.0);
  // A bigger batch fills the arrays better.
  SimOptions b64;
  b64.batch = 64;
  auto r64 = simulate_program(p, t, b64);
  ASSERT_TRUE(r64.ok());
  EXPECT_NEAR(r64->macs / r->macs, 64, 1e-6);
  EXPECT_GT(r64->throughput_per_s, r->throughput_per_s);
  // Forced int8 on v5e: twice the bf16 rate, half the bytes.
  const target::Target v5e = *target::builtin_preset("tpu-v5e");
  SimOptions i8, bf16;
  i8.precision = "int8";
  bf16.precision = "bf16";
  auto bf = simulate_program(p, v5e, bf16);
  auto q = simulate_program(p, v5e, i8);
  ASSERT_TRUE(bf.ok() && q.ok());
  EXPECT_NEAR(q->offchip_bytes * 2, bf->offchip_bytes, 1);
  EXPECT_LT(q->latency_us, bf->latency_us);
}

// On a host-style target a depthwise conv the plan runs on a depthwise kernel is vector work
// over its input and output (reads and writes at their measured rates, plus a cost per output
// row of 16 channels); on a TPU it is a (badly filled) GEMM like any conv.
TEST(Simulate, DepthwiseConvsAreVectorWorkOnTheHost) {
  onnx::ModelProto m;
  ASSERT_TRUE(zoo::zoo_build("mobilenet_v2", 0, &m).ok());
  auto g = frontend::import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_TRUE(g.ok());
  auto prog = plan::compile(std::move(*g), plan::CompileOptions{});
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  const ir::Graph& graph = (*prog)->graph;
  target::HostMeasurements hm;
  hm.threads = 2;
  hm.fp32_peak_gflops = 100;
  hm.dram_gbs = 20;
  target::Target host = target::host_target(host_cpu(), hm);
  ASSERT_GT(host.vector_gbs, 0);
  // The depthwise kernel's own rates, when measured.
  host.host_conv.dw_read_gbs = 40;
  host.host_conv.dw_write_gbs = 20;
  host.host_conv.dw_row_cycles = 100;
  // Worked by hand, at the host's clock (bytes / (GB/s) = ns): the 7x7 960-channel ones read and
  // write 7 * 7 * 960 * 4 = 188160 bytes over 7 rows x 60 rows of 16 channels; the stride-2 one of
  // the second block reads 112 * 112 * 96 * 4 = 4816896 and writes 56 * 56 * 96 * 4 = 1204224
  // over 56 x 6 rows, each at 100 cycles on one of the 2 threads.
  const double ghz = host.clock_ghz;
  const std::map<std::string, double> by_hand = {
      {"features.15.conv.1.0", (188160 / 40.0 + 188160 / 20.0) * ghz + 7 * 60 * 100 / 2.0},
      {"features.2.conv.1.0", (4816896 / 40.0 + 1204224 / 20.0) * ghz + 56 * 6 * 100 / 2.0}};
  int worked = 0;
  auto r = simulate_program(**prog, host, SimOptions{});
  auto tpu = simulate_program(**prog, *target::builtin_preset("tpu-v4"), SimOptions{});
  ASSERT_TRUE(r.ok() && tpu.ok());
  int dw = 0;
  for (const ir::Node& n : graph.nodes) {
    if (n.op != ir::Op::Conv || n.s("kernel", "").find("_dw_") == std::string::npos) continue;
    ++dw;
    auto named = [&](const SimReport& s) {
      return std::find_if(s.layers.begin(), s.layers.end(), [&](const LayerCost& l) { return l.name == n.name; });
    };
    const auto l = named(*r);
    ASSERT_NE(l, r->layers.end()) << n.name;
    EXPECT_FALSE(l->matrix) << n.name;
    EXPECT_EQ(l->op, "depthwise");
    EXPECT_EQ(l->fused, "bias+clip") << n.name;  // BatchNorm folded into a bias, ReLU6 a clip
    const double bytes = double(graph.t(n.in(0)).bytes() + graph.t(n.outputs[0]).bytes());
    EXPECT_DOUBLE_EQ(l->onchip_bytes, bytes) << n.name;
    EXPECT_GE(l->memory_cycles, int64_t(bytes / 40.0 * ghz)) << n.name;
    if (by_hand.count(n.name)) {
      EXPECT_NEAR(double(l->memory_cycles), by_hand.at(n.name), 1.0) << n.name;
      ++worked;
    }
    const auto lt = named(*tpu);
    ASSERT_NE(lt, tpu->layers.end());
    EXPECT_TRUE(lt->matrix) << n.name;
  }
  EXPECT_EQ(dw, 17);  // MobileNetV2's 17 inverted residual blocks, one depthwise 3x3 each
  EXPECT_EQ(worked, 2);
}

// The measured host's Reorders cost their loop per element where that outlasts their bytes at
// vector_gbs; unmeasured, their bytes alone. ResNet-50's input Reorder copies 3 x 224 x 224
// floats NCHW -> NHWC; its last one, 2048 floats back.
TEST(Simulate, ReordersCostTheirLoopPerElementOnTheHost) {
  target::HostMeasurements hm;
  hm.threads = 2;
  hm.fp32_peak_gflops = 100;
  hm.dram_gbs = 20;
  const target::Target bytes_only = target::host_target(host_cpu(), hm);
  hm.reorder_elem_ns = 0.5;
  const target::Target looped = target::host_target(host_cpu(), hm);
  ASSERT_DOUBLE_EQ(looped.reorder_elem_ns, 0.5);
  auto a = simulate_program(resnet50(), bytes_only, SimOptions{});
  auto b = simulate_program(resnet50(), looped, SimOptions{});
  ASSERT_TRUE(a.ok() && b.ok());
  int reorders = 0;
  for (std::size_t i = 0; i < b->layers.size(); ++i) {
    const LayerCost& la = a->layers[i];
    const LayerCost& lb = b->layers[i];
    ASSERT_EQ(la.name, lb.name);
    if (lb.op != "reorder") {
      EXPECT_EQ(la.total_cycles, lb.total_cycles) << lb.name;
      continue;
    }
    ++reorders;
    const double elems = lb.onchip_bytes / 8;  // each element read once and written once, fp32
    // Bytes only: 8 bytes an element at 20 GB/s, 0.4 ns; the loop at 0.5 ns outlasts it.
    EXPECT_NEAR(double(la.total_cycles), elems * 0.4 * bytes_only.clock_ghz, 1.0) << la.name;
    EXPECT_NEAR(double(lb.total_cycles), elems * 0.5 * looped.clock_ghz, 1.0) << lb.name;
    if (lb.name.rfind("input", 0) == 0) {
      EXPECT_DOUBLE_EQ(elems, 3.0 * 224 * 224);
    }
  }
  EXPECT_GE(reorders, 2);
}

TEST(Simulate, EveryPresetSimulatesResNet50) {
  const plan::Program& p = resnet50();
  int runs = 0;
  for (const auto& name : target::preset_names()) {
    auto t = target::load_target(name, 100.0);
    ASSERT_TRUE(t.ok()) << name;
    for (int64_t b : {1, 64}) {
      SimOptions o;
      o.batch = b;
      auto r = simulate_program(p, *t, o);
      ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
      EXPECT_GT(r->throughput_per_s, 0) << name;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 2 * static_cast<int>(target::preset_names().size()));
}

std::string run_cli(const std::string& args, int* status) {
  std::string out;
  FILE* f = popen((std::string(SYSTOLIC_BINARY) + " " + args + " 2>&1").c_str(), "r");
  char buf[4096];
  while (f && std::fgets(buf, sizeof buf, f)) out += buf;
  const int rc = f ? pclose(f) : -1;
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST(Simulate, CommandLine) {
  const std::string data = std::string(SYSTOLIC_SOURCE_DIR) + "/tests/data/";
  int st = -1;
  std::string out = run_cli("simulate --topology " + data + "scalesim_tiny.csv --config " + data +
                            "scalesim_tiny.cfg --convention scalesim --json", &st);
  ASSERT_EQ(st, 0) << out;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["layers"].size(), 2u);
  for (const char* k : {"name", "total_cycles", "stall_cycles", "mapping_efficiency_pct", "compute_util_pct"})
    EXPECT_TRUE(j["layers"][0].contains(k)) << k;
  EXPECT_EQ(j["layers"][0]["compute_cycles"], 258);
  EXPECT_EQ(j["convention"], "scalesim");
  out = run_cli("simulate --topology " + data + "scalesim_tiny.csv --target tpu-v9", &st);
  EXPECT_EQ(st, 1);
  EXPECT_NE(out.find("systolic: error: unknown target 'tpu-v9'"), std::string::npos) << out;
  out = run_cli("simulate --topology " + data + "scalesim_tiny.csv --what-if warp=9", &st);
  EXPECT_EQ(st, 1);
  EXPECT_NE(out.find("unknown parameter 'warp'"), std::string::npos) << out;
  // A bad variant anywhere in the list is refused before any row is printed.
  out = run_cli("simulate --topology " + data + "scalesim_tiny.csv --what-if array=256x256,hbm_bw=0", &st);
  EXPECT_EQ(st, 1);
  EXPECT_NE(out.find("what-if hbm_bw: '0' is not a positive number"), std::string::npos) << out;
  EXPECT_EQ(out.find("variant"), std::string::npos) << out;
  out = run_cli("simulate --topology " + data + "scalesim_tiny.csv --target tpu-v4 --what-if array=256x256", &st);
  EXPECT_EQ(st, 0) << out;
  EXPECT_NE(out.find("array=256x256"), std::string::npos) << out;
  out = run_cli("simulate", &st);
  EXPECT_EQ(st, 1) << out;
}

}  // namespace
}  // namespace systolic::sim

// The simulator's speed against its bar: ResNet-50 at one batch on one target well under 100 ms,
// and the whole batch sweep (1..256) over the eight presets under 2 s. The model is
// compiled once, outside the timing, as `systolic simulate` does before its first row.
#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "base/cpu.h"
#include "frontend/onnx/import.h"
#include "sim/simulate.h"
#include "target/target.h"
#include "tools/zoo/zoo.h"

namespace systolic::sim {
namespace {

const plan::Program& resnet50() {
  static std::shared_ptr<plan::Program> p = [] {
    onnx::ModelProto m;
    if (!zoo::zoo_build("resnet50", 0, &m).ok()) std::abort();
    auto g = frontend::import_onnx_bytes(m.SerializeAsString(), "");
    if (!g.ok()) std::abort();
    auto prog = plan::compile(std::move(*g), plan::CompileOptions{});
    if (!prog.ok()) std::abort();
    return *prog;
  }();
  return *p;
}

void BM_SimulateResNet50(benchmark::State& state, const std::string& target) {
  const plan::Program& p = resnet50();
  auto t = target::load_target(target);
  if (!t.ok()) return state.SkipWithError(t.status().message().c_str());
  SimOptions o;
  o.batch = state.range(0);
  for (auto _ : state) {
    auto r = simulate_program(p, *t, o);
    if (!r.ok()) return state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r->latency_us);
  }
}
BENCHMARK_CAPTURE(BM_SimulateResNet50, tpu_v4, std::string("tpu-v4"))->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateResNet50, host, std::string("host"))->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond);
// A GPU: every conv tries each CTA tile and K split (sim/gpu_model.h).
BENCHMARK_CAPTURE(BM_SimulateResNet50, h100, std::string("h100-sxm"))->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond);

// The host as `--check` describes it, the conv kernels replayed task by task (sim/host_conv.h):
// the costliest target to simulate. Rates as one check on a 2-core Zen 5 measured them.
void BM_SimulateResNet50CalibratedHost(benchmark::State& state) {
  const plan::Program& p = resnet50();
  target::HostMeasurements m;
  m.fp32_peak_gflops = 450;
  m.dram_gbs = 54;
  m.tile_rows = 6;
  m.tile_cols = 64;
  m.conv_efficiency = 0.91;
  m.call_cycles = 62;
  m.partial_call_cycles = 102;
  m.tap_setup_cycles = 13;
  m.merged_setup_cycles = 29;
  m.gather_cycles = 110;
  m.strided_step_cycles = 0.7;
  m.wino_float_cycles = 0.7;
  m.wino2_float_cycles = 0.5;
  m.dw_read_gbs = 171;
  m.dw_write_gbs = 49;
  m.dw_row_cycles = 122;
  m.l2_read_gbs = 129;
  m.l3_read_gbs = 188;
  m.dram_read_gbs = 40;
  m.reread_gbs = {92, 98, 102, 89};
  m.act_dram_gbs = 16;
  m.reorder_elem_ns = 0.4;
  const target::Target t = target::host_target(host_cpu(), m);
  if (!t.host_conv.enabled) return state.SkipWithError("the conv model is off");
  SimOptions o;
  o.batch = state.range(0);
  for (auto _ : state) {
    auto r = simulate_program(p, t, o);
    if (!r.ok()) return state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r->latency_us);
  }
}
BENCHMARK(BM_SimulateResNet50CalibratedHost)->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond);

// `--sweep-batch` over every preset (TPUs, GPUs, host) x 9 batch sizes.
void BM_SweepEveryPreset(benchmark::State& state) {
  const plan::Program& p = resnet50();
  int64_t runs = 0;
  for (auto _ : state) {
    for (const auto& name : target::preset_names()) {
      auto t = target::load_target(name);
      if (!t.ok()) return state.SkipWithError(t.status().message().c_str());
      for (int64_t b = 1; b <= 256; b *= 2) {
        SimOptions o;
        o.batch = b;
        auto r = simulate_program(p, *t, o);
        if (!r.ok()) return state.SkipWithError(r.status().message().c_str());
        benchmark::DoNotOptimize(r->latency_us);
        ++runs;
      }
    }
  }
  state.counters["simulations"] = benchmark::Counter(static_cast<double>(runs) / state.iterations());
}
BENCHMARK(BM_SweepEveryPreset)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace systolic::sim

// `systolic profile MODEL [--batch N] [--iters N] [--precision P] [--svg FILE] [--profile FILE.json]`:
// a per-layer table with each layer's place on this machine's roofline for the plan's precision
// (GOP/s and the int8 peak for int8 layers), and an SVG of it.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "api/multi_instance.h"
#include "runtime/session.h"
#include "sim/bandwidth.h"
#include "sim/host_winograd.h"
#include "sim/peak.h"
#include "tools/commands.h"
#include "tools/random_inputs.h"
#include "tools/roofline.h"
#include "tools/shape_flags.h"
#include "tools/trace_json.h"

namespace systolic::tools {

void register_profile(CLI::App& app) {
  auto* cmd = app.add_subcommand("profile", "time every layer and place it on this machine's roofline");
  auto model = std::make_shared<std::string>();
  auto batch = std::make_shared<int64_t>(1);
  auto threads = std::make_shared<int>(0);
  auto iters = std::make_shared<int>(10);
  auto warmup = std::make_shared<int>(2);
  auto svg = std::make_shared<std::string>();
  auto trace = std::make_shared<std::string>();
  auto no_cache = std::make_shared<bool>(false);
  cmd->add_option("model", *model, "model .onnx or compiled .plan")->required();
  cmd->add_option("--batch", *batch, "batch size (default 1)")->check(CLI::PositiveNumber);
  auto micro = std::make_shared<int64_t>(0);
  add_micro_batch_flag(cmd, micro);
  cmd->add_option("--threads", *threads, "threads (default: one per core)");
  cmd->add_option("--iters", *iters, "timed runs (default 10)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", *warmup, "untimed runs first (default 2)");
  cmd->add_option("--svg", *svg, "write the roofline chart as an SVG");
  cmd->add_option("--profile", *trace, "also write a Chrome trace (JSON) of the timed runs");
  cmd->add_flag("--no-cache", *no_cache, "do not use the compile cache");
  auto prec = std::make_shared<PrecisionFlags>();
  add_precision_flags(cmd, prec);
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_shape_flag(cmd, shapes);
  cmd->callback([=] {
    auto bound = parse_shapes(*shapes);
    if (!bound.ok()) return fail(bound.status());
    ModelOptions mo;
    mo.batch = *batch;
    mo.micro_batch = *micro;
    mo.cache = !*no_cache;
    mo.precision = *prec;
    mo.input_shapes = *bound;
    auto session = open_session(*model, mo, *threads);
    if (!session.ok()) return fail(session.status());
    runtime::Session& s = **session;
    IoBuffers io = make_io_buffers(s, 1);
    for (int i = 0; i < *warmup; ++i)
      if (Status st = api::run_once(s, io); !st.ok()) return fail(st);
    s.set_trace(static_cast<std::size_t>(*iters));
    for (int i = 0; i < *iters; ++i)
      if (Status st = api::run_once(s, io); !st.ok()) return fail(st);
    // The plan's precision sets the roof; each layer is placed against its own kernel's (an
    // int8 plan keeps some layers in float).
    const std::string& precision = s.program().precision;
    const sim::MeasuredPeak pk = sim::measured_peak(precision, s.threads());
    const double peak = pk.g_per_s;
    const char* unit = sim::ops_unit(precision);
    const char* per = precision == "int8" ? "OP" : "FLOP";
    const double bw = sim::measured_memory_bandwidth_gbs(s.threads());
    const double ridge = bw > 0 ? peak / bw : 0;
    const auto layers = s.profile();
    double total = 0, flops = 0;
    bool mixed = false;
    for (const auto& l : layers) total += l.runs ? l.total_ms / l.runs : 0;
    for (const auto& l : layers) flops += l.flops;
    for (const auto& l : layers) mixed |= l.flops > 0 && sim::kernel_precision(l.kernel) != precision;
    std::printf("model     %s (batch %lld, %s, %s, %d threads, %d runs)\n", model->c_str(),
                static_cast<long long>(s.program().batch), precision.c_str(), s.program().isa.c_str(), s.threads(),
                *iters);
    std::printf("machine   %.0f %s/s %s peak (measured: %s), %.1f GB/s memory bandwidth (memcpy), ridge %.1f %s/byte\n",
                peak, unit, precision.c_str(), pk.name().c_str(), bw, ridge, per);
    std::printf("total     %.3f ms per run over %zu steps, %.2f %s, %.1f %s/s\n\n", total, layers.size(), flops / 1e9, unit,
                total > 0 ? flops / total / 1e6 : 0.0, unit);
    const std::string rate = std::string(unit) + "/s", intensity = std::string(per) + "/B";
    std::printf("%-28s %-18s %-28s %9s %6s %9s %6s %9s %s\n", "layer", "op", "kernel", "ms", "share", rate.c_str(), "%peak",
                intensity.c_str(), "bound");
    std::vector<RooflinePoint> points;
    for (const auto& l : layers) {
      const double ms = l.runs ? l.total_ms / l.runs : 0;
      const double gf = ms > 0 ? l.flops / ms / 1e6 : 0;
      const double ai = l.bytes > 0 ? l.flops / l.bytes : 0;
      const double lp = sim::measured_peak(sim::kernel_precision(l.kernel), s.threads()).g_per_s;
      const bool compute = l.flops > 0 && ai >= (bw > 0 ? lp / bw : 0);
      std::printf("%-28s %-18s %-28s %9.3f %5.1f%% %9.1f %5.0f%% %9.2f %s\n", l.name.substr(0, 28).c_str(), l.op.c_str(),
                  l.kernel.c_str(), ms, total > 0 ? 100 * ms / total : 0, gf, lp > 0 ? 100 * gf / lp : 0, ai,
                  compute ? "compute" : "memory");
      points.push_back({l.name + " (" + l.op + ", " + l.kernel + ")", ai, gf});
    }
    if (mixed)
      std::printf("(%%peak and bound: each layer against the measured peak of its kernel's precision; float layers in "
                  "GFLOP/s)\n");
    bool winograd = false;
    for (const auto& l : layers) winograd = winograd || sim::winograd_tile_of(l.kernel) > 0;
    if (winograd)
      std::printf("(FLOPs are direct convolution's: Winograd layers show their effective rate, which can pass the peak)\n");
    if (!svg->empty()) {
      std::ofstream f(*svg, std::ios::binary | std::ios::trunc);
      std::vector<RooflineRoof> others;
      if (precision != "fp32") others.push_back({"fp32 peak", sim::measured_peak("fp32", s.threads()).g_per_s});
      f << roofline_svg("roofline: " + *model + " (" + precision + ")", peak, bw, points, per, others);
      if (!f) return fail(Err("cannot write %s", svg->c_str()));
      std::printf("\nroofline -> %s\n", svg->c_str());
    }
    if (!trace->empty()) {
      if (Status st = write_chrome_trace(s, *trace); !st.ok()) return fail(st);
      std::printf("trace -> %s\n", trace->c_str());
    }
  });
}

}  // namespace systolic::tools

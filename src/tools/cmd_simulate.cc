// `systolic simulate MODEL --target tpu-v4 [--batch N] [--precision P] [--json] [--sweep-batch
// [--svg F]] [--what-if k=v,...] [--compare t1,t2 --batch 1,64]`, or `--topology F.csv
// --config F.cfg [--convention scalesim]`, or `--target host --check [--iters N] [--threads N]`
// (prediction against the runtime's measured per-step times): the systolic-array cost model.
// With --compare and the host among the targets, a measured row too: the plan run here.
// --precision compiles the plan in that precision (fp32, bf16, int8; calibrated like compile's);
// each matrix layer is then costed at the plan's precision for it (int8 layers on int8 MXUs or
// tensor cores, at bf16 where a chip has no int8, ...). Without it the plan takes the automatic
// precision (int8 for a QDQ model, else fp32).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "sim/host_check.h"
#include "sim/peak.h"
#include "sim/report.h"
#include "sim/scalesim.h"
#include "target/scalesim_cfg.h"
#include "tools/commands.h"
#include "tools/multi_instance.h"
#include "tools/percentile.h"
#include "tools/shape_flags.h"

namespace systolic::tools {
namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Options {
  std::string model, target = "tpu-v4", batch, what_if, compare, topology, config, svg;
  PrecisionFlags precision;
  std::string convention = "native";
  bool json = false, sweep = false, check = false, no_measure = false;
  int iters = 30, threads = 0;
  int64_t compile_batch = 0;  // 0: the first --batch
  std::vector<std::string> shapes;  // --shape; the leading dim follows each --batch
};

// The --shape bindings for `batch`: each shape's leading dim set to the batch simulated.
Expected<std::map<std::string, ir::Shape>> shapes_for_batch(const Options& op, int64_t batch) {
  auto bound = parse_shapes(op.shapes);
  if (!bound.ok()) return bound.status();
  for (auto& [name, shape] : *bound) shape[0] = batch;
  return bound;
}

// The workload: a compiled plan or a SCALE-Sim topology, simulated for any target and batch.
struct Workload {
  std::shared_ptr<const plan::Program> prog;
  std::vector<sim::TopologyLayer> topo;
  Expected<sim::SimReport> run(const target::Target& t, sim::SimOptions o) const {
    return prog ? sim::simulate_program(*prog, t, o) : sim::simulate_topology(topo, t, o);
  }
};

Expected<target::Target> get_target(const Options& op, const std::string& name) {
  if (!op.config.empty()) return target::target_from_scalesim_cfg(op.config);
  return target::load_target(name, name == "host" ? sim::measured_fp32_peak_gflops(host_cpu().cores) : 0);
}

void print_row_header(const char* first) {
  std::printf("%-22s %-5s %7s %12s %14s %7s %12s %-15s %s\n", first, "prec", "batch", "latency ms", "inferences/s", "util",
              "off-chip", "bound (time)", "layers c/m/o");
}

void print_row(const std::string& label, const sim::SimReport& r) {
  const sim::BoundShare b = sim::bound_share(r);
  char bound[32];
  std::snprintf(bound, sizeof bound, "%s %.0f%%", b.bound.c_str(), 100 * b.share);
  std::printf("%-22s %-5s %7lld %12.4f %14.1f %6.1f%% %8.1f MiB %-15s %d/%d/%d\n", label.c_str(), r.precision.c_str(),
              static_cast<long long>(r.batch), r.latency_us / 1e3, r.throughput_per_s, 100 * r.mxu_util,
              r.offchip_bytes / 1048576.0, bound, b.compute, b.memory, b.overhead);
}

// The host's measured row of a --compare table: the model compiled for `batch` and run by the
// runtime on this machine (2 warm-up runs, then at least 5 runs and 1 s), its median latency.
struct MeasuredRow {
  int64_t batch = 0, runs = 0;
  int threads = 0;
  double latency_ms = 0, per_s = 0;
  std::string error;  // why there is no measurement (a plan compiled for another batch, say)
};

MeasuredRow measure_row(const Options& op, int64_t batch) {
  MeasuredRow row;
  row.batch = batch;
  row.threads = op.threads > 0 ? op.threads : host_cpu().cores;
  ModelOptions mo;
  mo.batch = batch;
  mo.precision = op.precision;
  auto bound = shapes_for_batch(op, batch);
  if (!bound.ok()) {
    row.error = bound.status().message();
    return row;
  }
  mo.input_shapes = *bound;
  auto prog = load_model(op.model, mo);
  if (!prog.ok()) {
    row.error = prog.status().message();
    return row;
  }
  auto inst = open_instances(*prog, 1, row.threads);
  if (!inst.ok()) {
    row.error = inst.status().message();
    return row;
  }
  auto warm = run_instances(*inst, 2, 0);
  auto timed = warm.ok() ? run_instances(*inst, 5, 1.0) : warm;
  if (!timed.ok()) {
    row.error = timed.status().message();
    return row;
  }
  row.runs = timed->runs;
  row.latency_ms = percentile(timed->latency_ms, 0.5);
  row.per_s = row.latency_ms > 0 ? 1e3 * double(batch) / row.latency_ms : 0;
  return row;
}

Status run(const Options& op) {
  std::vector<int64_t> batches;
  for (const auto& b : split(op.batch)) {
    char* end = nullptr;
    const long long v = std::strtoll(b.c_str(), &end, 10);
    if (*end != '\0' || v <= 0) return Err("--batch: '%s' is not a positive integer", b.c_str());
    batches.push_back(v);
  }
  if (batches.empty()) batches.push_back(1);
  if (op.sweep) batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  sim::SimOptions so;
  // A plan is costed in its own precision, layer by layer (--precision compiles it so); a
  // SCALE-Sim topology has none of its own.
  if (!op.topology.empty()) so.precision = op.precision.precision;
  if (op.convention == "scalesim") so.convention = sim::Convention::scalesim;
  else if (op.convention != "native") return Err("--convention: '%s' (use native or scalesim)", op.convention.c_str());

  Workload w;
  if (!op.topology.empty()) {
    if (!op.precision.calibration.empty() || !op.precision.keep_fp32.empty())
      return Err("--calibration and --keep-fp32 apply to a MODEL, not to --topology");
    auto t = sim::parse_topology_csv(op.topology);
    if (!t.ok()) return t.status();
    w.topo = *t;
  } else if (!op.model.empty()) {
    ModelOptions mo;
    mo.batch = op.compile_batch > 0 ? op.compile_batch : batches.front();
    mo.precision = op.precision;
    auto bound = shapes_for_batch(op, mo.batch);
    if (!bound.ok()) return bound.status();
    mo.input_shapes = *bound;
    auto p = load_model(op.model, mo);
    if (!p.ok()) return p.status();
    w.prog = *p;
    // What the plan computes in: each matrix layer is costed at its own precision's rate on
    // the target (or the nearest exact one the target has, noted).
    if (!op.json) std::printf("plan        %s (%s)\n", op.model.c_str(), w.prog->precision.c_str());
  } else {
    return Err("give a MODEL (.onnx or .plan) or --topology FILE.csv");
  }

  if (op.check) {  // the host preset from measurements against the runtime's per-step times
    if (!w.prog || op.target != "host" || !op.compare.empty() || !op.what_if.empty() || batches.size() != 1)
      return Err("--check needs a MODEL, --target host and one --batch");
    if (op.compile_batch > 0 && op.compile_batch != batches.front())
      return Err("--check runs the plan: --compile-batch must be the --batch");
    sim::CheckOptions co;
    co.threads = op.threads;
    co.iters = op.iters;
    auto c = sim::check_host(w.prog, co);
    if (!c.ok()) return c.status();
    c->model = op.model;
    if (op.json) {
      nlohmann::json j = sim::check_json(*c);
      j["plan_precision"] = w.prog->precision;
      std::printf("%s\n", j.dump().c_str());
    }
    else std::printf("%s", sim::format_check(*c).c_str());
    return Status::Ok();
  }

  std::vector<target::Target> targets;
  const std::vector<std::string> names = op.compare.empty() ? std::vector<std::string>{op.target} : split(op.compare);
  for (const auto& name : names) {
    auto t = get_target(op, name);
    if (!t.ok()) return t.status();
    targets.push_back(*t);
  }
  nlohmann::json out;

  if (!op.what_if.empty()) {  // baseline, then one row per single-parameter variant
    // Every variant is built, and so checked, before any row is printed.
    std::vector<std::pair<std::string, target::Target>> variants;
    for (const auto& a : split(op.what_if)) {
      variants.push_back({a, targets[0]});
      SYSTOLIC_RETURN_IF_ERROR(target::apply_what_if(&variants.back().second, a));
    }
    so.batch = batches.front();
    auto base = w.run(targets[0], so);
    if (!base.ok()) return base.status();
    out["baseline"] = sim::report_json(*base, false);
    out["variants"] = nlohmann::json::array();
    if (!op.json) {
      print_row_header("variant");
      print_row(targets[0].name, *base);
    }
    for (const auto& [a, t] : variants) {
      auto r = w.run(t, so);
      if (!r.ok()) return r.status();
      auto j = sim::report_json(*r, false);
      j["variant"] = a;
      j["speedup"] = base->latency_us / r->latency_us;
      out["variants"].push_back(j);
      if (!op.json) print_row(a + std::string(" (") + std::to_string(base->latency_us / r->latency_us).substr(0, 4) + "x)", *r);
    }
  } else if (op.sweep || !op.compare.empty() || batches.size() > 1) {  // a row per target x batch
    out["runs"] = nlohmann::json::array();
    std::vector<sim::ChartSeries> series;
    std::vector<sim::ChartBar> bars;  // one batch: a bar per target
    if (!op.json) print_row_header("target");
    for (std::size_t k = 0; k < targets.size(); ++k) {
      const target::Target& t = targets[k];
      sim::ChartSeries s{t.name, {}, {}};
      for (int64_t b : batches) {
        so.batch = b;
        auto r = w.run(t, so);
        if (!r.ok()) return r.status();
        out["runs"].push_back(sim::report_json(*r, false));
        if (!op.json) print_row(t.name, *r);
        s.x.push_back(static_cast<double>(b));
        s.y.push_back(r->throughput_per_s);
        const sim::BoundShare bs = sim::bound_share(*r);
        char note[96];
        std::snprintf(note, sizeof note, "%.3g ms, %.0f%% util, %s", r->latency_us / 1e3, 100 * r->mxu_util, bs.bound.c_str());
        bars.push_back({t.name + " " + r->precision, note, r->throughput_per_s});
      }
      series.push_back(s);
      // The host simulated, then the host measured: the same plan run here at each batch.
      if (names[k] != "host" || op.compare.empty() || !w.prog || op.no_measure || !op.config.empty()) continue;
      sim::ChartSeries m{"host (measured)", {}, {}};
      out["measured"] = nlohmann::json::array();
      for (int64_t b : batches) {
        const MeasuredRow row = measure_row(op, b);
        nlohmann::json j = {{"target", "host (measured)"}, {"batch", b}, {"threads", row.threads}};
        if (!row.error.empty()) {
          j["error"] = row.error;
          if (!op.json) std::printf("%-22s %7lld %s\n", "host (measured)", static_cast<long long>(b), row.error.c_str());
        } else {
          j["latency_ms"] = row.latency_ms;
          j["throughput_per_s"] = row.per_s;
          j["runs"] = row.runs;
          if (!op.json)
            std::printf("%-22s %7lld %12.4f %14.1f %8s %12s median of %lld runs, %d threads\n", "host (measured)",
                        static_cast<long long>(b), row.latency_ms, row.per_s, "-", "-", static_cast<long long>(row.runs),
                        row.threads);
          m.x.push_back(static_cast<double>(b));
          m.y.push_back(row.per_s);
          char note[64];
          std::snprintf(note, sizeof note, "%.3g ms, measured", row.latency_ms);
          bars.push_back({"host (measured)", note, row.per_s});
        }
        out["measured"].push_back(j);
      }
      if (!m.x.empty()) series.push_back(m);
    }
    if (!op.svg.empty()) {
      std::ofstream f(op.svg);
      if (batches.size() == 1)
        f << sim::svg_bars("throughput at batch " + std::to_string(batches.front()), "inferences/s", bars);
      else
        f << sim::svg_chart("simulated throughput against batch size", "batch", "inferences/s", series);
      if (!f) return Err("cannot write %s", op.svg.c_str());
      if (!op.json) std::printf("wrote %s\n", op.svg.c_str());
    }
  } else {  // one target, one batch: the per-layer table and totals
    so.batch = batches.front();
    auto r = w.run(targets[0], so);
    if (!r.ok()) return r.status();
    out = sim::report_json(*r, true);
    if (!op.json) std::printf("%s\n%s", sim::format_layers(*r).c_str(), sim::format_totals(*r).c_str());
  }
  if (op.json) {
    if (w.prog) out["plan_precision"] = w.prog->precision;
    std::printf("%s\n", out.dump().c_str());
  }
  return Status::Ok();
}

}  // namespace

void register_simulate(CLI::App& app) {
  auto* cmd = app.add_subcommand("simulate", "predict a model's cost on a systolic-array accelerator (TPU presets, host)");
  auto op = std::make_shared<Options>();
  std::string names;
  for (const auto& n : target::preset_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("model", op->model, "model .onnx or compiled .plan");
  cmd->add_option("--target", op->target, "target: " + names + ", or a .json preset (default tpu-v4)");
  cmd->add_option("--batch", op->batch, "batch size, or a list with --compare (e.g. 1,64)");
  cmd->add_option("--compile-batch", op->compile_batch,
                  "compile the plan at this batch and rescale it to each --batch (default: the first --batch); "
                  "large batches without compiling, or calibrating, at that size")
      ->check(CLI::PositiveNumber);
  add_precision_flags(cmd, std::shared_ptr<PrecisionFlags>(op, &op->precision));
  cmd->add_option("--shape", op->shapes, "bind an input's symbolic dims: NAME=1x3x48x320 (leading dim: --batch)");
  cmd->add_flag("--json", op->json, "print one JSON object");
  cmd->add_flag("--sweep-batch", op->sweep, "throughput and latency for batch 1..256");
  cmd->add_option("--svg", op->svg, "with --sweep-batch or --compare: write a throughput chart");
  cmd->add_option("--what-if", op->what_if, "variants, one parameter each: array=256x256,sram=64MiB,hbm_bw=2000,...");
  cmd->add_option("--compare", op->compare,
                  "targets side by side, e.g. tpu-v4,tpu-v5e,host (with host, also the plan run here)");
  cmd->add_flag("--no-measure", op->no_measure, "with --compare: leave out the measured host row");
  cmd->add_option("--topology", op->topology, "SCALE-Sim topology CSV instead of a model");
  cmd->add_option("--config", op->config, "SCALE-Sim architecture .cfg as the target");
  cmd->add_option("--convention", op->convention, "cycle formulas: native (default) or scalesim");
  cmd->add_flag("--check", op->check, "with --target host: also run the plan and compare per-layer times");
  cmd->add_option("--iters", op->iters, "with --check: timed runs (default 30)")->check(CLI::PositiveNumber);
  cmd->add_option("--threads", op->threads,
                  "with --check or the measured host row: runtime threads (default: one per core)");
  cmd->callback([op] {
    Status st = run(*op);
    if (!st.ok()) fail(st);
  });
}

}  // namespace systolic::tools

// `systolic compare MODEL --precision bf16|int8 [--calibration ...] [--inputs DIR|FILES|random:N]
// [--batch N] [--shape NAME=DIMS] [--output NAME] [--json] [--preprocess ...]`: the model
// compiled in fp32 and in the given precision (same preprocessing), both run on the same
// inputs, and how closely one output (the first, or --output: any graph output, or a tensor
// inside the network that both plans compute) follows fp32's, per batch row: cosine
// similarity, max absolute error, top-1 and top-5 agreement.
#include <sys/stat.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "quantize/calibration_data.h"
#include "quantize/layer_report.h"
#include "runtime/session.h"
#include "tools/agreement.h"
#include "tools/commands.h"
#include "tools/preprocess_flags.h"
#include "tools/shape_flags.h"

namespace systolic::tools {
namespace {

struct CompareArgs {
  std::string model;
  std::vector<std::string> inputs{"random:8"};
  std::vector<std::string> shapes;  // --shape NAME=DIMS
  std::string output;               // --output: empty for the first graph output
  int64_t batch = 0;
  int threads = 0;
  bool json = false, no_cache = false;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// Where --output names a tensor inside the network: its values in each run, captured as the
// steps that write it finish (a micro-batched plan writes it once per micro-batch: appended
// along the batch).
struct Watch {
  std::string name;
  std::vector<float> values;
  ir::Shape shape;
  Status status = Status::Ok();
  bool seen = false;
  void start_run() { values.clear(), shape.clear(), seen = false; }
  void observe(const ir::Tensor& t, const void* data) {
    if (t.name != name || !status.ok()) return;
    std::vector<float> v;
    status = quantize::model_order_floats(t, data, &v);
    values.insert(values.end(), v.begin(), v.end());
    if (!seen) shape = t.shape;
    else if (!shape.empty() && t.shape.size() == shape.size()) shape[0] += t.shape[0];
    seen = true;
  }
};

// Whether a plan computes `name` as an activation (a step writes it to the arena).
bool computes(const plan::Program& p, const std::string& name) {
  for (std::size_t i = 0; i < p.graph.tensors.size(); ++i)
    if (p.graph.tensors[i].name == name && p.graph.tensors[i].arena_offset >= 0 && !p.graph.tensors[i].is_const())
      return true;
  return false;
}

Status compare(const CompareArgs& a, const PrecisionFlags& prec, const PreprocessFlags& pre) {
  if (prec.precision.empty()) return Err("compare needs bf16 or int8: give --precision bf16 or --precision int8");
  if (prec.precision != "bf16" && prec.precision != "int8")
    return Err("compare needs bf16 or int8 (--precision %s is what it compares against)", prec.precision.c_str());
  if (is_plan_file(a.model))
    return Err("%s is a compiled plan: its precision is fixed; compare needs the .onnx", a.model.c_str());
  auto preprocess = resolve_preprocess(pre);
  if (!preprocess.ok()) return preprocess.status();
  // The inputs exist before anything compiles (an int8 compile may calibrate first).
  for (const std::string& in : a.inputs) {
    int n = 0;
    struct stat sb;
    if (in.rfind("random:", 0) == 0 ? !quantize::is_random_source({in}, &n) : stat(in.c_str(), &sb) != 0)
      return Err("--inputs %s: %s", in.c_str(),
                 in.rfind("random:", 0) == 0 ? "expected random:N with N a positive number" : "no such file or directory");
  }
  auto bound = parse_shapes(a.shapes);
  if (!bound.ok()) return bound.status();
  auto batch = batch_with_shapes(a.batch, *bound);
  if (!batch.ok()) return batch.status();
  ModelOptions mo;
  mo.batch = *batch;
  mo.input_shapes = *bound;
  mo.cache = !a.no_cache;
  mo.preprocess = *preprocess;
  // fp32 first: a QDQ model's Q/DQ pairs then run in float (fake quantization).
  mo.precision.precision = "fp32";
  auto ref = open_session(a.model, mo, a.threads);
  if (!ref.ok()) return ref.status();
  mo.precision = prec;
  auto low = open_session(a.model, mo, a.threads);
  if (!low.ok()) return low.status();
  runtime::Session& r = **ref;
  runtime::Session& l = **low;
  if (r.inputs().size() != l.inputs().size() || r.outputs().empty() || l.outputs().empty())
    return Err("the fp32 and %s plans of %s differ in their inputs or outputs", l.program().precision.c_str(),
               a.model.c_str());
  for (std::size_t k = 0; k < r.inputs().size(); ++k)
    if (r.inputs()[k].name != l.inputs()[k].name || r.inputs()[k].dtype != l.inputs()[k].dtype ||
        r.inputs()[k].shape != l.inputs()[k].shape)
      return Err("the fp32 and %s plans of %s take different inputs (%s)", l.program().precision.c_str(),
                 a.model.c_str(), r.inputs()[k].name.c_str());
  std::vector<std::string> notes;
  auto samples = quantize::load_samples(a.inputs, r.inputs(), *preprocess, 0, &notes);
  for (const std::string& n : notes) std::fprintf(stderr, "systolic: note: --inputs %s\n", n.c_str());
  if (!samples.ok()) return Err("--inputs: %s", samples.status().message().c_str());

  // The output compared: a graph output by index, or a tensor both plans compute (watched).
  std::size_t out_k = 0;
  bool inside = false;
  if (!a.output.empty()) {
    out_k = r.outputs().size();
    for (std::size_t k = 0; k < r.outputs().size(); ++k)
      if (r.outputs()[k].name == a.output) out_k = k;
    if (out_k == r.outputs().size()) {
      std::string names;
      for (const runtime::TensorInfo& o : r.outputs()) names += (names.empty() ? "" : ", ") + o.name;
      for (const runtime::Session* s : {&r, &l})
        if (!computes(s->program(), a.output))
          return Err("--output %s: the %s plan computes no tensor of that name (not in the model, or fused into "
                     "its neighbour there); the model's outputs: %s",
                     a.output.c_str(), s->program().precision.c_str(), names.c_str());
      inside = true;
      out_k = 0;
    }
  }
  Watch wr, wl;
  wr.name = wl.name = a.output;
  if (inside) {
    r.set_observer([&](const ir::Tensor& t, const void* d) { wr.observe(t, d); });
    l.set_observer([&](const ir::Tensor& t, const void* d) { wl.observe(t, d); });
  }
  const std::string out_name = inside ? a.output : r.outputs()[out_k].name;
  ir::Shape out_shape = inside ? ir::Shape{} : r.outputs()[out_k].shape;
  Agreement agree;
  for (const std::vector<runtime::HostTensor>& set : *samples) {
    std::vector<std::pair<std::string, runtime::HostTensor>> named;
    for (std::size_t k = 0; k < set.size(); ++k) named.emplace_back(r.inputs()[k].name, set[k]);
    std::vector<runtime::HostTensor> ro, lo;
    wr.start_run();
    wl.start_run();
    SYSTOLIC_RETURN_IF_ERROR(r.run(named, &ro));
    SYSTOLIC_RETURN_IF_ERROR(l.run(named, &lo));
    if (inside) {
      SYSTOLIC_RETURN_IF_ERROR(wr.status);
      SYSTOLIC_RETURN_IF_ERROR(wl.status);
      if (!wr.seen || !wl.seen) return Err("--output %s: no step wrote it in this run", a.output.c_str());
      if (wr.shape != wl.shape)
        return Err("tensor %s is %s in fp32 but %s in %s", out_name.c_str(), ir::shape_str(wr.shape).c_str(),
                   ir::shape_str(wl.shape).c_str(), l.program().precision.c_str());
      out_shape = wr.shape;
      const int64_t rows = wr.shape.size() >= 2 && wr.shape[0] > 0 ? wr.shape[0] : 1;
      agree.add(wr.values.data(), wl.values.data(), rows, static_cast<int64_t>(wr.values.size()) / rows);
      continue;
    }
    const runtime::HostTensor& x = ro[out_k];
    const runtime::HostTensor& y = lo[out_k];
    if (x.dtype != ir::DType::f32 || y.dtype != ir::DType::f32)
      return Err("output %s is %s in fp32 and %s in %s; compare needs float outputs", out_name.c_str(),
                 ir::dtype_name(x.dtype), ir::dtype_name(y.dtype), l.program().precision.c_str());
    if (x.shape != y.shape)
      return Err("output %s is %s in fp32 but %s in %s", out_name.c_str(), ir::shape_str(x.shape).c_str(),
                 ir::shape_str(y.shape).c_str(), l.program().precision.c_str());
    // One row per batch item (a rank-0 or rank-1 output is one row).
    const int64_t rows = x.shape.size() >= 2 && x.shape[0] > 0 ? x.shape[0] : 1;
    agree.add(x.as<float>(), y.as<float>(), rows, x.numel() / rows);
  }

  const std::string& precision = l.program().precision;
  if (a.json) {
    const nlohmann::json j = {{"model", a.model},
                              {"precision", precision},
                              {"output", out_name},
                              {"batch", r.program().batch},
                              {"samples", samples->size()},
                              {"rows", agree.rows()},
                              {"cosine", agree.cosine()},
                              {"max_abs_error", agree.max_abs_error()},
                              {"top1_agreement", agree.top1()},
                              {"top5_agreement", agree.top5()}};
    std::printf("%s\n", j.dump().c_str());
    return Status::Ok();
  }
  std::printf("model        %s (batch %lld, %s against fp32, %s)\n", a.model.c_str(),
              static_cast<long long>(r.program().batch), precision.c_str(), l.program().isa.c_str());
  std::printf("inputs       %s: %zu samples, %lld rows of output %s%s\n", join(a.inputs).c_str(), samples->size(),
              static_cast<long long>(agree.rows()), out_name.c_str(), ir::shape_str(out_shape).c_str());
  std::printf("cosine       %.6f (all values of all rows as one vector)\n", agree.cosine());
  std::printf("max |error|  %.6g\n", agree.max_abs_error());
  std::printf("top-1        %.1f%% of rows have fp32's argmax\n", 100 * agree.top1());
  std::printf("top-5        %.1f%% (mean over rows of |top5 and fp32's top5 in common| / 5)\n", 100 * agree.top5());
  return Status::Ok();
}

}  // namespace

void register_compare(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "run a model in fp32 and in bf16 or int8: cosine, max error, top-1/top-5 agreement");
  cmd->footer(
      "Both plans take the same inputs; the first output (or --output) is compared, one row per batch item. cosine: over all values "
      "of all rows as one vector. max_abs_error: the largest |value - fp32's|. top1_agreement: the fraction of rows "
      "whose argmax is fp32's. top5_agreement: the mean over rows of |top5 and fp32's top5 in common| / 5.");
  auto a = std::make_shared<CompareArgs>();
  cmd->add_option("model", a->model, "model .onnx (a QDQ model with --precision int8: int8 against its Q/DQ run in float)")
      ->required();
  cmd->add_option("--inputs", a->inputs,
                  "inputs: folders, .jpg/.png/.npy/.pb files, or random:N (default random:8)");
  cmd->add_option("--batch", a->batch, "batch size (default 1; rows of the output compared one by one)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", a->threads, "threads (default: one per core)");
  cmd->add_option("--output", a->output,
                  "the tensor compared: a graph output, or one inside the network that both plans compute (a "
                  "detector's scores before its NMS; default: the first output)");
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_shape_flag(cmd, shapes);
  cmd->add_flag("--json", a->json,
                "print one JSON object: cosine, max_abs_error, top1_agreement, top5_agreement, samples, rows, precision");
  cmd->add_flag("--no-cache", a->no_cache, "do not use the compile cache");
  auto prec = std::make_shared<PrecisionFlags>();
  add_precision_flags(cmd, prec);
  auto pre = std::make_shared<PreprocessFlags>();
  add_preprocess_flags(cmd, pre);
  cmd->callback([=] {
    a->shapes = *shapes;
    if (Status st = compare(*a, *prec, *pre); !st.ok()) fail(st);
  });
}

}  // namespace systolic::tools

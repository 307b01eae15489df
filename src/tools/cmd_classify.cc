// `systolic classify MODEL --images DIR... [--labels F] [--top K] [-o OUT.csv|.jsonl]
//  [--summary-json F] [--profile F.json]`: images in, top-k out, through the asynchronous
// pipeline (decode/resize on host threads, batch assembly, inference, results).
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/tune_store.h"
#include "image/image.h"
#include "runtime/pipeline.h"
#include "tools/classify_output.h"
#include "tools/commands.h"
#include "tools/percentile.h"
#include "tools/preprocess_flags.h"
#include "tools/trace_json.h"

namespace systolic::tools {
namespace {

bool is_dir(const std::string& p) {
  struct stat sb;
  return stat(p.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

// Every regular file under `root` (recursively, hidden entries skipped), sorted; a file given
// directly is taken as is. Non-images are kept: the pipeline reports them, nothing is dropped.
Status collect(const std::string& root, std::vector<std::string>* out) {
  struct stat sb;
  if (stat(root.c_str(), &sb) != 0) return Err("--images %s: no such file or directory", root.c_str());
  if (!S_ISDIR(sb.st_mode)) {
    out->push_back(root);
    return Status::Ok();
  }
  DIR* d = opendir(root.c_str());
  if (!d) return Err("--images %s: cannot read the directory", root.c_str());
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string p = root + (root.back() == '/' ? "" : "/") + n;
    if (is_dir(p)) SYSTOLIC_RETURN_IF_ERROR(collect(p, out));
    else out->push_back(p);
  }
  return Status::Ok();
}

// "[=========>          ] 512/1000  18.3 images/s  ETA 27 s" on one rewritten stderr line.
void progress(std::size_t done, std::size_t total, double elapsed_s, bool final) {
  const int width = 30;
  const int fill = total ? static_cast<int>(width * done / total) : width;
  std::string bar(static_cast<std::size_t>(fill), '=');
  if (fill < width) bar += '>' + std::string(static_cast<std::size_t>(width - fill - 1), ' ');
  const double rate = elapsed_s > 0 ? done / elapsed_s : 0;
  const double eta = rate > 0 ? (total - done) / rate : 0;
  std::fprintf(stderr, "\r[%s] %zu/%zu  %.1f images/s  ETA %.0f s ", bar.c_str(), done, total, rate, eta);
  if (final) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void register_classify(CLI::App& app) {
  auto* cmd = app.add_subcommand("classify", "classify images (JPEG/PNG) through the asynchronous pipeline");
  struct Opts {
    std::string model, labels, output, format, summary_json, trace;
    std::vector<std::string> images;
    int top = 5, threads = 0, instances = 1, loaders = 0, queue = 2;
    int64_t batch = 0;
    bool progress = false, quiet = false, no_cache = false, no_tuned = false;
  };
  auto o = std::make_shared<Opts>();
  auto pre = std::make_shared<PreprocessFlags>();
  cmd->add_option("model", o->model, "model .onnx (compiled with --preprocess imagenet unless told otherwise) or a .plan compiled with preprocessing")->required();
  cmd->add_option("--images", o->images, "a directory (searched recursively) or image file; repeatable")->required();
  cmd->add_option("--labels", o->labels, "class names, one per line");
  cmd->add_option("--top", o->top, "classes per image (default 5)")->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", o->output, "write results here (.csv or .jsonl); default: CSV on stdout");
  cmd->add_option("--format", o->format, "csv | jsonl (default: from the output's extension, else csv)");
  cmd->add_option("--summary-json", o->summary_json, "write the run's summary as JSON");
  auto* batch_opt = cmd->add_option("--batch", o->batch, "images per inference (default: tuned, else 1)")->check(CLI::PositiveNumber);
  auto* threads_opt = cmd->add_option("--threads", o->threads, "inference threads in all (default: tuned, else one per core)");
  auto* instances_opt = cmd->add_option("--instances", o->instances, "sessions running batches concurrently, threads split between them")->check(CLI::PositiveNumber);
  cmd->add_flag("--no-tuned", o->no_tuned, "ignore the configuration `systolic tune` saved for the model");
  cmd->add_option("--loaders", o->loaders, "host threads decoding and resizing (default: 1 per 4 cores, at least 1)");
  cmd->add_option("--queue", o->queue, "batches buffered between stages (default 2)")->check(CLI::PositiveNumber);
  cmd->add_option("--profile", o->trace, "write a Chrome trace of every pipeline stage and kernel");
  cmd->add_flag("--progress", o->progress, "show the progress bar even when stderr is not a terminal");
  cmd->add_flag("--quiet", o->quiet, "no progress bar");
  cmd->add_flag("--no-cache", o->no_cache, "do not use the compile cache");
  add_preprocess_flags(cmd, pre);
  auto prec = std::make_shared<PrecisionFlags>();
  add_precision_flags(cmd, prec);
  cmd->callback([=] {
    Opts op = *o;
    // The configuration `systolic tune` saved for this model and host, unless one was given.
    if (!batch_opt->count() && !threads_opt->count() && !instances_opt->count() && !op.no_tuned) {
      auto tuned = api::load_tuned(op.model, "fp32");
      if (!tuned.ok()) {
        std::fprintf(stderr, "systolic: note: ignoring the tuned configuration: %s\n", tuned.status().message().c_str());
      } else if (*tuned) {
        const api::TunedConfig& c = **tuned;
        op.batch = c.batch;
        op.instances = c.instances;
        op.threads = c.threads > 0 ? c.threads * c.instances : 0;
        std::fprintf(stderr, "systolic: using tuned configuration batch %lld, %d instance(s) x %d threads (from %s)\n",
                     static_cast<long long>(c.batch), c.instances, c.threads, c.path.c_str());
      }
    }
    ResultFormat fmt = ResultFormat::csv;
    if (op.format == "jsonl" || (op.format.empty() && (ends_with(op.output, ".jsonl") || ends_with(op.output, ".json"))))
      fmt = ResultFormat::jsonl;
    else if (!op.format.empty() && op.format != "csv")
      return fail(Err("--format %s: expected csv or jsonl", op.format.c_str()));
    std::vector<std::string> files;
    for (const std::string& d : op.images)
      if (Status st = collect(d, &files); !st.ok()) return fail(st);
    if (files.empty()) return fail(Err("--images: no files found"));

    ModelOptions mo;
    mo.batch = op.batch;
    mo.cache = !op.no_cache;
    auto preprocess = resolve_preprocess(*pre);
    if (!preprocess.ok()) return fail(preprocess.status());
    mo.preprocess = *preprocess;
    mo.precision = *prec;
    const bool is_onnx = !is_plan_file(op.model);
    if (is_onnx && !mo.preprocess.enabled() && pre->preset != "none") mo.preprocess = ir::imagenet_preprocess();
    auto prog = load_model(op.model, mo);
    if (!prog.ok()) return fail(prog.status());
    const ir::ImagePreprocess& pp = (*prog)->preprocess;
    if (!pp.enabled())
      return fail(Err("%s takes tensors, not images; compile it with --preprocess imagenet (or --mean/--std)",
                      op.model.c_str()));

    const int cores = std::max(1, host_cpu().cores);
    const int total_threads = op.threads > 0 ? op.threads : cores;
    if (op.instances > total_threads)
      return fail(Err("--instances %d needs at least as many threads (have %d)", op.instances, total_threads));
    std::vector<std::unique_ptr<runtime::Session>> owned;
    std::vector<runtime::Session*> sessions;
    for (int i = 0; i < op.instances; ++i) {
      runtime::SessionOptions so;
      so.threads = total_threads / op.instances + (i < total_threads % op.instances ? 1 : 0);
      auto s = runtime::Session::create(*prog, so);
      if (!s.ok()) return fail(s.status());
      owned.push_back(std::move(*s));
      sessions.push_back(owned.back().get());
    }
    const runtime::TensorInfo& out0 = sessions[0]->outputs()[0];
    if (out0.dtype != ir::DType::f32 || out0.shape.size() != 2)
      return fail(Err("%s: output %s is %s%s; classify needs [batch, classes] scores", op.model.c_str(),
                      out0.name.c_str(), ir::dtype_name(out0.dtype), ir::shape_str(out0.shape).c_str()));
    const int64_t classes = out0.shape[1];
    std::vector<std::string> labels;
    if (!op.labels.empty()) {
      auto l = load_labels(op.labels, classes);
      if (!l.ok()) return fail(l.status());
      labels = std::move(*l);
    }
    // Logits unless the model already ends in Softmax.
    const ir::Graph& g = (*prog)->graph;
    bool softmax = true;
    for (const ir::Node& n : g.nodes)
      for (int id : n.outputs)
        if (id == g.outputs[0] && n.op == ir::Op::Softmax) softmax = false;

    FILE* out = stdout;
    if (!op.output.empty()) {
      out = std::fopen(op.output.c_str(), "w");
      if (!out) return fail(Err("cannot write %s", op.output.c_str()));
    }
    std::fputs(result_header(fmt, op.top).c_str(), out);
    const bool show_progress = !op.quiet && (op.progress || isatty(STDERR_FILENO));

    const int loaders = op.loaders > 0 ? op.loaders : std::max(1, cores / 4);
    if (loaders > 256) return fail(Err("--loaders %d: at most 256 loader threads", loaders));
    std::vector<image::Image> decoded(static_cast<std::size_t>(loaders));
    std::vector<image::Scratch> scratch(static_cast<std::size_t>(loaders));
    const image::ResizeCrop spec{pp.resize, pp.crop_h, pp.crop_w};
    auto load = [&](int k, std::size_t item, uint8_t* dst) -> Status {
      image::Image& img = decoded[static_cast<std::size_t>(k)];
      SYSTOLIC_RETURN_IF_ERROR(image::decode_file(files[item], &img));
      Status st = image::resize_center_crop(img, spec, dst, &scratch[static_cast<std::size_t>(k)]);
      if (!st.ok()) return Err("%s: %s", files[item].c_str(), st.message().c_str());
      return Status::Ok();
    };
    std::vector<Scored> top;
    std::vector<float> probs;
    std::size_t done = 0;
    const auto t0 = std::chrono::steady_clock::now();
    auto last_draw = t0;
    std::vector<std::string> failures;
    auto result = [&](std::size_t item, const Status& st, const std::vector<const void*>& rows, double) {
      if (st.ok()) {
        top_k(static_cast<const float*>(rows[0]), classes, op.top, softmax, &top, &probs);
        std::fputs(result_line(fmt, files[item], top, labels, "", op.top).c_str(), out);
      } else {
        top.clear();
        std::fputs(result_line(fmt, files[item], top, labels, st.message(), op.top).c_str(), out);
        failures.push_back(st.message());
      }
      ++done;
      const auto now = std::chrono::steady_clock::now();
      if (show_progress && (now - last_draw > std::chrono::milliseconds(200) || done == files.size())) {
        last_draw = now;
        progress(done, files.size(), std::chrono::duration<double>(now - t0).count(), false);
      }
    };
    const bool tracing = !op.trace.empty();
    if (tracing) {
      const std::size_t batches = (files.size() + static_cast<std::size_t>((*prog)->batch) - 1) /
                                  static_cast<std::size_t>((*prog)->batch);
      for (auto* s : sessions) s->set_trace(batches);
    }
    runtime::PipelineOptions po;
    po.loaders = loaders;
    po.queue_batches = op.queue;
    auto rep = runtime::run_pipeline(sessions, files.size(), load, result, po, tracing);
    if (show_progress) progress(done, files.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), true);
    if (out != stdout && std::fclose(out) != 0) return fail(Err("writing %s failed", op.output.c_str()));
    if (out == stdout) std::fflush(stdout);
    if (!rep.ok()) return fail(rep.status());

    // Failed files, one line each on stderr: reported, skipped, and counted.
    for (const std::string& f : failures) std::fprintf(stderr, "systolic: skipped %s\n", f.c_str());
    const double wall = rep->wall_s;
    const double tput = wall > 0 ? rep->items / wall : 0;
    const double p50 = percentile(rep->latency_ms, 0.5), p90 = percentile(rep->latency_ms, 0.9),
                 p99 = percentile(rep->latency_ms, 0.99);
    const runtime::StageReport* neck = rep->bottleneck();
    // The summary goes where it does not mix with CSV on stdout.
    FILE* sum = out == stdout ? stderr : stdout;
    std::fprintf(sum, "classified %lld images (%lld failed) in %.2f s: %.1f images/s (batch %lld, %d x %d threads, %d loaders)\n",
                 static_cast<long long>(rep->items), static_cast<long long>(rep->failed), wall, tput,
                 static_cast<long long>((*prog)->batch), op.instances, sessions[0]->threads(), loaders);
    std::fprintf(sum, "latency    p50 %.1f ms   p90 %.1f ms   p99 %.1f ms   (read to result)\n", p50, p90, p99);
    std::fprintf(sum, "%-10s %8s %7s %9s\n", "stage", "threads", "busy", "work");
    for (const auto& s : rep->stages)
      std::fprintf(sum, "%-10s %8d %6.1f%% %9lld%s\n", s.name.c_str(), s.threads, s.busy_pct(wall),
                   static_cast<long long>(s.work), &s == neck ? "   <- bottleneck" : "");
    if (!op.summary_json.empty()) {
      nlohmann::json j = {{"model", op.model},
                          {"images", rep->items},
                          {"failed", rep->failed},
                          {"files", files.size()},
                          {"wall_s", wall},
                          {"throughput_per_s", tput},
                          {"p50_ms", p50},
                          {"p90_ms", p90},
                          {"p99_ms", p99},
                          {"batch", (*prog)->batch},
                          {"instances", op.instances},
                          {"threads_per_instance", sessions[0]->threads()},
                          {"loaders", loaders},
                          {"bottleneck", neck ? neck->name : ""},
                          {"stages", nlohmann::json::array()}};
      for (const auto& s : rep->stages)
        j["stages"].push_back({{"name", s.name}, {"threads", s.threads}, {"busy_s", s.busy_s},
                               {"busy_pct", s.busy_pct(wall)}, {"work", s.work}});
      std::ofstream f(op.summary_json);
      f << j.dump(2) << "\n";
      if (!f) return fail(Err("cannot write %s", op.summary_json.c_str()));
    }
    if (tracing) {
      std::vector<const runtime::Session*> cs(sessions.begin(), sessions.end());
      if (Status st = write_pipeline_trace(*rep, cs, op.trace); !st.ok()) return fail(st);
    }
  });
}

}  // namespace systolic::tools

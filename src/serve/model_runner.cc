// Loading a served model version: the batch-size ladder, the workers' sessions, the warm-up,
// and what the metadata and config endpoints say about it.
#include "serve/model_runner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

namespace systolic::serve {

std::string kserve_datatype(DType t) {
  switch (t) {
    case DType::f32: return "FP32";
    case DType::u8: return "UINT8";
    case DType::i8: return "INT8";
    case DType::u16: return "UINT16";
    case DType::i16: return "INT16";
    case DType::i32: return "INT32";
    case DType::i64: return "INT64";
    case DType::string: return "BYTES";
    case DType::boolean: return "BOOL";
    case DType::f16: return "FP16";
    case DType::f64: return "FP64";
    case DType::u32: return "UINT32";
    case DType::u64: return "UINT64";
    case DType::bf16: return "BF16";
    default: return "";
  }
}

namespace {

// Batch sizes compiled for a largest batch of `max`: powers of two below it, and it.
std::vector<int64_t> ladder_sizes(int64_t max) {
  std::vector<int64_t> s;
  for (int64_t b = 1; b < max; b *= 2) s.push_back(b);
  s.push_back(max);
  return s;
}

Expected<std::vector<std::string>> read_labels(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Err("cannot read the labels file %s", path.c_str());
  std::vector<std::string> labels;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  return labels;
}

}  // namespace

// Runs on the worker's thread: lowers its priority, then makes a session of every ladder size,
// each warmed up with one run of zeros; with make_wide, also the wide session (wide_).
Status ModelRunner::start_worker(Worker* w, int compute_nice, bool make_wide) {
  // Below the network threads: under full load they still answer, refuse and read promptly.
  // Relative to the process's own nice value, so lowering never needs a privilege.
  if (compute_nice > 0) {
    const auto tid = static_cast<id_t>(gettid());
    errno = 0;
    const int base = getpriority(PRIO_PROCESS, tid);
    if (errno == 0 && setpriority(PRIO_PROCESS, tid, std::min(19, base + compute_nice)) != 0)
      return Err("cannot lower the inference threads' priority by %d: %s", compute_nice, std::strerror(errno));
  }
  SYSTOLIC_RETURN_IF_ERROR(add_sessions(w, ladder_.size(), settings_.threads));
  if (!make_wide) return Status::Ok();
  auto wide = std::make_unique<Worker>();
  SYSTOLIC_RETURN_IF_ERROR(add_sessions(wide.get(), 1, settings_.threads * settings_.instances));
  wide_ = std::move(wide);  // read by the workers only once a request is queued (after load())
  return Status::Ok();
}

// Sessions of the first `count` ladder sizes on `threads` threads, each warmed up with one run of
// zeros, with their I/O buffers.
Status ModelRunner::add_sessions(Worker* w, std::size_t count, int threads) {
  for (std::size_t li = 0; li < count; ++li) {
    const auto& model = ladder_[li];
    auto sess = model->new_session(threads);
    if (!sess.ok()) return sess.status();
    std::vector<std::vector<uint8_t>> out;
    std::vector<void*> op;
    // Each input's row pointers (null rows read as zeros: the warm-up's, and a batch's padding).
    const std::size_t n = batched_ ? static_cast<std::size_t>(model->batch()) : 1;
    std::vector<std::vector<const void*>> rows((*sess)->inputs().size(), std::vector<const void*>(n, nullptr));
    if (run_shaped_) {
      // Outputs shaped by the run have no fixed buffers: the allocating run, on zeros.
      std::vector<std::pair<std::string, Tensor>> named;
      for (const TensorSpec& t : (*sess)->inputs())
        named.emplace_back(t.name, Tensor{t.dtype, t.shape, std::vector<uint8_t>(t.bytes(), 0)});
      auto warm = (*sess)->run(named);
      if (!warm.ok()) return warm.status();
    } else {
      for (const TensorSpec& t : (*sess)->outputs()) out.emplace_back(t.bytes(), 0);
      for (auto& b : out) op.push_back(b.data());
      SYSTOLIC_RETURN_IF_ERROR((*sess)->run_rows(rows, op));
    }
    w->sessions.push_back(std::move(*sess));
    w->rows.push_back(std::move(rows));
    w->out.push_back(std::move(out));
    w->out_ptrs.push_back(std::move(op));
  }
  return Status::Ok();
}

Expected<std::shared_ptr<ModelRunner>> ModelRunner::load(const ModelSource& src, bool use_tuned, int compute_nice) {
  std::shared_ptr<ModelRunner> r(new ModelRunner);
  r->name_ = src.name;
  r->version_ = src.version;
  r->settings_ = src.settings;
  ModelSettings& s = r->settings_;
  auto fail = [&](const Status& st) { return Err("model %s: %s", src.name.c_str(), st.message().c_str()); };

  ModelOptions o;
  o.precision = s.precision;
  o.preprocess = s.preprocess;
  o.threads = s.threads;
  o.instances = s.instances;
  o.use_tuned = use_tuned;
  o.batch = s.max_batch_size;
  auto first = Model::open(src.path, o);
  if (!first.ok()) return fail(first.status());
  std::shared_ptr<Model> top = *first;
  r->notes_ = top->report().notes;
  if (!top->report().note.empty()) r->notes_.push_back(top->report().note);
  r->platform_ = top->report().compiled ? "onnx_onnxv1" : "systolic_plan";
  s.precision = top->precision();
  s.threads = top->threads();
  s.instances = std::max(1, top->instances());
  for (const TensorSpec& t : top->outputs()) r->run_shaped_ = r->run_shaped_ || t.elements() < 0;
  if (r->run_shaped_) {
    // Detections and the like: each request's outputs have their own shape, so requests are
    // not merged (a merged run's outputs could not be split between them).
    if (s.max_batch_size > 0)
      r->notes_.push_back("outputs shaped by each run (such as detections): requests run one at a time, "
                          "max_batch_size " + std::to_string(s.max_batch_size) + " ignored");
    r->batched_ = false;
    s.max_batch_size = 0;
    if (top->report().compiled && top->batch() != 1) {  // the batch max_batch_size asked for
      o.batch = 1;
      o.use_tuned = false;
      auto one = Model::open(src.path, o);
      if (one.ok()) top = *one;
    }
    r->ladder_.push_back(top);
  } else if (!top->report().compiled) {
    // A plan's batch is fixed: smaller merged batches are padded up to it.
    if (s.max_batch_size > 0 && s.max_batch_size != top->batch())
      return Err("model %s: %s was compiled for batch %lld, but config.json asks max_batch_size %lld; recompile it "
                 "or serve the .onnx", src.name.c_str(), src.path.c_str(), static_cast<long long>(top->batch()),
                 static_cast<long long>(s.max_batch_size));
    s.max_batch_size = top->batch();
    r->pad_ = top->batch() > 1;
    r->ladder_.push_back(top);
  } else {
    int64_t max = s.max_batch_size;
    if (max == 0) max = top->report().tuned_path.empty() ? 8 : top->batch();
    s.max_batch_size = max;
    o.use_tuned = false;
    for (int64_t b : ladder_sizes(max)) {
      if (b == top->batch()) {
        r->ladder_.push_back(top);
        continue;
      }
      o.batch = b;
      auto m = Model::open(src.path, o);
      if (m.ok())
        for (const auto& specs : {(*m)->inputs(), (*m)->outputs()})
          for (const TensorSpec& t : specs)
            if (t.shape.empty() || t.shape[0] != b)
              m = Err("%s does not take batch %lld in its leading dimension", t.name.c_str(), static_cast<long long>(b));
      if (!m.ok()) {
        if (b > 1 && r->ladder_.size() == 1 && r->ladder_[0]->batch() == 1) {
          // The model's batch dimension is fixed: serve it one request at a time.
          r->batched_ = false;
          s.max_batch_size = 0;
          break;
        }
        return fail(m.status());
      }
      r->ladder_.push_back(*m);
    }
    if (r->ladder_.empty() || (r->batched_ && r->ladder_.back()->batch() != max)) return fail(Err("no plan compiled"));
  }
  if (!s.labels.empty()) {
    auto l = read_labels(s.labels);
    if (!l.ok()) return fail(l.status());
    r->labels_ = std::move(*l);
  }
  if (s.max_queue_size == 0) s.max_queue_size = 4 * std::max<int64_t>(1, s.max_batch_size) * s.instances;

  const Model& m0 = *r->ladder_.front();
  const int64_t b0 = m0.batch();
  for (const TensorSpec& t : m0.inputs()) {
    TensorMeta meta{t.name, kserve_datatype(t.dtype), t.shape};
    if (r->batched_ && !meta.shape.empty()) meta.shape[0] = -1;
    r->in_meta_.push_back(meta);
    r->in_row_.push_back(r->batched_ ? t.bytes() / static_cast<std::size_t>(b0) : t.bytes());
  }
  for (const TensorSpec& t : m0.outputs()) {
    TensorMeta meta{t.name, kserve_datatype(t.dtype), t.shape};
    if (r->batched_ && !meta.shape.empty()) meta.shape[0] = -1;
    r->out_meta_.push_back(meta);
    r->out_row_.push_back(r->batched_ ? t.bytes() / static_cast<std::size_t>(b0) : t.bytes());  // 0: run-shaped
  }
  for (const auto& meta : r->in_meta_)
    if (meta.datatype.empty() || meta.datatype == "BYTES")
      return fail(Err("input %s has a type the server cannot take", meta.name.c_str()));

  // Each worker thread makes its own sessions, so their thread pools inherit its priority.
  std::vector<std::future<Status>> started;
  for (int i = 0; i < s.instances; ++i) {
    r->workers_.push_back(std::make_unique<Worker>());
    Worker* wp = r->workers_.back().get();
    ModelRunner* self = r.get();
    auto ready = std::make_shared<std::promise<Status>>();
    started.push_back(ready->get_future());
    // Worker 0 also makes the wide session: a lone request runs on every instance's threads.
    const bool make_wide = i == 0 && s.instances > 1 && r->batched_ && !r->run_shaped_ && r->ladder_[0]->batch() == 1;
    wp->thread = std::thread([self, wp, ready, compute_nice, make_wide] {
      Status st = self->start_worker(wp, compute_nice, make_wide);
      ready->set_value(st);
      if (st.ok()) self->worker_loop(wp);
    });
  }
  Status st;
  for (auto& f : started) {
    Status one = f.get();
    if (st.ok() && !one.ok()) st = one;
  }
  if (!st.ok()) {
    r->stop();
    return fail(st);
  }
  return r;
}

ModelRunner::~ModelRunner() { stop(); }

std::string ModelRunner::config_json() const {
  auto type = [](const std::string& d) { return "TYPE_" + std::string(d == "BYTES" ? "STRING" : d); };
  auto dims = [&](const TensorMeta& t) {
    std::vector<int64_t> d = t.shape;
    if (batched_ && !d.empty()) d.erase(d.begin());  // Triton's dims exclude the batch dimension
    return d;
  };
  nlohmann::json j;
  j["name"] = name_;
  j["platform"] = platform_;
  j["backend"] = "systolic";
  j["max_batch_size"] = batched_ ? settings_.max_batch_size : 0;
  j["input"] = nlohmann::json::array();
  for (const auto& t : in_meta_)
    j["input"].push_back({{"name", t.name}, {"data_type", type(t.datatype)}, {"format", "FORMAT_NONE"}, {"dims", dims(t)}});
  j["output"] = nlohmann::json::array();
  for (const auto& t : out_meta_)
    j["output"].push_back({{"name", t.name}, {"data_type", type(t.datatype)}, {"dims", dims(t)},
                           {"label_filename", std::filesystem::path(settings_.labels).filename().string()}});
  std::vector<int64_t> preferred;
  for (const auto& m : ladder_) preferred.push_back(m->batch());
  if (batched_)
    j["dynamic_batching"] = {{"preferred_batch_size", preferred},
                             {"max_queue_delay_microseconds", settings_.max_queue_delay_us},
                             {"default_queue_policy", {{"max_queue_size", settings_.max_queue_size}}}};
  j["instance_group"] = {{{"name", name_}, {"count", settings_.instances}, {"kind", "KIND_CPU"}}};
  j["parameters"] = {{"precision", {{"string_value", settings_.precision}}},
                     {"threads", {{"string_value", std::to_string(settings_.threads)}}},
                     {"preprocess", {{"string_value", settings_.preprocess}}}};
  return j.dump();
}

}  // namespace systolic::serve

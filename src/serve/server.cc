// The server core: the table of served models (swapped atomically on load/unload, the old
// version finishing what it admitted), request routing, readiness, draining and metrics.
#include "serve/server.h"

#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <thread>

#include "systolic/version.h"

namespace systolic::serve {

struct Server::Impl {
  ServerOptions opts;
  mutable std::shared_mutex mu;  // guards models; submit holds it shared, load/unload exclusive
  std::map<std::string, std::shared_ptr<ModelRunner>> models;
  std::mutex load_mu;  // one load or unload at a time
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> refused_draining{0};  // not a model's: refused before any lookup

  std::shared_ptr<ModelRunner> find(const std::string& name) const {
    std::shared_lock lock(mu);
    auto it = models.find(name);
    return it == models.end() ? nullptr : it->second;
  }
  // The runner for model/version, or the error a client should see.
  std::variant<std::shared_ptr<ModelRunner>, Error> lookup(const std::string& name, const std::string& version) const {
    auto r = find(name);
    if (!r) return Error{Code::not_found, "unknown model '" + name + "'"};
    if (!version.empty() && version != r->version())
      return Error{Code::not_found, "model '" + name + "' has no version " + version + " (serving version " +
                                        r->version() + ")"};
    return r;
  }
};

namespace {

ModelSettings merged(const ModelSettings& cfg, const ModelSettings& d) {
  ModelSettings s = cfg;
  if (s.precision.empty()) s.precision = d.precision;
  if (s.max_batch_size == 0) s.max_batch_size = d.max_batch_size;
  if (s.max_queue_delay_us == 0) s.max_queue_delay_us = d.max_queue_delay_us;
  if (s.max_queue_size == 0) s.max_queue_size = d.max_queue_size;
  if (s.instances == 0) s.instances = d.instances;
  if (s.threads == 0) s.threads = d.threads;
  if (s.preprocess.empty()) s.preprocess = d.preprocess;
  if (s.labels.empty()) s.labels = d.labels;
  return s;
}

}  // namespace

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  for (auto& [name, r] : impl_->models) r->stop();
}

Expected<std::unique_ptr<Server>> Server::create(const ServerOptions& opts) {
  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  std::vector<ModelSource> sources;
  if (!opts.repository.empty()) {
    auto names = list_models(opts.repository);
    if (!names.ok()) return names.status();
    for (const std::string& n : *names) {
      auto src = find_model(opts.repository, n);
      if (!src.ok()) return src.status();
      sources.push_back(*src);
    }
  }
  for (const auto& [name, path] : opts.models) {
    if (name.empty()) return Err("--model %s: the name is empty (NAME=PATH)", path.c_str());
    sources.push_back(ModelSource{name, "1", path, {}});
  }
  if (sources.empty()) return Err("no models to serve: give --model NAME=PATH or --model-repository DIR");
  for (ModelSource& src : sources) {
    if (impl->models.count(src.name)) return Err("model %s is given twice", src.name.c_str());
    src.settings = merged(src.settings, opts.defaults);
    auto r = ModelRunner::load(src, opts.use_tuned, opts.compute_nice);
    if (!r.ok()) return r.status();
    impl->models[src.name] = *r;
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

bool Server::live() const { return true; }
bool Server::ready() const { return !impl_->draining.load() && !impl_->models.empty(); }
std::string Server::version() const { return kVersion; }

std::vector<std::string> Server::extensions() const {
  std::vector<std::string> e = {"binary_tensor_data", "classification", "model_configuration"};
  if (!impl_->opts.repository.empty()) e.push_back("model_repository");
  return e;
}

std::variant<ModelMetadata, Error> Server::model_metadata(const std::string& model, const std::string& version) const {
  auto r = impl_->lookup(model, version);
  if (auto* e = std::get_if<Error>(&r)) return *e;
  const auto& m = std::get<0>(r);
  return ModelMetadata{m->name(), {m->version()}, m->platform(), m->inputs(), m->outputs()};
}

std::variant<bool, Error> Server::model_ready(const std::string& model, const std::string& version) const {
  auto r = impl_->lookup(model, version);
  if (auto* e = std::get_if<Error>(&r)) return *e;
  return !impl_->draining.load();
}

std::variant<std::string, Error> Server::model_config_json(const std::string& model, const std::string& version) const {
  auto r = impl_->lookup(model, version);
  if (auto* e = std::get_if<Error>(&r)) return *e;
  return std::get<0>(r)->config_json();
}

void Server::infer(InferRequest req, Done done, std::shared_ptr<std::atomic<bool>> cancelled) {
  if (impl_->draining.load()) {
    impl_->refused_draining.fetch_add(1);
    done(Error{Code::unavailable, "the server is shutting down"});
    return;
  }
  std::optional<Error> err;
  bool stopped = false;
  {
    // Held shared so a reload cannot stop this version between lookup and enqueue.
    std::shared_lock lock(impl_->mu);
    auto it = impl_->models.find(req.model);
    if (it == impl_->models.end()) {
      err = Error{Code::not_found, "unknown model '" + req.model + "'"};
    } else if (!req.version.empty() && req.version != it->second->version()) {
      err = Error{Code::not_found, "model '" + req.model + "' has no version " + req.version + " (serving version " +
                                       it->second->version() + ")"};
    } else {
      err = it->second->submit(req, done, cancelled, &stopped);
    }
  }
  if (err) done(std::move(*err));
}

std::optional<Error> Server::load(const std::string& model) {
  if (impl_->opts.repository.empty())
    return Error{Code::unimplemented, "no --model-repository: models given with --model cannot be reloaded"};
  std::lock_guard<std::mutex> one(impl_->load_mu);
  auto src = find_model(impl_->opts.repository, model);
  if (!src.ok()) return Error{Code::invalid_argument, src.status().message()};
  src->settings = merged(src->settings, impl_->opts.defaults);
  auto r = ModelRunner::load(*src, impl_->opts.use_tuned, impl_->opts.compute_nice);
  if (!r.ok()) return Error{Code::invalid_argument, r.status().message() + " (the version already serving, if any, stays)"};
  std::shared_ptr<ModelRunner> old;
  {
    std::unique_lock lock(impl_->mu);
    old = std::move(impl_->models[model]);
    impl_->models[model] = *r;
  }
  if (old) old->stop();  // finishes what it admitted
  return std::nullopt;
}

std::optional<Error> Server::unload(const std::string& model) {
  std::lock_guard<std::mutex> one(impl_->load_mu);
  std::shared_ptr<ModelRunner> old;
  {
    std::unique_lock lock(impl_->mu);
    auto it = impl_->models.find(model);
    if (it == impl_->models.end()) return Error{Code::not_found, "unknown model '" + model + "'"};
    old = std::move(it->second);
    impl_->models.erase(it);
  }
  old->stop();
  return std::nullopt;
}

std::string Server::repository_index_json() const {
  nlohmann::json j = nlohmann::json::array();
  std::vector<std::string> names;
  if (!impl_->opts.repository.empty()) {
    auto n = list_models(impl_->opts.repository);
    if (n.ok()) names = *n;
  }
  {
    std::shared_lock lock(impl_->mu);
    for (const auto& [name, r] : impl_->models)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    for (const std::string& n : names) {
      auto it = impl_->models.find(n);
      if (it != impl_->models.end())
        j.push_back({{"name", n}, {"version", it->second->version()}, {"state", "READY"}});
      else
        j.push_back({{"name", n}, {"state", "UNAVAILABLE"}, {"reason", "unloaded"}});
    }
  }
  return j.dump();
}

std::string Server::metrics_text() const {
  std::vector<std::shared_ptr<ModelRunner>> keep;
  std::vector<LabelledMetrics> ms;
  {
    std::shared_lock lock(impl_->mu);
    for (const auto& [name, r] : impl_->models) {
      keep.push_back(r);
      ms.push_back({name, r->version(), &r->metrics()});
    }
  }
  return render_metrics(ms);
}

std::vector<std::string> Server::load_notes() const {
  std::vector<std::string> out;
  std::shared_lock lock(impl_->mu);
  for (const auto& [name, r] : impl_->models)
    for (const std::string& n : r->notes()) out.push_back("model " + name + ": " + n);
  return out;
}

Server::Totals Server::totals() const {
  Totals t;
  t.refused = impl_->refused_draining.load();
  std::shared_lock lock(impl_->mu);
  for (const auto& [name, r] : impl_->models) {
    const ModelMetrics& m = r->metrics();
    t.succeeded += m.request_success.load();
    t.failed += m.failure_timeout.load() + m.failure_internal.load();
    t.refused += m.failure_rejected.load() + m.failure_invalid.load();
  }
  return t;
}

void Server::begin_drain() { impl_->draining.store(true); }

bool Server::wait_idle(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int64_t pending = 0;
    {
      std::shared_lock lock(impl_->mu);
      for (const auto& [name, r] : impl_->models) pending += r->metrics().pending.load();
    }
    if (pending == 0) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace systolic::serve

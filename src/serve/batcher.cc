// The dynamic batcher: each worker takes the queued requests that fit in max_batch_size
// (waiting up to max_queue_delay_us for more while the batch is short, unless the last batch
// held one request: then nobody else is sending and waiting only adds latency), drops those whose
// client is gone or whose deadline passed, runs the merged rows on the ladder's sessions
// (largest size first, so nothing is padded) and answers every request. With several
// instances, a lone request (nothing queued, no worker computing) runs on the wide session of
// every instance's threads; workers that take a batch meanwhile wait for it.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "serve/model_runner.h"

namespace systolic::serve {
namespace {

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

std::optional<Error> ModelRunner::submit(InferRequest& req, Done& done, std::shared_ptr<std::atomic<bool>>& cancelled,
                                         bool* stopped) {
  *stopped = false;
  auto full = [&] {
    metrics_.failure_rejected.fetch_add(1);
    return Error{Code::unavailable, "model " + name_ + ": exceeds maximum queue size (" +
                                        std::to_string(settings_.max_queue_size) + " requests); retry later"};
  };
  {
    // Refuse before decoding anything: an overloaded model answers at once.
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_ && static_cast<int64_t>(queue_.size()) >= settings_.max_queue_size) return full();
  }
  Pending p;
  if (auto e = admit(req, &p)) {
    metrics_.failure_invalid.fetch_add(1);
    return e;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      *stopped = true;
      return Error{Code::unavailable, "model " + name_ + " version " + version_ + " is unloading"};
    }
    if (static_cast<int64_t>(queue_.size()) >= settings_.max_queue_size) return full();
    // Only an admitted request takes the callback; a refused one leaves it to the caller.
    p.done = std::move(done);
    p.cancelled = std::move(cancelled);
    metrics_.pending.fetch_add(1);
    queue_.push_back(std::move(p));
  }
  cv_.notify_one();
  return std::nullopt;
}

void ModelRunner::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
}

void ModelRunner::worker_loop(Worker* w) {
  const int64_t max_rows = batched_ ? settings_.max_batch_size : 1;
  const auto delay = std::chrono::microseconds(settings_.max_queue_delay_us);
  std::vector<Pending> batch, dropped;
  for (;;) {
    // The delay counts from when this worker could first run the oldest request: requests that
    // queued behind a running batch still get the window to merge with the clients answered by
    // it, so closed-loop clients do not split into two half-size cohorts that alternate.
    const auto free_since = Clock::now();
    batch.clear();
    dropped.clear();
    bool more = false, wide = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every admitted request answered
      if (delay.count() > 0 && !stopping_ && last_batch_requests_ > 1) {
        // Wait for a fuller batch until the oldest request has waited max_queue_delay_us; not
        // when the last batch held a single request, so a lone client is never delayed.
        for (;;) {
          int64_t queued = 0;
          for (const Pending& p : queue_) queued += p.rows;
          if (queued >= max_rows || stopping_ || queue_.empty()) break;
          const auto until = std::max(queue_.front().admitted, free_since) + delay;
          if (Clock::now() >= until) break;
          cv_.wait_until(lock, until);
        }
        if (queue_.empty()) continue;
      }
      const auto now = Clock::now();
      int64_t rows = 0;
      while (!queue_.empty()) {
        Pending& p = queue_.front();
        const bool gone = p.cancelled && p.cancelled->load();
        if (gone || now > p.deadline) {
          dropped.push_back(std::move(p));
          queue_.pop_front();
          continue;
        }
        if (!batch.empty() && rows + p.rows > max_rows) break;
        rows += p.rows;
        batch.push_back(std::move(p));
        queue_.pop_front();
      }
      if (!batch.empty()) {
        last_batch_requests_ = static_cast<int64_t>(batch.size());
        // A lone request, nothing queued behind it and no other worker computing: the wide
        // session's threads are all free.
        wide = wide_ && !wide_running_ && busy_ == 0 && queue_.empty() && batch.size() == 1 && batch[0].rows == 1;
        wide_running_ = wide_running_ || wide;
        ++busy_;
      }
      more = !queue_.empty();
    }
    if (more) cv_.notify_one();  // another worker may take the rest
    for (Pending& p : dropped) {
      metrics_.failure_timeout.fetch_add(1);
      const bool gone = p.cancelled && p.cancelled->load();
      p.done(Error{Code::unavailable, gone ? "request cancelled by the client before it was computed"
                                           : "request timed out in the queue before it was computed"});
      metrics_.pending.fetch_sub(1);
    }
    if (batch.empty()) continue;
    if (!wide) {  // a wide run has every thread: wait for its end
      std::unique_lock<std::mutex> lock(mu_);
      wide_done_.wait(lock, [&] { return !wide_running_; });
    }
    if (wide) metrics_.wide_exec_count.fetch_add(1);  // before the answer goes out
    execute(wide ? wide_.get() : w, batch, wide);
  }
}

void ModelRunner::computed(bool wide) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
    if (wide) wide_running_ = false;
  }
  if (wide) wide_done_.notify_all();
}

void ModelRunner::execute(Worker* w, std::vector<Pending>& batch, bool wide) {
  if (run_shaped_) {
    for (Pending& p : batch) execute_run_shaped(w, p);
    computed(wide);
    return;
  }
  const auto start = Clock::now();
  int64_t total = 0;
  for (const Pending& p : batch) total += p.rows;
  // Global row r of the merged batch is row rows[r].second of request rows[r].first.
  std::vector<std::pair<std::size_t, int64_t>> rows;
  rows.reserve(static_cast<std::size_t>(total));
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (int64_t r = 0; r < batch[i].rows; ++r) rows.emplace_back(i, r);
  // Every output of every request, filled row by row.
  std::vector<std::vector<std::string>> outs(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (std::size_t k = 0; k < out_row_.size(); ++k)
      outs[i].emplace_back(static_cast<std::size_t>(batch[i].rows) * out_row_[k], '\0');

  Status st;
  int64_t done = 0;
  while (done < total && st.ok()) {
    const int64_t left = total - done;
    std::size_t li = 0;  // largest ladder size <= left, else the smallest (a padded plan)
    for (std::size_t j = 0; j < ladder_.size(); ++j)
      if (ladder_[j]->batch() <= left || !batched_) li = j;
    const int64_t b = batched_ ? ladder_[li]->batch() : 1;
    const int64_t take = std::min(b, left);
    // The requests' rows go straight into the session's input (no batch buffer here); rows
    // past `take` pad a larger plan with zeros.
    for (std::size_t k = 0; k < in_row_.size(); ++k) {
      std::vector<const void*>& src = w->rows[li][k];
      for (int64_t r = 0; r < b; ++r) {
        if (r >= take) {
          src[static_cast<std::size_t>(r)] = nullptr;
          continue;
        }
        const auto [pi, pr] = rows[static_cast<std::size_t>(done + r)];
        src[static_cast<std::size_t>(r)] = batch[pi].inputs[k].data() + static_cast<std::size_t>(pr) * in_row_[k];
      }
    }
    st = w->sessions[li]->run_rows(w->rows[li], w->out_ptrs[li]);
    metrics_.exec_count.fetch_add(1);
    if (!st.ok()) break;
    for (std::size_t k = 0; k < out_row_.size(); ++k) {
      const uint8_t* src = w->out[li][k].data();
      for (int64_t r = 0; r < take; ++r) {
        const auto [pi, pr] = rows[static_cast<std::size_t>(done + r)];
        std::memcpy(outs[pi][k].data() + static_cast<std::size_t>(pr) * out_row_[k],
                    src + static_cast<std::size_t>(r) * out_row_[k], out_row_[k]);
      }
    }
    done += take;
  }
  const double compute_us = us_between(start, Clock::now());
  // The threads are free before the answers go out: a lone client's next request, sent the
  // moment it has this answer, finds no worker computing and may run wide.
  computed(wide);
  if (st.ok()) metrics_.inference_count.fetch_add(static_cast<uint64_t>(total));
  for (std::size_t i = 0; i < batch.size(); ++i) finish(batch[i], start, compute_us, st, outs[i]);
}

void ModelRunner::finish(Pending& p, Clock::time_point start, double compute_us, const Status& st,
                         std::vector<std::string>& outs, const std::vector<TensorMeta>* run) {
  const double queue_us = us_between(p.admitted, start);
  metrics_.queue_us.fetch_add(static_cast<uint64_t>(queue_us));
  metrics_.queue_hist.observe(queue_us);
  metrics_.compute_us.fetch_add(static_cast<uint64_t>(compute_us));
  metrics_.compute_hist.observe(compute_us);
  if (!st.ok()) {
    metrics_.failure_internal.fetch_add(1);
    p.done(Error{Code::internal, "model " + name_ + ": " + st.message()});
    metrics_.pending.fetch_sub(1);
    return;
  }
  respond(p, outs, run);
}

// One request of a model whose outputs are shaped by the run (never merged): the allocating
// run, each output answered with the shape this run gave it.
void ModelRunner::execute_run_shaped(Worker* w, Pending& p) {
  const auto start = Clock::now();
  const std::vector<TensorSpec>& specs = w->sessions[0]->inputs();
  std::vector<std::pair<std::string, Tensor>> named;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const auto* b = reinterpret_cast<const uint8_t*>(p.inputs[k].data());
    named.emplace_back(specs[k].name, Tensor{specs[k].dtype, specs[k].shape, std::vector<uint8_t>(b, b + p.inputs[k].size())});
  }
  auto res = w->sessions[0]->run(named);
  metrics_.exec_count.fetch_add(1);
  const double compute_us = us_between(start, Clock::now());
  std::vector<std::string> outs;
  std::vector<TensorMeta> got;
  if (res.ok()) {
    metrics_.inference_count.fetch_add(1);
    for (std::size_t k = 0; k < res->size(); ++k) {
      Tensor& t = (*res)[k];
      outs.emplace_back(reinterpret_cast<const char*>(t.data.data()), t.data.size());
      got.push_back({out_meta_[k].name, kserve_datatype(t.dtype), std::move(t.shape)});
    }
  }
  finish(p, start, compute_us, res.status(), outs, &got);
}

void ModelRunner::respond(Pending& p, std::vector<std::string>& outs, const std::vector<TensorMeta>* run) {
  InferResponse r;
  r.model = name_;
  r.version = version_;
  r.id = p.id;
  for (std::size_t j = 0; j < p.outputs.size(); ++j) {
    const std::size_t k = static_cast<std::size_t>(p.outputs[j]);
    WireTensor t;
    t.name = out_meta_[k].name;
    const TensorMeta& meta = run ? (*run)[k] : out_meta_[k];
    t.shape = meta.shape;
    if (batched_ && !t.shape.empty()) t.shape[0] = p.rows;
    const int64_t K = p.classification[j];
    if (K > 0) {
      // Triton's classification extension: the top K of each row as "score:index[:label]".
      const int64_t classes = static_cast<int64_t>(out_row_[k] / sizeof(float));
      const int64_t top = std::min(K, classes);
      t.datatype = "BYTES";
      t.shape = {p.rows, top};
      if (!batched_) t.shape = {top};
      std::vector<int64_t> idx(static_cast<std::size_t>(classes));
      for (int64_t r = 0; r < p.rows; ++r) {
        const float* row = reinterpret_cast<const float*>(outs[k].data()) + r * classes;
        for (int64_t c = 0; c < classes; ++c) idx[static_cast<std::size_t>(c)] = c;
        std::partial_sort(idx.begin(), idx.begin() + top, idx.end(), [&](int64_t a, int64_t b) {
          return row[a] > row[b] || (row[a] == row[b] && a < b);
        });
        for (int64_t c = 0; c < top; ++c) {
          const int64_t i = idx[static_cast<std::size_t>(c)];
          char buf[64];
          std::snprintf(buf, sizeof buf, "%f:%lld", static_cast<double>(row[i]), static_cast<long long>(i));
          std::string s = buf;
          if (i < static_cast<int64_t>(labels_.size())) s += ":" + labels_[static_cast<std::size_t>(i)];
          const uint32_t n = static_cast<uint32_t>(s.size());
          for (int b = 0; b < 4; ++b) t.data.push_back(static_cast<char>((n >> (8 * b)) & 0xff));
          t.data += s;
        }
      }
    } else {
      t.datatype = meta.datatype;
      t.data = (j + 1 < p.outputs.size() &&
                std::find(p.outputs.begin() + static_cast<std::ptrdiff_t>(j) + 1, p.outputs.end(), p.outputs[j]) !=
                    p.outputs.end())
                   ? outs[k]
                   : std::move(outs[k]);
    }
    r.outputs.push_back(std::move(t));
    r.binary.push_back(p.binary[j]);
  }
  const double us = us_between(p.admitted, Clock::now());
  metrics_.request_us.fetch_add(static_cast<uint64_t>(us));
  metrics_.request_hist.observe(us);
  metrics_.request_success.fetch_add(1);
  p.done(std::move(r));
  metrics_.pending.fetch_sub(1);
}

}  // namespace systolic::serve

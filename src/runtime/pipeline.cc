// The pipeline's stages and their pools. Buffers: `slots` (one item each) between loaders and
// assembly; batch records (input batch + output buffers) between assembly, inference and
// results. Queues carry indices into those pools, so nothing is copied but the one row copy
// into the batch, and nothing is allocated per item.
#include "runtime/pipeline.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include "runtime/bounded_queue.h"

namespace systolic::runtime {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

struct Loaded {
  std::size_t item = 0;
  int slot = -1;
  Status status;
  Clock::time_point t0;
};

struct Failure {
  std::size_t item;
  Status status;
  Clock::time_point t0;
};

struct BatchRecord {
  std::vector<uint8_t> input;
  std::vector<std::vector<uint8_t>> outputs;
  std::vector<std::size_t> items;  // rows in use: items.size()
  std::vector<Clock::time_point> t0;
  std::vector<Failure> failed;     // items whose load failed, reported with this batch
  int64_t number = 0;
};

// Per-thread accounting, merged at the end (no sharing while running).
struct ThreadLog {
  double busy_s = 0;
  int64_t work = 0;
  std::vector<PipelineEvent> events;
};

}  // namespace

const StageReport* PipelineReport::bottleneck() const {
  const StageReport* best = nullptr;
  for (const StageReport& s : stages)
    if (!best || s.busy_pct(wall_s) > best->busy_pct(wall_s)) best = &s;
  return best;
}

Expected<PipelineReport> run_pipeline(const std::vector<Session*>& sessions, std::size_t count, const LoadFn& load,
                                      const ResultFn& on_result, const PipelineOptions& opts, bool trace) {
  if (sessions.empty()) return Err("pipeline: no session");
  const Session& s0 = *sessions[0];
  if (s0.inputs().size() != 1) return Err("pipeline: the model has %zu inputs; batching needs exactly one", s0.inputs().size());
  for (const Session* s : sessions)
    if (&s->program() != &s0.program()) return Err("pipeline: every session must run the same plan");
  const ir::Shape& in_shape = s0.inputs()[0].shape;
  if (in_shape.empty() || in_shape[0] < 1) return Err("pipeline: input shape %s has no batch dim", ir::shape_str(in_shape).c_str());
  const int64_t B = in_shape[0];
  const std::size_t batch_bytes = s0.inputs()[0].bytes();
  const std::size_t row = batch_bytes / static_cast<std::size_t>(B);
  std::vector<std::size_t> out_row;
  for (const TensorInfo& o : s0.outputs()) {
    if (o.shape.empty() || o.shape[0] != B)
      return Err("pipeline: output %s has shape %s, not batch-major", o.name.c_str(), ir::shape_str(o.shape).c_str());
    out_row.push_back(o.bytes() / static_cast<std::size_t>(B));
  }
  const int loaders = std::max(1, opts.loaders);
  const int instances = static_cast<int>(sessions.size());
  const int qb = std::max(1, opts.queue_batches);

  // Pools, sized once; a size the machine cannot hold is an error, not a crash.
  const std::size_t nslots = static_cast<std::size_t>(B) * qb + 2 * static_cast<std::size_t>(loaders);
  const std::size_t nrecs = static_cast<std::size_t>(2 * qb + instances + 1);
  std::vector<uint8_t> slot_mem;
  std::vector<BatchRecord> recs;
  try {
    slot_mem.resize(nslots * row);
    recs.resize(nrecs);
    for (BatchRecord& r : recs) {
      r.input.assign(batch_bytes, 0);
      for (const TensorInfo& o : s0.outputs()) r.outputs.emplace_back(o.bytes());
      r.items.reserve(static_cast<std::size_t>(B));
      r.t0.reserve(static_cast<std::size_t>(B));
      r.failed.reserve(static_cast<std::size_t>(B));
    }
  } catch (const std::bad_alloc&) {
    return Err("pipeline: cannot allocate its buffers (%zu item slots of %zu bytes, %zu batches of %zu bytes); "
               "use a smaller batch, queue or fewer loaders", nslots, row, nrecs, batch_bytes);
  }
  BoundedQueue<int> free_slots(nslots), free_recs(nrecs), to_infer(nrecs), to_results(nrecs);
  BoundedQueue<Loaded> loaded(nslots);
  for (std::size_t i = 0; i < nslots; ++i) free_slots.push(static_cast<int>(i));
  for (std::size_t i = 0; i < nrecs; ++i) free_recs.push(static_cast<int>(i));

  PipelineReport rep;
  rep.start = Clock::now();
  rep.latency_ms.reserve(count);
  std::vector<ThreadLog> load_log(loaders), infer_log(instances);
  ThreadLog asm_log, res_log;
  if (trace) {
    for (ThreadLog& l : load_log) l.events.reserve(count / loaders + 1);
    asm_log.events.reserve(count / B + 2);
    for (ThreadLog& l : infer_log) l.events.reserve(count / B / instances + 2);
    res_log.events.reserve(count / B + 2);
  }
  auto span = [&](ThreadLog& log, int stage, int thread, int64_t what, Clock::time_point a, Clock::time_point b) {
    log.busy_s += std::chrono::duration<double>(b - a).count();
    ++log.work;
    if (trace) log.events.push_back({stage, thread, what, ns_between(rep.start, a), ns_between(a, b)});
  };

  std::atomic<std::size_t> next{0};
  std::atomic<int> infer_left{instances};
  std::mutex err_mu;
  Status error;
  auto abort_all = [&](Status st) {
    {
      std::lock_guard<std::mutex> lock(err_mu);
      if (error.ok()) error = std::move(st);
    }
    for (auto* q : {&free_slots, &free_recs, &to_infer, &to_results}) q->close();
    loaded.close();
  };

  std::vector<std::thread> threads;
  for (int k = 0; k < loaders; ++k)
    threads.emplace_back([&, k] {
      for (;;) {
        const std::size_t item = next.fetch_add(1);
        if (item >= count) return;
        int slot;
        if (!free_slots.pop(&slot)) return;
        const auto t0 = Clock::now();
        Status st = load(k, item, slot_mem.data() + static_cast<std::size_t>(slot) * row);
        span(load_log[k], 0, k, static_cast<int64_t>(item), t0, Clock::now());
        if (!loaded.push(Loaded{item, slot, std::move(st), t0})) return;
      }
    });

  threads.emplace_back([&] {  // assembly: rows into batch records, in arrival order
    int cur = -1;
    int64_t number = 0;
    auto flush = [&] {
      BatchRecord& r = recs[static_cast<std::size_t>(cur)];
      r.number = number++;
      if (r.items.size() < static_cast<std::size_t>(B))  // a short last batch: zero rows, ignored
        std::memset(r.input.data() + r.items.size() * row, 0, (B - r.items.size()) * row);
      const bool ok = to_infer.push(cur);
      cur = -1;
      return ok;
    };
    for (std::size_t got = 0; got < count; ++got) {
      Loaded l;
      if (!loaded.pop(&l)) return;
      if (cur < 0) {
        if (!free_recs.pop(&cur)) return;
        BatchRecord& r = recs[static_cast<std::size_t>(cur)];
        r.items.clear();
        r.t0.clear();
        r.failed.clear();
      }
      BatchRecord& r = recs[static_cast<std::size_t>(cur)];
      const auto a = Clock::now();
      if (l.status.ok()) {
        std::memcpy(r.input.data() + r.items.size() * row, slot_mem.data() + static_cast<std::size_t>(l.slot) * row, row);
        r.items.push_back(l.item);
        r.t0.push_back(l.t0);
      } else {
        r.failed.push_back({l.item, std::move(l.status), l.t0});
      }
      free_slots.push(l.slot);
      span(asm_log, 1, 0, number, a, Clock::now());
      if ((r.items.size() == static_cast<std::size_t>(B) || r.failed.size() >= static_cast<std::size_t>(B)) && !flush())
        return;
    }
    if (cur >= 0) flush();
    to_infer.close();
  });

  for (int k = 0; k < instances; ++k)
    threads.emplace_back([&, k] {
      std::vector<const void*> in(1);
      std::vector<void*> out(s0.outputs().size());
      int id;
      while (to_infer.pop(&id)) {
        BatchRecord& r = recs[static_cast<std::size_t>(id)];
        if (!r.items.empty()) {
          in[0] = r.input.data();
          for (std::size_t o = 0; o < out.size(); ++o) out[o] = r.outputs[o].data();
          const auto a = Clock::now();
          Status st = sessions[static_cast<std::size_t>(k)]->run_into(in, out);
          span(infer_log[k], 2, k, r.number, a, Clock::now());
          if (!st.ok()) return abort_all(std::move(st));
        }
        if (!to_results.push(id)) return;
      }
      if (--infer_left == 0) to_results.close();
    });

  threads.emplace_back([&] {  // results: one thread, so the callback needs no locking
    std::vector<const void*> rows(out_row.size());
    const std::vector<const void*> none;
    int id;
    while (to_results.pop(&id)) {
      BatchRecord& r = recs[static_cast<std::size_t>(id)];
      const auto a = Clock::now();
      for (const Failure& f : r.failed) {
        on_result(f.item, f.status, none, std::chrono::duration<double, std::milli>(a - f.t0).count());
        ++rep.failed;
      }
      for (std::size_t i = 0; i < r.items.size(); ++i) {
        for (std::size_t o = 0; o < rows.size(); ++o) rows[o] = r.outputs[o].data() + i * out_row[o];
        const auto now = Clock::now();
        const double ms = std::chrono::duration<double, std::milli>(now - r.t0[i]).count();
        on_result(r.items[i], Status::Ok(), rows, ms);
        rep.latency_ms.push_back(ms);
        ++rep.items;
      }
      if (!r.items.empty()) ++rep.batches;
      span(res_log, 3, 0, r.number, a, Clock::now());
      if (!free_recs.push(id)) return;
    }
  });

  for (std::thread& t : threads) t.join();
  if (!error.ok()) return error;
  rep.wall_s = std::chrono::duration<double>(Clock::now() - rep.start).count();
  auto stage = [&](const char* name, const std::vector<ThreadLog*>& logs) {
    StageReport s;
    s.name = name;
    s.threads = static_cast<int>(logs.size());
    for (ThreadLog* l : logs) {
      s.busy_s += l->busy_s;
      s.work += l->work;
      rep.events.insert(rep.events.end(), l->events.begin(), l->events.end());
    }
    rep.stages.push_back(s);
  };
  std::vector<ThreadLog*> lp, ip;
  for (ThreadLog& l : load_log) lp.push_back(&l);
  for (ThreadLog& l : infer_log) ip.push_back(&l);
  stage("load", lp);
  stage("assemble", {&asm_log});
  stage("infer", ip);
  stage("results", {&res_log});
  return rep;
}

}  // namespace systolic::runtime

// Concurrent instances: creation with allocation failures as errors, and a common start.
#include "api/multi_instance.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <new>
#include <thread>

namespace systolic::api {

Expected<Instances> open_instances(std::shared_ptr<const plan::Program> program, int count, int threads) {
  if (count < 1 || threads < 1) return Err("need at least one instance on one thread (got %d x %d)", count, threads);
  Instances inst;
  try {
    for (int k = 0; k < count; ++k) {
      runtime::SessionOptions so;
      so.threads = threads;
      auto s = runtime::Session::create(program, so);
      if (!s.ok()) return s.status();
      inst.io.push_back(make_io_buffers(**s, 1 + 100 * static_cast<uint64_t>(k)));
      inst.sessions.push_back(std::move(*s));
    }
  } catch (const std::bad_alloc&) {
    return Err("out of memory creating instance %zu of %d", inst.sessions.size() + 1, count);
  }
  return inst;
}

Status run_once(runtime::Session& s, const IoBuffers& io) {
  for (const runtime::TensorInfo& o : s.outputs())
    if (o.dynamic()) {
      std::vector<runtime::HostTensor> outs;
      return s.run_dynamic(io.in_ptrs, &outs);
    }
  return s.run_into(io.in_ptrs, io.out_ptrs);
}

Expected<InstanceRuns> run_instances(Instances& inst, int64_t min_runs, double min_seconds) {
  using clock = std::chrono::steady_clock;
  const std::size_t n = inst.sessions.size();
  std::vector<std::vector<double>> ms(n);
  std::vector<Status> errors(n);
  for (auto& v : ms) v.reserve(static_cast<std::size_t>(std::max<int64_t>(min_runs, 64)));
  std::latch ready(static_cast<std::ptrdiff_t>(n) + 1);
  std::atomic<bool> go{false};
  clock::time_point start;
  std::vector<clock::time_point> ends(n);
  auto body = [&](std::size_t k) {
    ready.count_down();
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    runtime::Session& s = *inst.sessions[k];
    for (int64_t r = 0;; ++r) {
      const auto t0 = clock::now();
      if (r >= min_runs && std::chrono::duration<double>(t0 - start).count() >= min_seconds) break;
      Status st = run_once(s, inst.io[k]);
      if (!st.ok()) {
        errors[k] = st;
        break;
      }
      ms[k].push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    }
    ends[k] = clock::now();
  };
  std::vector<std::thread> threads;
  try {
    threads.reserve(n);
    for (std::size_t k = 0; k < n; ++k) threads.emplace_back(body, k);
  } catch (const std::system_error&) {
    go = true;  // let the started ones finish their runs before reporting
    for (auto& t : threads) t.join();
    return Err("cannot start %zu threads", n);
  }
  ready.arrive_and_wait();
  start = clock::now();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  InstanceRuns out;
  for (std::size_t k = 0; k < n; ++k) {
    if (!errors[k].ok()) return errors[k];
    out.latency_ms.insert(out.latency_ms.end(), ms[k].begin(), ms[k].end());
    out.runs += static_cast<int64_t>(ms[k].size());
    out.wall_s = std::max(out.wall_s, std::chrono::duration<double>(ends[k] - start).count());
  }
  return out;
}

}  // namespace systolic::api

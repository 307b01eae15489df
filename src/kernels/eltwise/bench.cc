// Element-wise microbenchmarks: every kernel of eltwise.inc that runs here on a 1M-element tensor
// (out of L2) and a 16K one (in L1/L2), 1 and 2 threads; reports GB/s of a, b and y traffic.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/eltwise/eltwise.h"

namespace systolic::kernels {
namespace {

struct Case {
  const char* name;
  bool binary;
  BinaryOp op;
  int b_mode;
  Act act;
};

const Case kCases[] = {
    {"add", true, BinaryOp::add, 0, Act::none},
    {"add_relu", true, BinaryOp::add, 0, Act::relu},
    {"mul_chan_nchw", true, BinaryOp::mul, 3, Act::none},
    {"relu", false, BinaryOp::add, 0, Act::relu},
    {"hard_swish", false, BinaryOp::add, 0, Act::hard_swish},
    {"sigmoid", false, BinaryOp::add, 0, Act::sigmoid},
    {"tanh", false, BinaryOp::add, 0, Act::tanh},
};

EltwiseParams params(const Case& c, int64_t n) {
  EltwiseParams p;
  p.n = n, p.binary = c.binary, p.op = c.op, p.b_mode = c.b_mode, p.act.act = c.act;
  if (c.b_mode == 3) p.channels = 256, p.inner = n / 256;  // [256, n/256] NCHW, [256,1,1] operand
  return p;
}

void run(benchmark::State& state, const EltwiseKernel* k, Case c, int64_t n, int threads) {
  const EltwiseParams p = params(c, n);
  std::vector<float> a(n, 0.5f), b(n, 1.5f), y(n);
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(p, a.data(), b.data(), y.data(), pool.get());
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = 4.0 * n * (2 + (c.binary && c.b_mode == 0));
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
  std::size_t count;
  const EltwiseKernel* all = eltwise_kernels(&count);
  for (std::size_t i = 0; i < count; ++i)
    for (const Case& c : kCases)
      for (int64_t n : {int64_t(1) << 14, int64_t(1) << 20})
        for (int t : {1, 2}) {
          if (!all[i].accepts(params(c, n), host_cpu(), nullptr)) continue;
          const std::string name = std::string(all[i].name) + "/" + c.name + "/n:" + std::to_string(n) +
                                   "/threads:" + std::to_string(t);
          benchmark::RegisterBenchmark(name.c_str(), run, &all[i], c, n, t)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
  return 0;
}();

}  // namespace
}  // namespace systolic::kernels

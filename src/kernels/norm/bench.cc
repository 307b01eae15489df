// Norm microbenchmarks: ViT-B/16's attention softmax and layer norm at batch 1, every kernel of
// norm.inc that runs here, 1 and 2 threads; reports GB/s of input read.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/norm/norm.h"

namespace systolic::kernels {
namespace {

struct Shape {
  const char* name;
  NormKind kind;
  int64_t rows, n;
};

const Shape kShapes[] = {
    {"softmax_2364x197", NormKind::softmax, 12 * 197, 197},
    {"layer_norm_197x768", NormKind::layer_norm, 197, 768},
};

NormParams params(const Shape& s) {
  NormParams p;
  p.kind = s.kind, p.rows = s.rows, p.n = s.n;
  return p;
}

void run(benchmark::State& state, const NormKernel* k, Shape s, int threads) {
  const NormParams p = params(s);
  std::vector<float> x(s.rows * s.n, 0.5f), y(x.size()), scale(s.n, 1.f), bias(s.n, 0.f);
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(p, x.data(), scale.data(), bias.data(), y.data(), pool.get());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(x.size() * 4e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
  std::size_t count;
  const NormKernel* all = norm_kernels(&count);
  for (std::size_t i = 0; i < count; ++i)
    for (const Shape& s : kShapes)
      for (int t : {1, 2}) {
        if (!all[i].accepts(params(s), host_cpu(), nullptr)) continue;
        const std::string name = std::string(all[i].name) + "/" + s.name + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), run, &all[i], s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
  return 0;
}();

}  // namespace
}  // namespace systolic::kernels

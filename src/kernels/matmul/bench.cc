// MatMul microbenchmarks: ViT-B/16's attention products at batch 1 (12 heads), every kernel of
// matmul.inc that runs here, 1 and 2 threads; reports GFLOP/s.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/matmul/matmul.h"

namespace systolic::kernels {
namespace {

struct Shape {
  const char* name;
  int64_t batch, m, n, k;
};

const Shape kShapes[] = {
    {"vit_qk_12x197x197x64", 12, 197, 197, 64},
    {"vit_pv_12x197x64x197", 12, 197, 64, 197},
};

void run(benchmark::State& state, const MatMulKernel* k, Shape s, int threads) {
  const MatMulParams p = matmul_dense(s.batch, s.m, s.n, s.k);
  std::vector<float> a(s.batch * s.m * s.k, 0.5f), b(s.batch * s.k * s.n, 0.25f), c(s.batch * s.m * s.n);
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(p, a.data(), b.data(), c.data(), pool.get());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * double(s.batch * s.m * s.n * s.k), benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
  std::size_t count;
  const MatMulKernel* all = matmul_kernels(&count);
  for (std::size_t i = 0; i < count; ++i)
    for (const Shape& s : kShapes)
      for (int t : {1, 2}) {
        if (!all[i].accepts(matmul_dense(s.batch, s.m, s.n, s.k), host_cpu(), nullptr)) continue;
        const std::string name = std::string(all[i].name) + "/" + s.name + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), run, &all[i], s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
  return 0;
}();

}  // namespace
}  // namespace systolic::kernels

// Pool microbenchmarks: ResNet-50's max pool and global average pool at batch 1, every kernel of
// pool.inc that runs here, 1 and 2 threads; reports GB/s of input read.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/pool/pool.h"

namespace systolic::kernels {
namespace {

struct Layer {
  const char* name;
  PoolKind kind;
  int c, ih, k, s, pad;
};

const Layer kLayers[] = {
    {"max3x3s2_64_112", PoolKind::max, 64, 112, 3, 2, 1},
    {"gavg_2048_7", PoolKind::avg, 2048, 7, 7, 1, 0},
};

PoolParams params(const Layer& l) {
  PoolParams p;
  p.kind = l.kind, p.c = l.c, p.ih = p.iw = l.ih, p.kh = p.kw = l.k, p.sh = p.sw = l.s;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = l.pad;
  p.oh = p.ow = (l.ih + 2 * l.pad - l.k) / l.s + 1;
  return p;
}

void run(benchmark::State& state, const PoolKernel* k, Layer l, int threads) {
  const PoolParams p = params(l);
  std::vector<float> src(std::size_t(p.ih) * p.iw * p.c, 1.f), dst(std::size_t(p.oh) * p.ow * p.c);
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(p, src.data(), dst.data(), pool.get());
    benchmark::DoNotOptimize(dst.data());
  }
  state.counters["GB/s"] = benchmark::Counter(src.size() * 4e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
  std::size_t count;
  const PoolKernel* all = pool_kernels(&count);
  for (std::size_t i = 0; i < count; ++i)
    for (const Layer& l : kLayers)
      for (int t : {1, 2}) {
        if (!all[i].accepts(params(l), host_cpu(), nullptr)) continue;
        const std::string name = std::string(all[i].name) + "/" + l.name + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), run, &all[i], l, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
  return 0;
}();

}  // namespace
}  // namespace systolic::kernels

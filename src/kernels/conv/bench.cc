// Conv microbenchmarks: ResNet-50 layer shapes at batch 1, every kernel of conv.inc that runs
// here, 1 and 2 threads; reports GFLOP/s (2 * MACs, useful work only).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_vector.h"
#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/conv/conv.h"

namespace systolic::kernels {
namespace {

struct Layer {
  const char* name;
  int ic, ih, oc, k, s;  // square input/kernel, pad k/2
  int n = 1;
};

const Layer kLayers[] = {
    {"1x1_64to256_56", 64, 56, 256, 1, 1},     {"1x1_256to64_56", 256, 56, 64, 1, 1},
    {"3x3_64to64_56", 64, 56, 64, 3, 1},       {"3x3_128to128_28", 128, 28, 128, 3, 1},
    {"3x3_256to256_14", 256, 14, 256, 3, 1},   {"1x1_1024to256_14", 1024, 14, 256, 1, 1},
    {"3x3_512to512_7", 512, 7, 512, 3, 1},     {"1x1_512to2048_7", 512, 7, 2048, 1, 1},
    {"7x7s2_3to64_224", 3, 224, 64, 7, 2},     {"fc_2048to1000_m1", 2048, 1, 1000, 1, 1, 1},
    {"fc_2048to1000_m16", 2048, 1, 1000, 1, 1, 16}, {"dw3x3_144_56", 144, 56, 144, 3, 1},
    {"dw3x3_32_112", 32, 112, 32, 3, 1},       {"dw3x3s2_96_112", 96, 112, 96, 3, 2},
    {"dw3x3s2_144_56", 144, 56, 144, 3, 2},    {"dw3x3_384_14", 384, 14, 384, 3, 1},
    {"dw3x3_960_7", 960, 7, 960, 3, 1},        {"dw3x3_144_56_n16", 144, 56, 144, 3, 1, 16},
    {"3x3_64to64_56_n16", 64, 56, 64, 3, 1, 16}, {"3x3_128to128_28_n16", 128, 28, 128, 3, 1, 16},
    {"3x3_256to256_14_n16", 256, 14, 256, 3, 1, 16}, {"3x3_512to512_7_n16", 512, 7, 512, 3, 1, 16},
    {"3x3_3to64_224", 3, 224, 64, 3, 1},        {"3x3_8to8_56", 8, 56, 8, 3, 1},
    {"3x3_16to16_56", 16, 56, 16, 3, 1},        {"3x3_32to32_56", 32, 56, 32, 3, 1},
    {"3x3_16to64_56", 16, 56, 64, 3, 1},        {"3x3_64to16_56", 64, 56, 16, 3, 1},
    // The host check's calibration size (32x32: NHWC rows a power of two apart) against its
    // neighbours, 28x28 being above.
    {"3x3_64to64_32", 64, 32, 64, 3, 1},        {"3x3_64to64_36", 64, 36, 64, 3, 1},
    {"3x3_128to128_32", 128, 32, 128, 3, 1},    {"3x3_128to128_36", 128, 36, 128, 3, 1},
    {"3x3_64to64_28", 64, 28, 64, 3, 1},
    // DenseNet-121's growth convs (128 -> 32) at its four block sizes.
    {"3x3_128to32_56", 128, 56, 32, 3, 1},      {"3x3_128to32_28", 128, 28, 32, 3, 1},
    {"3x3_128to32_14", 128, 14, 32, 3, 1},      {"3x3_128to32_7", 128, 7, 32, 3, 1},
    {"3x3_128to32_28_n16", 128, 28, 32, 3, 1, 16}, {"3x3_128to32_14_n16", 128, 14, 32, 3, 1, 16},
};

ConvParams params(const Layer& l) {
  ConvParams p;
  p.n = l.n, p.ic = l.ic, p.ih = p.iw = l.ih, p.oc = l.oc, p.kh = p.kw = l.k, p.sh = p.sw = l.s;
  p.pad_t = p.pad_l = l.k / 2;
  p.oh = p.ow = (l.ih + 2 * (l.k / 2) - l.k) / l.s + 1;
  if (l.name[0] == 'd') p.groups = l.ic;
  return p;
}

void run(benchmark::State& state, const ConvKernel* k, Layer l, int threads) {
  const ConvParams p = params(l);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto rnd = [&](std::size_t n) {
    AlignedVector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
  };
  const long K = long(p.ic / p.groups) * p.kh * p.kw;
  const auto src = rnd(std::size_t(p.n) * p.ih * p.iw * p.ic), w = rnd(std::size_t(p.oc) * K);
  const auto bias = rnd(p.oc);
  // Aligned as a plan's tensors are: 16 bytes off the line, weights cost 2-5% more.
  AlignedVector<float> packed(k->packed_floats(p)), dst(std::size_t(p.n) * p.oh * p.ow * p.oc);
  k->pack(p, w.data(), packed.data());
  const std::size_t ws = k->workspace_bytes(p);
  std::unique_ptr<float, decltype(&std::free)> work(
      static_cast<float*>(ws ? std::aligned_alloc(64, (ws + 63) / 64 * 64) : nullptr), std::free);
  ConvArgs a;
  a.src = src.data(), a.weights = packed.data(), a.bias = bias.data(), a.dst = dst.data();
  a.epilogue.act = Act::relu, a.workspace = work.get();
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(p, a, pool.get());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * p.n * p.oh * p.ow * double(p.oc) * K;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Registered at start-up for every kernel that accepts the layer on this CPU.
const int kRegistered = [] {
  std::size_t count;
  const ConvKernel* all = conv_kernels(&count);
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

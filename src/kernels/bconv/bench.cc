// bf16 conv microbenchmarks: ResNet-50 layer shapes, every vdpbf16ps kernel of bconv.inc that
// runs here (none without AVX512-BF16), and the fp32 kernel a bf16 plan takes otherwise with the
// rounding epilogue, 1 and 2 threads; reports GFLOP/s (2 * MACs, useful work only).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/aligned_vector.h"
#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/bconv/bconv.h"

namespace systolic::kernels {
namespace {

struct Layer {
  const char* name;
  int ic, ih, oc, k, s;  // square input/kernel, pad k/2
  int n = 1;
};

const Layer kLayers[] = {
    {"1x1_64to256_56", 64, 56, 256, 1, 1},   {"1x1_256to64_56", 256, 56, 64, 1, 1},
    {"3x3_64to64_56", 64, 56, 64, 3, 1},     {"3x3_256to256_14", 256, 14, 256, 3, 1},
    {"1x1_1024to256_14", 1024, 14, 256, 1, 1}, {"3x3_512to512_7", 512, 7, 512, 3, 1},
    {"7x7s2_3to64_224", 3, 224, 64, 7, 2},   {"fc_2048to1000_m16", 2048, 1, 1000, 1, 1, 16},
    {"3x3_256to256_14_n16", 256, 14, 256, 3, 1, 16},
    // Batch 16's wide-output 1x1 convs: where the epilogue's stores, not the dot products, bound.
    {"1x1_64to256_56_n16", 64, 56, 256, 1, 1, 16}, {"1x1_256to64_56_n16", 256, 56, 64, 1, 1, 16},
    {"3x3_64to64_56_n16", 64, 56, 64, 3, 1, 16},
};

ConvParams params(const Layer& l) {
  ConvParams p;
  p.n = l.n, p.ic = l.ic, p.ih = p.iw = l.ih, p.oc = l.oc, p.kh = p.kw = l.k, p.sh = p.sw = l.s;
  p.pad_t = p.pad_l = l.k / 2;
  p.oh = p.ow = (l.ih + 2 * (l.k / 2) - l.k) / l.s + 1;
  return p;
}

// io: ConvParams::bf16_io (source and output stored as bf16, as a bf16 plan stores activations
// between AMX convs); the buffers are sized for floats either way.
void run(benchmark::State& state, const ConvKernel* k, Layer l, int threads, int io) {
  ConvParams p = params(l);
  p.bf16_io = io;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  auto rnd = [&](std::size_t n) {
    AlignedVector<float> v(n);
    for (float& x : v) x = round_bf16(u(rng));
    return v;
  };
  const long K = long(p.ic) * p.kh * p.kw;
  auto src = rnd(std::size_t(p.n) * p.ih * p.iw * p.ic);
  const auto w = rnd(std::size_t(p.oc) * K);
  if (io & kBf16Src) {  // the same values as bf16: the high halves, packed
    auto* s16 = reinterpret_cast<uint16_t*>(src.data());
    for (std::size_t i = 0; i < src.size(); ++i) s16[i] = bf16_bits(src[i]);
  }
  const auto bias = rnd(p.oc);
  AlignedVector<float> packed(k->packed_floats(p)), dst(std::size_t(p.n) * p.oh * p.ow * p.oc);
  k->pack(p, w.data(), packed.data());
  const std::size_t ws = k->workspace_bytes(p);
  std::unique_ptr<float, decltype(&std::free)> work(
      static_cast<float*>(ws ? std::aligned_alloc(64, (ws + 63) / 64 * 64) : nullptr), std::free);
  ConvArgs a;
  a.src = src.data(), a.weights = packed.data(), a.bias = bias.data(), a.dst = dst.data();
  a.epilogue.act = Act::relu, a.epilogue.round_bf16 = true, a.workspace = work.get();
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(p, a, pool.get());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * p.n * p.oh * p.ow * double(p.oc) * K;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

const int kRegistered = [] {
  for (const Layer& l : kLayers)
    for (int t : {1, 2}) {
      const ConvParams p = params(l);
      const ConvKernel* k = bconv_select(p, host_cpu());
      if (bconv_is_reference(k)) k = conv_select(p, host_cpu());
      if (!k) continue;
      const std::string name = std::string("bf16/") + k->name + "/" + l.name + "/threads:" + std::to_string(t);
      benchmark::RegisterBenchmark(name.c_str(), run, k, l, t, 0)->UseRealTime()->Unit(benchmark::kMicrosecond);
      ConvParams stored = p;
      stored.bf16_io = kBf16Src | kBf16Dst;
      if (!k->accepts(stored, host_cpu(), nullptr)) continue;
      const std::string sname = std::string("bf16/") + k->name + "/" + l.name + "_stored/threads:" + std::to_string(t);
      benchmark::RegisterBenchmark(sname.c_str(), run, k, l, t, stored.bf16_io)->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  return 0;
}();

}  // namespace
}  // namespace systolic::kernels

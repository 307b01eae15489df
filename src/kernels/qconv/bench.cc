// Int8 conv microbenchmarks: ResNet-50 and MobileNetV2 layer shapes, every kernel of qconv.inc
// that runs here, 1 and 2 threads; reports GOP/s (2 * MACs, useful work only).
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "base/aligned_vector.h"
#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/qconv/qconv.h"

namespace systolic::kernels {
namespace {

struct Layer {
  const char* name;
  int ic, ih, oc, k, s;  // square input/kernel, pad k/2
  int n = 1;
  bool qdq = false;  // a QDQ model's epilogue: both intermediate roundings and a u8 residual
};

const Layer kLayers[] = {
    {"1x1_64to256_56", 64, 56, 256, 1, 1},     {"1x1_256to64_56", 256, 56, 64, 1, 1},
    {"3x3_64to64_56", 64, 56, 64, 3, 1},       {"3x3_128to128_28", 128, 28, 128, 3, 1},
    {"3x3_256to256_14", 256, 14, 256, 3, 1},   {"1x1_1024to256_14", 1024, 14, 256, 1, 1},
    {"3x3_512to512_7", 512, 7, 512, 3, 1},     {"1x1_512to2048_7", 512, 7, 2048, 1, 1},
    {"7x7s2_3to64_224", 3, 224, 64, 7, 2},     {"fc_2048to1000_m1", 2048, 1, 1000, 1, 1, 1},
    {"fc_2048to1000_m16", 2048, 1, 1000, 1, 1, 16},
    {"dw3x3_144_56", 144, 56, 144, 3, 1},      {"dw3x3s2_96_112", 96, 112, 96, 3, 2},
    {"dw3x3_32_112", 32, 112, 32, 3, 1},       {"dw3x3_384_14", 384, 14, 384, 3, 1},
    {"dw3x3_960_7", 960, 7, 960, 3, 1},
    {"3x3_64to64_56_n16", 64, 56, 64, 3, 1, 16}, {"3x3_256to256_14_n16", 256, 14, 256, 3, 1, 16},
    {"3x3_128to128_28_n16", 128, 28, 128, 3, 1, 16}, {"3x3_512to512_7_n16", 512, 7, 512, 3, 1, 16},
    {"1x1_256to64_56_n16", 256, 56, 64, 1, 1, 16}, {"1x1_64to256_56_n16", 64, 56, 256, 1, 1, 16},
    // ResNet-50's bottleneck ends: the residual add and the QDQ roundings in the epilogue.
    {"1x1_64to256_56_n16_qdq", 64, 56, 256, 1, 1, 16, true}, {"1x1_64to256_56_qdq", 64, 56, 256, 1, 1, 1, true},
    {"1x1_128to512_28_n16_qdq", 128, 28, 512, 1, 1, 16, true},
    // The downsampling 1x1 convs (stride 2) and the last stage's 1x1 convs at batch 16.
    {"1x1s2_256to512_56_n16", 256, 56, 512, 1, 2, 16}, {"1x1s2_1024to2048_14_n16", 1024, 14, 2048, 1, 2, 16},
    {"1x1_512to2048_7_n16_qdq", 512, 7, 2048, 1, 1, 16, true},
    // MobileNetV2's narrow layers: the stem and the first expansions (K of 16 to 27).
    {"3x3s2_3to32_224", 3, 224, 32, 3, 2},     {"1x1_16to96_112", 16, 112, 96, 1, 1},
    {"1x1_24to144_56", 24, 56, 144, 1, 1},
};

QConvParams params(const Layer& l) {
  QConvParams q;
  ConvParams& p = q.conv;
  p.n = l.n, p.ic = l.ic, p.ih = p.iw = l.ih, p.oc = l.oc, p.kh = p.kw = l.k, p.sh = p.sw = l.s;
  p.pad_t = p.pad_l = l.k / 2;
  p.oh = p.ow = (l.ih + 2 * (l.k / 2) - l.k) / l.s + 1;
  if (l.name[0] == 'd') p.groups = l.ic;
  return q;
}

void run(benchmark::State& state, const QConvKernel* k, Layer l, int threads) {
  const QConvParams qp = params(l);
  const ConvParams& p = qp.conv;
  std::mt19937 rng(1);
  const long K = long(p.ic / p.groups) * p.kh * p.kw;
  AlignedVector<uint8_t> src(std::size_t(p.n) * p.ih * p.iw * p.ic), dst(std::size_t(p.n) * p.oh * p.ow * p.oc);
  for (auto& v : src) v = uint8_t(rng());
  std::vector<int8_t> w(std::size_t(p.oc) * K);
  for (auto& v : w) v = int8_t(rng());
  std::vector<uint8_t> zx(p.ic, 128);
  std::vector<int32_t> bias(p.oc, 0), folded(p.oc);
  std::vector<float> scale(p.oc, 1e-4f);
  qconv_fold_bias(p, w.data(), bias.data(), zx.data(), folded.data());
  AlignedBytes packed(k->packed_bytes(qp)), ws(k->workspace_bytes(qp) + 64);
  k->pack(qp, w.data(), packed.data());
  QConvArgs a;
  a.src = src.data(), a.pad = zx.data(), a.weights = packed.data(), a.bias = folded.data(), a.scale = scale.data();
  a.dst = dst.data(), a.workspace = ws.data();
  AlignedVector<uint8_t> res(l.qdq ? dst.size() : 0);
  if (l.qdq) {
    for (auto& v : res) v = uint8_t(rng());
    a.residual = res.data();
    a.rq.res_scale = 0.7f, a.rq.res_zp = 120, a.rq.zp = 0, a.rq.mid = 3;
    a.rq.mid_lo[0] = -128.f, a.rq.mid_hi[0] = 127.f, a.rq.mid_scale[0] = 0.9f;
    a.rq.mid_lo[1] = -100.f, a.rq.mid_hi[1] = 155.f, a.rq.mid_scale[1] = 1.1f;
  }
  ThreadPool pool = make_thread_pool(threads);
  for (auto _ : state) {
    k->run(qp, a, pool.get());
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double ops = 2.0 * p.n * p.oh * p.ow * double(p.oc) * K;
  state.counters["GOP/s"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Registered at start-up for every kernel that accepts the layer on this CPU (the reference
// only on the small layers: it is the oracle, not a contender).
const int kRegistered = [] {
  std::size_t count;
  const QConvKernel* all = qconv_kernels(&count);
  for (std::size_t i = 0; i < count; ++i)
    for (const Layer& l : kLayers)
      for (int t : {1, 2}) {
        if (!all[i].accepts(params(l), host_cpu(), nullptr)) continue;
        if (std::string(all[i].name).ends_with("_ref") && l.n > 1) continue;
        const std::string name = std::string(all[i].name) + "/" + l.name + "/threads:" + std::to_string(t);
        benchmark::RegisterBenchmark(name.c_str(), run, &all[i], l, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
  return 0;
}();

}  // namespace
}  // namespace systolic::kernels

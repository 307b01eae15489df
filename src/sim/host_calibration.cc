// The host measurements behind `simulate --target host --check`: pool dispatch cost, the conv
// kernel's efficiency on a fixed calibration shape, the microkernel tile, peak and bandwidth.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "base/aligned_vector.h"
#include "base/threadpool.h"
#include "interp/nn_geometry.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/igemm_blocking.h"
#include "kernels/peak/peak.h"
#include "sim/bandwidth.h"
#include "sim/host_check.h"
#include "sim/host_check_calibrator.h"
#include "sim/host_conv.h"
#include "sim/host_dw.h"
#include "sim/host_winograd.h"
#include "sim/peak.h"
#include "target/target.h"

namespace systolic::sim {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

double measured_dispatch_us(pthreadpool_t pool, int threads, int reps, double budget_s) {
  std::atomic<int> sink{0};
  auto task = [](void* c, size_t i) { static_cast<std::atomic<int>*>(c)->fetch_add(static_cast<int>(i), std::memory_order_relaxed); };
  std::vector<double> us;
  const auto start = clock_type::now();
  for (int rep = 0; rep < reps && seconds_since(start) < budget_s; ++rep) {
    const auto t0 = clock_type::now();
    pthreadpool_parallelize_1d(pool, task, &sink, static_cast<size_t>(std::max(1, threads)), 0);
    us.push_back(seconds_since(t0) * 1e6);
  }
  return median(us);
}

double measured_dispatch_us(int threads) {
  ThreadPool pool = make_thread_pool(threads);
  return measured_dispatch_us(pool.get(), threads, 2000, 0.05);
}

namespace {

// Median seconds of one run of `kernel` on `p` (random-ish data), >= 5 runs within ~0.05 s;
// < 0 when the kernel does not take the shape.
double time_conv_s(const kernels::ConvKernel* k, const kernels::ConvParams& p, int threads) {
  std::string why;
  if (!k->accepts(p, host_cpu(), &why)) return -1;
  const int icg = p.ic / p.groups;
  std::vector<float> w(static_cast<std::size_t>(p.oc) * icg * p.kh * p.kw);
  AlignedVector<float> src(static_cast<std::size_t>(p.n) * p.ih * p.iw * p.ic), dst(static_cast<std::size_t>(p.n) * p.oh * p.ow * p.oc),
      bias(p.oc, 0.1f), packed(k->packed_floats(p));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  k->pack(p, w.data(), packed.data());
  const std::size_t ws_bytes = (k->workspace_bytes(p) + 63) / 64 * 64;
  float* ws = ws_bytes ? static_cast<float*>(std::aligned_alloc(64, ws_bytes)) : nullptr;
  kernels::ConvArgs a;
  a.src = src.data();
  a.weights = packed.data();
  a.bias = bias.data();
  a.dst = dst.data();
  a.workspace = ws;
  ThreadPool pool = make_thread_pool(threads);
  for (int i = 0; i < 2; ++i) k->run(p, a, pool.get());
  std::vector<double> secs;
  const auto start = clock_type::now();
  for (int rep = 0; rep < 50 && (rep < 5 || seconds_since(start) < 0.05); ++rep) {
    const auto t0 = clock_type::now();
    k->run(p, a, pool.get());
    secs.push_back(seconds_since(t0));
  }
  std::free(ws);
  return median(secs);
}

kernels::ConvParams calib_shape(int ic, int oc, int hw, int kernel, int stride, int dilation = 1) {
  kernels::ConvParams p;
  p.dh = p.dw = dilation;
  p.ih = p.iw = hw;
  p.ic = ic;
  p.oc = oc;
  p.kh = p.kw = kernel;
  p.sh = p.sw = stride;
  p.pad_t = p.pad_l = dilation * (kernel / 2);
  p.oh = p.ow = (hw + 2 * p.pad_t - dilation * (kernel - 1) - 1) / stride + 1;
  return p;
}

// A depthwise 3x3, pad 1: `channels` groups of one channel each.
kernels::ConvParams calib_depthwise(int channels, int hw, int stride) {
  kernels::ConvParams p = calib_shape(channels, channels, hw, 3, stride);
  p.groups = channels;
  return p;
}

}  // namespace

kernels::ConvParams calib_wide() { return calib_shape(128, 128, 32, 3, 1); }
kernels::ConvParams calib_narrow() { return calib_shape(24, 128, 32, 3, 1); }
// 128 output channels: two 64-wide panels, so every kernel gathers its rows (igemm::packs_over).
kernels::ConvParams calib_stem() { return calib_shape(3, 128, 128, 7, 2); }
kernels::ConvParams calib_merged(int nr) { return calib_shape(3, std::max(1, nr), 128, 7, 2); }
kernels::ConvParams calib_strided() { return calib_shape(192, 384, 56, 1, 2); }
kernels::ConvParams calib_short() { return calib_shape(64, 256, 32, 1, 1); }
kernels::ConvParams calib_strided_twin() { return calib_shape(192, 384, 28, 1, 1); }
// K = 768: six K blocks of partial sums per tile x panel on AVX-512's 64-wide panels, three on
// AVX2's 16-wide ones.
kernels::ConvParams calib_deep() { return calib_shape(768, 192, 16, 1, 1); }
kernels::ConvParams calib_far() {
  kernels::ConvParams p = calib_shape(192, 64, 64, 1, 1);
  p.n = 16;
  return p;
}
kernels::ConvParams calib_dw() { return calib_depthwise(128, 56, 1); }
kernels::ConvParams calib_dw_rows() { return calib_depthwise(512, 7, 1); }
kernels::ConvParams calib_dw_strided() { return calib_depthwise(128, 56, 2); }

namespace {

// The first kernel of conv.inc on `conv_kernel`'s instruction set (its name's last part) whose
// name `family` accepts and that takes `shape` on this CPU ("" when none).
template <class Family>
std::string first_of_isa(const std::string& conv_kernel, Family family, const kernels::ConvParams& shape) {
  const std::string isa = conv_kernel.substr(conv_kernel.rfind('_') + 1);
  std::size_t n;
  const kernels::ConvKernel* all = kernels::conv_kernels(&n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string name = all[i].name;
    if (family(name) && name.substr(name.rfind('_') + 1) == isa && all[i].accepts(shape, host_cpu(), nullptr))
      return name;
  }
  return "";
}

}  // namespace

std::string calib_dw_kernel(const std::string& conv_kernel) {
  return first_of_isa(conv_kernel, [](const std::string& k) { return k.find("_dw_") != std::string::npos; }, calib_dw());
}

std::string calib_winograd_kernel(const std::string& conv_kernel) {
  return first_of_isa(conv_kernel, [](const std::string& k) { return sim::winograd_tile_of(k) > 0; }, calib_wide());
}

std::string calib_winograd2_kernel(const std::string& conv_kernel) {
  const std::string first = calib_winograd_kernel(conv_kernel);
  const std::string k =
      first_of_isa(conv_kernel, [](const std::string& n) { return sim::winograd_tile_of(n) == 2; }, calib_wide());
  return k == first ? "" : k;
}

std::string calib_igemm_kernel(const std::string& conv_kernel) {
  return first_of_isa(conv_kernel, [](const std::string& k) { return k.find("igemm") != std::string::npos; },
                      calib_wide());
}

namespace {

// The v in [lo, hi] where the increasing f reaches `target` (lo when f(lo) is already there).
template <class F>
double solve_increasing(F f, double target, double lo, double hi) {
  if (f(lo) >= target) return lo;
  while (f(hi) < target && hi < 1e12) hi *= 2;
  for (int i = 0; i < 60 && hi - lo > 1e-6 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

ConvCalibration solve_conv_calibration(const target::HostMeasurements& m, double dispatch_us, const CalibrationTimes& s) {
  ConvCalibration c;
  const int threads = std::max(1, m.threads);
  if (m.fp32_peak_gflops <= 0 || m.tile_rows <= 0 || m.tile_cols <= 0 || s.wide <= 0) return c;
  // The simulator's host with this tile and these bandwidths, its conv model on; the cycles below
  // are its core-cycles (at the clock the peak implies), elapsed.
  target::HostMeasurements hm = m;
  hm.threads = threads;
  hm.conv_efficiency = 1;
  hm.tap_setup_cycles = hm.gather_cycles = hm.strided_step_cycles = hm.call_cycles = 0;
  const target::Target t = target::host_target(host_cpu(), hm);
  const double fma_width = m.fp32_peak_gflops / (2.0 * threads * t.clock_ghz);
  const double c0 = m.tile_rows * m.tile_cols / fma_width;  // cycles per K step of one MR x NR tile at peak
  // Elapsed cycles of a measured run, less the pool dispatch the simulator charges separately.
  auto elapsed = [&](double secs) { return std::max(0.0, secs * 1e6 - dispatch_us) * 1e3 * t.clock_ghz; };
  // The model's elapsed cycles for a calibration conv with per-event costs `e` (its weights stay
  // in the caches between its runs).
  struct Events {
    double setup = 0, gather = 0, strided = 0, call = 0, partial = -1;  // partial < 0: call's
    double merged = -1;                                                   // < 0: setup's
    double act_ns = 0;  // ns per byte of activations past the caches (0: DRAM's rate)
  };
  auto model = [&](const kernels::ConvParams& p, double step, const Events& e) {
    target::Target x = t;
    x.host_conv.setup_cycles = e.setup;
    x.host_conv.gather_cycles = e.gather;
    x.host_conv.strided_step_cycles = e.strided;
    x.host_conv.call_cycles = e.call;
    x.host_conv.partial_call_cycles = e.partial >= 0 ? e.partial : e.call;
    x.host_conv.merged_setup_cycles = e.merged;
    x.host_conv.act_dram_gbs = e.act_ns > 0 ? 1 / e.act_ns : 0;
    return sim::host_conv_time(p, x, step, false).cycles;
  };
  // x: the cycles per full-tile K step that make the model's wide conv (its own hidden setup
  // included) as long as measured, never faster than the FMA peak, and the cost per call that
  // does the same for the short-K 1x1 (64 K steps a call) with that x; both convs hold both, so
  // the pair is solved by turns (a contraction: the wide conv's 1152-step calls barely see it).
  Events e;
  double x = c0;
  for (int turn = 0; turn < 6; ++turn) {
    x = solve_increasing([&](double v) { return model(calib_wide(), v, e); }, elapsed(s.wide), c0, 4 * c0);
    if (s.short_k <= 0) break;
    e.call = solve_increasing([&](double v) { return model(calib_short(), x, Events{0, 0, 0, v}); }, elapsed(s.short_k), 0,
                              2000);
  }
  // Then the setup per tile x panel x tap for the narrow conv (host_setup_exposure weighs it 1
  // there, 0 at the wide one), the gather per tile x kernel row for the stem, and the extra per
  // K step for the strided 1x1 (192-float taps: no setup), each with the ones before.
  if (s.narrow > 0)
    e.setup = solve_increasing([&](double v) { return model(calib_narrow(), x, Events{v, 0, 0, e.call}); },
                               elapsed(s.narrow), 0, 100);
  if (s.stem > 0)
    e.gather = solve_increasing([&](double v) { return model(calib_stem(), x, Events{e.setup, v, 0, e.call}); },
                                elapsed(s.stem), 0, 500);
  // The setup per merged kernel-row tap: the stem on one panel of the tile (so its rows take
  // row pointers, not a gather). Its 21-float taps cost about three times the narrow conv's
  // 24-channel ones on a 2-core Zen 5 (ResNet-50's stem, costed with the narrow setup, came out
  // 8% under its time alone).
  if (s.merged > 0) {
    const kernels::ConvParams merged = calib_merged(m.tile_cols);
    Events em{e.setup, e.gather, 0, e.call};
    c.merged_setup_cycles = solve_increasing(
        [&](double v) {
          em.merged = v;
          return model(merged, x, em);
        },
        elapsed(s.merged), 0, 1000);
  }
  // The strided steps: what the strided 1x1 takes beyond its stride-1 twin (the same GEMM,
  // blocking and loop order on a quarter of the pixels, rows read in place; both read the same
  // input bytes), so that errors in the rates above cancel.
  if (s.strided > 0 && s.strided_twin > 0) {
    const double twin = model(calib_strided_twin(), x, e);
    e.strided = solve_increasing(
        [&](double v) { return model(calib_strided(), x, Events{e.setup, e.gather, v, e.call}) - twin; },
        elapsed(s.strided) - elapsed(s.strided_twin), 0, 2000);
  }
  // The partial call: what the deep-K 1x1's calls before its last K block cost, with all the above.
  if (s.deep > 0)
    c.partial_call_cycles = solve_increasing(
        [&](double v) { return model(calib_deep(), x, Events{e.setup, e.gather, e.strided, e.call, v}); },
        elapsed(s.deep), 0, 4000);
  // The rate of activations past the caches: what the far 1x1's time beyond everything above
  // leaves for the bytes of its input past the largest re-read probe. Its time within the model's
  // at 1000 GB/s (noise, or a cache that held it all) leaves it unmeasured.
  if (s.far > 0) {
    constexpr double kFastest = 1e-3;  // ns per byte
    const Events ef{e.setup, e.gather, e.strided, e.call, c.partial_call_cycles};
    const double ns = solve_increasing(
        [&](double v) {
          Events f = ef;
          f.act_ns = v;
          return model(calib_far(), x, f);
        },
        elapsed(s.far), kFastest, 1.0);
    if (ns > kFastest) c.act_dram_gbs = 1 / ns;
  }
  // The transform cost: the wide shape on a Winograd kernel, its GEMMs at the rate and partial-call
  // cost just found (they store raw sums into the element's scratch); then the same on the F(2x2)
  // kernel when that is another one.
  auto transform = [&](const std::string& kernel, double secs) {
    const int wtile = sim::winograd_tile_of(kernel);
    if (secs <= 0 || wtile <= 0) return -1.0;
    return solve_increasing(
        [&](double v) {
          target::Target y = t;
          y.host_conv.call_cycles = e.call;
          y.host_conv.partial_call_cycles = c.partial_call_cycles >= 0 ? c.partial_call_cycles : e.call;
          y.host_conv.wino_float_cycles = v;
          y.host_conv.wino2_float_cycles = -1;
          return sim::host_winograd_time(calib_wide(), wtile, y, x, false).cycles;
        },
        elapsed(secs), 0, 50);
  };
  c.wino_float_cycles = transform(s.winograd_kernel, s.winograd);
  if (sim::winograd_tile_of(s.winograd2_kernel) == 2) c.wino2_float_cycles = transform(s.winograd2_kernel, s.winograd2);
  // The depthwise kernel: its three convs, less the dispatch, as bytes read at one rate, bytes
  // written at another and a cost per output row segment (sim/host_dw.h), solved together.
  // Without the strided one (or when the three give a rate or cost <= 0: noise), reads and
  // writes share a rate, from the other two; without those, the long-row conv's bytes alone.
  if (s.dw > 0) {
    struct Row {
      double read, written, segments, cycles;
    };
    auto row = [&](const kernels::ConvParams& d, double secs) {
      return Row{4.0 * d.ih * d.iw * d.ic, 4.0 * d.oh * d.ow * d.oc, sim::host_dw_segments(d) / threads,
                 secs > 0 ? elapsed(secs) : -1};
    };
    const Row l = row(calib_dw(), s.dw), r = row(calib_dw_rows(), s.dw_rows), st = row(calib_dw_strided(), s.dw_strided);
    // Cycles per byte read, per byte written and per row segment on one thread.
    double rd = 0, wr = 0, seg = 0;
    auto det3 = [](const Row& a, const Row& b, const Row& c) {
      return a.read * (b.written * c.segments - b.segments * c.written) -
             a.written * (b.read * c.segments - b.segments * c.read) + a.segments * (b.read * c.written - b.written * c.read);
    };
    const double d = det3(l, r, st);
    if (r.cycles > 0 && st.cycles > 0 && std::abs(d) > 0) {
      // Cramer's rule: each unknown's column replaced by the measured cycles.
      auto with = [](Row x, int col) {
        (col == 0 ? x.read : col == 1 ? x.written : x.segments) = x.cycles;
        return x;
      };
      rd = det3(with(l, 0), with(r, 0), with(st, 0)) / d;
      wr = det3(with(l, 1), with(r, 1), with(st, 1)) / d;
      seg = det3(with(l, 2), with(r, 2), with(st, 2)) / d;
    }
    if (!(rd > 0 && wr > 0 && seg > 0)) {
      rd = wr = seg = 0;
      const double bl = l.read + l.written, br = r.read + r.written, dd = bl * r.segments - br * l.segments;
      if (r.cycles > 0 && dd > 0) {
        const double x = (l.cycles * r.segments - r.cycles * l.segments) / dd, y = (bl * r.cycles - br * l.cycles) / dd;
        if (x > 0 && y > 0) {
          rd = wr = x;
          seg = y;
        }
      }
      if (seg <= 0) rd = wr = bl > 0 ? l.cycles / bl : 0;
    }
    if (rd > 0 && wr > 0) {
      c.dw_read_gbs = t.clock_ghz / rd;  // (cycles/ns) / (cycles/byte) = bytes/ns = GB/s
      c.dw_write_gbs = t.clock_ghz / wr;
      c.dw_row_cycles = seg;
    }
  }
  c.efficiency = c0 / x;
  c.setup_cycles = e.setup;
  c.gather_cycles = e.gather;
  c.strided_step_cycles = e.strided;
  c.call_cycles = e.call;
  c.ok = true;
  return c;
}

ConvCalibration calibrate_conv_kernel(const std::string& kernel, const target::HostMeasurements& m, double dispatch_us) {
  ConvCalibrator cal(kernel, m.threads);
  if (!cal.ok()) return {};
  for (int round = 0; round < kCalibRounds; ++round) cal.round();
  return solve_calibration_rounds(m, dispatch_us, cal.rounds());
}

double measured_conv_efficiency(const std::string& kernel, int threads, double peak_gflops, double dispatch_us) {
  const kernels::ConvKernel* k = kernels::conv_find(kernel);
  if (!k || peak_gflops <= 0) return 0;
  const kernels::ConvParams p = calib_wide();
  const double secs = time_conv_s(k, p, threads);
  if (secs <= 0) return 0;
  const double flops = 2.0 * p.oh * p.ow * p.oc * p.ic * 9;
  // The simulator charges the pool dispatch separately, so it is taken out of the kernel's
  // time here (never below the time at peak).
  const double t = std::max(secs - dispatch_us * 1e-6, flops / (peak_gflops * 1e9));
  return flops / t / 1e9 / peak_gflops;
}

double measured_read_gbs(int threads, std::size_t bytes_per_thread) {
  threads = std::max(1, threads);
  bytes_per_thread = std::max<std::size_t>(bytes_per_thread / 256 * 256, 256);
  using v4 = float __attribute__((vector_size(16)));
  struct Ctx {
    std::vector<std::vector<v4>> bufs;
    std::vector<float> sink;
  } ctx;
  for (int i = 0; i < threads; ++i) ctx.bufs.emplace_back(bytes_per_thread / sizeof(v4), v4{1, 2, 3, 4});
  ctx.sink.assign(threads, 0);
  ThreadPool pool = make_thread_pool(threads);
  auto task = [](void* p, size_t i) {
    auto* x = static_cast<Ctx*>(p);
    const v4* b = x->bufs[i].data();
    const std::size_t n = x->bufs[i].size();
    v4 a0{}, a1{}, a2{}, a3{}, a4{}, a5{}, a6{}, a7{};  // independent sums: loads, not adds, bound it
    for (std::size_t j = 0; j + 8 <= n; j += 8) {
      a0 += b[j]; a1 += b[j + 1]; a2 += b[j + 2]; a3 += b[j + 3];
      a4 += b[j + 4]; a5 += b[j + 5]; a6 += b[j + 6]; a7 += b[j + 7];
    }
    const v4 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    x->sink[i] += s[0] + s[1] + s[2] + s[3];
  };
  // Several passes per timing so an L2-sized pass is not dominated by the dispatch.
  const int passes = static_cast<int>(std::max<std::size_t>(1, (std::size_t{8} << 20) / bytes_per_thread));
  double best = 0;
  const auto start = clock_type::now();
  for (int rep = 0; rep < 200 && (rep < 3 || seconds_since(start) < 0.04); ++rep) {
    const auto t0 = clock_type::now();
    for (int p = 0; p < passes; ++p) pthreadpool_parallelize_1d(pool.get(), task, &ctx, static_cast<size_t>(threads), 0);
    best = std::max(best, double(bytes_per_thread) * threads * passes / seconds_since(t0) / 1e9);
  }
  return best;
}

std::string dominant_conv_kernel(const plan::Program& p, int* rows, int* cols) {
  *rows = *cols = 0;
  std::string best;
  double best_flops = -1;
  std::vector<std::pair<std::string, double>> by_kernel;
  for (const ir::Node& n : p.graph.nodes) {
    if (n.op != ir::Op::Conv || !n.has("kernel") || !n.has("conv_params")) continue;
    kernels::ConvParams cp;
    if (!interp::decode_conv_params(n.ints("conv_params"), &cp)) continue;
    const double f = 2.0 * cp.n * cp.oh * cp.ow * cp.oc * (cp.ic / cp.groups) * cp.kh * cp.kw;
    std::string k = n.s("kernel", "");
    // The calibration times the direct kernel, and a Winograd kernel's GEMMs run at its rate:
    // Winograd FLOPs count for the direct kernel of the same instruction set. Other kernels
    // (depthwise) are not calibrated.
    if (sim::winograd_tile_of(k) > 0) k = calib_igemm_kernel(k);
    if (k.find("igemm") == std::string::npos) continue;
    auto it = std::find_if(by_kernel.begin(), by_kernel.end(), [&](const auto& e) { return e.first == k; });
    if (it == by_kernel.end()) by_kernel.push_back({k, f});
    else it->second += f;
  }
  for (const auto& [k, f] : by_kernel)
    if (f > best_flops) best = k, best_flops = f;
  if (!kernels::igemm::tile_of(best, rows, cols)) *rows = *cols = 0;
  return best;
}

target::HostMeasurements measure_host_rates(const plan::Program& p, int threads, std::string* conv_kernel) {
  target::HostMeasurements m;
  m.threads = threads;
  m.fp32_peak_gflops = measured_fp32_peak_gflops(threads);
  m.dram_gbs = measured_memory_bandwidth_gbs(threads);
  m.launch_us = measured_dispatch_us(threads);
  *conv_kernel = dominant_conv_kernel(p, &m.tile_rows, &m.tile_cols);
  if (conv_kernel->find("igemm") != std::string::npos) {
    const kernels::igemm::Blocking bl = kernels::igemm::blocking_of(*conv_kernel);
    m.l1_weights_bytes = bl.l1_weights;
    m.l2_input_bytes = bl.l2_input;
    m.all_panels_bytes = bl.all_panels_weights;
    const CpuFeatures& cpu = host_cpu();
    const std::size_t t = static_cast<std::size_t>(std::max(1, threads));
    // L2: a quarter of one core's L2 per thread; L3: a quarter of the L3 over all threads (past
    // every L2, as re-read weights of 2+ MiB are); DRAM: twice the L3 over all threads (where
    // the weights of a model larger than the L3 come from on their first touch in a run).
    m.l2_read_gbs = measured_read_gbs(threads, cpu.l2_bytes / 4);
    m.l3_read_gbs = measured_read_gbs(threads, std::max<std::size_t>(cpu.l3_bytes / 4 / t, 2 * cpu.l2_bytes));
    m.dram_read_gbs = measured_read_gbs(threads, std::max<std::size_t>(2 * cpu.l3_bytes, std::size_t{64} << 20) / t);
  }
  return m;
}

void apply_conv_calibration(const ConvCalibration& c, const std::string& kernel, target::HostMeasurements* m) {
  if (c.ok && kernel.find("igemm") != std::string::npos) {
    m->fp32_peak_gflops = std::max(m->fp32_peak_gflops, c.peak_gflops);
    m->conv_efficiency = c.efficiency;
    m->tap_setup_cycles = c.setup_cycles;
    m->merged_setup_cycles = c.merged_setup_cycles;
    m->gather_cycles = c.gather_cycles;
    m->strided_step_cycles = c.strided_step_cycles;
    m->call_cycles = c.call_cycles;
    m->partial_call_cycles = c.partial_call_cycles;
    m->wino_float_cycles = c.wino_float_cycles;
    m->wino2_float_cycles = c.wino2_float_cycles;
    if (c.dram_read_gbs > 0) m->dram_read_gbs = c.dram_read_gbs;
    if (c.dispatch_us >= 0) m->launch_us = c.dispatch_us;
    m->dw_read_gbs = c.dw_read_gbs;
    m->dw_write_gbs = c.dw_write_gbs;
    m->dw_row_cycles = c.dw_row_cycles;
    m->reread_gbs = c.reread_gbs;
    m->act_dram_gbs = c.act_dram_gbs;
    m->reorder_elem_ns = c.reorder_elem_ns;
  } else if (!kernel.empty()) {
    m->conv_efficiency = measured_conv_efficiency(kernel, m->threads, m->fp32_peak_gflops, m->launch_us);
  }
}

target::HostMeasurements measure_host(const plan::Program& p, int threads) {
  std::string kernel;
  target::HostMeasurements m = measure_host_rates(p, threads, &kernel);
  ConvCalibration c;
  if (kernel.find("igemm") != std::string::npos) c = calibrate_conv_kernel(kernel, m, m.launch_us);
  apply_conv_calibration(c, kernel, &m);
  return m;
}

}  // namespace systolic::sim

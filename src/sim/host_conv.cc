// conv_igemm.h's blocking and task schedule replayed for the cost model; see host_conv.h and
// docs/simulator.md.
#include "sim/host_conv.h"

#include <algorithm>
#include <cmath>

namespace systolic::sim {
namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
using kernels::igemm::kMaxMerge;
using kernels::igemm::kMaxPackK;
}  // namespace

int64_t host_tile_rows(int64_t len, int64_t nt, int64_t t) {
  return nt <= 0 ? 0 : (t + 1) * len / nt - t * len / nt;
}

double host_tile_share(int64_t rows, int mr) {
  return double(std::max<int64_t>(std::min<int64_t>(rows, mr), 2)) / std::max(2, mr);
}

HostConvBlocking host_conv_blocking(const kernels::ConvParams& p, int mr, int nr, int threads,
                                    const kernels::igemm::Blocking& bl) {
  HostConvBlocking b;
  mr = std::max(1, mr);
  nr = std::max(1, nr);
  const int64_t icg = p.ic / std::max(1, p.groups), ocg = p.oc / std::max(1, p.groups);
  const int64_t taps = int64_t(p.kh) * p.kw;
  const int64_t ss = p.src_stride ? p.src_stride : p.ic;
  b.direct = taps == 1 && p.sh == 1 && p.sw == 1 && p.pad_t == 0 && p.pad_l == 0 && p.ih == p.oh && p.iw == p.ow;
  b.merge = !b.direct && p.groups == 1 && ss == p.ic && p.dw == 1 && p.kw > 1 && p.kw * icg <= kMaxMerge;
  b.ntaps = b.merge ? p.kh : static_cast<int>(taps);
  const int64_t tap_len = b.merge ? p.kw * icg : icg;
  b.tap_len = tap_len;
  b.m = int64_t(p.n) * p.oh * p.ow;
  b.k = taps * icg;
  b.panels = int64_t(std::max(1, p.groups)) * cdiv(ocg, nr);
  b.pack = b.merge && b.ntaps * tap_len <= kMaxPackK && kernels::igemm::packs_over(b.panels, p.src_u8);
  const kernels::igemm::TaskGrid g =
      kernels::igemm::task_grid(b.m, b.k, icg, b.panels, mr, nr, threads, b.pack, bl);
  b.mc = std::max<int64_t>(1, g.mc);
  b.mblocks = g.mblocks;
  b.pb = g.pb;
  b.pixel_outer = g.pixel_outer;
  const int64_t M = b.m;
  b.kblocks = b.pack ? 1 : kernels::igemm::k_split(b.ntaps, int(tap_len), nr, bl.l1_weights,
                                                       kernels::igemm::splits_k(int(taps), cdiv(b.mc, mr)))
                             .blocks;
  b.strided_rows = !b.direct && !b.pack && p.kw < p.sw;
  // Each block of len rows runs ceil(len / MR) tiles of equal size; the last block is the rest.
  b.tiles = b.tile_equiv = 0;
  for (int64_t blk = 0; blk < b.mblocks; ++blk) {
    const int64_t len = blk + 1 < b.mblocks ? b.mc : M - (b.mblocks - 1) * b.mc, nt = cdiv(len, mr);
    b.tiles += nt;
    for (int64_t t = 0; t < nt; ++t) b.tile_equiv += host_tile_share(host_tile_rows(len, nt, t), mr);
  }
  return b;
}

double host_setup_exposure(int64_t tap_len) {
  const double f = double(kCalibWideTap - tap_len) / (kCalibWideTap - kCalibNarrowTap);
  return std::clamp(f, 0.0, 1.0);
}

HostConvEvents host_conv_events(const HostConvBlocking& b) {
  HostConvEvents e;
  if (b.pack) e.gathers = double(b.tiles) * b.ntaps;
  else if (b.merge) e.merged = double(b.tiles) * b.panels * b.ntaps;
  else if (!b.direct) e.setups = double(b.tiles) * b.panels * b.ntaps * host_setup_exposure(b.tap_len);
  return e;
}

double host_reread_gbs(double weight_bytes, const target::Target& t) {
  const auto& h = t.host_conv;
  const double dram = h.dram_gbs > 0 ? h.dram_gbs : t.offchip_gbs;
  if (h.l2_bytes_per_core > 0 && weight_bytes <= double(h.l2_bytes_per_core) && h.l2_gbs > 0) return h.l2_gbs;
  // The measured re-read of the smallest probe at least this large; past the largest, memory.
  bool measured = false;
  for (std::size_t i = 0; i < target::kRereadProbes.size(); ++i) {
    if (h.reread_gbs[i] <= 0) continue;
    measured = true;
    if (weight_bytes <= double(target::kRereadProbes[i])) return h.reread_gbs[i];
  }
  if (measured) return dram;
  if (h.l3_bytes > 0 && weight_bytes <= double(h.l3_bytes) && h.l3_gbs > 0) return h.l3_gbs;
  return dram;
}

target::Target host_conv_for_kernel(const target::Target& t, const std::string& kernel, double* step_cycles) {
  target::Target k = t;
  int rows = 0, cols = 0;
  auto& h = k.host_conv;
  if (!kernels::igemm::tile_of(kernel, &rows, &cols) || (rows == h.mr && cols == h.nr) || h.mr <= 0 || h.nr <= 0)
    return k;
  // Its K step and its per-call cost (mostly the store and epilogue of the tile's outputs) scale
  // with the tile's area.
  const double area = double(rows) * cols / (double(h.mr) * h.nr);
  *step_cycles *= area;
  h.call_cycles *= area;
  h.partial_call_cycles *= area;
  h.mr = rows;
  h.nr = cols;
  return k;
}

double pool_makespan(const std::vector<double>& costs, int threads) {
  const std::size_t n = costs.size(), T = static_cast<std::size_t>(std::max(1, threads));
  struct Range {
    std::size_t begin, end;
  };
  std::vector<Range> r(T);
  for (std::size_t i = 0, start = 0; i < T; ++i) {
    const std::size_t len = n / T + (i < n % T ? 1 : 0);
    r[i] = {start, start + len};
    start += len;
  }
  std::vector<double> clock(T, 0.0);
  std::vector<bool> idle(T, false);
  for (;;) {
    // The next claim is made by the thread that frees up first.
    std::size_t i = T;
    for (std::size_t j = 0; j < T; ++j)
      if (!idle[j] && (i == T || clock[j] < clock[i])) i = j;
    if (i == T) break;
    if (r[i].begin < r[i].end) {
      clock[i] += costs[r[i].begin++];
      continue;
    }
    bool stole = false;
    for (std::size_t d = 1; d < T && !stole; ++d) {
      Range& v = r[(i + T - d) % T];
      if (v.begin < v.end) {
        clock[i] += costs[--v.end];
        stole = true;
      }
    }
    if (!stole) idle[i] = true;
  }
  return T ? *std::max_element(clock.begin(), clock.end()) : 0;
}

HostConvTime host_conv_time(const kernels::ConvParams& p, const target::Target& t, double step_cycles,
                            bool weights_from_dram, bool residual) {
  HostConvTime out;
  const auto& h = t.host_conv;
  if (!h.enabled) return out;
  const int threads = std::max(1, t.cores);
  const kernels::igemm::Blocking avx2 = kernels::igemm::kBlockingAvx2;
  const HostConvBlocking b = host_conv_blocking(
      p, h.mr, h.nr, threads,
      {h.l1_weights_bytes > 0 ? h.l1_weights_bytes : avx2.l1_weights, h.l2_input_bytes > 0 ? h.l2_input_bytes : avx2.l2_input,
       h.all_panels_bytes});
  const double tap_setup = b.merge && h.merged_setup_cycles >= 0 ? h.merged_setup_cycles
                                                                 : host_setup_exposure(b.tap_len) * h.setup_cycles;
  const double setup = b.direct || b.pack ? 0 : b.ntaps * tap_setup;
  const double gather = b.pack ? b.ntaps * h.gather_cycles : 0;
  const double panel_bytes = double(b.k) * h.nr * 4;
  const double dram = h.dram_gbs > 0 ? h.dram_gbs : t.offchip_gbs;
  // Bandwidth (GB/s) each thread gets for a task's first touch of its panels: the conv's first
  // pass over them, or a later one (another M block over the same panels).
  const double first_gbs = (weights_from_dram ? dram : h.l3_gbs > 0 ? h.l3_gbs : dram) / threads;
  const double again_gbs = host_reread_gbs(panel_bytes * b.panels, t) / threads;
  const int64_t groups = cdiv(b.panels, b.pb), n = b.mblocks * groups;
  // pthreadpool's initial ranges: the task at position q of its thread's range runs about when
  // the other threads run theirs at q, so a panel group's tasks at its smallest position all
  // make the first pass. They read the same lines at the same time, so one copy crosses from
  // where the weights are: each of those k readers gets k threads' share of the bandwidth.
  // (Charged a copy each, layer4.0.conv1 at batch 1, two M blocks over the same panels, came out
  // 7% over in the median of ten recorded checks; with one copy, 2%.)
  const int64_t T = threads, base = n / T, extra = n % T;
  auto position = [&](int64_t j) {
    const int64_t big = extra * (base + 1);  // tasks in the longer ranges
    return j < big ? j % (base + 1) : (j - big) % std::max<int64_t>(1, base);
  };
  std::vector<int64_t> first_pos(static_cast<std::size_t>(groups), INT64_MAX), readers(static_cast<std::size_t>(groups), 0);
  for (int64_t j = 0; j < n; ++j) {
    const std::size_t g = static_cast<std::size_t>(j % groups);
    const int64_t q = position(j);
    if (q < first_pos[g]) first_pos[g] = q, readers[g] = 1;
    else if (q == first_pos[g]) ++readers[g];
  }
  // On the K-split and panel-outer paths a task streams its panels' weights through L1 once, the
  // kernel fetching each K block (or panel) into L2 while the one before it runs (conv_igemm.h).
  // Measured, the first pass's stream is not hidden behind the FMAs: ResNet-50's layer4 at batch
  // 1 (9 tiles a K block) takes its FMAs plus its whole transfer, to within a few %. A later
  // pass's stream, re-read from where the first left it, is: at batch 16 layer4's 1x1 2048 -> 512
  // (14 tasks over the same 4 MB) runs at its FMAs' time, and charged whole it came out 28-38%
  // over. On the other paths a task's panels stay in L2 and only the first tile's FMAs overlap
  // their fetch.
  const bool streamed = !b.pack && (b.kblocks > 1 || !b.pixel_outer);
  const double kstep = double(b.k) * step_cycles;  // one full tile x panel over all of K
  std::vector<double> costs;
  costs.reserve(static_cast<std::size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t blk = j / groups, g = j % groups;
    const int64_t np = std::min(b.pb, b.panels - g * b.pb);
    const int64_t len = blk + 1 < b.mblocks ? b.mc : b.m - (b.mblocks - 1) * b.mc, nt = cdiv(len, h.mr);
    double tiles = 0;  // full-tile equivalents
    for (int64_t i = 0; i < nt; ++i) tiles += host_tile_share(host_tile_rows(len, nt, i), h.mr);
    const double first_tile = host_tile_share(host_tile_rows(len, nt, 0), h.mr) * kstep + setup;
    const bool first = position(j) == first_pos[static_cast<std::size_t>(g)];
    const double gbs = first ? first_gbs * double(readers[static_cast<std::size_t>(g)]) : again_gbs;
    const double transfer = gbs > 0 ? panel_bytes / gbs * t.clock_ghz : 0;  // bytes / (GB/s) = ns
    const double strided_steps = b.strided_rows ? tiles * np * double(b.k) : 0;  // full-tile K steps
    const double calls = h.call_cycles + (b.kblocks - 1) * h.partial_call_cycles;  // per tile x panel
    const double panel = tiles * kstep + nt * (setup + calls);  // one panel's compute
    const double hidden = !streamed ? first_tile : first ? 0 : panel;  // FMAs the transfer overlaps
    const double wait = np * std::max(0.0, transfer - hidden);
    const double c = np * panel + nt * gather + strided_steps * h.strided_step_cycles + wait;
    out.weight_wait += wait;
    out.busy += c;
    costs.push_back(c);
  }
  out.tasks = n;
  out.cycles = pool_makespan(costs, threads);
  // The activations read: the rows and columns of the input the kernel reads (a quarter of it for
  // a 1x1 at stride 2) and the residual it adds. Up to the largest re-read probe a buffer is
  // taken to stay in the caches from the layer that wrote it, and the prefetchers stream it
  // behind the FMAs (whichever is longer counts); past that the rest comes from DRAM and adds.
  // Timed alone, a 1x1 256 -> 64 over a 16 MiB input just read ran as fast as over 1 MiB ones,
  // while 34 and 51 MB inputs added 0.5-1.0 and 1.6-2.1 ms, about their excess over 16 MiB at
  // DRAM's bandwidth. (Charged whole at the re-read bandwidth, the 1x1s after each residual
  // block came out 5-18% over at batch 16, and the residual ones 8-18% under.) That rest
  // streams at the calibrated act_dram_gbs when measured (a 2-core Zen 5 streams it at a third
  // of a plain read pass's bandwidth), else at DRAM's.
  const double rows = p.kh < p.sh ? std::min<int64_t>(p.ih, int64_t(p.oh) * p.kh) : p.ih;
  const double cols = p.kw < p.sw ? std::min<int64_t>(p.iw, int64_t(p.ow) * p.kw) : p.iw;
  const double in_bytes = double(p.n) * rows * cols * p.ic * (p.src_u8 ? 1 : 4);
  const double res_bytes = residual ? double(p.n) * p.oh * p.ow * p.oc * 4 : 0;
  const double cached = double(target::kRereadProbes.back());
  const double far_gbs = h.act_dram_gbs > 0 ? h.act_dram_gbs : dram;
  double near = 0, far = 0;  // cycles
  for (const double bytes : {in_bytes, res_bytes}) {
    const double kept = std::min(bytes, cached), gbs = host_reread_gbs(kept, t);
    if (gbs > 0) near += kept / gbs * t.clock_ghz;
    if (far_gbs > 0) far += (bytes - kept) / far_gbs * t.clock_ghz;
  }
  out.input_stream = std::max(0.0, near - out.cycles) + far;
  out.cycles += out.input_stream;
  return out;
}

}  // namespace systolic::sim

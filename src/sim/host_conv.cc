// conv_igemm.h's blocking replayed for the cost model; see host_conv.h and docs/simulator.md.
#include "sim/host_conv.h"

#include <algorithm>
#include <cmath>

namespace systolic::sim {
namespace {
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// conv_igemm.h's constants: merged rows up to kMaxMerge floats, packed K up to kMaxPackK,
// M blocks sized so their input rows fit kL2Budget.
constexpr int64_t kMaxMerge = 64, kMaxPackK = 512, kL2Budget = 192 * 1024;
}  // namespace

HostConvBlocking host_conv_blocking(const kernels::ConvParams& p, int mr, int nr, int threads) {
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
  b.pack = b.merge && b.ntaps * tap_len <= kMaxPackK;
  b.m = int64_t(p.n) * p.oh * p.ow;
  b.k = taps * icg;
  b.panels = int64_t(std::max(1, p.groups)) * cdiv(ocg, nr);
  const int64_t M = b.m;
  int64_t mc = std::max<int64_t>(mr * 8, kL2Budget / (icg * 4) / mr * mr);
  if (mc >= M) mc = M;
  const int64_t want = threads > 1 ? 4 * int64_t(threads) : 1;
  if (cdiv(M, mc) * b.panels < want) {
    const int64_t mb = std::max<int64_t>(1, cdiv(want, b.panels));
    mc = std::max<int64_t>(mr, cdiv(cdiv(M, mb), mr) * mr);
  }
  mc = std::min(M, cdiv(cdiv(M, cdiv(M, mc)), mr) * mr);
  if (b.pack) mc = std::min(M, std::max<int64_t>(mr, cdiv(cdiv(M, want), mr) * mr));
  b.mc = std::max<int64_t>(1, mc);
  b.mblocks = cdiv(M, b.mc);
  // Each block of len rows runs ceil(len / MR) tiles; the last block is the remainder.
  const int64_t last = M - (b.mblocks - 1) * b.mc;
  b.tiles = (b.mblocks - 1) * cdiv(b.mc, mr) + cdiv(last, mr);
  return b;
}

double host_setup_exposure(int64_t tap_len) {
  const double f = double(kCalibWideTap - tap_len) / (kCalibWideTap - kCalibNarrowTap);
  return std::clamp(f, 0.0, 1.0);
}

HostConvEvents host_conv_events(const HostConvBlocking& b) {
  HostConvEvents e;
  if (b.pack) e.gathers = double(b.tiles) * b.ntaps;
  else if (!b.direct) e.setups = double(b.tiles) * b.panels * b.ntaps * host_setup_exposure(b.tap_len);
  return e;
}

double host_conv_reread_bytes(const HostConvBlocking& b, int nr) {
  if (b.pack || b.mblocks <= 1) return 0;
  return double(b.mblocks - 1) * double(b.panels) * b.k * nr * 4;
}

double host_reread_gbs(double weight_bytes, const target::Target& t) {
  const auto& h = t.host_conv;
  if (h.l2_bytes_per_core > 0 && weight_bytes <= double(h.l2_bytes_per_core) && h.l2_gbs > 0) return h.l2_gbs;
  if (h.l3_bytes > 0 && weight_bytes <= double(h.l3_bytes) && h.l3_gbs > 0) return h.l3_gbs;
  return t.offchip_gbs;
}

double host_conv_extra_cycles(const kernels::ConvParams& p, const target::Target& t, bool weights_from_dram) {
  const auto& h = t.host_conv;
  if (!h.enabled) return 0;
  const HostConvBlocking b = host_conv_blocking(p, h.mr, h.nr, t.cores);
  const HostConvEvents e = host_conv_events(b);
  double cyc = (e.setups * h.setup_cycles + e.gathers * h.gather_cycles) / std::max(1, t.cores);
  const double bytes = host_conv_reread_bytes(b, h.nr);
  if (bytes <= 0) return cyc;
  const double w = double(b.panels) * b.k * h.nr * 4;
  const int64_t concurrent = std::min<int64_t>(b.mblocks, std::max(1, t.cores));
  const double with_first = double(concurrent - 1) * w, later = bytes - with_first;
  const double first_gbs = weights_from_dram ? t.offchip_gbs : host_reread_gbs(w, t);
  const double later_gbs = host_reread_gbs(w, t);
  if (first_gbs > 0) cyc += with_first / first_gbs * t.clock_ghz;  // bytes / (GB/s) = ns
  if (later_gbs > 0) cyc += later / later_gbs * t.clock_ghz;
  return cyc;
}

}  // namespace systolic::sim

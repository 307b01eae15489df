// Every element-wise kernel in eltwise.inc against eltwise_ref: all ops, activations and
// broadcasts on awkward sizes, in place, tails left untouched, exp-based activation accuracy.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/eltwise/eltwise.h"

namespace systolic::kernels {
namespace {

const int64_t kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 1000, 100003};
constexpr int kGuard = 19;          // elements after y that must stay untouched
constexpr float kSentinel = 1234.5f;

struct Bcast {
  int mode;
  int64_t channels, inner;
};
const Bcast kBcasts[] = {{0, 1, 1}, {1, 1, 1}, {2, 3, 1},  {2, 17, 1}, {2, 1, 1},
                         {3, 3, 5}, {3, 4, 1}, {3, 2, 37}, {4, 3, 5}, {4, 17, 1}, {4, 1, 7}, {4, 16, 49}};

const Epilogue kActs[] = {{Act::none},         {Act::relu},
                          {Act::clip, -0.5f, 0.7f}, {Act::leaky_relu, 0.1f},
                          {Act::sigmoid},      {Act::hard_sigmoid, 0.2f, 0.5f},
                          {Act::hard_swish},   {Act::tanh},
                          {Act::gelu},         {Act::gelu, 1.f},
                          {Act::silu}};

// Exact for ops and piecewise-linear activations; exp-based ones within 1e-6 relative (absolute
// below FLT_MIN, where the reference itself is denormal); hard_* allow fma contraction near 0.
bool close(Act act, float got, float want) {
  if (got == want || (std::isnan(got) && std::isnan(want))) return true;
  switch (act) {
    case Act::sigmoid:
    case Act::tanh: return std::fabs(got - want) <= 1e-6f * std::fabs(want) + FLT_MIN;
    // x times the sigmoid's approximation, rounded once more.
    case Act::silu: return std::fabs(got - want) <= 2e-6f * std::fabs(want) + FLT_MIN;
    // erf's approximation is within 1.5e-7 absolute: gelu within |x|/2 of that (|x| < 10 here).
    case Act::gelu: return std::fabs(got - want) <= 1e-6f * std::fabs(want) + 1e-6f;
    case Act::hard_sigmoid:
    case Act::hard_swish: return std::fabs(got - want) <= 1e-6f * (1.f + std::fabs(want));
    default: return false;
  }
}

const char* act_name(Act a) {
  static const char* kNames[] = {"none", "relu", "clip", "leaky_relu", "sigmoid", "hard_sigmoid", "hard_swish", "tanh", "gelu", "silu"};
  return kNames[int(a)];
}

// Runs every kernel the CPU supports on p and compares with the reference; returns kernels run.
int check(const EltwiseParams& p, const std::vector<float>& a, const std::vector<float>& b,
          pthreadpool_t pool, bool in_place) {
  static std::set<std::string> skipped;
  std::vector<float> want(p.n);
  eltwise_ref(p, a.data(), b.data(), want.data());
  std::size_t count;
  const EltwiseKernel* all = eltwise_kernels(&count);
  int ran = 0;
  for (std::size_t k = 0; k < count; ++k) {
    std::string why;
    if (!all[k].accepts(p, host_cpu(), &why)) {
      if (skipped.insert(all[k].name).second) std::printf("note: %s skipped: %s\n", all[k].name, why.c_str());
      continue;
    }
    ++ran;
    std::vector<float> y(p.n + kGuard, kSentinel);
    const float* src = a.data();
    if (in_place) std::copy(a.begin(), a.end(), y.begin()), src = y.data();
    all[k].run(p, src, b.data(), y.data(), pool);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < p.n; ++i)
      if (!close(p.act.act, y[i], want[i])) bad++, first = first < 0 ? i : first;
    int guard = 0;
    for (int i = 0; i < kGuard; ++i) guard += y[p.n + i] != kSentinel;
    EXPECT_EQ(bad, 0) << all[k].name << " n=" << p.n << " binary=" << p.binary << " op=" << int(p.op)
                      << " b_mode=" << p.b_mode << " ch=" << p.channels << " inner=" << p.inner
                      << " act=" << act_name(p.act.act) << " in_place=" << in_place << " first bad " << first
                      << ": got " << (first >= 0 ? y[first] : 0.f) << " want " << (first >= 0 ? want[first] : 0.f);
    EXPECT_EQ(guard, 0) << all[k].name << " wrote past n=" << p.n;
  }
  return ran;
}

std::vector<float> random(int64_t n, float lo, float hi, bool signed_b, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = signed_b && (rng() & 1) ? -u(rng) : u(rng);
  return v;
}

TEST(EltwiseKernels, AllOpsBroadcastsActivationsSizes) {
  std::mt19937 rng(11);
  ThreadPool pool = make_thread_pool(2);
  int runs = 0;
  for (int64_t n : kSizes) {
    const std::vector<float> a = random(n, -4.f, 4.f, false, rng);
    for (const Epilogue& act : kActs) {
      EltwiseParams p;
      p.n = n, p.act = act;
      runs += check(p, a, {}, pool.get(), false);
      for (int op = 0; op <= int(BinaryOp::prelu); ++op)
        for (const Bcast& bc : kBcasts) {
          p.binary = true, p.op = BinaryOp(op);
          p.b_mode = bc.mode, p.channels = bc.channels, p.inner = bc.inner;
          // Mode 4: one row of channels per image (the last one may be partial).
          const int64_t nb = bc.mode == 0   ? n
                             : bc.mode == 1 ? 1
                             : bc.mode == 4 ? (n + bc.inner * bc.channels - 1) / (bc.inner * bc.channels) * bc.channels
                                            : bc.channels;
          runs += check(p, a, random(nb, 0.25f, 2.f, true, rng), pool.get(), false);
        }
    }
  }
  EXPECT_GT(runs, 0);
}

TEST(EltwiseKernels, InPlace) {
  std::mt19937 rng(5);
  ThreadPool pool = make_thread_pool(2);
  for (int64_t n : {int64_t(17), int64_t(1000), int64_t(100003)})
    for (const Epilogue& act : kActs) {
      const std::vector<float> a = random(n, -4.f, 4.f, false, rng);
      EltwiseParams p;
      p.n = n, p.act = act;
      check(p, a, {}, pool.get(), true);
      p.binary = true, p.op = BinaryOp::add, p.b_mode = 2, p.channels = 64;
      check(p, a, random(64, 0.25f, 2.f, true, rng), pool.get(), true);
      p.op = BinaryOp::mul, p.b_mode = 0;
      check(p, a, random(n, 0.25f, 2.f, true, rng), pool.get(), true);
    }
}

// The vector exp approximation behind sigmoid and tanh, over the whole float range that matters:
// max relative error vs std::exp/std::tanh must stay <= 1e-6.
TEST(EltwiseKernels, SigmoidTanhAccuracy) {
  std::vector<float> a;
  for (int i = -2000000; i <= 2000000; ++i) a.push_back(i * 5e-5f);   // [-100, 100]
  for (float x = 1e-30f; x < 1.f; x *= 1.07f) a.push_back(x), a.push_back(-x);
  for (float x : {0.f, 0.625f, 9.f, 88.7f, 89.f, 104.f, 200.f, INFINITY}) a.push_back(x), a.push_back(-x);
  for (Act act : {Act::sigmoid, Act::tanh}) {
    EltwiseParams p;
    p.n = int64_t(a.size()), p.act.act = act;
    std::vector<float> want(a.size()), y(a.size());
    eltwise_ref(p, a.data(), nullptr, want.data());
    std::size_t count;
    const EltwiseKernel* all = eltwise_kernels(&count);
    for (std::size_t k = 0; k < count; ++k) {
      if (!all[k].accepts(p, host_cpu(), nullptr)) continue;
      all[k].run(p, a.data(), nullptr, y.data(), nullptr);
      double worst = 0;
      float at = 0;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::fabs(want[i]) < FLT_MIN) {
          EXPECT_LE(std::fabs(y[i]), FLT_MIN) << all[k].name << " " << act_name(act) << " x=" << a[i];
          continue;
        }
        const double rel = std::fabs(double(y[i]) - want[i]) / std::fabs(want[i]);
        if (!(rel <= worst)) worst = rel, at = a[i];
      }
      std::printf("%s %s: max relative error %.3g at x=%g\n", all[k].name, act_name(act), worst, at);
      EXPECT_LE(worst, 1e-6) << all[k].name << " " << act_name(act) << " at x=" << at;
    }
  }
}

// The bf16 rounding after the activation (RoundBf16 is the unary form with none): bit-exact,
// alone on special values too (ties, NaN payloads, infinities, overflow, denormals, signed
// zeros), and after the exact activations; one bf16 step for the approximated ones, whose float results may straddle
// a rounding boundary.
TEST(EltwiseKernels, RoundBf16) {
  std::mt19937 rng(3);
  ThreadPool pool = make_thread_pool(2);
  const std::vector<float> plain = random(100003, -4.f, 4.f, false, rng);
  std::vector<float> specials = plain;  // for RoundBf16 itself (activations of NaN are not the point here)
  const uint32_t special[] = {0x3F808000u, 0x3F818000u, 0xBF818000u, 0x7FC00000u, 0x7F800001u, 0xFF800001u,
                              0x7FBFFFFFu, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu, 0x00008000u, 0x00018000u,
                              0x80000000u, 0x00000000u, 0x3F80FFFFu, 0x3F817FFFu};
  for (std::size_t i = 0; i < sizeof special / sizeof *special; ++i) std::memcpy(&specials[i * 37], &special[i], 4);
  for (const Epilogue& act : kActs) {
    const std::vector<float>& a = act.act == Act::none ? specials : plain;
    Epilogue e = act;
    e.round_bf16 = true;
    std::vector<float> want(a.size());
    EltwiseParams p;
    p.n = int64_t(a.size()), p.act = e;
    eltwise_ref(p, a.data(), nullptr, want.data());
    std::size_t count;
    const EltwiseKernel* all = eltwise_kernels(&count);
    for (std::size_t k = 0; k < count; ++k) {
      if (!all[k].accepts(p, host_cpu(), nullptr)) continue;
      for (bool in_place : {false, true}) {
        std::vector<float> y(a.size(), kSentinel);
        const float* src = a.data();
        if (in_place) y = a, src = y.data();
        all[k].run(p, src, nullptr, y.data(), pool.get());
        int64_t bad = 0, first = -1;
        for (std::size_t i = 0; i < a.size(); ++i) {
          uint32_t gb, wb;
          std::memcpy(&gb, &y[i], 4);
          std::memcpy(&wb, &want[i], 4);
          const bool exact = gb == wb || (std::isnan(y[i]) && std::isnan(want[i]) && (gb >> 31) == (wb >> 31));
          const bool near = std::fabs(y[i] - want[i]) <= std::ldexp(std::fabs(want[i]), -7) + FLT_MIN;
          const bool approx = act.act == Act::sigmoid || act.act == Act::tanh || act.act == Act::hard_sigmoid ||
                              act.act == Act::hard_swish || act.act == Act::gelu || act.act == Act::silu;
          if (!(exact || (approx && near)) || (gb & 0xFFFF)) bad++, first = first < 0 ? int64_t(i) : first;
        }
        EXPECT_EQ(bad, 0) << all[k].name << " act=" << act_name(act.act) << " in_place=" << in_place
                          << " first bad at " << first << ": got " << (first >= 0 ? y[first] : 0.f) << " want "
                          << (first >= 0 ? want[first] : 0.f);
      }
    }
  }
}

TEST(EltwiseKernels, Dispatch) {
  EltwiseParams p;
  p.n = 100, p.binary = true, p.op = BinaryOp::add;
  const EltwiseKernel* k = eltwise_select(p, host_cpu());
  ASSERT_NE(k, nullptr);
  if (host_cpu().has_avx512()) {
    EXPECT_STREQ(k->name, "eltwise_f32_avx512");
  } else if (host_cpu().has_avx2_fma()) {
    EXPECT_STREQ(k->name, "eltwise_f32_avx2");
  }
  EXPECT_STREQ(eltwise_select(p, cap_isa(host_cpu(), "ref"))->name, "eltwise_f32_ref");
  ASSERT_NE(eltwise_find("eltwise_f32_avx2"), nullptr);
  EXPECT_EQ(eltwise_find("nope"), nullptr);
  p.b_mode = 7;
  std::string log;
  EXPECT_EQ(eltwise_select(p, host_cpu(), &log), nullptr);
  EXPECT_NE(log.find("eltwise_f32_ref rejected: b_mode not in 0..4"), std::string::npos) << log;
}

}  // namespace
}  // namespace systolic::kernels

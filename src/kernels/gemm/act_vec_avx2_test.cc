// The AVX2 vector epilogue's activations equal apply_act's (act_vec.h).
#include "base/cpu.h"
#include "kernels/gemm/act_vec.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {
namespace {

TEST(ActVec, Avx2MatchesScalar) {
  if (!host_cpu().has_avx2_fma()) GTEST_SKIP() << "no avx2+fma here";
  for (const Epilogue& e : {Epilogue{Act::relu}, Epilogue{Act::clip, 0.f, 6.f}, Epilogue{Act::leaky_relu, 0.1f},
                            Epilogue{Act::hard_swish}})
    testing::expect_act_vec_matches_scalar<VecAvx2>(e);
  testing::expect_act_vec_matches_scalar<VecAvx2>(Epilogue{Act::silu}, 1e-6);  // vector exp
}

}  // namespace
}  // namespace systolic::kernels

// choose_micro_batch: the whole batch when it fits the caches, else the largest divisor of at
// least 2 that does, else the whole batch.
#include <gtest/gtest.h>

#include "plan/program.h"

namespace systolic::plan {
namespace {

TEST(MicroBatch, LargestDivisorOfAtLeastTwoThatFitsTheCaches) {
  CpuFeatures cpu;
  cpu.cores = 2;
  cpu.l2_bytes = 1 << 20;
  cpu.l3_bytes = 32 << 20;  // budget: 2 MiB + 0.6 x 32 MiB = 21.2 MiB
  const int64_t MiB = 1 << 20;
  EXPECT_EQ(choose_micro_batch(16, 9 * MiB, cpu), 2);   // MobileNetV2 fp32
  EXPECT_EQ(choose_micro_batch(16, 2 * MiB, cpu), 8);   // int8: a quarter of the bytes
  EXPECT_EQ(choose_micro_batch(16, 1 * MiB, cpu), 16);  // the whole batch fits
  EXPECT_EQ(choose_micro_batch(16, 15 * MiB, cpu), 16); // only single items would: kept whole
  EXPECT_EQ(choose_micro_batch(6, 5 * MiB, cpu), 3);    // divisors, not powers of two
  EXPECT_EQ(choose_micro_batch(7, 5 * MiB, cpu), 7);    // a prime batch has none
  EXPECT_EQ(choose_micro_batch(1, 50 * MiB, cpu), 1);
  cpu.l3_bytes = 24 << 20;                              // 2 MiB + 0.6 x 24 MiB = 16.4 MiB
  EXPECT_EQ(choose_micro_batch(16, 2 * MiB, cpu), 8);
  cpu.cores = 8;                                        // 8 MiB + 14.4 MiB: the whole batch fits
  EXPECT_EQ(choose_micro_batch(16, 1 * MiB, cpu), 16);
  // A VM's view of its host's L3 counts at most 32 MiB a core it sees: 2 MiB + 0.6 x 64 MiB.
  cpu.cores = 2;
  cpu.l3_bytes = 480 << 20;
  EXPECT_EQ(choose_micro_batch(16, 9 * MiB, cpu), 4);   // fp32 or bf16 ResNet-50
  EXPECT_EQ(choose_micro_batch(16, 2 * MiB, cpu), 16);  // int8
}

}  // namespace
}  // namespace systolic::plan

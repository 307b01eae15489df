// The parallel row concatenation against the reference, for equality: one and many inputs, empty
// inputs, rows of a few bytes to many kilobytes, with and without a pool; the reference against
// a channel Concat written out by hand; and both against a Slice (one strided input).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/threadpool.h"
#include "kernels/reorder/concat.h"

namespace systolic::kernels {
namespace {

TEST(ConcatRows, ReferenceJoinsRowsSideBySide) {
  // Two NHWC pixels: 2 channels from a, 1 from b.
  const float a[4] = {1, 2, 3, 4}, b[2] = {10, 20};
  const void* srcs[2] = {a, b};
  const int64_t bytes[2] = {2 * sizeof(float), sizeof(float)};
  float y[6] = {};
  concat_rows_ref(srcs, bytes, nullptr, 2, y, 2);
  const float want[6] = {1, 2, 10, 3, 4, 20};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]);
}

TEST(ConcatRows, ParallelEqualsReference) {
  ThreadPool pool = make_thread_pool(2);
  const std::vector<std::vector<int64_t>> cases = {
      {4}, {12, 4}, {256, 128}, {1024, 128, 0, 128}, {3, 5, 7}, {0, 0, 8}, {40000, 4}};
  for (int64_t rows : {int64_t(1), int64_t(7), int64_t(3136), int64_t(20000)})
    for (const auto& bytes : cases) {
      int64_t total = 0;
      for (int64_t b : bytes) total += b;
      if (rows * total > (int64_t(1) << 23)) continue;  // 8 MiB of output is plenty
      std::vector<std::vector<uint8_t>> in(bytes.size());
      std::vector<const void*> srcs;
      int64_t row = 0;
      for (std::size_t k = 0; k < bytes.size(); ++k) {
        in[k].resize(std::size_t(rows * bytes[k]));
        for (std::size_t i = 0; i < in[k].size(); ++i) in[k][i] = uint8_t(i * 31 + k * 7 + 1);
        srcs.push_back(bytes[k] ? in[k].data() : nullptr);
        row += bytes[k];
      }
      std::vector<uint8_t> want(std::size_t(rows * row), 0), got(want.size(), 0xee), got1(want.size(), 0xee);
      concat_rows_ref(srcs.data(), bytes.data(), nullptr, int(bytes.size()), want.data(), rows);
      concat_rows(srcs.data(), bytes.data(), nullptr, int(bytes.size()), got.data(), rows, pool.get());
      concat_rows(srcs.data(), bytes.data(), nullptr, int(bytes.size()), got1.data(), rows, nullptr);
      EXPECT_EQ(got, want) << rows << " rows, " << bytes.size() << " inputs";
      EXPECT_EQ(got1, want) << rows << " rows, " << bytes.size() << " inputs, no pool";
    }
}

// One strided input is a Slice: channels [3, 3 + len) of rows of 10 (bytes here).
TEST(ConcatRows, StridedInputIsASlice) {
  ThreadPool pool = make_thread_pool(2);
  for (int64_t rows : {int64_t(1), int64_t(5), int64_t(20000)})
    for (int64_t len : {int64_t(1), int64_t(4), int64_t(7)}) {
      std::vector<uint8_t> x(std::size_t(rows * 10));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = uint8_t(i * 13 + 5);
      std::vector<uint8_t> want(std::size_t(rows * len));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < len; ++c) want[std::size_t(r * len + c)] = x[std::size_t(r * 10 + 3 + c)];
      const void* src = x.data() + 3;
      const int64_t bytes = len, stride = 10;
      std::vector<uint8_t> ref(want.size(), 0), got(want.size(), 0);
      concat_rows_ref(&src, &bytes, &stride, 1, ref.data(), rows);
      concat_rows(&src, &bytes, &stride, 1, got.data(), rows, pool.get());
      EXPECT_EQ(ref, want) << rows << " " << len;
      EXPECT_EQ(got, want) << rows << " " << len;
    }
}

}  // namespace
}  // namespace systolic::kernels

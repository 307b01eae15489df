// Agreement of two plans' logits: sums in double, top-k by partial sort of indices.
#include "tools/agreement.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace systolic::tools {
namespace {

// Indices of the k largest values (ties: the lower index first).
std::vector<int64_t> top_k(const float* v, int64_t n, int64_t k) {
  std::vector<int64_t> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return v[a] > v[b] || (v[a] == v[b] && a < b); });
  idx.resize(static_cast<std::size_t>(k));
  return idx;
}

}  // namespace

void Agreement::add(const float* ref, const float* got, int64_t rows, int64_t cols) {
  if (cols <= 0) return;
  const int64_t k = std::min<int64_t>(5, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = ref + r * cols;
    const float* b = got + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      dot_ += double(a[c]) * b[c];
      ref2_ += double(a[c]) * a[c];
      got2_ += double(b[c]) * b[c];
      const double e = std::fabs(double(a[c]) - b[c]);
      if (!(e <= max_abs_)) max_abs_ = e;  // NaN sticks
    }
    const auto ta = top_k(a, cols, k), tb = top_k(b, cols, k);
    top1_ += ta[0] == tb[0];
    int64_t common = 0;
    for (int64_t i : tb) common += std::find(ta.begin(), ta.end(), i) != ta.end();
    top5_ += double(common) / k;
    ++rows_;
  }
}

double Agreement::cosine() const {
  if (ref2_ == 0 && got2_ == 0) return 1;
  if (ref2_ == 0 || got2_ == 0) return 0;
  return dot_ / (std::sqrt(ref2_) * std::sqrt(got2_));
}

}  // namespace systolic::tools

// How closely one model's outputs follow another's (a low-precision plan against fp32): cosine
// similarity over all values, the largest absolute error, and top-1 / top-5 agreement per row.
#pragma once
#include <cstdint>

namespace systolic::tools {

// Accumulates rows of logits: `ref` the reference's (fp32), `got` the compared plan's.
class Agreement {
 public:
  // `rows` rows of `cols` values each, in the same layout in both.
  void add(const float* ref, const float* got, int64_t rows, int64_t cols);

  // Cosine similarity of all values added, as one vector each (1 when both are all zeros, 0
  // when only one is).
  double cosine() const;
  double max_abs_error() const { return max_abs_; }
  // Fraction of rows whose argmax (the first, on ties) is the reference's.
  double top1() const { return rows_ ? double(top1_) / rows_ : 0; }
  // Mean over rows of |top5(got) and top5(ref) in common| / 5 (k = cols when a row has fewer than 5).
  double top5() const { return rows_ ? top5_ / rows_ : 0; }
  int64_t rows() const { return rows_; }

 private:
  double dot_ = 0, ref2_ = 0, got2_ = 0, max_abs_ = 0, top5_ = 0;
  int64_t rows_ = 0, top1_ = 0;
};

}  // namespace systolic::tools

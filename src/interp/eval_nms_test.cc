// NonMaxSuppression: the indexed selection (kept boxes found by their top edge) equals the
// plain greedy one that checks every kept box, on crowded random boxes of either encoding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "interp/eval.h"

namespace systolic::interp {
namespace {

// ONNX's greedy selection, every kept box checked in turn: the definition.
std::vector<int64_t> plain_nms(const std::vector<float>& boxes, const std::vector<float>& scores, int64_t nb,
                               int64_t nc, int64_t max_out, float iou, float score_th, bool center) {
  std::vector<int64_t> sel;
  auto corners = [&](int64_t i, double* c) {
    const float* v = &boxes[i * 4];
    if (center) {
      c[0] = double(v[1]) - double(v[3]) / 2, c[1] = double(v[0]) - double(v[2]) / 2;
      c[2] = double(v[1]) + double(v[3]) / 2, c[3] = double(v[0]) + double(v[2]) / 2;
    } else {
      c[0] = std::min<double>(v[0], v[2]), c[1] = std::min<double>(v[1], v[3]);
      c[2] = std::max<double>(v[0], v[2]), c[3] = std::max<double>(v[1], v[3]);
    }
  };
  for (int64_t c = 0; c < nc; ++c) {
    std::vector<int64_t> cand;
    for (int64_t i = 0; i < nb; ++i)
      if (scores[c * nb + i] > score_th) cand.push_back(i);
    std::stable_sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) { return scores[c * nb + p] > scores[c * nb + q]; });
    std::vector<int64_t> kept;
    for (int64_t i : cand) {
      if (static_cast<int64_t>(kept.size()) >= max_out) break;
      double p[4], q[4];
      corners(i, p);
      const double ap = (p[2] - p[0]) * (p[3] - p[1]);
      bool drop = false;
      for (int64_t j : kept) {
        corners(j, q);
        const double aq = (q[2] - q[0]) * (q[3] - q[1]);
        if (ap <= 0 || aq <= 0) continue;
        const double ih = std::min(p[2], q[2]) - std::max(p[0], q[0]);
        const double iw = std::min(p[3], q[3]) - std::max(p[1], q[1]);
        if (ih <= 0 || iw <= 0) continue;
        const double inter = ih * iw;
        if (inter / (ap + aq - inter) > iou) {
          drop = true;
          break;
        }
      }
      if (drop) continue;
      kept.push_back(i);
      sel.insert(sel.end(), {0, c, i});
    }
  }
  return sel;
}

TEST(NonMaxSuppression, IndexedSelectionEqualsThePlainOne) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> pos(0.f, 100.f), size(0.f, 30.f), u(0.f, 1.f);
  for (int trial = 0; trial < 24; ++trial) {
    const bool center = trial % 2;
    const int64_t nb = 50 + trial * 40, nc = 1 + trial % 3;
    std::vector<float> boxes(nb * 4), scores(nc * nb);
    for (int64_t i = 0; i < nb; ++i) {
      const float y = pos(rng), x = pos(rng), h = trial % 5 == 0 ? 0.f : size(rng), w = size(rng);
      if (center) boxes[i * 4 + 0] = x, boxes[i * 4 + 1] = y, boxes[i * 4 + 2] = w, boxes[i * 4 + 3] = h;
      else if (i % 2) boxes[i * 4 + 0] = y, boxes[i * 4 + 1] = x, boxes[i * 4 + 2] = y + h, boxes[i * 4 + 3] = x + w;
      else boxes[i * 4 + 0] = y + h, boxes[i * 4 + 1] = x + w, boxes[i * 4 + 2] = y, boxes[i * 4 + 3] = x;  // flipped corners
    }
    if (trial % 7 == 3) boxes[5] = std::nanf("");  // a box with a NaN edge
    for (float& s : scores) s = std::floor(u(rng) * 20.f) / 20.f;  // many equal scores
    const int64_t max_out = trial % 4 == 1 ? 7 : 1000;
    const float iou = 0.2f + 0.1f * float(trial % 6), score_th = trial % 3 == 2 ? 0.3f : 0.f;
    ir::Node n;
    n.op = ir::Op::NonMaxSuppression;
    n.name = "nms";
    n.set_i("center_point_box", center);
    int64_t mo = max_out;
    float io = iou, st = score_th;
    std::vector<TensorRef> in = {{ir::DType::f32, {1, nb, 4}, boxes.data()},
                                 {ir::DType::f32, {1, nc, nb}, scores.data()},
                                 {ir::DType::i64, {1}, &mo},
                                 {ir::DType::f32, {1}, &io},
                                 {ir::DType::f32, {1}, &st}};
    std::vector<int64_t> got;
    ASSERT_TRUE(nms_select(n, in, &got).ok());
    const std::vector<int64_t> want = plain_nms(boxes, scores, nb, nc, max_out, iou, score_th, center);
    EXPECT_EQ(got, want) << "trial " << trial;
    EXPECT_GT(want.size(), 3u);
    if (trial % 5 != 0) {  // boxes with area: some were suppressed (those without overlap nothing)
      EXPECT_LT(want.size() / 3, static_cast<std::size_t>(nb * nc)) << "trial " << trial;
    }
  }
}

TEST(NonMaxSuppression, NoBoxesSelectNothing) {
  ir::Node n;
  n.op = ir::Op::NonMaxSuppression;
  n.name = "nms";
  int64_t mo = 10;
  for (ir::Shape scores : {ir::Shape{1, 3, 0}, ir::Shape{1, 0, 0}}) {
    std::vector<TensorRef> in = {{ir::DType::f32, {1, 0, 4}, nullptr}, {ir::DType::f32, scores, nullptr}, {ir::DType::i64, {1}, &mo}};
    std::vector<int64_t> got = {1, 2, 3};
    ASSERT_TRUE(nms_select(n, in, &got).ok());
    EXPECT_TRUE(got.empty());
  }
}

}  // namespace
}  // namespace systolic::interp

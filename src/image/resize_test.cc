// resize_center_crop against a direct floating-point reading of the definition (torchvision's
// sizes and crop offsets, a triangle filter widened by the scale factor, no fixed point and no
// rounding between the passes): within 1 level everywhere, zeros where the crop pads.
#include <gtest/gtest.h>

#include <cmath>

#include "image/image.h"
#include "image/test_images.h"

namespace systolic::image {
namespace {

using testing::make_image;
using testing::Pattern;

// Weights of output sample o of an in -> out resampling, over all inputs (zero outside the
// filter's support), normalised to sum 1. Input sample j sits at j + 0.5, output o maps to
// (o + 0.5) * in / out.
std::vector<double> weights(int in, int out, int o) {
  const double scale = double(in) / out, widen = std::max(scale, 1.0);
  const double center = (o + 0.5) * scale;
  std::vector<double> w(in);
  double sum = 0;
  for (int j = 0; j < in; ++j) {
    w[j] = std::max(0.0, 1.0 - std::fabs((j + 0.5 - center) / widen));
    sum += w[j];
  }
  for (double& v : w) v /= sum;
  return w;
}

// Indices of the nonzero weights: [first, last).
std::pair<int, int> support(const std::vector<double>& w) {
  int first = 0, last = static_cast<int>(w.size());
  while (first < last && w[first] == 0) ++first;
  while (last > first && w[last - 1] == 0) --last;
  return {first, last};
}

// The resized image in double (only the columns the crop keeps), then the crop, padded with
// zeros where it leaves the image.
std::vector<uint8_t> reference(const Image& src, const ResizeCrop& spec) {
  const int w = src.width, h = src.height;
  const bool wide = w > h;
  const int s = wide ? h : w, l = wide ? w : h;
  const int new_long = static_cast<int>(double(spec.resize_short) * l / s);
  const int ow = wide ? new_long : spec.resize_short, oh = wide ? spec.resize_short : new_long;
  // Python's round() of (size - crop) / 2.0 rounds halves to even, as nearbyint does by default.
  auto offset = [](int size, int crop) {
    return crop > size ? -((crop - size) / 2) : static_cast<int>(std::nearbyint((size - crop) / 2.0));
  };
  const int ox = offset(ow, spec.crop_w), oy = offset(oh, spec.crop_h);
  const int cw = spec.crop_w;
  std::vector<double> horizontal(std::size_t(h) * cw * 3);  // resized columns ox .. ox+cw-1
  for (int cx = 0; cx < cw; ++cx) {
    const int x = cx + ox;
    if (x < 0 || x >= ow) continue;
    const std::vector<double> k = weights(w, ow, x);
    const auto [j0, j1] = support(k);
    for (int y = 0; y < h; ++y)
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (int j = j0; j < j1; ++j) v += k[j] * src.rgb[(std::size_t(y) * w + j) * 3 + c];
        horizontal[(std::size_t(y) * cw + cx) * 3 + c] = v;
      }
  }
  std::vector<uint8_t> out(std::size_t(spec.crop_h) * cw * 3, 0);
  for (int cy = 0; cy < spec.crop_h; ++cy) {
    const int y = cy + oy;
    if (y < 0 || y >= oh) continue;
    const std::vector<double> k = weights(h, oh, y);
    const auto [j0, j1] = support(k);
    for (int cx = 0; cx < cw; ++cx) {
      const int x = cx + ox;
      if (x < 0 || x >= ow) continue;
      for (int c = 0; c < 3; ++c) {
        double v = 0;
        for (int j = j0; j < j1; ++j) v += k[j] * horizontal[(std::size_t(j) * cw + cx) * 3 + c];
        out[(std::size_t(cy) * cw + cx) * 3 + c] = static_cast<uint8_t>(std::clamp(std::floor(v + 0.5), 0.0, 255.0));
      }
    }
  }
  return out;
}

// Largest absolute difference between resize_center_crop and the reference.
int max_error(const Image& src, const ResizeCrop& spec, Scratch* scratch) {
  std::vector<uint8_t> got(std::size_t(spec.crop_h) * spec.crop_w * 3, 77);
  Status st = resize_center_crop(src, spec, got.data(), scratch);
  EXPECT_TRUE(st.ok()) << st.message();
  const std::vector<uint8_t> want = reference(src, spec);
  int mx = 0;
  for (std::size_t i = 0; i < got.size(); ++i) mx = std::max(mx, std::abs(int(got[i]) - int(want[i])));
  return mx;
}

struct Case {
  int w, h;
  ResizeCrop spec;
};

TEST(ImageResize, MatchesTheDefinitionWithinOneLevel) {
  const Case cases[] = {
      {500, 375, {}},  {375, 500, {}},  {501, 333, {}},  {333, 501, {}},    {640, 480, {}},
      {256, 256, {}},  {256, 300, {}},  // one axis unchanged
      {100, 80, {}},   {31, 17, {}},    {1, 1, {}},     {3, 7, {}},         // upscaling
      {257, 300, {}},  {259, 301, {}},  // crop offsets of .5 round to even
      {1000, 667, {}}, {2000, 60, {}},  {60, 1500, {}}, // strong downscaling, extreme aspect ratios
      {300, 200, {200, 150, 180}},      {97, 61, {32, 28, 28}},             // other sizes, non-square crops
  };
  Scratch scratch;
  for (const Case& c : cases)
    for (Pattern p : {Pattern::noise, Pattern::edges, Pattern::smooth_noise}) {
      const Image src = make_image(c.w, c.h, p, c.w * 31 + c.h);
      EXPECT_LE(max_error(src, c.spec, &scratch), 1)
          << c.w << "x" << c.h << " resize " << c.spec.resize_short << " crop " << c.spec.crop_h << "x" << c.spec.crop_w;
    }
}

// torchvision's CenterCrop pads with zeros when the crop is larger than the resized image.
TEST(ImageResize, CropLargerThanTheImageIsZeroPadded) {
  const Image src = make_image(60, 40, Pattern::smooth_noise, 9);
  ResizeCrop spec;
  spec.resize_short = 100;  // 150x100
  spec.crop_h = 125;        // 12 rows of zeros above, 13 below
  spec.crop_w = 160;        // 5 columns left, 5 right
  Scratch scratch;
  std::vector<uint8_t> got(125 * 160 * 3, 77);
  ASSERT_TRUE(resize_center_crop(src, spec, got.data(), &scratch).ok());
  auto at = [&](int y, int x) { return &got[(y * 160 + x) * 3]; };
  for (int y : {0, 11, 112, 124})
    for (int x = 0; x < 160; ++x) ASSERT_EQ(at(y, x)[1], 0) << y << "," << x;
  for (int x : {0, 4, 155, 159})
    for (int y = 0; y < 125; ++y) ASSERT_EQ(at(y, x)[2], 0) << y << "," << x;
  EXPECT_GT(at(12, 5)[0] + at(12, 5)[1] + at(12, 5)[2], 0);
  EXPECT_LE(max_error(src, spec, &scratch), 1);
  spec.crop_h = 90;  // padded in x only
  EXPECT_LE(max_error(src, spec, &scratch), 1);
}

// A reused Scratch (coefficients cached per size) gives what a fresh one gives.
TEST(ImageResize, ScratchReuseDoesNotChangeResults) {
  const Image a = make_image(500, 375, Pattern::noise, 1), b = make_image(375, 500, Pattern::noise, 2);
  const ResizeCrop spec;
  auto run = [&](const Image& img, Scratch* s) {
    std::vector<uint8_t> out(224 * 224 * 3);
    EXPECT_TRUE(resize_center_crop(img, spec, out.data(), s).ok());
    return out;
  };
  Scratch fresh_a, fresh_b, shared;
  const auto want_a = run(a, &fresh_a), want_b = run(b, &fresh_b);
  EXPECT_EQ(run(a, &shared), want_a);
  EXPECT_EQ(run(b, &shared), want_b);
  EXPECT_EQ(run(a, &shared), want_a);
  const Image a2 = make_image(500, 375, Pattern::edges, 3);  // same size: cached coefficients
  Scratch fresh_a2;
  EXPECT_EQ(run(a2, &shared), run(a2, &fresh_a2));
}

TEST(ImageResize, ResizedSizeFollowsTorchvision) {
  EXPECT_EQ(resized_size(500, 375, 256), (std::array<int, 2>{341, 256}));
  EXPECT_EQ(resized_size(375, 500, 256), (std::array<int, 2>{256, 341}));
  EXPECT_EQ(resized_size(300, 300, 256), (std::array<int, 2>{256, 256}));
  EXPECT_EQ(resized_size(640, 427, 256), (std::array<int, 2>{383, 256}));  // 383.7 truncated
  EXPECT_EQ(resized_size(10, 3, 256), (std::array<int, 2>{853, 256}));
}

TEST(ImageResize, BadArgumentsAreErrors) {
  Image img = make_image(8, 8, Pattern::gradient);
  Scratch scratch;
  std::vector<uint8_t> out(224 * 224 * 3);
  ResizeCrop spec;
  spec.crop_w = 0;
  Status st = resize_center_crop(img, spec, out.data(), &scratch);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("crop"), std::string::npos) << st.message();
  // 2048x2048 to a short side of 1, cropped to 60000x60000: gigabytes of filter tables.
  Image big;
  big.width = big.height = 2048;
  big.rgb.resize(std::size_t(2048) * 2048 * 3);
  st = resize_center_crop(big, ResizeCrop{1, 60000, 60000}, out.data(), &scratch);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("MB of filter tables"), std::string::npos) << st.message();
  img.rgb.pop_back();
  st = resize_center_crop(img, ResizeCrop{}, out.data(), &scratch);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("8x8"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace systolic::image

// resize_center_crop(): PIL's bilinear resampling (Resample.c semantics, written anew) for the
// output window of a torchvision Resize + CenterCrop, in two separable fixed-point passes.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "image/image.h"

namespace systolic::image {
namespace {

// PIL's fixed point: coefficients carry 22 fractional bits, so a sum of uint8 * coefficient
// (normalised to 1) stays below 2^31.
constexpr int kBits = 22;
constexpr int32_t kHalf = int32_t{1} << (kBits - 1);

inline uint8_t clip8(int32_t v) {
  if (v >= (int32_t{1} << kBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kBits);
}

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Taps per output sample of one axis: PIL's ksize for the scale (support 1 widened by the scale
// factor when downscaling).
int taps(int in_size, int out_size) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double support = std::max(scale, 1.0);
  return static_cast<int>(std::ceil(support)) * 2 + 1;
}

// Filter of one axis for outputs first .. first+count-1 of an in_size -> out_size resampling:
// per output its first input and number of inputs in bounds[2*o], bounds[2*o+1], and `ksize`
// fixed-point weights in coeffs[o*ksize...]. Outputs outside 0..out_size-1 (the zero padding of
// CenterCrop) get no inputs, so they come out 0. The arithmetic follows PIL's
// precompute_coeffs + normalize_coeffs_8bpc step for step, in double, so the rounding to
// fixed point lands on the same integers.
void axis_filter(int in_size, int out_size, int first, int count, int ksize, int32_t* bounds, int32_t* coeffs) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;  // bilinear support is 1
  const double ss = 1.0 / filterscale;
  for (int o = 0; o < count; ++o) {
    const int xx = first + o;
    int32_t* k = coeffs + static_cast<std::size_t>(o) * ksize;
    std::fill(k, k + ksize, 0);
    if (xx < 0 || xx >= out_size) {
      bounds[2 * o] = 0;
      bounds[2 * o + 1] = 0;
      continue;
    }
    const double center = (xx + 0.5) * scale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) ww += triangle((x + xmin - center + 0.5) * ss);
    for (int x = 0; x < xmax; ++x) {
      double w = triangle((x + xmin - center + 0.5) * ss);
      if (ww != 0.0) w /= ww;
      k[x] = static_cast<int32_t>(w < 0 ? -0.5 + w * (1 << kBits) : 0.5 + w * (1 << kBits));
    }
    bounds[2 * o] = xmin;
    bounds[2 * o + 1] = xmax;
  }
}

// Python's int(round(d / 2.0)) for an integer d >= 0: halves go to the even neighbour.
int half_round_even(int d) {
  const int q = d / 2;
  return (d % 2 == 0 || q % 2 == 0) ? q : q + 1;
}

// Where the crop starts in resized coordinates (negative: zero padding before the image).
int crop_offset(int size, int crop) { return crop > size ? -((crop - size) / 2) : half_round_even(size - crop); }

// Layout of Scratch::i: a header, then bounds and coefficients of the horizontal pass
// (crop_w outputs), then of the vertical pass (crop_h outputs).
enum Header { kTapsH, kTapsV, kRowFirst, kRowLast, kHeader };

// Horizontal pass over one input row: crop_w RGB outputs.
void horizontal_row(const uint8_t* in, uint8_t* out, int count, int ksize, const int32_t* bounds,
                    const int32_t* coeffs) {
  for (int o = 0; o < count; ++o) {
    const uint8_t* p = in + bounds[2 * o] * 3;
    const int n = bounds[2 * o + 1];
    const int32_t* k = coeffs + static_cast<std::size_t>(o) * ksize;
    int32_t r = kHalf, g = kHalf, b = kHalf;
    for (int x = 0; x < n; ++x, p += 3) {
      r += p[0] * k[x];
      g += p[1] * k[x];
      b += p[2] * k[x];
    }
    out[3 * o] = clip8(r);
    out[3 * o + 1] = clip8(g);
    out[3 * o + 2] = clip8(b);
  }
}

// Vertical pass for one output row: a weighted sum of n rows of `len` bytes, `stride` apart.
// Blocks of 16 pixels keep their sums in registers over all taps; the fixed block width lets
// the compiler vectorise at -O2.
void vertical_row(const uint8_t* rows, std::size_t stride, int n, const int32_t* k, int len, uint8_t* out) {
  constexpr int kBlock = 16;
  int x0 = 0;
  for (; x0 + kBlock <= len; x0 += kBlock) {
    int32_t acc[kBlock];
    for (int i = 0; i < kBlock; ++i) acc[i] = kHalf;
    for (int y = 0; y < n; ++y) {
      const uint8_t* row = rows + y * stride + x0;
      const int32_t w = k[y];
      for (int i = 0; i < kBlock; ++i) acc[i] += row[i] * w;
    }
    for (int i = 0; i < kBlock; ++i) out[x0 + i] = clip8(acc[i]);
  }
  for (int x = x0; x < len; ++x) {
    int32_t acc = kHalf;
    for (int y = 0; y < n; ++y) acc += rows[y * stride + x] * k[y];
    out[x] = clip8(acc);
  }
}

// torchvision's sizes as int64 (an extreme aspect ratio can overflow int).
std::array<int64_t, 2> resized_size64(int width, int height, int resize_short) {
  const bool wide = width > height;  // torchvision: short = w when w <= h
  const int64_t s = wide ? height : width, l = wide ? width : height;
  // Python: int(size * long / short), a true division of exact integers, then truncation.
  const auto new_long = static_cast<int64_t>(static_cast<double>(int64_t{resize_short} * l) / static_cast<double>(s));
  return wide ? std::array<int64_t, 2>{new_long, resize_short} : std::array<int64_t, 2>{resize_short, new_long};
}

}  // namespace

std::array<int, 2> resized_size(int width, int height, int resize_short) {
  const auto s = resized_size64(width, height, resize_short);
  constexpr int64_t kMax = 0x7fffffff;
  return {static_cast<int>(std::min(s[0], kMax)), static_cast<int>(std::min(s[1], kMax))};
}

Status resize_center_crop(const Image& src, const ResizeCrop& spec, uint8_t* out, Scratch* scratch) {
  if (src.width <= 0 || src.height <= 0 ||
      src.rgb.size() != static_cast<std::size_t>(src.width) * src.height * 3)
    return Err("resize: image of %dx%d holds %zu bytes, not width*height*3", src.width, src.height, src.rgb.size());
  if (spec.resize_short <= 0 || spec.crop_h <= 0 || spec.crop_w <= 0 || spec.resize_short > 65536 ||
      spec.crop_h > 65536 || spec.crop_w > 65536)
    return Err("resize: sizes must be in 1..65536 (resize %d, crop %dx%d)", spec.resize_short, spec.crop_h, spec.crop_w);
  const auto size = resized_size64(src.width, src.height, spec.resize_short);
  if (size[0] > (1 << 30) || size[1] > (1 << 30))
    return Err("resize: a %dx%d image cannot be resized to a short side of %d (the long side overflows)", src.width,
               src.height, spec.resize_short);
  const int out_w = static_cast<int>(size[0]), out_h = static_cast<int>(size[1]);
  const int cw = spec.crop_w, ch = spec.crop_h;
  const int kh = taps(src.width, out_w), kv = taps(src.height, out_h);
  const std::size_t h_bounds = kHeader, h_coeffs = h_bounds + 2 * std::size_t(cw);
  const std::size_t v_bounds = h_coeffs + std::size_t(cw) * kh, v_coeffs = v_bounds + 2 * std::size_t(ch);
  const std::size_t total = v_coeffs + std::size_t(ch) * kv;
  // Pathological requests (a tiny resize with a huge crop of a huge image) are refused rather
  // than allowed to exhaust memory; ImageNet-like sizes need a few KB.
  constexpr std::size_t kMaxScratch = std::size_t{1} << 28;
  if (total * sizeof(int32_t) > kMaxScratch)
    return Err("resize: %dx%d -> %dx%d cropped to %dx%d needs %zu MB of filter tables", src.width, src.height, out_w,
               out_h, cw, ch, total * sizeof(int32_t) >> 20);
  std::vector<int32_t>& I = scratch->i;
  const std::array<int, 5> key{src.width, src.height, spec.resize_short, ch, cw};
  if (scratch->key != key || I.size() < total) {
    I.resize(total);
    axis_filter(src.width, out_w, crop_offset(out_w, cw), cw, kh, &I[h_bounds], &I[h_coeffs]);
    axis_filter(src.height, out_h, crop_offset(out_h, ch), ch, kv, &I[v_bounds], &I[v_coeffs]);
    // The input rows the vertical pass reads; the horizontal pass computes only those.
    int first = src.height, last = 0;
    for (int o = 0; o < ch; ++o) {
      if (I[v_bounds + 2 * o + 1] == 0) continue;
      first = std::min(first, I[v_bounds + 2 * o]);
      last = std::max(last, I[v_bounds + 2 * o] + I[v_bounds + 2 * o + 1]);
    }
    I[kTapsH] = kh;
    I[kTapsV] = kv;
    I[kRowFirst] = first;
    I[kRowLast] = std::max(first, last);
    scratch->key = key;
  }
  const int first = I[kRowFirst], rows = I[kRowLast] - I[kRowFirst];
  const std::size_t len = std::size_t(cw) * 3, in_stride = std::size_t(src.width) * 3;
  if (rows * len > kMaxScratch)
    return Err("resize: %dx%d -> %dx%d cropped to %dx%d needs %zu MB of intermediate rows", src.width, src.height,
               out_w, out_h, cw, ch, rows * len >> 20);
  scratch->u8.resize(rows * len);
  uint8_t* tmp = scratch->u8.data();
  for (int y = 0; y < rows; ++y)
    horizontal_row(&src.rgb[(first + y) * in_stride], tmp + y * len, cw, kh, &I[h_bounds], &I[h_coeffs]);
  for (int o = 0; o < ch; ++o) {
    const int32_t* b = &I[v_bounds + 2 * o];
    vertical_row(b[1] ? tmp + (b[0] - first) * len : tmp, len, b[1], &I[v_coeffs + std::size_t(o) * kv],
                 static_cast<int>(len), out + o * len);
  }
  return Status::Ok();
}

}  // namespace systolic::image

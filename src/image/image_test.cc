// Decoding: images written with the encoders come back exactly (PNG) or closely (JPEG) in every
// layout the decoder converts; corrupt, truncated and foreign inputs give a clear error and
// print nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "image/image.h"
#include "image/test_images.h"

namespace systolic::image {
namespace {

using testing::make_image;
using testing::Pattern;

struct Size {
  int w, h;
};
const Size kSizes[] = {{1, 1}, {3, 7}, {501, 333}, {333, 501}, {64, 64}};

std::vector<uint8_t> png_of(const Image& img) {
  std::vector<uint8_t> bytes;
  Status st = encode_png(img, &bytes);
  EXPECT_TRUE(st.ok()) << st.message();
  return bytes;
}

std::vector<uint8_t> jpeg_of(const Image& img, int quality = 95) {
  std::vector<uint8_t> bytes;
  Status st = encode_jpeg(img, quality, &bytes);
  EXPECT_TRUE(st.ok()) << st.message();
  return bytes;
}

Image decoded(const std::vector<uint8_t>& bytes) {
  Image img;
  Status st = decode(bytes.data(), bytes.size(), &img);
  EXPECT_TRUE(st.ok()) << st.message();
  return img;
}

std::vector<uint8_t> png_samples(const void* samples, int w, int h, const PngLayout& layout) {
  std::vector<uint8_t> bytes;
  Status st = encode_png_samples(samples, w, h, layout, &bytes);
  EXPECT_TRUE(st.ok()) << st.message();
  return bytes;
}

// Mean and max absolute difference of two images of the same size.
std::pair<double, int> difference(const Image& a, const Image& b) {
  double sum = 0;
  int mx = 0;
  for (std::size_t i = 0; i < a.rgb.size(); ++i) {
    const int d = std::abs(int(a.rgb[i]) - int(b.rgb[i]));
    sum += d;
    mx = std::max(mx, d);
  }
  return {sum / std::max<std::size_t>(a.rgb.size(), 1), mx};
}

// Runs f with fd 2 sent to a file; returns what was written there.
template <typename F>
std::string stderr_of(F&& f) {
  const std::string path = ::testing::TempDir() + "image_test_stderr_" + std::to_string(getpid());
  std::fflush(stderr);
  const int saved = dup(2);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 2);
  close(fd);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

TEST(ImageDecode, PngRoundTripIsExact) {
  for (const Size s : kSizes)
    for (Pattern p : {Pattern::gradient, Pattern::edges, Pattern::noise}) {
      const Image src = make_image(s.w, s.h, p);
      const Image got = decoded(png_of(src));
      EXPECT_EQ(got.width, s.w);
      EXPECT_EQ(got.height, s.h);
      EXPECT_EQ(got.rgb, src.rgb) << s.w << "x" << s.h;
    }
}

// Luma (BT.601, as JPEG stores it) of pixel i.
double luma(const Image& img, std::size_t i) {
  return 0.299 * img.rgb[3 * i] + 0.587 * img.rgb[3 * i + 1] + 0.114 * img.rgb[3 * i + 2];
}

// JPEG is lossy: luma stays close at every size; colour is subsampled 2x2, so on tiny images
// with steep colour gradients only luma is held to a tight bound.
TEST(ImageDecode, JpegRoundTripIsClose) {
  for (const Size s : kSizes)
    for (Pattern p : {Pattern::gradient, Pattern::smooth_noise}) {
      const Image src = make_image(s.w, s.h, p);
      const Image got = decoded(jpeg_of(src, 95));
      ASSERT_EQ(got.width, s.w);
      ASSERT_EQ(got.height, s.h);
      double sum = 0, mx = 0;
      for (int i = 0; i < s.w * s.h; ++i) {
        const double d = std::fabs(luma(src, i) - luma(got, i));
        sum += d;
        mx = std::max(mx, d);
      }
      const bool tiny = s.w < 64 || s.h < 64;  // colour clipping after subsampling moves luma too
      EXPECT_LE(sum / (s.w * s.h), tiny ? 3.0 : 0.75) << s.w << "x" << s.h;
      EXPECT_LE(mx, tiny ? 20.0 : 4.0) << s.w << "x" << s.h;
      if (!tiny) {
        const auto [mean, most] = difference(src, got);
        EXPECT_LE(mean, 3.0) << s.w << "x" << s.h;
        EXPECT_LE(most, 48) << s.w << "x" << s.h;
      }
    }
}

// Progressive JPEG refines the same quantised coefficients, so it decodes to the same pixels.
TEST(ImageDecode, ProgressiveJpegDecodesLikeBaseline) {
  const Image src = make_image(333, 501, Pattern::smooth_noise);
  std::vector<uint8_t> baseline, progressive;
  JpegLayout layout;
  ASSERT_TRUE(encode_jpeg_samples(src.rgb.data(), src.width, src.height, layout, &baseline).ok());
  layout.progressive = true;
  ASSERT_TRUE(encode_jpeg_samples(src.rgb.data(), src.width, src.height, layout, &progressive).ok());
  ASSERT_NE(baseline, progressive);
  EXPECT_EQ(decoded(progressive).rgb, decoded(baseline).rgb);
}

TEST(ImageDecode, GrayJpegIsReplicated) {
  const Image rgb = make_image(101, 67, Pattern::smooth_noise);
  std::vector<uint8_t> gray(101 * 67);
  for (std::size_t i = 0; i < gray.size(); ++i) gray[i] = rgb.rgb[3 * i + 1];
  std::vector<uint8_t> bytes;
  JpegLayout layout;
  layout.components = 1;
  layout.quality = 95;
  ASSERT_TRUE(encode_jpeg_samples(gray.data(), 101, 67, layout, &bytes).ok());
  const Image got = decoded(bytes);
  ASSERT_EQ(got.rgb.size(), gray.size() * 3);
  int mx = 0;
  for (std::size_t i = 0; i < gray.size(); ++i) {
    EXPECT_EQ(got.rgb[3 * i], got.rgb[3 * i + 1]);
    EXPECT_EQ(got.rgb[3 * i], got.rgb[3 * i + 2]);
    mx = std::max(mx, std::abs(int(got.rgb[3 * i]) - int(gray[i])));
  }
  EXPECT_LE(mx, 4);
}

// CMYK JPEGs hold Adobe-inverted samples; PIL reads them as such and makes RGB as
// (255 - C) * (255 - K) / 255 per channel, i.e. raw C * raw K / 255.
TEST(ImageDecode, CmykJpegBecomesRgb) {
  const int w = 64, h = 32;  // 8 patches of 16x16, each one flat colour
  const uint8_t patches[8][4] = {{255, 255, 255, 255}, {0, 0, 0, 255},     {200, 100, 50, 255}, {255, 255, 255, 0},
                                 {255, 128, 0, 128},   {30, 60, 90, 200},   {128, 128, 128, 64}, {240, 10, 120, 30}};
  std::vector<uint8_t> cmyk(w * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 4; ++c) cmyk[(y * w + x) * 4 + c] = patches[(y / 16) * 4 + x / 16][c];
  std::vector<uint8_t> bytes;
  JpegLayout layout;
  layout.components = 4;
  layout.quality = 100;
  ASSERT_TRUE(encode_jpeg_samples(cmyk.data(), w, h, layout, &bytes).ok());
  const Image got = decoded(bytes);
  ASSERT_EQ(got.width, w);
  for (int p = 0; p < 8; ++p) {
    const int y = (p / 4) * 16 + 8, x = (p % 4) * 16 + 8;  // patch centres, away from block edges
    for (int c = 0; c < 3; ++c) {
      const double want = patches[p][c] * patches[p][3] / 255.0;
      EXPECT_NEAR(got.rgb[(y * w + x) * 3 + c], want, 2.0) << "patch " << p << " channel " << c;
    }
  }
}

TEST(ImageDecode, GrayPngIsReplicatedAtEveryBitDepth) {
  const int w = 13, h = 5;
  for (int depth : {1, 2, 4, 8}) {
    std::vector<uint8_t> samples(w * h);
    for (int i = 0; i < w * h; ++i) samples[i] = static_cast<uint8_t>((i * 37) % (1 << depth));
    PngLayout layout;
    layout.channels = 1;
    layout.bit_depth = depth;
    const Image got = decoded(png_samples(samples.data(), w, h, layout));
    ASSERT_EQ(got.rgb.size(), samples.size() * 3);
    for (int i = 0; i < w * h; ++i) {
      const int want = samples[i] * 255 / ((1 << depth) - 1);  // scaled to the full 8-bit range
      for (int c = 0; c < 3; ++c) ASSERT_EQ(got.rgb[3 * i + c], want) << "depth " << depth << " pixel " << i;
    }
  }
}

TEST(ImageDecode, AlphaIsDroppedNotComposited) {
  const Image rgb = make_image(37, 23, Pattern::noise, 3);
  const int n = 37 * 23;
  std::vector<uint8_t> rgba(n * 4), ga(n * 2);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) rgba[4 * i + c] = rgb.rgb[3 * i + c];
    rgba[4 * i + 3] = static_cast<uint8_t>(i * 11);  // varied alpha, including 0
    ga[2 * i] = rgb.rgb[3 * i];
    ga[2 * i + 1] = static_cast<uint8_t>(i * 7);
  }
  PngLayout layout;
  layout.channels = 4;
  EXPECT_EQ(decoded(png_samples(rgba.data(), 37, 23, layout)).rgb, rgb.rgb);
  layout.channels = 2;
  const Image g = decoded(png_samples(ga.data(), 37, 23, layout));
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) ASSERT_EQ(g.rgb[3 * i + c], ga[2 * i]);
}

TEST(ImageDecode, SixteenBitPngKeepsTheHighByte) {
  const int w = 29, h = 17;
  for (int channels : {1, 2, 3, 4})
    for (bool interlaced : {false, true}) {
      std::vector<uint16_t> samples(w * h * channels);
      for (std::size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<uint16_t>(i * 2654435761u >> 16);
      PngLayout layout;
      layout.channels = channels;
      layout.bit_depth = 16;
      layout.interlaced = interlaced;
      const Image got = decoded(png_samples(samples.data(), w, h, layout));
      ASSERT_EQ(got.rgb.size(), std::size_t(w * h * 3));
      for (int i = 0; i < w * h; ++i)
        for (int c = 0; c < 3; ++c) {
          const int src_channel = channels >= 3 ? c : 0;  // gray replicated, alpha dropped
          ASSERT_EQ(got.rgb[3 * i + c], samples[i * channels + src_channel] >> 8)
              << channels << " channels, interlaced " << interlaced << ", pixel " << i;
        }
    }
}

TEST(ImageDecode, PalettePngIsExpanded) {
  const int w = 21, h = 9;
  PngLayout layout;
  layout.channels = 1;
  for (int i = 0; i < 16; ++i)
    for (int c = 0; c < 3; ++c) layout.palette.push_back(static_cast<uint8_t>(i * 16 + c * 5));
  layout.palette_alpha = {0, 128, 255, 7};  // tRNS: dropped, like alpha
  for (int depth : {4, 8}) {
    layout.bit_depth = depth;
    std::vector<uint8_t> idx(w * h);
    for (int i = 0; i < w * h; ++i) idx[i] = static_cast<uint8_t>((i * 5) % 16);
    const Image got = decoded(png_samples(idx.data(), w, h, layout));
    ASSERT_EQ(got.rgb.size(), idx.size() * 3);
    for (int i = 0; i < w * h; ++i)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(got.rgb[3 * i + c], layout.palette[idx[i] * 3 + c]);
  }
}

TEST(ImageDecode, InterlacedPngIsExact) {
  for (const Size s : kSizes) {
    const Image src = make_image(s.w, s.h, Pattern::noise, 5);
    PngLayout layout;
    layout.interlaced = true;
    const std::vector<uint8_t> bytes = png_samples(src.rgb.data(), s.w, s.h, layout);
    EXPECT_NE(bytes, png_of(src));
    EXPECT_EQ(decoded(bytes).rgb, src.rgb) << s.w << "x" << s.h;
  }
}

// A decoding thread reuses its Image: a smaller image after a larger one does not reallocate.
TEST(ImageDecode, OutputBufferIsReused) {
  const std::vector<uint8_t> big = jpeg_of(make_image(501, 333, Pattern::gradient));
  const std::vector<uint8_t> small = png_of(make_image(64, 64, Pattern::edges));
  Image img;
  ASSERT_TRUE(decode(big.data(), big.size(), &img).ok());
  const uint8_t* data = img.rgb.data();
  const std::size_t capacity = img.rgb.capacity();
  ASSERT_TRUE(decode(small.data(), small.size(), &img).ok());
  EXPECT_EQ(img.rgb.size(), 64u * 64 * 3);
  EXPECT_EQ(img.rgb.data(), data);
  ASSERT_TRUE(decode(big.data(), big.size(), &img).ok());
  EXPECT_EQ(img.rgb.data(), data);
  EXPECT_EQ(img.rgb.capacity(), capacity);
}

// --- bad input: a non-OK Status naming the problem, and nothing printed by the libraries.

Status decode_quietly(const std::vector<uint8_t>& bytes, std::string* printed) {
  Image img;
  Status st;
  *printed = stderr_of([&] { st = decode(bytes.data(), bytes.size(), &img); });
  return st;
}

void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle, const std::string& what) {
  std::string printed;
  const Status st = decode_quietly(bytes, &printed);
  EXPECT_FALSE(st.ok()) << what;
  EXPECT_NE(st.message().find(needle), std::string::npos) << what << ": " << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << what << ": " << st.message();
  EXPECT_EQ(printed, "") << what;
}

TEST(ImageDecodeErrors, ForeignDataIsNamed) {
  std::mt19937 rng(7);
  std::vector<uint8_t> garbage(1000);
  for (auto& b : garbage) b = static_cast<uint8_t>(rng() | 0x80);
  expect_error(garbage, "not a JPEG or PNG image: unrecognised data starting ", "garbage");
  expect_error({}, "empty file", "empty");
  const std::string gif = "GIF89a\x01\x00\x01\x00";
  expect_error(std::vector<uint8_t>(gif.begin(), gif.end()), "GIF", "gif");
  const std::string text = "hello, this is not an image\n";
  expect_error(std::vector<uint8_t>(text.begin(), text.end()), "text (\"hello, this is", "text");
  const std::string utf8 = "caf\xc3\xa9 cr\xc3\xa8me \xe2\x82\xac\n";
  expect_error(std::vector<uint8_t>(utf8.begin(), utf8.end()), "it looks like text", "UTF-8 text");
}

std::size_t find_marker(const std::vector<uint8_t>& b, uint8_t marker) {
  for (std::size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xFF && b[i + 1] == marker) return i;
  return std::string::npos;
}

TEST(ImageDecodeErrors, TruncatedJpeg) {
  const std::vector<uint8_t> full = jpeg_of(make_image(333, 501, Pattern::smooth_noise), 90);
  const std::size_t sos = find_marker(full, 0xDA);
  ASSERT_NE(sos, std::string::npos);
  for (std::size_t at : {std::size_t{2}, std::size_t{3}, std::size_t{40}, sos, sos + 20, full.size() / 2,
                         full.size() * 9 / 10, full.size() - 2}) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + at);
    expect_error(cut, "JPEG", "JPEG cut at " + std::to_string(at) + " of " + std::to_string(full.size()));
  }
  // Cut inside the entropy-coded data: libjpeg would pad with gray and warn; that is an error here.
  expect_error(std::vector<uint8_t>(full.begin(), full.begin() + full.size() / 2), "Premature end", "half a JPEG");
}

// Stray bytes before EOI (written by some cameras) follow complete pixel data and are accepted;
// stray bytes before a marker that starts image data mean a damaged file.
TEST(ImageDecodeErrors, StrayBytesBeforeEoiOnly) {
  const std::vector<uint8_t> good = jpeg_of(make_image(120, 80, Pattern::smooth_noise), 90);
  ASSERT_EQ(good[good.size() - 2], 0xFF);
  std::vector<uint8_t> bytes = good;
  bytes.insert(bytes.end() - 2, {0x12, 0x34, 0x56});
  std::string printed;
  const Status st = decode_quietly(bytes, &printed);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(printed, "");
  EXPECT_EQ(decoded(bytes).rgb, decoded(good).rgb);

  bytes = good;
  const std::size_t sos = find_marker(bytes, 0xDA);
  bytes.insert(bytes.begin() + sos, {0x12, 0x34, 0x56});
  expect_error(bytes, "extraneous bytes before marker 0xda", "JPEG with stray bytes before SOS");
}

TEST(ImageDecodeErrors, TruncatedPng) {
  const std::vector<uint8_t> full = png_of(make_image(201, 77, Pattern::noise));
  for (std::size_t at : {std::size_t{4}, std::size_t{8}, std::size_t{20}, std::size_t{33}, std::size_t{50},
                         full.size() / 2, full.size() - 13, full.size() - 1}) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + at);
    expect_error(cut, "PNG", "PNG cut at " + std::to_string(at) + " of " + std::to_string(full.size()));
  }
}

TEST(ImageDecodeErrors, PngWithBrokenCrcOrData) {
  const std::vector<uint8_t> good = png_of(make_image(64, 48, Pattern::gradient));
  const std::string idat = "IDAT";
  const std::size_t at = std::search(good.begin(), good.end(), idat.begin(), idat.end()) - good.begin();
  ASSERT_LT(at, good.size());
  const std::size_t length = std::size_t(good[at - 4]) << 24 | good[at - 3] << 16 | good[at - 2] << 8 | good[at - 1];
  std::vector<uint8_t> bytes = good;
  bytes[at + 4 + length] ^= 0x01;  // first byte of the chunk's CRC
  expect_error(bytes, "CRC error", "PNG with a wrong IDAT CRC");
  bytes = good;
  bytes[at + 4 + 10] ^= 0x55;  // compressed data: zlib or the CRC check catches it first
  expect_error(bytes, "corrupt PNG: IDAT", "PNG with a flipped IDAT byte");
}

// Randomly damaged files (flipped bits, overwritten, inserted and cut bytes): decoding returns,
// prints nothing, and every failure has a one-line message.
TEST(ImageDecodeErrors, DamagedFilesNeverCrash) {
  const Image src = make_image(97, 61, Pattern::smooth_noise);
  std::vector<uint8_t> progressive;
  JpegLayout layout;
  layout.progressive = true;
  ASSERT_TRUE(encode_jpeg_samples(src.rgb.data(), 97, 61, layout, &progressive).ok());
  const std::vector<uint8_t> bases[] = {jpeg_of(src), png_of(src), progressive};
  std::mt19937 rng(11);
  int failures = 0;
  std::string printed = stderr_of([&] {
    Image img;
    for (int it = 0; it < 1500; ++it) {
      std::vector<uint8_t> b = bases[it % 3];
      for (int m = 1 + rng() % 6; m > 0 && !b.empty(); --m) {
        const std::size_t pos = rng() % b.size();
        switch (rng() % 4) {
          case 0: b[pos] = static_cast<uint8_t>(rng()); break;
          case 1: b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 2: b.resize(pos + 1); break;
          default: b.insert(b.begin() + pos, rng() % 16, static_cast<uint8_t>(rng()));
        }
      }
      const Status st = decode(b.data(), b.size(), &img);
      if (st.ok()) {
        ASSERT_EQ(img.rgb.size(), std::size_t(img.width) * img.height * 3);
      } else {
        ++failures;
        ASSERT_FALSE(st.message().empty());
        ASSERT_EQ(st.message().find('\n'), std::string::npos) << st.message();
      }
    }
  });
  EXPECT_EQ(printed, "");
  EXPECT_GT(failures, 1000);  // most damage is detected
}

TEST(ImageDecodeErrors, HugeDimensionsAreRejectedBeforeAllocating) {
  std::vector<uint8_t> bytes = jpeg_of(make_image(16, 16, Pattern::gradient));
  const std::size_t sof = find_marker(bytes, 0xC0);
  ASSERT_NE(sof, std::string::npos);
  for (int i : {5, 7}) bytes[sof + i] = 0xFD, bytes[sof + i + 1] = 0xE8;  // height and width 65000
  expect_error(bytes, "over the limit", "65000x65000 JPEG");
}

TEST(ImageDecodeErrors, FilesStartWithThePath) {
  Image img;
  const std::string missing = ::testing::TempDir() + "no_such_image.jpg";
  Status st = decode_file(missing, &img);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind(missing + ": ", 0), 0u) << st.message();
  EXPECT_NE(st.message().find("No such file"), std::string::npos) << st.message();

  const std::string text = ::testing::TempDir() + "image_test_notes.jpg";
  std::ofstream(text) << "notes about an image, not an image\n";
  st = decode_file(text, &img);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind(text + ": not a JPEG or PNG image: it looks like text", 0), 0u) << st.message();

  const std::string good = ::testing::TempDir() + "image_test_good.png";
  const std::vector<uint8_t> bytes = png_of(make_image(5, 3, Pattern::noise));
  std::ofstream(good, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  st = decode_file(good, &img);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(img.rgb, make_image(5, 3, Pattern::noise).rgb);
  std::remove(text.c_str());
  std::remove(good.c_str());
}

}  // namespace
}  // namespace systolic::image

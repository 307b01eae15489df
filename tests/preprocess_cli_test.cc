// `systolic preprocess`: the .npy it writes is what the library computes, sizes follow the
// options, and bad images are a one-line error with exit status 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "image/image.h"
#include "image/test_images.h"
#include "tests/cli_run.h"
#include "frontend/tensor_io.h"

namespace {

using namespace systolic;

std::string dir() {
  static const std::string d = systolic::testing::cli_dir("preprocess");
  return d;
}

using Result = systolic::testing::CliResult;
Result sh(const std::string& args) { return systolic::testing::run_cli(dir(), args); }

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

TEST(Preprocess, WritesWhatTheLibraryComputes) {
  const image::Image img = image::testing::make_image(500, 375, image::testing::Pattern::smooth_noise);
  std::vector<uint8_t> png;
  ASSERT_TRUE(image::encode_png(img, &png).ok());
  const std::string path = dir() + "/photo.png";
  write_file(path, png);

  Result r = sh("preprocess " + path + " -o " + dir() + "/a.npy");
  ASSERT_EQ(r.status, 0) << r.err;
  auto t = frontend::load_tensor(dir() + "/a.npy");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->dtype, ir::DType::u8);
  EXPECT_EQ(t->shape, (ir::Shape{224, 224, 3}));
  std::vector<uint8_t> want(224 * 224 * 3);
  image::Scratch scratch;
  ASSERT_TRUE(image::resize_center_crop(img, image::ResizeCrop{}, want.data(), &scratch).ok());
  EXPECT_EQ(t->data, want);

  r = sh("preprocess " + path + " -o " + dir() + "/b.npy --resize 128 --crop 100 60");
  ASSERT_EQ(r.status, 0) << r.err;
  t = frontend::load_tensor(dir() + "/b.npy");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape, (ir::Shape{100, 60, 3}));

  r = sh("preprocess " + path + " -o " + dir() + "/c.npy --decode-only");
  ASSERT_EQ(r.status, 0) << r.err;
  t = frontend::load_tensor(dir() + "/c.npy");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape, (ir::Shape{375, 500, 3}));
  EXPECT_EQ(t->data, img.rgb);
}

TEST(Preprocess, BadImagesAreOneLineErrors) {
  const std::string text = dir() + "/notes.jpg";
  std::ofstream(text) << "not an image\n";
  systolic::testing::expect_clean_error(sh("preprocess " + text + " -o " + dir() + "/x.npy"),
                        text + ": not a JPEG or PNG image: it looks like text");
  systolic::testing::expect_clean_error(sh("preprocess " + dir() + "/missing.jpg -o " + dir() + "/x.npy"), "No such file");

  std::vector<uint8_t> jpeg;
  ASSERT_TRUE(image::encode_jpeg(image::testing::make_image(300, 200, image::testing::Pattern::noise), 90, &jpeg).ok());
  jpeg.resize(jpeg.size() / 2);
  const std::string cut = dir() + "/cut.jpg";
  write_file(cut, jpeg);
  systolic::testing::expect_clean_error(sh("preprocess " + cut + " -o " + dir() + "/x.npy"), "corrupt JPEG: Premature end of JPEG file");
  systolic::testing::expect_clean_error(sh("preprocess " + cut + " -o " + dir() + "/x.npy --crop 0"), "must be positive");
}

}  // namespace

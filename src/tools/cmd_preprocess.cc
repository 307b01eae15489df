// `systolic preprocess IMAGE -o OUT.npy [--resize 256] [--crop 224 [W]] [--decode-only] [--repeat N]`:
// decodes a JPEG/PNG and applies torchvision's Resize + CenterCrop, writing uint8 HWC RGB.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "image/image.h"
#include "tools/commands.h"
#include "frontend/tensor_io.h"

namespace systolic::tools {
namespace {

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void register_preprocess(CLI::App& app) {
  auto* cmd = app.add_subcommand("preprocess", "decode an image, Resize + CenterCrop it like torchvision, write uint8 HWC .npy");
  auto path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto resize = std::make_shared<int>(256);
  auto crop = std::make_shared<std::vector<int>>(std::vector<int>{224});
  auto decode_only = std::make_shared<bool>(false);
  auto repeat = std::make_shared<int>(0);
  cmd->add_option("image", *path, "JPEG or PNG file")->required();
  cmd->add_option("-o,--output", *out, "write the result as a uint8 .npy (H, W, 3)");
  cmd->add_option("--resize", *resize, "the shorter side after resizing (default 256)");
  cmd->add_option("--crop", *crop, "center crop H [W] (default 224)")->expected(1, 2);
  cmd->add_flag("--decode-only", *decode_only, "write the decoded image without resizing or cropping");
  cmd->add_option("--repeat", *repeat, "time decode and resize+crop over N runs; print medians on stderr");
  cmd->callback([=] {
    image::ResizeCrop spec;
    spec.resize_short = *resize;
    spec.crop_h = (*crop)[0];
    spec.crop_w = crop->size() > 1 ? (*crop)[1] : (*crop)[0];
    if (spec.resize_short <= 0 || spec.crop_h <= 0 || spec.crop_w <= 0)
      return fail(Err("--resize and --crop must be positive"));
    image::Image img;
    if (Status st = image::decode_file(*path, &img); !st.ok()) return fail(st);
    runtime::HostTensor t;
    image::Scratch scratch;
    if (*decode_only) {
      t = runtime::HostTensor::zeros(ir::DType::u8, {img.height, img.width, 3});
      std::memcpy(t.data.data(), img.rgb.data(), img.rgb.size());
    } else {
      t = runtime::HostTensor::zeros(ir::DType::u8, {spec.crop_h, spec.crop_w, 3});
      if (Status st = image::resize_center_crop(img, spec, t.data.data(), &scratch); !st.ok())
        return fail(Err("%s: %s", path->c_str(), st.message().c_str()));
    }
    if (*repeat > 0) {
      std::vector<double> dec, rc;
      for (int r = 0; r < *repeat; ++r) {
        auto a = std::chrono::steady_clock::now();
        (void)image::decode_file(*path, &img);
        auto b = std::chrono::steady_clock::now();
        if (!*decode_only) (void)image::resize_center_crop(img, spec, t.data.data(), &scratch);
        auto c = std::chrono::steady_clock::now();
        dec.push_back(std::chrono::duration<double, std::milli>(b - a).count());
        rc.push_back(std::chrono::duration<double, std::milli>(c - b).count());
      }
      std::fprintf(stderr, "%s: %dx%d, decode %.3f ms, resize+crop %.3f ms (median of %d)\n", path->c_str(), img.width,
                   img.height, median_ms(dec), median_ms(rc), *repeat);
    }
    if (!out->empty())
      if (Status st = frontend::save_npy(*out, t); !st.ok()) return fail(st);
  });
}

}  // namespace systolic::tools

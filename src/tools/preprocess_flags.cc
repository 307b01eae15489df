#include "tools/preprocess_flags.h"

#include <cstdio>

namespace systolic::tools {

void add_preprocess_flags(CLI::App* cmd, const std::shared_ptr<PreprocessFlags>& f) {
  cmd->add_option("--preprocess", f->preset,
                  "take uint8 RGB images (NHWC) with this normalisation folded into the first layer: imagenet | none");
  cmd->add_option("--mean", f->mean, "per-channel mean in [0,1] units (R,G,B); implies preprocessing")->delimiter(',');
  cmd->add_option("--std", f->std, "per-channel std in [0,1] units (R,G,B); implies preprocessing")->delimiter(',');
  cmd->add_option("--resize", f->resize, "shorter side after resizing (default: crop / 0.875, e.g. 256 for 224)");
  cmd->add_option("--crop", f->crop, "center crop N or HxW (default: the model's input size)");
}

Expected<ir::ImagePreprocess> resolve_preprocess(const PreprocessFlags& f) {
  ir::ImagePreprocess p;
  const bool explicit_norm = !f.mean.empty() || !f.std.empty();
  if (f.preset == "imagenet") {
    p = ir::imagenet_preprocess();
  } else if (!f.preset.empty() && f.preset != "none") {
    return Err("--preprocess %s: unknown preset (known: imagenet, none)", f.preset.c_str());
  }
  if (f.preset == "none" && (explicit_norm || f.resize || !f.crop.empty()))
    return Err("--preprocess none cannot be combined with --mean, --std, --resize or --crop");
  if (explicit_norm) {
    if (f.mean.empty() || f.std.empty()) return Err("--mean and --std go together");
    p.mean = f.mean;
    p.std = f.std;
  }
  if (!p.enabled()) {
    if (f.resize || !f.crop.empty()) return Err("--resize and --crop need --preprocess or --mean/--std");
    return p;
  }
  if (f.resize < 0) return Err("--resize %d: must be positive", f.resize);
  p.resize = f.resize;
  if (!f.crop.empty()) {
    int h = 0, w = 0;
    char x = 0, extra = 0;
    const int got = std::sscanf(f.crop.c_str(), "%d%c%d%c", &h, &x, &w, &extra);
    if (got == 1) w = h;
    else if (got != 3 || (x != 'x' && x != 'X')) return Err("--crop %s: expected N or HxW", f.crop.c_str());
    if (h <= 0 || w <= 0) return Err("--crop %s: sizes must be positive", f.crop.c_str());
    p.crop_h = h;
    p.crop_w = w;
  }
  return p;
}

std::string describe(const ir::ImagePreprocess& p) {
  if (!p.enabled()) return "none";
  char buf[256];
  std::snprintf(buf, sizeof buf, "uint8 RGB, resize %d, center-crop %dx%d, mean [%.3f, %.3f, %.3f], std [%.3f, %.3f, %.3f]",
                p.resize, p.crop_h, p.crop_w, p.mean.size() > 0 ? p.mean[0] : 0.f, p.mean.size() > 1 ? p.mean[1] : 0.f,
                p.mean.size() > 2 ? p.mean[2] : 0.f, p.std.size() > 0 ? p.std[0] : 0.f, p.std.size() > 1 ? p.std[1] : 0.f,
                p.std.size() > 2 ? p.std[2] : 0.f);
  return buf;
}

}  // namespace systolic::tools

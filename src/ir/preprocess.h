// What a plan with an image input expects: torchvision's Resize(resize) + CenterCrop(crop) on
// an RGB image, then (x / 255 - mean) / std per channel. The compiler folds the normalisation
// into the first convolution; the pipeline decodes, resizes and crops into the uint8 input.
#pragma once
#include <string>
#include <vector>

namespace systolic::ir {

struct ImagePreprocess {
  int resize = 0;                // shorter side after resizing; 0: the crop / 0.875, as ImageNet does
  int crop_h = 0, crop_w = 0;    // 0: the model's input size
  std::vector<float> mean, std;  // per channel, in [0, 1] units; empty: no preprocessing
  bool enabled() const { return !mean.empty(); }
};

// torchvision's ImageNet recipe: Resize(256), CenterCrop(224) (for 224x224 models), and the
// ImageNet mean and std.
inline ImagePreprocess imagenet_preprocess() {
  ImagePreprocess p;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  return p;
}

}  // namespace systolic::ir

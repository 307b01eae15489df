// Calibration samples from what a user has: a folder of images (or image files), tensor files
// (.npy / .pb), or "random:N". Images are decoded, resized and center-cropped as the
// preprocessing says; a plan with uint8 image input takes them as they are, a float-input
// plan takes them normalised ((x / 255 - mean) / std, NCHW). Samples fill the plan's batch.
#pragma once
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/preprocess.h"
#include "runtime/host_tensor.h"
#include "runtime/session.h"

namespace systolic::quantize {

// Whether the sources are the single "random:N" form; sets *n.
bool is_random_source(const std::vector<std::string>& sources, int* n);

// What identifies the data for the compile cache: each file's path, size and modification
// time (a folder's image files in order), or "random:N".
Expected<std::string> sources_key(const std::vector<std::string>& sources);

// Input sets for `inputs` (at most `limit` images or tensor files, and sets; 0: all). A tensor
// file holds one input, or several stacked on the first axis (one set each). Random data is
// seeded: N(0, 1) floats, uniform uint8 images. Unreadable images are skipped with a line in
// *notes; no usable sample at all is an error.
Expected<std::vector<std::vector<runtime::HostTensor>>> load_samples(const std::vector<std::string>& sources,
                                                                     const std::vector<runtime::TensorInfo>& inputs,
                                                                     const ir::ImagePreprocess& image, int limit,
                                                                     std::vector<std::string>* notes);

}  // namespace systolic::quantize

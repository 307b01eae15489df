// Calibration samples: image folders and files, tensor files, or seeded random data, shaped for
// the plan's inputs.
#include "quantize/calibration_data.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "frontend/tensor_io.h"
#include "image/image.h"
#include "runtime/random_tensor.h"

namespace systolic::quantize {
namespace {

bool has_image_suffix(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* ext : {".jpg", ".jpeg", ".png"})
    if (lower.size() > std::strlen(ext) && lower.ends_with(ext)) return true;
  return false;
}

bool has_tensor_suffix(const std::string& name) { return name.ends_with(".npy") || name.ends_with(".pb"); }

// The files the sources name: a folder's image and tensor files (sorted), or files as given.
Expected<std::vector<std::string>> expand(const std::vector<std::string>& sources) {
  std::vector<std::string> files;
  for (const std::string& s : sources) {
    struct stat sb;
    if (s.rfind("random:", 0) == 0 && (sources.size() > 1 || stat(s.c_str(), &sb) != 0))
      return Err("calibration data %s: random:N takes a count from 1 to 999999, alone", s.c_str());
    if (stat(s.c_str(), &sb) != 0) return Err("calibration data %s does not exist", s.c_str());
    if (!S_ISDIR(sb.st_mode)) {
      files.push_back(s);
      continue;
    }
    std::vector<std::string> in_dir;
    if (DIR* d = opendir(s.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (has_image_suffix(n) || has_tensor_suffix(n)) in_dir.push_back(s + "/" + n);
      }
      closedir(d);
    }
    if (in_dir.empty()) return Err("calibration folder %s holds no .jpg, .png, .npy or .pb files", s.c_str());
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return files;
}

// One image into slot `b` of a batch tensor: uint8 NHWC as decoded, or float NCHW normalised.
Status put_image(const std::string& path, const ir::ImagePreprocess& pre, const runtime::TensorInfo& in, int64_t b,
                 runtime::HostTensor* t, image::Scratch* scratch) {
  const bool u8 = in.dtype == ir::DType::u8;
  if (in.shape.size() != 4 || (u8 ? in.shape[3] : in.shape[1]) != 3)
    return Err("images need a model input of 3 channels; input %s is %s", in.name.c_str(), ir::shape_str(in.shape).c_str());
  if (!u8 && (in.dtype != ir::DType::f32 || pre.mean.size() != 3 || pre.std.size() != 3))
    return Err("calibration images for float input %s need the normalisation: give --preprocess imagenet or --mean/--std",
               in.name.c_str());
  const int h = static_cast<int>(u8 ? in.shape[1] : in.shape[2]), w = static_cast<int>(u8 ? in.shape[2] : in.shape[3]);
  image::ResizeCrop spec;
  spec.crop_h = h;
  spec.crop_w = w;
  spec.resize_short = pre.resize > 0 ? pre.resize : static_cast<int>(std::lround(std::max(h, w) / 0.875));
  image::Image img;
  SYSTOLIC_RETURN_IF_ERROR(image::decode_file(path, &img));
  std::vector<uint8_t> hwc(std::size_t(h) * w * 3);
  SYSTOLIC_RETURN_IF_ERROR(image::resize_center_crop(img, spec, hwc.data(), scratch));
  if (u8) {
    std::memcpy(t->data.data() + b * hwc.size(), hwc.data(), hwc.size());
    return Status::Ok();
  }
  float* dst = t->as<float>() + b * 3 * h * w;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < h * w; ++i) dst[c * h * w + i] = (hwc[i * 3 + c] / 255.f - pre.mean[c]) / pre.std[c];
  return Status::Ok();
}

// How many of input `in` file tensor t holds: 1 where its type and shape are the input's, N
// where it stacks N of them on the first axis; 0: neither.
int64_t stacked(const runtime::HostTensor& t, const runtime::TensorInfo& in) {
  if (t.dtype != in.dtype || t.shape.size() != in.shape.size()) return 0;
  if (t.shape == in.shape) return 1;
  if (in.shape.empty() || in.shape[0] <= 0 || t.shape[0] <= 0 || t.shape[0] % in.shape[0] != 0 ||
      !std::equal(t.shape.begin() + 1, t.shape.end(), in.shape.begin() + 1))
    return 0;
  return t.shape[0] / in.shape[0];
}

}  // namespace

bool is_random_source(const std::vector<std::string>& sources, int* n) {
  if (sources.size() != 1 || sources[0].rfind("random:", 0) != 0) return false;
  const std::string num = sources[0].substr(7);
  if (num.empty() || num.size() > 6 || num.find_first_not_of("0123456789") != std::string::npos) return false;
  *n = std::stoi(num);
  return *n > 0;
}

Expected<std::string> sources_key(const std::vector<std::string>& sources) {
  int n = 0;
  if (is_random_source(sources, &n)) return "random:" + std::to_string(n);
  auto files = expand(sources);
  if (!files.ok()) return files.status();
  std::string key;
  for (const std::string& f : *files) {
    struct stat sb;
    if (stat(f.c_str(), &sb) != 0) return Err("cannot read calibration file %s", f.c_str());
    key += f + ":" + std::to_string(sb.st_size) + ":" + std::to_string(sb.st_mtim.tv_sec) + "." +
           std::to_string(sb.st_mtim.tv_nsec) + ";";
  }
  return key;
}

Expected<std::vector<std::vector<runtime::HostTensor>>> load_samples(const std::vector<std::string>& sources,
                                                                     const std::vector<runtime::TensorInfo>& inputs,
                                                                     const ir::ImagePreprocess& image, int limit,
                                                                     std::vector<std::string>* notes) {
  std::vector<std::vector<runtime::HostTensor>> sets;
  int n = 0;
  if (is_random_source(sources, &n)) {
    for (int i = 0; i < n; ++i) {
      std::vector<runtime::HostTensor> set;
      for (std::size_t k = 0; k < inputs.size(); ++k)
        set.push_back(runtime::random_tensor(inputs[k], 1000 + 100 * uint64_t(i) + k));
      sets.push_back(std::move(set));
    }
    return sets;
  }
  if (sources.size() == 1 && sources[0].rfind("random:", 0) == 0)
    return Err("calibration %s: expected random:N with N a positive number", sources[0].c_str());
  auto files = expand(sources);
  if (!files.ok()) return files.status();
  std::vector<std::string> images, tensors;
  for (const std::string& f : *files) (has_tensor_suffix(f) ? tensors : images).push_back(f);
  if (limit > 0) {
    if (static_cast<int>(images.size()) > limit) images.resize(limit);
    if (static_cast<int>(tensors.size()) > limit) tensors.resize(limit);
  }
  if (!images.empty() && inputs.size() != 1)
    return Err("calibration images need a model with one image input; this one has %zu inputs", inputs.size());
  // Tensor files: each one is a whole input (a model with one input) or one per input, in order;
  // a file may stack several inputs' worth on the leading axis (samples saved as one array:
  // [N, 3, 224, 224] for an input of [1, 3, 224, 224]), one set per slice, every input's file
  // stacking as many.
  if (!tensors.empty()) {
    if (tensors.size() % inputs.size())
      return Err("%zu tensor files do not divide among the model's %zu inputs", tensors.size(), inputs.size());
    for (std::size_t i = 0; i < tensors.size() && (limit <= 0 || sets.size() < std::size_t(limit));
         i += inputs.size()) {
      std::vector<runtime::HostTensor> files;
      int64_t slices = 0;
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        auto t = frontend::load_tensor(tensors[i + k]);
        if (!t.ok()) return t.status();
        const int64_t n = stacked(*t, inputs[k]);
        if (n == 0)
          return Err("tensor file %s is %s%s; input %s takes %s%s (or several stacked on the first axis)",
                     tensors[i + k].c_str(), ir::dtype_name(t->dtype), ir::shape_str(t->shape).c_str(),
                     inputs[k].name.c_str(), ir::dtype_name(inputs[k].dtype), ir::shape_str(inputs[k].shape).c_str());
        if (k > 0 && n != slices)
          return Err("tensor files %s and %s stack %lld and %lld inputs' worth: each set of files needs the same",
                     tensors[i].c_str(), tensors[i + k].c_str(), static_cast<long long>(slices),
                     static_cast<long long>(n));
        slices = n;
        files.push_back(std::move(*t));
      }
      if (slices == 1) {  // the files are the set: no copy
        sets.push_back(std::move(files));
        continue;
      }
      for (int64_t j = 0; j < slices && (limit <= 0 || sets.size() < std::size_t(limit)); ++j) {
        std::vector<runtime::HostTensor> set;
        for (std::size_t k = 0; k < inputs.size(); ++k) {
          runtime::HostTensor one = runtime::HostTensor::zeros(inputs[k].dtype, inputs[k].shape);
          std::memcpy(one.data.data(), files[k].data.data() + j * one.data.size(), one.data.size());
          set.push_back(std::move(one));
        }
        sets.push_back(std::move(set));
      }
    }
  }
  if (!images.empty()) {
    const runtime::TensorInfo& in = inputs[0];
    const int64_t batch = in.shape.empty() ? 1 : in.shape[0];
    image::Scratch scratch;
    runtime::HostTensor t = runtime::HostTensor::zeros(in.dtype, in.shape);
    int64_t filled = 0;
    for (const std::string& f : images) {
      Status st = put_image(f, image, in, filled, &t, &scratch);
      if (!st.ok()) {
        if (st.message().find("need") != std::string::npos) return st;  // a setup error, not a bad file
        if (notes) notes->push_back("skipped " + f + ": " + st.message());
        continue;
      }
      if (++filled == batch) {
        sets.push_back({t});
        filled = 0;
      }
    }
    if (filled > 0) {  // a last partial batch repeats its images to fill the slots
      const std::size_t per = t.data.size() / static_cast<std::size_t>(batch);
      for (int64_t b = filled; b < batch; ++b)
        std::memcpy(t.data.data() + b * per, t.data.data() + (b % filled) * per, per);
      sets.push_back({t});
    }
  }
  if (sets.empty()) return Err("no usable calibration sample in the data given");
  if (limit > 0 && sets.size() > std::size_t(limit)) sets.resize(std::size_t(limit));  // whole files past it
  return sets;
}

}  // namespace systolic::quantize

// The systolic library API: open a model (an .onnx through the compile cache, or a compiled
// .plan), choose its precision, batch, threads and instances (or take the saved `systolic tune`
// recommendation), run it, and read what loading did. The CLI, the server and the Python
// module are thin shells over this header; nothing here exposes the compiler's internals.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "systolic/status.h"

namespace systolic {

// Element types, numbered as ONNX's TensorProto.DataType.
enum class DType : uint8_t {
  undefined = 0, f32 = 1, u8 = 2, i8 = 3, u16 = 4, i16 = 5, i32 = 6, i64 = 7, string = 8,
  boolean = 9, f16 = 10, f64 = 11, u32 = 12, u64 = 13, bf16 = 16,
};
std::size_t dtype_size(DType t);
const char* dtype_name(DType t);  // numpy's spelling: "float32", "uint8", ...

struct TensorSpec {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;  // as run() takes or gives it, batch dimension first; an output
                               // shaped by its values (detections) has -1 where run() decides
  int64_t elements() const;    // -1 when a dim is -1
  std::size_t bytes() const { return elements() < 0 ? 0 : static_cast<std::size_t>(elements()) * dtype_size(dtype); }
};

// A tensor owned by the caller (the convenient, allocating form of run()).
struct Tensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

struct ModelOptions {
  std::string precision;   // "" automatic (int8 for a quantized model, else fp32), fp32, bf16, int8
  int64_t batch = 0;       // 0: the tuned batch, else a .plan's own, else 1
  // An .onnx's batch runs as batch / micro_batch runs of the network compiled for
  // micro_batch; 0: the compiler chooses (items independent, activations fit the caches).
  int64_t micro_batch = 0;
  int threads = 0;         // per session; 0: the tuned split, else every core
  int instances = 0;       // concurrent sessions a server should run; 0: tuned, else 1
  std::string preprocess;  // "imagenet": the input is uint8 RGB images (NHWC), normalised inside
                           // (an .onnx; a .plan's preprocessing was fixed when it was compiled)
  std::map<std::string, std::vector<int64_t>> shapes;  // binds symbolic input dimensions
  bool use_cache = true;   // the compile cache (for an .onnx)
  bool use_tuned = true;   // default batch/threads/instances from `systolic tune`'s saved choice
  // int8 of a float model: calibration data (a directory of images, .npy files, "random:N").
  std::vector<std::string> calibration;
  std::string calibration_method = "minmax";  // minmax, percentile, entropy
  std::vector<std::string> keep_fp32;         // node names kept in float
};

// What opening a model did.
struct LoadReport {
  bool compiled = false;    // an .onnx (false: a .plan read as it is)
  bool cache_hit = false;   // the plan came from the compile cache
  std::string cache_path;   // the cache entry ("" when caching was off or failed)
  std::string note;         // why caching was skipped or an entry ignored
  double compile_ms = 0, load_ms = 0;
  std::string tuned_path;   // the tune recommendation applied ("" if none)
  std::vector<std::string> notes;  // anything else worth telling the user (int8 calibrated on
                                   // random inputs, calibration files skipped, tuned entry ignored)
};

// A uint8 image input's preprocessing (a model opened with `preprocess`): torchvision's
// Resize(resize) + CenterCrop(crop_h, crop_w), then (x / 255 - mean) / std inside the plan.
struct ImageSpec {
  int resize = 0, crop_h = 0, crop_w = 0;
  std::vector<float> mean, std;
};

class Session;

class Model {
 public:
  // Errors name the file and what is wrong (unreadable, malformed, unsupported op, ...).
  static Expected<std::shared_ptr<Model>> open(const std::string& path, const ModelOptions& opts = {});

  const std::string& path() const;
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  int64_t batch() const;
  const std::string& precision() const;  // fp32, bf16 or int8
  int threads() const;                   // per session
  int instances() const;
  bool image_input() const;              // inputs()[0] is uint8 NHWC images
  const ImageSpec& image() const;        // meaningful when image_input()
  const LoadReport& report() const;
  double flops() const;                  // per run (2 per multiply-accumulate)

  // A session of this model on `threads` threads (0: threads()). Sessions share the weights.
  Expected<std::unique_ptr<Session>> new_session(int threads = 0) const;
  Status save(const std::string& plan_path) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  friend struct ModelAccess;  // builds a Model around an Impl (src/api)
  std::shared_ptr<Impl> impl_;
};

class Session {
 public:
  ~Session();
  const std::vector<TensorSpec>& inputs() const;
  const std::vector<TensorSpec>& outputs() const;
  // The steady-state path: inputs[k] points at inputs()[k].bytes() bytes, outputs[k] at
  // outputs()[k].bytes() writable bytes; no allocation. An output shaped by its values (a
  // dim of -1) needs the allocating run() below.
  Status run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  // run() with each input given as rows along its batch dimension: rows[k] holds n pointers to
  // inputs()[k].bytes() / n bytes each, a null one a row of zeros (padding). What a server
  // merging requests calls: the rows go straight into the model's input, copied in parallel.
  Status run_rows(const std::vector<std::vector<const void*>>& rows, const std::vector<void*>& outputs);
  // Inputs by name, outputs in order; checks dtypes and shapes.
  Expected<std::vector<Tensor>> run(const std::vector<std::pair<std::string, Tensor>>& inputs);

  struct Impl;
  Impl& impl() { return *impl_; }

 private:
  friend class Model;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Decodes a JPEG or PNG file held in memory and resizes and crops it as `model` expects, into
// one row of its image input (crop_h * crop_w * 3 bytes). Errors say what is wrong with it.
Status load_image(const Model& model, const void* bytes, std::size_t size, uint8_t* row);

// The CPU and the kernel each precision uses here, as `systolic info` prints it.
std::string host_info();

}  // namespace systolic

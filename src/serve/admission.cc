// Validating a request against the model before it may queue: names, types, shapes, sizes,
// requested outputs, and JPEG/PNG items decoded into the image input. Nothing that fails here
// reaches a batch.
#include <algorithm>
#include <cstring>

#include "serve/model_runner.h"

namespace systolic::serve {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

Error invalid(std::string m) { return Error{Code::invalid_argument, std::move(m)}; }

// Splits a BYTES tensor's raw form (4-byte little-endian length + bytes, per element).
std::optional<Error> split_bytes(const std::string& raw, int64_t n, const std::string& name,
                                 std::vector<std::pair<const uint8_t*, std::size_t>>* items) {
  std::size_t at = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (raw.size() - at < 4) return invalid("input " + name + ": BYTES data ends before element " + std::to_string(k));
    uint32_t len = 0;
    for (int b = 0; b < 4; ++b) len |= static_cast<uint32_t>(static_cast<uint8_t>(raw[at + b])) << (8 * b);
    at += 4;
    if (raw.size() - at < len)
      return invalid("input " + name + ": BYTES element " + std::to_string(k) + " is cut short");
    items->emplace_back(reinterpret_cast<const uint8_t*>(raw.data() + at), len);
    at += len;
  }
  if (at != raw.size()) return invalid("input " + name + ": BYTES data holds more than its shape's elements");
  return std::nullopt;
}

}  // namespace

std::optional<Error> ModelRunner::admit(InferRequest& req, Pending* p) const {
  const Model& m0 = *ladder_.front();
  p->inputs.assign(in_meta_.size(), std::string());
  std::vector<bool> seen(in_meta_.size(), false);
  int64_t rows = -1;
  for (WireTensor& t : req.inputs) {
    std::size_t k = 0;
    while (k < in_meta_.size() && in_meta_[k].name != t.name) ++k;
    if (k == in_meta_.size()) {
      std::string names;
      for (const auto& mt : in_meta_) names += (names.empty() ? "" : ", ") + mt.name;
      return invalid("unexpected input '" + t.name + "' for model " + name_ + " (inputs: " + names + ")");
    }
    if (seen[k]) return invalid("input '" + t.name + "' given twice");
    seen[k] = true;
    const TensorMeta& meta = in_meta_[k];
    const bool images = k == 0 && m0.image_input() && t.datatype == "BYTES";
    int64_t n = 1;
    if (images) {
      if (t.shape.size() != 1 || t.shape[0] < 1)
        return invalid("input '" + t.name + "': JPEG/PNG images go as a BYTES tensor of shape [N], not " +
                       shape_str(t.shape));
      n = t.shape[0];
      if (!batched_ && n != 1) return invalid("input '" + t.name + "': this model takes one image per request");
    } else {
      if (t.datatype != meta.datatype)
        return invalid("input '" + t.name + "': datatype " + t.datatype + ", model expects " + meta.datatype +
                       (k == 0 && m0.image_input() ? " (or BYTES holding JPEG/PNG files)" : ""));
      bool ok = t.shape.size() == meta.shape.size();
      for (std::size_t d = batched_ ? 1 : 0; ok && d < t.shape.size(); ++d) ok = t.shape[d] == meta.shape[d];
      if (ok && batched_) ok = t.shape[0] >= 1;
      if (!ok) return invalid("input '" + t.name + "': shape " + shape_str(t.shape) + ", model expects " +
                              shape_str(meta.shape));
      if (batched_) n = t.shape[0];
    }
    if (batched_ && n > settings_.max_batch_size)
      return invalid("input '" + t.name + "': batch " + std::to_string(n) + " is larger than max_batch_size " +
                     std::to_string(settings_.max_batch_size));
    if (rows >= 0 && n != rows) return invalid("inputs disagree on the batch size");
    rows = n;
    if (images) {
      std::vector<std::pair<const uint8_t*, std::size_t>> items;
      if (auto e = split_bytes(t.data, n, t.name, &items)) return e;
      std::string rowsbuf(static_cast<std::size_t>(n) * in_row_[k], '\0');
      for (int64_t i = 0; i < n; ++i) {
        Status st = load_image(m0, items[i].first, items[i].second,
                               reinterpret_cast<uint8_t*>(rowsbuf.data()) + static_cast<std::size_t>(i) * in_row_[k]);
        if (!st.ok()) return invalid("input '" + t.name + "' item " + std::to_string(i) + ": " + st.message());
      }
      p->inputs[k] = std::move(rowsbuf);
    } else {
      const std::size_t want = static_cast<std::size_t>(n) * in_row_[k];
      if (t.data.size() != want)
        return invalid("input '" + t.name + "': " + std::to_string(t.data.size()) + " bytes of data, shape " +
                       shape_str(t.shape) + " of " + t.datatype + " needs " + std::to_string(want));
      p->inputs[k] = std::move(t.data);
    }
  }
  for (std::size_t k = 0; k < seen.size(); ++k)
    if (!seen[k]) return invalid("input '" + in_meta_[k].name + "' is missing");
  p->rows = rows;

  if (req.outputs.empty()) {
    for (std::size_t k = 0; k < out_meta_.size(); ++k) {
      p->outputs.push_back(static_cast<int>(k));
      p->classification.push_back(0);
      p->binary.push_back(false);
    }
  }
  for (const RequestedOutput& o : req.outputs) {
    std::size_t k = 0;
    while (k < out_meta_.size() && out_meta_[k].name != o.name) ++k;
    if (k == out_meta_.size()) return invalid("unknown output '" + o.name + "' of model " + name_);
    if (o.classification < 0) return invalid("output '" + o.name + "': classification must be positive");
    if (o.classification > 0 && out_meta_[k].datatype != "FP32")
      return invalid("output '" + o.name + "': classification needs an FP32 output, not " + out_meta_[k].datatype);
    if (o.classification > 0 && run_shaped_ &&
        std::count(out_meta_[k].shape.begin(), out_meta_[k].shape.end(), int64_t{-1}) > 0)
      return invalid("output '" + o.name + "': classification needs an output of fixed shape, and this one is "
                     "shaped by each run");
    p->outputs.push_back(static_cast<int>(k));
    p->classification.push_back(o.classification);
    p->binary.push_back(o.binary);
  }
  p->id = req.id;
  p->admitted = Clock::now();
  if (req.timeout_us > 0) p->deadline = p->admitted + std::chrono::microseconds(req.timeout_us);
  return std::nullopt;
}

}  // namespace systolic::serve

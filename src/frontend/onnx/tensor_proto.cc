// TensorProto <-> ir::Tensor.
#include "frontend/onnx/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/half.h"

namespace systolic::frontend {
namespace {

template <typename Dst, typename Field>
void copy_field(const Field& f, AlignedBytes* out) {
  out->resize(f.size() * sizeof(Dst));
  Dst* d = reinterpret_cast<Dst*>(out->data());
  for (int i = 0; i < f.size(); ++i) d[i] = static_cast<Dst>(f.Get(i));
}

// A decimal external_data value (offset, length): ONNX stores them as strings.
bool parse_size(const std::string& s, int64_t* out) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoll(s);
  return true;
}

Status read_external(const onnx::TensorProto& tp, const std::string& base_dir, std::size_t bytes,
                     AlignedBytes* out) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if ((kv.key() == "offset" && !parse_size(kv.value(), &offset)) ||
        (kv.key() == "length" && !parse_size(kv.value(), &length)))
      return Err("tensor %s: external data %s '%s' is not a byte count", tp.name().c_str(), kv.key().c_str(),
                 kv.value().c_str());
  }
  if (location.empty()) return Err("tensor %s: external data without a location", tp.name().c_str());
  // A NUL would cut the name short when the file is opened (the folder itself, say).
  if (location.find('\0') != std::string::npos)
    return Err("tensor %s: external data location holds a NUL byte", tp.name().c_str());
  if (location.find("..") != std::string::npos || location[0] == '/')
    return Err("tensor %s: external data location '%s' leaves the model's folder",
               tp.name().c_str(), location.c_str());
  std::string path = (base_dir.empty() ? "." : base_dir) + "/" + location;
  // Only a regular file has a size to check offsets against: a folder's or a device's is not one.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return Err("tensor %s: external data %s is not a regular file", tp.name().c_str(), path.c_str());
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return Err("tensor %s: cannot open external data file %s", tp.name().c_str(), path.c_str());
  if (length >= 0 && static_cast<std::size_t>(length) != bytes)
    return Err("tensor %s: external data length %lld does not match its shape (%zu bytes)",
               tp.name().c_str(), static_cast<long long>(length), bytes);
  // Checked before allocating: a shape or offset past the file is a malformed model.
  const auto file_size = static_cast<uint64_t>(std::max<std::streamoff>(0, f.tellg()));
  if (static_cast<uint64_t>(offset) > file_size || bytes > file_size - static_cast<uint64_t>(offset))
    return Err("tensor %s: external data (offset %lld, %zu bytes) runs past the end of %s (%llu bytes)",
               tp.name().c_str(), static_cast<long long>(offset), bytes, path.c_str(),
               static_cast<unsigned long long>(file_size));
  out->resize(bytes);
  f.seekg(offset);
  f.read(reinterpret_cast<char*>(out->data()), static_cast<std::streamsize>(bytes));
  if (static_cast<std::size_t>(f.gcount()) != bytes)
    return Err("tensor %s: external data file %s is too short", tp.name().c_str(), path.c_str());
  return Status::Ok();
}

}  // namespace

Expected<ir::Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& base_dir) {
  ir::Tensor t;
  t.name = tp.name();
  t.dtype = static_cast<ir::DType>(tp.data_type());
  t.shape_known = true;
  for (int64_t d : tp.dims()) {
    if (d < 0) return Err("tensor %s: negative dimension", tp.name().c_str());
    t.shape.push_back(d);
  }
  if (!ir::dtype_storable(t.dtype))
    return Err("tensor %s: element type %s is not supported", tp.name().c_str(),
               ir::dtype_name(t.dtype));
  const int64_t numel = ir::checked_num_elements(t.shape);
  if (numel < 0)
    return Err("tensor %s: shape %s has more than 2^36 elements", tp.name().c_str(), ir::shape_str(t.shape).c_str());
  const std::size_t bytes = static_cast<std::size_t>(numel) * ir::dtype_size(t.dtype);
  auto data = std::make_shared<AlignedBytes>();
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    SYSTOLIC_RETURN_IF_ERROR(read_external(tp, base_dir, bytes, data.get()));
  } else if (tp.has_raw_data()) {
    if (tp.raw_data().size() != bytes)
      return Err("tensor %s: raw data has %zu bytes, its shape %s needs %zu", tp.name().c_str(),
                 tp.raw_data().size(), ir::shape_str(t.shape).c_str(), bytes);
    data->assign(tp.raw_data().begin(), tp.raw_data().end());
  } else {
    switch (t.dtype) {
      case ir::DType::f32: copy_field<float>(tp.float_data(), data.get()); break;
      case ir::DType::f64: copy_field<double>(tp.double_data(), data.get()); break;
      case ir::DType::i64: copy_field<int64_t>(tp.int64_data(), data.get()); break;
      case ir::DType::i32: copy_field<int32_t>(tp.int32_data(), data.get()); break;
      case ir::DType::u8: case ir::DType::boolean: copy_field<uint8_t>(tp.int32_data(), data.get()); break;
      case ir::DType::i8: copy_field<int8_t>(tp.int32_data(), data.get()); break;
      case ir::DType::u16: case ir::DType::f16: case ir::DType::bf16:  // half bits in int32_data
        copy_field<uint16_t>(tp.int32_data(), data.get());
        break;
      case ir::DType::i16: copy_field<int16_t>(tp.int32_data(), data.get()); break;
      case ir::DType::u32: copy_field<uint32_t>(tp.uint64_data(), data.get()); break;
      case ir::DType::u64: copy_field<uint64_t>(tp.uint64_data(), data.get()); break;
      default: return Err("tensor %s: unsupported storage", tp.name().c_str());
    }
    if (data->size() != bytes)
      return Err("tensor %s: holds %zu values, its shape %s needs %lld", tp.name().c_str(),
                 data->size() / ir::dtype_size(t.dtype), ir::shape_str(t.shape).c_str(),
                 static_cast<long long>(t.numel()));
  }
  if (ir::is_half(t.dtype)) {  // constants compute in float32 (frontend/onnx/half_precision.cc)
    auto wide = std::make_shared<AlignedBytes>(data->size() * 2);
    const auto* h = reinterpret_cast<const uint16_t*>(data->data());
    for (std::size_t i = 0; i < data->size() / 2; ++i) {
      const float v = ir::half_to_float(t.dtype, h[i]);
      std::memcpy(wide->data() + 4 * i, &v, 4);
    }
    t.dtype = ir::DType::f32;
    data = std::move(wide);
  }
  t.data = std::move(data);
  return t;
}

void tensor_to_proto(const ir::Tensor& t, onnx::TensorProto* tp) {
  tp->set_name(t.name);
  tp->set_data_type(static_cast<int>(t.dtype));
  for (int64_t d : t.shape) tp->add_dims(d);
  if (t.data) tp->set_raw_data(t.data->data(), t.data->size());
}

}  // namespace systolic::frontend

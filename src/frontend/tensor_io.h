// Tensor files: load NumPy .npy or ONNX TensorProto .pb into a HostTensor; save either format.
#pragma once
#include <string>

#include "base/status.h"
#include "runtime/host_tensor.h"

namespace systolic::frontend {

// Reads a .npy (format 1.0/2.0/3.0, little-endian, C order; f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)
// or an ONNX TensorProto (.pb; raw_data or the typed fields). The format is chosen by content:
// files starting with "\x93NUMPY" are .npy, everything else is parsed as a TensorProto.
// Every malformed file gives an error naming the file and the problem.
Expected<runtime::HostTensor> load_tensor(const std::string& path);
// The same from bytes in memory; `where` names them in errors.
Expected<runtime::HostTensor> parse_tensor(const std::string& bytes, const std::string& where);

// Writes NumPy format 1.0 (2.0 only if the header would not fit), data aligned to 64 bytes.
// A bfloat16 tensor is written as its uint16 bits (numpy has no bfloat16).
Status save_npy(const std::string& path, const runtime::HostTensor& t);

// Writes an ONNX TensorProto with the given name, dims and raw_data.
Status save_pb(const std::string& path, const runtime::HostTensor& t, const std::string& name);

}  // namespace systolic::frontend

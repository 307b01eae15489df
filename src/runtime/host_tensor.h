// A tensor in host memory owned by the caller: what Session::run takes and returns.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "ir/dtype.h"
#include "ir/graph.h"

namespace systolic::runtime {

struct HostTensor {
  ir::DType dtype = ir::DType::f32;
  ir::Shape shape;
  std::vector<uint8_t> data;

  int64_t numel() const { return ir::num_elements(shape); }
  template <typename T>
  T* as() { return reinterpret_cast<T*>(data.data()); }
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data.data()); }

  static HostTensor zeros(ir::DType t, ir::Shape s) {
    HostTensor h;
    h.dtype = t;
    h.shape = std::move(s);
    h.data.assign(static_cast<std::size_t>(h.numel()) * ir::dtype_size(t), 0);
    return h;
  }
};

}  // namespace systolic::runtime

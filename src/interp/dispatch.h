// Helpers the reference op families share: a runtime-dtype switch and numpy-broadcast
// iteration.
#pragma once
#include <cstdint>
#include <vector>

#include "interp/eval.h"

namespace systolic::interp {

// Calls f.template operator()<T>() for the runtime dtype (bool as uint8_t).
template <typename F>
Status dispatch(ir::DType t, F&& f) {
  using ir::DType;
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    case DType::i32: return f.template operator()<int32_t>();
    case DType::i64: return f.template operator()<int64_t>();
    case DType::u8: case DType::boolean: return f.template operator()<uint8_t>();
    case DType::i8: return f.template operator()<int8_t>();
    case DType::u16: return f.template operator()<uint16_t>();
    case DType::i16: return f.template operator()<int16_t>();
    case DType::u32: return f.template operator()<uint32_t>();
    case DType::u64: return f.template operator()<uint64_t>();
    default: return Err("element type %s is not supported", ir::dtype_name(t));
  }
}

// Visits every output element with the offsets of each input under broadcasting.
template <typename F>
void for_each_broadcast(const ir::Shape& out, const std::vector<const ir::Shape*>& ins, F&& f) {
  const int r = static_cast<int>(out.size());
  std::vector<std::vector<int64_t>> st;
  for (const ir::Shape* s : ins) st.push_back(broadcast_strides(*s, out));
  std::vector<int64_t> idx(r, 0), off(ins.size(), 0);
  const int64_t total = ir::num_elements(out);
  for (int64_t e = 0; e < total; ++e) {
    f(e, off);
    for (int d = r - 1; d >= 0; --d) {
      ++idx[d];
      for (std::size_t k = 0; k < ins.size(); ++k) off[k] += st[k][d];
      if (idx[d] < out[d]) break;
      for (std::size_t k = 0; k < ins.size(); ++k) off[k] -= st[k][d] * out[d];
      idx[d] = 0;
    }
  }
}

// The model's opset as the importer stamped it on the node ("_opset"); 13 when absent.
inline int node_opset(const ir::Node& n) { return static_cast<int>(n.i("_opset", 13)); }

}  // namespace systolic::interp

// Element types: the public enum is numbered as the IR's (both follow ONNX), so sizes and
// names come from there.
#include "ir/dtype.h"
#include "systolic/systolic.h"

namespace systolic {

std::size_t dtype_size(DType t) { return ir::dtype_size(static_cast<ir::DType>(t)); }
const char* dtype_name(DType t) { return ir::dtype_name(static_cast<ir::DType>(t)); }

int64_t TensorSpec::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

}  // namespace systolic

// Reference kernels and shape rules of the spatial family (ops.inc lists its ops).
#include "interp/dispatch.h"
#include "interp/eval.h"

namespace systolic::interp {

Status infer_spatial(const ir::Node& n, const std::vector<TensorRef>&, std::vector<ir::Shape>*, std::vector<ir::DType>*) {
  return Err("%s %s: not supported yet", ir::op_name(n.op), n.name.c_str());
}

Status eval_spatial(const ir::Node& n, const std::vector<TensorRef>&, const std::vector<TensorRef>&) {
  return Err("%s %s: not supported yet", ir::op_name(n.op), n.name.c_str());
}

}  // namespace systolic::interp

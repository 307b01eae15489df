// The quantization ops' rules in one place for shape inference and the interpreter: which
// input types they take, how scales and zero points may be shaped against the tensors they
// quantize, and the dtypes and shapes of their outputs.
#pragma once
#include <vector>

#include "interp/eval.h"

namespace systolic::interp {

bool is_quant_op(ir::Op op);

// A scale or zero point holding one value for the whole tensor: a scalar or a 1-element 1-D.
bool per_tensor_shape(const ir::Shape& s);

// QuantizeLinear / DequantizeLinear: scale and zero point (absent: dtype undefined) per tensor,
// or 1-D with x's size along the attribute `axis` (default 1). *axis is -1 per tensor.
Status linear_quant_axis(const ir::Node& n, const TensorRef& x, const TensorRef& scale, const TensorRef& zp,
                         int64_t* axis);

// The scale or zero point of a quantized matmul operand (`is_a`: A [..., M, K], else B
// [..., K, N]; 1-D operands promoted as MatMul does) written at the operand's rank:
// [1.., 1, 1] per tensor, [.., M, 1] per row of A, [.., 1, N] per column of B.
Status matmul_quant_shape(const ir::Node& n, const char* what, const ir::Shape& operand, bool is_a,
                          const ir::Shape& param, ir::Shape* full);

// Checks a quantization op's inputs (an omitted optional input has dtype undefined) and gives
// each of its outputs' dtype and shape.
Status infer_quant(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                   std::vector<ir::DType>* dtypes);

}  // namespace systolic::interp

// float16 and bfloat16: element types a graph holds only at its inputs and outputs and as Cast
// targets. Nothing computes in them: frontend/onnx/half_precision.cc has a model compute in
// float32 and round wherever the model casts to a half type, so these are storage formats.
#pragma once
#include <cstdint>

#include "ir/dtype.h"

namespace systolic::ir {

inline bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }

// Types a graph may hold: the interpreter's, and the half types at Cast steps and the edges.
inline bool dtype_storable(DType t) { return dtype_supported(t) || is_half(t); }

// The value of half-type bits (exact: every float16 and bfloat16 is a float32).
float half_to_float(DType t, uint16_t bits);

// x rounded to the nearest value of half type t, ties to even, from double so that no earlier
// rounding can move a tie (a float64 Cast source); beyond the largest finite value it is an
// infinity, a NaN stays a NaN (quiet, sign kept).
uint16_t half_from_double(DType t, double x);

}  // namespace systolic::ir

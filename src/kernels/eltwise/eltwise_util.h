// Shared plain (no ISA flags) pieces of the element-wise kernels: parameter checks and the driver
// that splits [0, n) into broadcast segments and pool chunks. Implemented in eltwise.cc.
#pragma once
#include <cstdint>
#include <string>

#include "kernels/eltwise/eltwise.h"

namespace systolic::kernels {

// y[0, len) = act(op(a[0, len), b)): b is a vector b[0, len) or, in scalar variants, b[0].
using EltwiseSegFn = void (*)(const float* a, const float* b, float* y, int64_t len, const Epilogue&);

bool eltwise_reject(std::string* why, const char* reason);
bool eltwise_well_formed(const EltwiseParams&, std::string* why);

// Runs `vec` (b is a vector) and `scalar` (b is b[0]) segments over the whole output, in chunks
// over the pool when n is large.
void eltwise_drive(const EltwiseParams&, const float* a, const float* b, float* y, pthreadpool_t,
                   EltwiseSegFn vec, EltwiseSegFn scalar);

}  // namespace systolic::kernels

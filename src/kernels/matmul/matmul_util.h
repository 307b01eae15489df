// Checks shared by every matmul kernel's accepts(): the problem is well formed.
#pragma once
#include <string>

#include "kernels/matmul/matmul.h"

namespace systolic::kernels {

inline bool matmul_reject(std::string* why, const char* msg) {
  if (why) *why = msg;
  return false;
}

inline bool matmul_well_formed(const MatMulParams& p, std::string* why) {
  if (p.batch < 1 || p.m < 1 || p.n < 1 || p.k < 0) return matmul_reject(why, "non-positive size");
  if (p.lda < p.k || p.ldb < p.n || p.ldc < p.n) return matmul_reject(why, "row stride below the row length");
  if (p.a_batch < 0 || p.b_batch < 0 || (p.batch > 1 && p.c_batch < p.m * p.ldc))
    return matmul_reject(why, "batch stride overlaps");
  return true;
}

}  // namespace systolic::kernels

// Checks shared by every norm kernel's accepts(): the problem is well formed.
#pragma once
#include <string>

#include "kernels/norm/norm.h"

namespace systolic::kernels {

inline bool norm_reject(std::string* why, const char* msg) {
  if (why) *why = msg;
  return false;
}

inline bool norm_well_formed(const NormParams& p, std::string* why) {
  if (p.rows < 1 || p.n < 1) return norm_reject(why, "non-positive size");
  if (p.kind == NormKind::layer_norm && !(p.epsilon >= 0.f)) return norm_reject(why, "negative epsilon");
  return true;
}

}  // namespace systolic::kernels

// Checks shared by every pool kernel's accepts(): the problem is well formed.
#pragma once
#include <string>

#include "kernels/pool/pool.h"

namespace systolic::kernels {

inline bool pool_reject(std::string* why, const char* msg) {
  if (why) *why = msg;
  return false;
}

inline bool pool_well_formed(const PoolParams& p, std::string* why) {
  if (p.n < 1 || p.ih < 1 || p.iw < 1 || p.c < 1 || p.oh < 1 || p.ow < 1 || p.kh < 1 ||
      p.kw < 1 || p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1)
    return pool_reject(why, "non-positive size");
  if (p.pad_t < 0 || p.pad_l < 0 || p.pad_b < 0 || p.pad_r < 0)
    return pool_reject(why, "negative pad");
  if ((p.src_stride && p.src_stride < p.c) || (p.dst_stride && p.dst_stride < p.c))
    return pool_reject(why, "pixel stride < c");
  return true;
}

// The float kernels take float storage; the bf16 ones bf16 storage, for max pools only (an
// average would round).
inline bool pool_storage(const PoolParams& p, bool bf16, std::string* why) {
  if (p.bf16 != bf16) return pool_reject(why, bf16 ? "bf16 storage only" : "float storage only");
  if (bf16 && p.kind != PoolKind::max) return pool_reject(why, "bf16 storage for max pools only");
  return true;
}

}  // namespace systolic::kernels

// Checks shared by every conv kernel's accepts(): the problem is well formed.
#pragma once
#include <string>

#include "kernels/conv/conv.h"

namespace systolic::kernels {

inline bool conv_reject(std::string* why, const char* msg) {
  if (why) *why = msg;
  return false;
}

inline bool conv_well_formed(const ConvParams& p, std::string* why, bool bf16_io_ok = false) {
  if (p.n < 1 || p.ih < 1 || p.iw < 1 || p.ic < 1 || p.oh < 1 || p.ow < 1 || p.oc < 1 ||
      p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1 || p.groups < 1)
    return conv_reject(why, "non-positive size");
  if (p.ic % p.groups || p.oc % p.groups) return conv_reject(why, "channels not divisible by groups");
  if (p.src_stride && p.src_stride < p.ic) return conv_reject(why, "src_stride < ic");
  if (p.dst_stride && p.dst_stride < p.oc) return conv_reject(why, "dst_stride < oc");
  if (p.res_stride && p.res_stride < p.oc) return conv_reject(why, "res_stride < oc");
  if (p.src_u8 && p.src_stride && p.src_stride != p.ic) return conv_reject(why, "uint8 source must be dense");
  if (p.bf16_io && !bf16_io_ok) return conv_reject(why, "tensors stored as bf16: only the AMX bf16 kernel takes them");
  if (p.bf16_io & ~(kBf16Src | kBf16Dst | kBf16Res) || (p.src_u8 && (p.bf16_io & kBf16Src)))
    return conv_reject(why, "unknown bf16 storage bits");
  return true;
}

}  // namespace systolic::kernels

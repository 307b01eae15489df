// The conv kernel list (from conv.inc) and dispatch: first kernel that accepts, with reasons.
#include "kernels/conv/conv.h"

#include <span>

namespace systolic::kernels {

#define SYSTOLIC_CONV_KERNEL(k) extern const ConvKernel k;
#include "kernels/conv/conv.inc"
#undef SYSTOLIC_CONV_KERNEL

// A function-local copy: built on first use, after the (constant-initialized) entries.
const ConvKernel* conv_kernels(std::size_t* count) {
  static const ConvKernel kKernels[] = {
#define SYSTOLIC_CONV_KERNEL(k) k,
#include "kernels/conv/conv.inc"
#undef SYSTOLIC_CONV_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const ConvKernel* conv_select(const ConvParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const ConvKernel* all = conv_kernels(&n);
  for (const ConvKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const ConvKernel* conv_find(const std::string& name) {
  std::size_t n;
  const ConvKernel* all = conv_kernels(&n);
  for (const ConvKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace systolic::kernels

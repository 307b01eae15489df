// The bf16 conv kernel list (from bconv.inc) and dispatch: first kernel that accepts, with reasons.
#include <span>

#include "kernels/bconv/bconv.h"

namespace systolic::kernels {

#define SYSTOLIC_BCONV_KERNEL(k) extern const ConvKernel k;
#include "kernels/bconv/bconv.inc"
#undef SYSTOLIC_BCONV_KERNEL

// A function-local copy: built on first use, after the (constant-initialized) entries.
const ConvKernel* bconv_kernels(std::size_t* count) {
  static const ConvKernel kKernels[] = {
#define SYSTOLIC_BCONV_KERNEL(k) k,
#include "kernels/bconv/bconv.inc"
#undef SYSTOLIC_BCONV_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const ConvKernel* bconv_select(const ConvParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const ConvKernel* all = bconv_kernels(&n);
  for (const ConvKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const ConvKernel* bconv_find(const std::string& name) {
  std::size_t n;
  const ConvKernel* all = bconv_kernels(&n);
  for (const ConvKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

bool bconv_is_reference(const ConvKernel* k) { return k && std::string(k->name) == "conv_bf16_ref"; }

}  // namespace systolic::kernels

// The int8 conv kernel list (from qconv.inc) and dispatch: first kernel that accepts, with reasons.
#include <span>

#include "kernels/qconv/qconv.h"

namespace systolic::kernels {

#define SYSTOLIC_QCONV_KERNEL(k) extern const QConvKernel k;
#include "kernels/qconv/qconv.inc"
#undef SYSTOLIC_QCONV_KERNEL

const QConvKernel* qconv_kernels(std::size_t* count) {
  static const QConvKernel kKernels[] = {
#define SYSTOLIC_QCONV_KERNEL(k) k,
#include "kernels/qconv/qconv.inc"
#undef SYSTOLIC_QCONV_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const QConvKernel* qconv_select(const QConvParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const QConvKernel* all = qconv_kernels(&n);
  for (const QConvKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const QConvKernel* qconv_find(const std::string& name) {
  std::size_t n;
  const QConvKernel* all = qconv_kernels(&n);
  for (const QConvKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace systolic::kernels

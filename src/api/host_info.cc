// host_info(): the detected CPU, the measured peak of each precision's instructions and which
// kernel each precision runs here (and why the faster ones do not), as `systolic info` prints it.
#include <cstdarg>
#include <cstdio>
#include <set>
#include <span>

#include "base/cpu.h"
#include "kernels/bconv/bconv.h"
#include "kernels/conv/conv.h"
#include "kernels/qconv/qconv.h"
#include "plan/program.h"
#include "sim/peak.h"
#include "systolic/systolic.h"

namespace systolic {
namespace {

__attribute__((format(printf, 2, 3))) void append(std::string* out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<std::size_t>(n) < sizeof buf) {
    out->append(buf, static_cast<std::size_t>(n));
    return;
  }
  std::string big(static_cast<std::size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.pop_back();
  *out += big;
}

// The typical conv the kernel lines are about: ResNet's 3x3, 64 -> 64 channels at 56x56.
kernels::ConvParams typical_conv() {
  kernels::ConvParams p;
  p.ih = p.iw = p.oh = p.ow = 56;
  p.ic = p.oc = 64;
  p.kh = p.kw = 3;
  p.pad_t = p.pad_l = 1;
  return p;
}

// The host with every instruction-set feature on: what a kernel accepts there, it rejects here
// only for the instructions this machine lacks.
CpuFeatures everything() {
  CpuFeatures f = host_cpu();
  f.avx2 = f.fma = f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512bf16 = f.avx512vnni = f.avx_vnni = true;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = true;
  return f;
}

// The kernel dispatch picks for `p` here (first of the list that accepts), and "no avx512-vnni
// or avx-vnni": the instruction sets of the faster kernels that would take this shape elsewhere.
template <typename Kernel, typename Params>
const Kernel* pick(const Kernel* list, std::size_t n, const Params& p, std::string* missing) {
  std::set<std::string> seen;
  for (const Kernel& k : std::span(list, n)) {
    std::string why, ignored;
    if (k.accepts(p, host_cpu(), &why)) return &k;
    if (!k.accepts(p, everything(), &ignored) || !why.starts_with("needs ")) continue;
    if (seen.insert(why.substr(6)).second) *missing += (missing->empty() ? "no " : " or ") + why.substr(6);
  }
  return nullptr;
}

// What an int8 conv kernel multiplies with, from its name's instruction-set suffix (the
// Winograd kernels multiply int16 transforms).
const char* int8_instruction(const std::string& kernel) {
  if (kernel.find("_winograd_") != std::string::npos) {
    if (kernel.ends_with("_avx512vnni")) return "exact int16 Winograd on vpdpwssd zmm";
    if (kernel.ends_with("_avxvnni")) return "exact int16 Winograd on vpdpwssd ymm";
    return "exact int16 Winograd on vpmaddwd";
  }
  if (kernel.ends_with("_amx")) return "tdpbusd tiles";
  if (kernel.ends_with("_avx512vnni")) return "vpdpbusd zmm";
  if (kernel.ends_with("_avxvnni")) return "vpdpbusd ymm";
  if (kernel.ends_with("_avx2")) return "exact int16 vpmaddwd";
  return "plain C++";
}

void kernel_lines(std::string* out) {
  const CpuFeatures& c = host_cpu();
  std::size_t n;
  std::string missing;
  // The list first: an argument list would read n before the call that sets it.
  const kernels::ConvKernel* fp32_list = kernels::conv_kernels(&n);
  const kernels::ConvKernel* f = pick(fp32_list, n, typical_conv(), &missing);
  append(out, "fp32 conv   %s%s%s%s\n", f ? f->name : "none", missing.empty() ? "" : " (", missing.c_str(),
         missing.empty() ? "" : ")");
  kernels::QConvParams q;
  q.conv = typical_conv();
  missing.clear();
  const kernels::QConvKernel* int8_list = kernels::qconv_kernels(&n);
  const kernels::QConvKernel* k = pick(int8_list, n, q, &missing);
  append(out, "int8 conv   %s", k ? k->name : "none");
  if (k) append(out, " (%s%s%s)", missing.c_str(), missing.empty() ? "" : ": ", int8_instruction(k->name));
  *out += "\n";
  // bf16: a bconv kernel (AMX, or vdpbf16ps where it measured faster than FMA), else the fp32
  // kernels on bf16-rounded values.
  missing.clear();
  const kernels::ConvKernel* bf16_list = kernels::bconv_kernels(&n);
  const kernels::ConvKernel* b = pick(bf16_list, n, typical_conv(), &missing);
  if (b && !kernels::bconv_is_reference(b)) {
    append(out, "bf16 conv   %s\n", b->name);
  } else {
    std::string why;
    const kernels::ConvKernel* vdp = kernels::bconv_find("conv_bf16_igemm_8x32_avx512bf16");
    if (vdp && c.has_avx512() && c.avx512bf16 && !vdp->accepts(typical_conv(), c, &why)) missing = why;
    append(out, "bf16 conv   %s on bf16-rounded values (%s)\n", f ? f->name : "none",
           missing.empty() ? "no bf16 arithmetic here" : missing.c_str());
  }
}

}  // namespace

std::string host_info() {
  const CpuFeatures& c = host_cpu();
  std::string out;
  append(&out, "cpu         %s\n", c.name.c_str());
  append(&out, "cores       %d\n", c.cores);
  append(&out, "caches      L1d %zu KiB, L2 %zu KiB, L3 %zu KiB\n", c.l1d_bytes / 1024, c.l2_bytes / 1024,
         c.l3_bytes / 1024);
  append(&out, "isa         avx2 %s, fma %s, avx-vnni %s, avx512 %s, avx512-bf16 %s, avx512-vnni %s, avx512-vbmi %s, "
         "amx-tile %s, amx-bf16 %s, amx-int8 %s\n",
         c.avx2 ? "yes" : "no", c.fma ? "yes" : "no", c.avx_vnni ? "yes" : "no", c.has_avx512() ? "yes" : "no",
         c.avx512bf16 ? "yes" : "no", c.avx512vnni ? "yes" : "no", c.avx512vbmi ? "yes" : "no", c.amx_tile ? "yes" : "no",
         c.amx_bf16 ? "yes" : "no", c.amx_int8 ? "yes" : "no");
  append(&out, "kernels     %s\n", plan::isa_name(c).c_str());
  // One line per precision, its fastest instruction first; the others it has below it.
  std::string last;
  for (const sim::MeasuredPeak& p : sim::measured_peaks(c.cores)) {
    char head[16] = "";
    if (p.precision != last) std::snprintf(head, sizeof head, "%s peak", p.precision.c_str());
    char value[32];
    std::snprintf(value, sizeof value, "%.0f %s/s", p.g_per_s, sim::ops_unit(p.precision));
    if (p.fallback)
      append(&out, "%-11s %-13s %s runs as %s here (the fp32 peak)\n", head, value, p.precision.c_str(),
             p.instruction.c_str());
    else
      append(&out, "%-11s %-13s %s%s\n", head, value, p.instruction.c_str(),
             last.empty() ? (", " + std::to_string(c.cores) + " threads at once (measured)").c_str() : "");
    last = p.precision;
  }
  kernel_lines(&out);
  return out;
}

}  // namespace systolic

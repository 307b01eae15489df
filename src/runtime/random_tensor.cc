// Seeded normal samples (Box-Muller over splitmix64) so runs are reproducible.
#include "runtime/random_tensor.h"

#include <cmath>

#include "ir/half.h"

namespace systolic::runtime {
namespace {
uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(uint64_t& s) { return (static_cast<double>(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
}  // namespace

HostTensor random_tensor(const TensorInfo& info, uint64_t seed) {
  HostTensor t = HostTensor::zeros(info.dtype, info.shape);
  uint64_t s = seed;
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double v = std::sqrt(-2.0 * std::log(uniform(s))) * std::cos(6.283185307179586 * uniform(s));
    switch (info.dtype) {
      case ir::DType::f32: t.as<float>()[i] = static_cast<float>(v); break;
      case ir::DType::f64: t.as<double>()[i] = v; break;
      case ir::DType::i64: t.as<int64_t>()[i] = static_cast<int64_t>(splitmix64(s) % 10); break;
      case ir::DType::i32: t.as<int32_t>()[i] = static_cast<int32_t>(splitmix64(s) % 10); break;
      case ir::DType::u8: t.as<uint8_t>()[i] = static_cast<uint8_t>(splitmix64(s) >> 56); break;  // image pixels
      case ir::DType::f16: case ir::DType::bf16: t.as<uint16_t>()[i] = ir::half_from_double(info.dtype, v); break;
      default: t.data[i * ir::dtype_size(info.dtype)] = static_cast<uint8_t>(splitmix64(s) & 1); break;
    }
  }
  return t;
}

}  // namespace systolic::runtime

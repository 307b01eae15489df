// Vector exp and sigmoid over a traits struct T (the element-wise family's, or the conv
// epilogue's VecAvx2 / VecAvx512): T provides zero, set1, add, sub, mul, div, fma, min, max, round (to
// nearest) and scale2 (p * 2^n). One definition, so SiLU applied in a conv's epilogue gives the
// element-wise step's bytes. Include only from ISA files (through those headers).
#pragma once

namespace systolic::kernels::vmath {

// exp(x), relative error ~2 ulp on the float range: Cephes' expf reduction and polynomial with
// the 2^n scale split in two so n = 128 overflows to inf and n = -150 reaches the denormals.
template <class T>
inline typename T::V exp(typename T::V x) {
  using V = typename T::V;
  x = T::min(T::max(x, T::set1(-104.f)), T::set1(89.f));
  const V n = T::round(T::mul(x, T::set1(1.44269504088896341f)));
  V r = T::fma(n, T::set1(-0.693359375f), x);
  r = T::fma(n, T::set1(2.12194440e-4f), r);
  V p = T::set1(1.9875691500e-4f);
  p = T::fma(p, r, T::set1(1.3981999507e-3f));
  p = T::fma(p, r, T::set1(8.3334519073e-3f));
  p = T::fma(p, r, T::set1(4.1665795894e-2f));
  p = T::fma(p, r, T::set1(1.6666665459e-1f));
  p = T::fma(p, r, T::set1(5.0000001201e-1f));
  p = T::fma(p, T::mul(r, r), T::add(r, T::set1(1.f)));
  return T::scale2(p, n);
}

template <class T>
inline typename T::V sigmoid(typename T::V x) {
  const auto one = T::set1(1.f);
  return T::div(one, T::add(one, exp<T>(T::sub(T::zero(), x))));
}

}  // namespace systolic::kernels::vmath

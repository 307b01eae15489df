// The tile step shared by the int8 and bf16 AMX drivers (qconv_amx.h, bconv_amx.h) over their
// traits T (tzero / tload / tstore / dot, real or emulated): one block of 32 pixels x 32 channels
// of 4-byte sums in tiles 0..3 (16 x 16 each), A rows in tiles 4 and 5, B in 6 and 7. The two
// agree in bytes: 64 bytes of K per step (64 u8 or 32 bf16), a panel row of 32 channels x 4 bytes
// (K4 or K2 packing), so the step is written once, on bytes.
#pragma once
#include <cstdint>

namespace systolic::kernels::amx {

// The sums start from zero (p null), from a stored block (ld: its row stride in bytes) or from a
// bias row repeated down the tiles (ld 0: a stride-0 load repeats its row).
template <class T>
inline void start(const void* p, long ld) {
  if (!p) {
    T::template tzero<0>(), T::template tzero<1>(), T::template tzero<2>(), T::template tzero<3>();
    return;
  }
  const auto* b = static_cast<const uint8_t*>(p);
  T::template tload<0>(b, ld), T::template tload<1>(b + 64, ld);
  T::template tload<2>(b + 16 * ld, ld), T::template tload<3>(b + 16 * ld + 64, ld);
}

// sums += the 32 A rows at a (row stride lda bytes) x the panel at w, over kbytes of K.
template <class T>
inline void sweep(const uint8_t* a, long lda, const uint8_t* w, long kbytes) {
  for (long kk = 0; kk < kbytes; kk += 64) {
    const uint8_t* b = w + kk * 32;  // 16 K groups of 32 channels x 4 bytes
    T::template tload<4>(a + kk, lda);
    T::template tload<5>(a + 16 * lda + kk, lda);
    T::template tload<6>(b, 128);
    T::template tload<7>(b + 64, 128);
    T::template dot<0, 4, 6>(), T::template dot<1, 4, 7>();
    T::template dot<2, 5, 6>(), T::template dot<3, 5, 7>();
  }
}

// The block's sums to p, rows ld bytes apart.
template <class T>
inline void store(void* p, long ld) {
  auto* b = static_cast<uint8_t*>(p);
  T::template tstore<0>(b, ld), T::template tstore<1>(b + 64, ld);
  T::template tstore<2>(b + 16 * ld, ld), T::template tstore<3>(b + 16 * ld + 64, ld);
}

}  // namespace systolic::kernels::amx

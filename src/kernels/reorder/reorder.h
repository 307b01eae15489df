// Layout reorders between NCHW and NHWC. Per image either is a matrix transpose: NCHW -> NHWC
// turns [C][H*W] into [H*W][C], NHWC -> NCHW the reverse. The reference walks the output in
// order, reading the input with a stride of a whole row; the blocked kernel moves square tiles
// (both sides stay in L1, each cache line is used whole) and splits them over the pool.
// Every form gives the same bytes: it is a copy.
#pragma once
#include <pthreadpool.h>

#include <cstdint>

namespace systolic::kernels {

// dims: N, C, H, W of the logical (NCHW) shape; to_nhwc: 1 NCHW -> NHWC, 0 NHWC -> NCHW.
void reorder_ref_f32(const float* src, float* dst, const int64_t* dims, int to_nhwc);
void reorder_ref_u8(const uint8_t* src, uint8_t* dst, const int64_t* dims, int to_nhwc);
void reorder_f32(const float* src, float* dst, const int64_t* dims, int to_nhwc, pthreadpool_t pool);
void reorder_u8(const uint8_t* src, uint8_t* dst, const int64_t* dims, int to_nhwc, pthreadpool_t pool);

}  // namespace systolic::kernels

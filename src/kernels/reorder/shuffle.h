// Channel shuffle: per row, [groups][cg][inner] elements become [cg][groups][inner] (channel
// i * cg + j moves to j * groups + i), ShuffleNet's mixing of its branches. Plain data has a row
// per image and inner = H * W; NHWC data a row per pixel and inner = 1. Group i is read from
// srcs[i], its rows src_stride bytes apart: the slices of one tensor (srcs[i] = x + i * cg *
// inner elements, src_stride its row), or the inputs of the Concat the shuffle follows (each
// its own tensor), which then costs one copy instead of two. The reference walks the output;
// shuffle_channels splits the rows over the pool, with element loops for inner = 1. Both give
// the same bytes: it is a copy.
#pragma once
#include <pthreadpool.h>

#include <cstdint>

namespace systolic::kernels {

struct ShuffleParams {
  int64_t rows = 0, groups = 1, cg = 0, inner = 1;
  int64_t elem = 4;        // bytes per element
  int64_t src_stride = 0;  // bytes between a source's rows
};

void shuffle_channels_ref(const ShuffleParams& p, const void* const* srcs, void* dst);
void shuffle_channels(const ShuffleParams& p, const void* const* srcs, void* dst, pthreadpool_t pool);

}  // namespace systolic::kernels

// Channel shuffle: per row, [groups][cg][inner] elements become [cg][groups][inner] (channel
// i * cg + j moves to j * groups + i), ShuffleNet's mixing of its branches. Plain data has a row
// per image and inner = H * W; NHWC data a row per pixel and inner = 1. The reference walks
// the output; shuffle_channels splits the rows over the pool, with an element loop for
// inner = 1. Both give the same bytes: it is a copy.
#pragma once
#include <pthreadpool.h>

#include <cstdint>

namespace systolic::kernels {

struct ShuffleParams {
  int64_t rows = 0, groups = 1, cg = 0, inner = 1;
  int64_t elem = 4;  // bytes per element
};

void shuffle_channels_ref(const ShuffleParams& p, const void* src, void* dst);
void shuffle_channels(const ShuffleParams& p, const void* src, void* dst, pthreadpool_t pool);

}  // namespace systolic::kernels

// Concatenation along one axis as row copies. Seen from the axis, every input and the output
// is `rows` rows (the product of the dimensions before the axis); an output row is the inputs'
// rows side by side. A channel Concat of NHWC tensors has a row per pixel, of a few hundred
// bytes per input (DenseNet joins 32-channel features to everything before them, 58 times).
// The reference copies row by row; concat_rows splits the rows over the pool, each task
// writing whole output rows in order. Both give the same bytes: it is a copy. A Slice of one
// axis is the same copy from one strided input (ShuffleNet halves its channels 26 times).
#pragma once
#include <pthreadpool.h>

#include <cstdint>

namespace systolic::kernels {

// Input k's row is bytes[k] bytes, its rows strides[k] bytes apart from srcs[k] (strides null:
// contiguous, bytes[k] apart; a null source must have bytes[k] == 0); the output row is the
// sum, written to dst. One input with a stride is a Slice of one axis.
void concat_rows_ref(const void* const* srcs, const int64_t* bytes, const int64_t* strides, int inputs, void* dst,
                     int64_t rows);
void concat_rows(const void* const* srcs, const int64_t* bytes, const int64_t* strides, int inputs, void* dst,
                 int64_t rows, pthreadpool_t pool);

}  // namespace systolic::kernels

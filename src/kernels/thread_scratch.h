// A per-thread scratch buffer for kernels whose tasks need more than the stack holds (the
// Winograd kernels' transformed tiles): the pool does not say which thread runs a task.
#pragma once
#include <cstddef>

namespace systolic::kernels {

// At least `bytes`, 64-byte aligned, owned by the calling thread, grown on first use and kept
// for later calls; null when out of memory. One buffer per thread: a task uses it whole and
// calls no other kernel meanwhile. Out of line: built without instruction-set flags.
void* thread_scratch(std::size_t bytes);

}  // namespace systolic::kernels

// The machine's measured memory bandwidth (all threads, memcpy), measured once per process.
#pragma once

namespace systolic::sim {
// GB/s of read + write traffic of a ~0.1 s memcpy loop over buffers larger than the caches.
double measured_memory_bandwidth_gbs(int threads);
}

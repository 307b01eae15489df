// Vectors on 64-byte (cache-line) boundaries, for data that vector kernels read with full-line
// loads, such as packed weights. The default allocator returns large blocks 16 bytes past a page
// boundary, so that every 64-byte load of them spans two cache lines: a ResNet-50 run at batch 1
// took 2-5% longer so.
#pragma once
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace systolic {

constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kHugePage = std::size_t(2) << 20;

// `bytes` on a cache-line boundary; blocks of 2 MiB or more on a 2 MiB boundary and marked for
// transparent huge pages (where the kernel honours only madvise'd regions): a batch-16 int8
// ResNet-50 streams tens of MiB of activations per layer, and 4 KiB pages left its 1x1 convs
// at 56x56 waiting on TLB misses. Free with std::free; null when out of memory.
inline void* alloc_aligned(std::size_t bytes) {
  if (bytes < kHugePage) return std::aligned_alloc(kCacheLine, (bytes + kCacheLine - 1) / kCacheLine * kCacheLine);
  const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: a refusal leaves 4 KiB pages
  return p;
}

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(std::size_t n) {
    void* p = alloc_aligned(n ? n * sizeof(T) : 1);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) { std::free(p); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;
using AlignedBytes = AlignedVector<uint8_t>;

}  // namespace systolic

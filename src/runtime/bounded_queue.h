// A fixed-capacity FIFO between pipeline stages: push blocks while full (back-pressure, so a
// fast producer cannot run ahead and hoard memory), pop blocks while empty. The ring is sized
// once; pushing and popping never allocate. close() wakes everyone: pushes fail, pops drain
// what is left, then fail.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace systolic::runtime {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : ring_(capacity ? capacity : 1) {}

  bool push(T v) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return closed_ || size_ < ring_.size(); });
    if (closed_) return false;
    ring_[(head_ + size_) % ring_.size()] = std::move(v);
    ++size_;
    not_empty_.notify_one();
    return true;
  }

  bool pop(T* out) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || size_ > 0; });
    if (size_ == 0) return false;
    *out = std::move(ring_[head_]);
    head_ = (head_ + 1) % ring_.size();
    --size_;
    not_full_.notify_one();
    return true;
  }

  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  std::size_t capacity() const { return ring_.size(); }

 private:
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::vector<T> ring_;
  std::size_t head_ = 0, size_ = 0;
  bool closed_ = false;
};

}  // namespace systolic::runtime

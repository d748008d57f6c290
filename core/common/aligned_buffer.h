// A heap buffer aligned for SIMD and DMA: page-aligned from 64 KiB up, cache-line below.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace rs {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size) : size_(size) {
    if (size == 0) return;
    const size_t align = size >= (64u << 10) ? 4096 : 64;
    data_ = static_cast<std::byte*>(std::aligned_alloc(align, (size + align - 1) / align * align));
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rs

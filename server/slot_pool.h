// Bounded accumulator memory for one io thread, with buffer reuse.
//
// Every chunk being reduced holds one accumulator buffer from its thread's pool. When the pool
// is exhausted the thread stops reading the streams that need a new buffer, and TCP flow
// control pushes back on their workers (see the deadlock argument in shard.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/common/aligned_buffer.h"

namespace rs::server {

class SlotPool {
 public:
  explicit SlotPool(uint64_t budgetBytes) : budget_(budgetBytes) {}

  // A buffer of at least `bytes`, or nothing if that would pass the budget.
  std::optional<AlignedBuffer> tryAcquire(size_t bytes);
  // Returns a buffer for reuse and runs the on-freed callback.
  void release(AlignedBuffer buffer);
  // Called after every release (the shard wakes its parked sessions from here).
  void setOnFreed(std::function<void()> onFreed) { onFreed_ = std::move(onFreed); }

  uint64_t budget() const { return budget_; }
  uint64_t inUse() const { return inUse_; }
  bool fitsEver(size_t bytes) const { return roundUp(bytes) <= budget_; }
  // What a request for `bytes` takes from the budget. Sizes are rounded so that chunks of
  // nearly equal size share buffers.
  static size_t roundUp(size_t bytes) {
    return (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
  }

 private:
  static constexpr size_t kGranule = 64 << 10;

  const uint64_t budget_;
  uint64_t inUse_ = 0;
  uint64_t cachedBytes_ = 0;
  std::vector<AlignedBuffer> cache_;
  std::function<void()> onFreed_;
};

}  // namespace rs::server

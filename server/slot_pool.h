// Bounded slot memory for one io thread, with buffer reuse.
//
// Every chunk being reduced holds one accumulator buffer from its thread's pool, and its
// per-rank state (Slot::stateBytes) is charged here with it. When the pool is exhausted the
// thread stops reading the streams that need a new slot, and TCP flow control pushes back on
// their workers (see the deadlock argument in admission.h). The pool's budget is its thread's
// part of --memory-limit less the bookkeeping charged to the MemoryBudget (memory_budget.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/transport/user_memory.h"
#include "server/memory_budget.h"

namespace rs::server {

class SlotPool {
 public:
  // A fixed budget (tests), or the thread's part of a reducer's MemoryBudget.
  explicit SlotPool(uint64_t budgetBytes) : budget_(budgetBytes) {}
  explicit SlotPool(std::shared_ptr<const MemoryBudget> memory)
      : budget_(0), memory_(std::move(memory)) {}

  // A buffer of at least `bytes`, with `stateBytes` of slot state charged beside it, or nothing
  // if that would pass the budget.
  std::optional<AlignedBuffer> tryAcquire(size_t bytes, uint64_t stateBytes = 0);
  // Returns a buffer for reuse and its state's charge, and runs the on-freed callback.
  void release(AlignedBuffer buffer, uint64_t stateBytes = 0);
  // Called after every release (the shard wakes its parked sessions from here).
  void setOnFreed(std::function<void()> onFreed) { onFreed_ = std::move(onFreed); }
  // Lists every buffer it allocates from now on in `list`, and takes each out when it frees it:
  // the thread's fabric registers them, so that results leave a slot straight from its buffer
  // (zero-copy; transport/user_memory.h). Buffers live on in the cache, so each is registered
  // once.
  void listBuffersIn(std::shared_ptr<transport::UserMemory> list) { list_ = std::move(list); }
  ~SlotPool();

  uint64_t budget() const { return memory_ ? memory_->slotPoolBudget() : budget_; }
  // The budget with no bookkeeping charged (what --memory-limit gives this thread).
  uint64_t limit() const { return memory_ ? memory_->slotPoolLimit() : budget_; }
  uint64_t inUse() const { return inUse_; }            // accumulators
  uint64_t stateInUse() const { return stateBytes_; }  // slot state
  bool fitsEver(size_t bytes, uint64_t stateBytes = 0) const {
    return roundUp(bytes) + stateBytes <= budget();
  }
  // What a request for `bytes` takes from the budget. Sizes are rounded so that chunks of
  // nearly equal size share buffers.
  static size_t roundUp(size_t bytes) {
    return (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
  }

 private:
  static constexpr size_t kGranule = 64 << 10;

  AlignedBuffer allocate(size_t bytes);
  void unlist(const AlignedBuffer& buffer);  // before it is freed

  const uint64_t budget_;
  const std::shared_ptr<const MemoryBudget> memory_;
  uint64_t inUse_ = 0;
  uint64_t stateBytes_ = 0;
  uint64_t cachedBytes_ = 0;
  std::vector<AlignedBuffer> cache_;
  std::function<void()> onFreed_;
  std::shared_ptr<transport::UserMemory> list_;
  std::unordered_map<const void*, uint64_t> listed_;  // buffer -> its id in list_
};

}  // namespace rs::server

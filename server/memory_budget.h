// What counts against --memory-limit: the slot memory of the io threads' pools, and the
// bookkeeping sized by world size (per-group and per-slot state).
//
// Rule. Per-group bookkeeping (bookkeepingBytes: the registry's per-rank flags and peer
// entries, each shard's member table) is charged when the group is created and returned when
// its Group object is destroyed. It is refused, with the limit named, once it would leave an
// io thread less than `floor` of slot memory (one largest chunk's accumulator, 2 x --max-chunk,
// so that every thread can always reduce a chunk: the deadlock argument in admission.h). The io
// threads' pools share the rest: each may hold (limit - bookkeeping) / threads, never less
// than the floor, so slot memory and bookkeeping together stay within the limit. Per-slot
// state (Slot::stateBytes) is charged to its thread's pool with the slot's accumulator.
//
// Thread-safe: the registry charges from the acceptor and gRPC threads, the pools read their
// budget on their io threads (one relaxed load per new slot).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/common/status.h"

namespace rs::server {

class MemoryBudget {
 public:
  // `limit`: --memory-limit; `threads`: the io threads; `floor`: the least slot memory each
  // thread keeps (at most 15/16 of limit / threads: bookkeeping may always have 1/16, where
  // then the largest chunks of a group may not fit and are refused, named).
  MemoryBudget(uint64_t limit, uint32_t threads, uint64_t floor);

  // Charges `bytes` of bookkeeping for `what` ("group 0123abcd"), or refuses, naming the limit.
  Status chargeBookkeeping(uint64_t bytes, std::string_view what);
  void releaseBookkeeping(uint64_t bytes);

  uint64_t limit() const { return limit_; }
  uint64_t bookkeeping() const { return bookkeeping_.load(std::memory_order_relaxed); }
  // The slot memory one io thread's pool may hold now.
  uint64_t slotPoolBudget() const;
  // Its share of the limit with no bookkeeping (the configured pool size, for the gauges).
  uint64_t slotPoolLimit() const { return limit_ / threads_; }

 private:
  const uint64_t limit_;
  const uint32_t threads_;
  const uint64_t floor_;
  std::atomic<uint64_t> bookkeeping_{0};
};

// Bookkeeping a group of `worldSize` ranks with `streams` streams each holds at most.
uint64_t bookkeepingBytes(uint32_t worldSize, uint32_t streams);

// A charge of bookkeeping, returned when destroyed (moved with its owner).
class BookkeepingCharge {
 public:
  BookkeepingCharge() = default;
  BookkeepingCharge(std::shared_ptr<MemoryBudget> budget, uint64_t bytes)
      : budget_(std::move(budget)), bytes_(bytes) {}
  BookkeepingCharge(BookkeepingCharge&& o) noexcept
      : budget_(std::move(o.budget_)), bytes_(o.bytes_) {
    o.bytes_ = 0;
  }
  BookkeepingCharge& operator=(BookkeepingCharge&& o) noexcept {
    if (this != &o) {
      reset();
      budget_ = std::move(o.budget_);
      bytes_ = o.bytes_;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~BookkeepingCharge() { reset(); }
  uint64_t bytes() const { return bytes_; }

 private:
  void reset() {
    if (budget_ && bytes_ > 0) budget_->releaseBookkeeping(bytes_);
    bytes_ = 0;
  }
  std::shared_ptr<MemoryBudget> budget_;
  uint64_t bytes_ = 0;
};

}  // namespace rs::server

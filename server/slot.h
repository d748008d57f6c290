// One reduction slot: chunk `chunk` of one group, summed from all members on one io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/reduce/dtype.h"
#include "core/wire/group_id.h"
#include "server/slot_pool.h"

namespace rs::server {

struct Slot {
  enum class MemberState : uint8_t { kWaiting, kReceiving, kDone };

  Slot(std::shared_ptr<SlotPool> pool, AlignedBuffer buffer, uint32_t worldSize)
      : pool_(std::move(pool)), accumulator(std::move(buffer)), members(worldSize) {}
  ~Slot() { pool_->release(std::move(accumulator)); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  // What every contribution must agree on (from the first header that opened the slot).
  GroupId group;
  uint16_t stream = 0;
  uint64_t chunk = 0;
  uint64_t seq = 0;
  uint64_t elemOffset = 0;
  uint32_t elemCount = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;

  std::shared_ptr<SlotPool> pool_;  // shared: a slot may outlive its shard at shutdown
  AlignedBuffer accumulator;        // elemCount * accumulatorSize(dtype) bytes

  // Elements [0, frontier) hold at least one contribution: a piece below the frontier is
  // folded in, a piece above it initialises. Every member sends its chunk front to back, so
  // the initialised region is always a prefix.
  uint64_t frontier = 0;
  std::vector<MemberState> members;
  uint32_t membersDone = 0;
  bool complete = false;  // finalized; the accumulator holds the wire-typed result
  bool dead = false;      // its group was aborted
  std::chrono::steady_clock::time_point created;
  std::chrono::steady_clock::time_point deadline;

  size_t resultBytes() const { return static_cast<size_t>(elemCount) * dataTypeSize(dtype); }
};

}  // namespace rs::server

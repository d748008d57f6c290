// One reduction slot: chunk `chunk` of one group, summed from all members on one io thread.
//
// Cut-through: the result leaves in parts as soon as every member's contribution to a prefix
// is in, not after the whole chunk, so a worker's download overlaps its upload (with K streams
// per reducer uploading in parallel, whole-chunk results would all start near the end and a
// collective would take twice its link time).
//
// Lead limit: the result leaves at the pace of the slowest member, so bytes a faster member
// sends ahead only wait in the slot while they take link capacity from the slow one (TCP
// shares a reducer's link between its workers unevenly over short spans), and the backlog
// is paid at the end of every collective. A member more than --max-lead ahead in a chunk is
// not read until the others catch up, which hands the reducer's link to the ones behind. The
// slowest member of the oldest open chunk is never held back, so this cannot deadlock.
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

class Session;

struct Slot {
  enum class MemberState : uint8_t { kWaiting, kReceiving, kDone };

  Slot(std::shared_ptr<SlotPool> pool, AlignedBuffer buffer, uint32_t worldSize)
      : pool_(std::move(pool)),
        accumulator(std::move(buffer)),
        members(worldSize),
        received(worldSize, 0) {}
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
  std::vector<uint64_t> received;  // per member: elements folded in (a prefix of the chunk)
  uint32_t membersDone = 0;
  // Elements [0, released) are finalized in place, wire-typed at the front of the accumulator
  // (element i at i * dataTypeSize), and queued to every member as RESULT parts.
  uint64_t released = 0;
  std::vector<std::weak_ptr<Session>> heldBack;  // members over the lead limit, not being read
  // Members the chunk's last RESULT part was queued to and not yet written to; when it drops to
  // zero the chunk's reduce latency is recorded (Session::onWritten).
  uint32_t finalWritesPending = 0;
  bool dead = false;      // its group was aborted
  std::chrono::steady_clock::time_point created;  // opened: the first REDUCE header was in
  std::chrono::steady_clock::time_point deadline;
};

}  // namespace rs::server

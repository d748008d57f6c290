// One reduction slot: chunk `chunk` of one group, summed from all members on one io thread.
// The slot owns the chunk's state machine; the session only reads bytes and hands them over,
// the shard only keeps the table of open slots and sends what the slot releases.
//
//   open (first REDUCE header) -> admit (each later header: the members agree)
//   -> fold (each piece of each member, front to back) -> releaseReady (the common prefix,
//   finalized in place, as [from, to) RESULT parts) -> complete (every member's last element)
//
// Cut-through: the result leaves in parts as soon as every member's contribution to a prefix
// is in, not after the whole chunk, so a worker's download overlaps its upload (with K streams
// per reducer uploading in parallel, whole-chunk results would all start near the end and a
// collective would take twice its link time).
//
// Lead limit: the result leaves at the pace of the slowest member, so bytes a faster member
// sends ahead only wait in the slot while they take link capacity from the slow one (TCP
// shares a reducer's link between its workers unevenly over short spans), and the backlog
// is paid at the end of every collective. A member more than --max-lead ahead of the released
// prefix is not read (holdBack) until the others catch up (wakeHeldBack after a release),
// which hands the reducer's link to the ones behind; as the prefix grows the members nearest
// to it fall under the limit first. The slowest member is never held back: its lead is less
// than a RESULT part, and a part is at most a piece, which --max-lead is at least. With the
// argument in admission.h (the oldest open chunk of a stream always completes) this cannot
// deadlock.
//
// Deterministic mode (the group's RS_DETERMINISTIC): folding as bytes arrive makes an fp sum
// depend on the arrival order. Instead every member's bytes are copied, wire-typed, into its
// own staging region of the slot's buffer (rank 0's first, at the front), and releaseReady
// reduces the common prefix with the fused kernel (reduce::reduceInputs: per element
// rank 0 op rank 1 op ... in rank order, in fp32 for fp16/bf16 and in the group's fp32
// accumulator for fp32, rounded once), written in place over rank 0's region: whatever order
// the bytes came in, the same arithmetic. Why stage whole chunks rather than fold member r up
// to what r-1 has folded and stage only the rest: the worst case (rank 0 slowest) needs the
// whole chunk per member anyway, and the buffer is charged to the pool up front, so a smaller
// staging area would not lower what the operator's memory limit must allow. Why no accumulator: one fused pass over W staged inputs moves about
// the bytes that W folds into an accumulator do, so the copy is nearly all the extra time.
// Cut-through and the lead limit work unchanged: both read only `received` and `released`.
//
// Lane mode (proto/FAILOVER.md): a lost reducer's chunk resent to this survivor. Each member's
// entry is its final prefix and its contribution (or the COMMITTED marker), staged as in
// deterministic mode whatever the group's. Once every member's entry has begun (its first
// frame says its prefix), the slot knows which of two it is. Every entry a whole REDUCE (no
// prefix, no marker: every chunk after the collective a loss hit) is a normal chunk: it cuts
// through (cutsThrough), releaseReady reducing the staged entries in rank order as in
// deterministic mode, the resolve's arithmetic, so the bits are those of a whole resolve. Any
// other is resolved whole once every entry is in (resolveLane, core/failover/resent_chunk.h),
// in place over rank 0's region: the longest prefix is known only then. No lead limit on lanes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/common/status.h"
#include "core/reduce/dtype.h"
#include "core/wire/frame.h"
#include "core/wire/group_id.h"
#include "server/failure_reason.h"
#include "server/slot_pool.h"

namespace rs::server {

class Slot {
 public:
  enum class MemberState : uint8_t { kWaiting, kReceiving, kDone };

  // What the slot needs to know beyond the header that opened it.
  struct Setup {
    uint32_t worldSize = 0;
    uint16_t stream = 0;  // the stream index the chunk travels on (from every member)
    std::chrono::milliseconds timeout{0};
    uint64_t maxLeadBytes = 0;   // 0: no lead limit; otherwise at least minPartBytes
    uint64_t minPartBytes = 0;   // a RESULT part goes out once the ready prefix grew this much
    uint64_t readWakeBytes = 0;  // a contribution's read wakes once this much is in (0: any)
    uint64_t stateBytes = 0;     // charged to the pool with the buffer (stateBytes(worldSize))
    bool deterministic = false;  // rank-order sums; the buffer is bufferBytes(..., true)
    bool lane = false;  // a resent chunk (above); the buffer is bufferBytes(..., true) too
    Fp32Accumulator fp32Accumulator = Fp32Accumulator::kFp32;  // the group's (dtype.h)
  };
  // What a slot of a group of `worldSize` holds beside its accumulator, at most: the per-rank
  // state, the two held-back lists and deterministic mode's input pointers. Charged to the
  // pool with the accumulator.
  static uint64_t stateBytes(uint32_t worldSize);
  // The pool buffer a chunk needs: its accumulator, or in deterministic mode a wire-typed
  // staging region for each member (and no accumulator).
  static size_t bufferBytes(uint32_t elemCount, DataType dtype, uint32_t worldSize,
                            bool deterministic,
                            Fp32Accumulator fp32Accumulator = Fp32Accumulator::kFp32);
  // [from, to): elements finalized (wire-typed at resultData(from)) and ready to send.
  struct Part {
    uint64_t from = 0;
    uint64_t to = 0;
  };

  // Opened by the first REDUCE header of the chunk; `buffer` holds at least
  // bufferBytes(elemCount, dtype, worldSize, deterministic, fp32Accumulator) bytes and returns
  // to `pool` with the slot.
  Slot(std::shared_ptr<SlotPool> pool, AlignedBuffer buffer, const wire::FrameHeader& opener,
       const Setup& setup);
  ~Slot();
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

  // The members-agree check for a later REDUCE header of `rank`: ok, or why not, with the
  // rejection it is counted under: kDisagreement (seq, offset, count, dtype or op differ),
  // kDuplicate (a second copy from the same rank), kMisrouted (another group or chunk).
  Status admit(const wire::FrameHeader& header, uint32_t rank, FrameRejection* why) const;
  // `rank` starts sending its contribution (its header was admitted or opened the slot).
  void startReceiving(uint32_t rank);
  // Lane mode: `rank`'s entry begins, its first `finalPrefix` elements final bits (a FINAL's;
  // 0 for a REDUCE), the rest its contribution, all n folded in order as any contribution.
  void startEntry(uint32_t rank, uint32_t finalPrefix);
  // Lane mode: `rank`'s entry is the COMMITTED marker: it is done, with nothing to fold.
  void markCommitted(uint32_t rank);
  // Lane mode: every member's entry has begun, each a whole REDUCE: its parts are released as
  // they complete (releaseReady), and no resolve follows.
  bool cutsThrough() const { return cutsThrough_; }
  // Lane mode, once complete(): resolves the chunk (resent_chunk.h) in place. True: the whole
  // chunk's result is ready (released() is elemCount) for the members that needsResult; false:
  // nobody needs one. An error (entries that disagree) fails the chunk.
  Result<bool> resolveLane();
  // Lane mode: whether `rank`'s entry lacked part of the result (so it is sent the result).
  bool needsResult(uint32_t rank) const {
    return !members_[rank].committed && members_[rank].finalPrefix < elemCount_;
  }
  bool lane() const { return lane_; }

  // Folds rank's next `bytes` bytes (the contribution continues where the last fold ended)
  // and returns how many it consumed: whole elements only, at most the rest of the chunk.
  // The caller keeps the rest (less than one element) and passes it again at the front of
  // the next call. Why the caller keeps a split element rather than the slot: the bytes are
  // already in the caller's aligned staging buffer, the next read lands right behind them,
  // so the fold always starts at the buffer's aligned front and reads the split element in
  // one piece, with no per-member tail here and no one-element stitching path.
  size_t fold(uint32_t rank, const std::byte* data, size_t bytes);
  // Bytes `rank` has still to send.
  uint64_t bytesLeft(uint32_t rank) const {
    return (elemCount_ - members_[rank].received) * elemSize_;
  }
  // How much of a contribution a read waits for (SO_RCVLOWAT), fine enough for cut-through.
  uint64_t readWakeBytes() const { return readWakeBytes_; }
  bool memberDone(uint32_t rank) const { return members_[rank].state == MemberState::kDone; }
  // Every member's last element is in.
  bool complete() const { return membersDone_ == members_.size(); }

  // The lead limit: true, and `rank` is queued to be woken (wakeHeldBack), when rank is
  // --max-lead or more ahead of the released prefix and must not be read for now.
  bool holdBack(uint32_t rank);
  // After a fold: finalizes what every member has contributed beyond the released prefix, in
  // place, and returns it once it grew by a part (or reached the end of the chunk).
  std::optional<Part> releaseReady();
  // Calls wake(rank) for each member held back, in the order they were held. wake may hold a
  // member back again (holdBack) if it is still too far ahead.
  template <typename Wake>
  void wakeHeldBack(Wake&& wake) {
    if (heldBack_.empty()) return;
    // Taken out first: wake may hold members back again (or, re-entered, wake others). The two
    // vectors trade storage, so holding and waking allocate nothing once warm.
    std::vector<uint32_t> waking = std::exchange(heldBack_, std::move(spare_));
    for (uint32_t rank : waking) wake(rank);
    waking.clear();
    spare_ = std::move(waking);
  }

  // The finalized result from element `elem` on (elem < released()).
  const std::byte* resultData(uint64_t elem) const {
    return accumulator_.data() + elem * elemSize_;
  }
  uint64_t released() const { return released_; }
  // The pool memory this slot holds (its accumulator and staging, as the pool rounded it).
  size_t memoryBytes() const { return accumulator_.size(); }
  uint64_t received(uint32_t rank) const { return members_[rank].received; }

  // The chunk's last RESULT part was queued to one more member / written to one: the latter
  // returns true when it was the last write and the slot is not dead (its latency counts).
  void lastPartQueued() { ++finalWritesPending_; }
  bool lastPartWritten() { return --finalWritesPending_ == 0 && !dead_; }

  // Its group was aborted: no more folds, releases or latency.
  void markDead() { dead_ = true; }
  bool dead() const { return dead_; }
  std::chrono::steady_clock::time_point created() const { return created_; }
  // Ok while the deadline has not passed; then the timeout naming who has not sent (or, once
  // complete, saying its result is still unread).
  Status overdue(std::chrono::steady_clock::time_point now) const;

  const GroupId& group() const { return group_; }
  uint16_t stream() const { return stream_; }
  uint64_t chunk() const { return chunk_; }
  uint64_t seq() const { return seq_; }
  uint64_t elemOffset() const { return elemOffset_; }
  uint32_t elemCount() const { return elemCount_; }
  DataType dtype() const { return dtype_; }
  ReduceOp op() const { return op_; }

 private:
  struct Member {
    MemberState state = MemberState::kWaiting;
    uint64_t received = 0;  // elements folded in (a prefix of the chunk)
    uint32_t finalPrefix = 0;  // lane mode: elements of its entry that are final bits
    bool committed = false;    // lane mode: its entry is the COMMITTED marker
  };
  std::string ranksIn(MemberState state) const;
  // Lane mode: one more member's entry began; `whole` when it is a REDUCE of the whole chunk.
  void entryBegun(bool whole);
  // Deterministic mode: where rank r stages its contribution (rank 0's region, at the front,
  // receives the result in place, so resultData is the same in both modes).
  std::byte* staging(uint32_t rank) { return accumulator_.data() + rank * stagingStride_; }

  // What every contribution must agree on (from the header that opened the slot).
  const GroupId group_;
  const uint16_t stream_;
  const uint64_t chunk_;
  const uint64_t seq_;
  const uint64_t elemOffset_;
  const uint32_t elemCount_;
  const DataType dtype_;
  const ReduceOp op_;
  const size_t elemSize_;  // on the wire
  const size_t accSize_;   // in the accumulator
  const uint64_t maxLeadBytes_;
  const uint64_t minPartElems_;
  const uint64_t readWakeBytes_;
  const std::chrono::milliseconds timeout_;
  const bool deterministic_;  // staged in rank regions (deterministic or lane mode)
  const bool lane_;
  const Fp32Accumulator fp32Accumulator_;
  const size_t stagingStride_;  // deterministic: the members' staging regions are this far apart

  std::shared_ptr<SlotPool> pool_;  // shared: a slot may outlive its shard at shutdown
  AlignedBuffer accumulator_;       // elemCount * accSize bytes (deterministic: the staging)
  const uint64_t stateBytes_;       // charged to pool_ with the accumulator

  // Elements [0, frontier) hold at least one contribution: a piece below the frontier is
  // folded in, a piece above it initialises. Every member sends its chunk front to back, so
  // the initialised region is always a prefix.
  uint64_t frontier_ = 0;
  std::vector<Member> members_;
  std::vector<const void*> inputs_;  // deterministic: the staged prefixes reduceInputs reads
  uint32_t membersDone_ = 0;
  // Lane mode: entries begun, whether one of them had a final prefix or was COMMITTED, and so
  // whether the chunk cuts through (once every entry began and none had).
  uint32_t entriesBegun_ = 0;
  bool entryNotWhole_ = false;
  bool cutsThrough_ = false;
  // Elements [0, released) are finalized in place, wire-typed at the front of the accumulator
  // (element i at i * elemSize), and handed out as RESULT parts.
  uint64_t released_ = 0;
  std::vector<uint32_t> heldBack_;  // members over the lead limit, not being read
  std::vector<uint32_t> spare_;     // storage for heldBack_ while its members are woken
  // Members the chunk's last RESULT part was queued to and not yet written to; when it drops to
  // zero the chunk's reduce latency is recorded.
  uint32_t finalWritesPending_ = 0;
  bool dead_ = false;
  const std::chrono::steady_clock::time_point created_;
  const std::chrono::steady_clock::time_point deadline_;
};

}  // namespace rs::server

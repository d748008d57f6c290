#include "server/slot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/failover/resent_chunk.h"
#include "core/reduce/reduce.h"

namespace rs::server {
namespace {
// Each staging region starts on a cache line, so that the folds read aligned vectors.
constexpr size_t kStagingAlign = 64;
size_t alignUp(size_t n) { return (n + kStagingAlign - 1) / kStagingAlign * kStagingAlign; }
}  // namespace

size_t Slot::bufferBytes(uint32_t elemCount, DataType dtype, uint32_t worldSize,
                         bool deterministic, Fp32Accumulator fp32Accumulator) {
  if (!deterministic)
    return static_cast<size_t>(elemCount) * accumulatorSize(dtype, fp32Accumulator);
  return worldSize * alignUp(static_cast<size_t>(elemCount) * dataTypeSize(dtype));
}

Slot::Slot(std::shared_ptr<SlotPool> pool, AlignedBuffer buffer, const wire::FrameHeader& h,
           const Setup& setup)
    : group_(h.group),
      stream_(setup.stream),
      chunk_(h.chunk),
      seq_(h.seq),
      elemOffset_(h.elemOffset),
      elemCount_(h.elemCount),
      dtype_(h.dtype),
      op_(h.op),
      elemSize_(dataTypeSize(h.dtype)),
      accSize_(accumulatorSize(h.dtype, setup.fp32Accumulator)),
      maxLeadBytes_(setup.maxLeadBytes),
      minPartElems_(setup.minPartBytes / dataTypeSize(h.dtype)),
      readWakeBytes_(setup.readWakeBytes),
      timeout_(setup.timeout),
      deterministic_(setup.deterministic || setup.lane),
      lane_(setup.lane),
      fp32Accumulator_(setup.fp32Accumulator),
      stagingStride_(alignUp(static_cast<size_t>(h.elemCount) * dataTypeSize(h.dtype))),
      pool_(std::move(pool)),
      accumulator_(std::move(buffer)),
      stateBytes_(setup.stateBytes),
      members_(setup.worldSize),
      inputs_(setup.deterministic || setup.lane ? setup.worldSize : 0),
      created_(std::chrono::steady_clock::now()),
      deadline_(created_ + setup.timeout) {}

Slot::~Slot() { pool_->release(std::move(accumulator_), stateBytes_); }

uint64_t Slot::stateBytes(uint32_t worldSize) {
  return static_cast<uint64_t>(worldSize) *
         (sizeof(Member) + 2 * sizeof(uint32_t) + sizeof(const void*));
}

Status Slot::admit(const wire::FrameHeader& h, uint32_t rank, FrameRejection* why) const {
  // The shard finds a slot by group and chunk, so this cannot fail through it; it keeps a
  // slot from folding a stranger's bytes if a caller ever routes a header wrongly.
  if (group_ != h.group || chunk_ != h.chunk) {
    *why = FrameRejection::kMisrouted;
    return protocolError(fmt::format("rank {} sent chunk {} of group {} to the slot of chunk {} "
                                     "of group {}",
                                     rank, h.chunk, h.group.toString(), chunk_,
                                     group_.toString()));
  }
  if (seq_ != h.seq || elemOffset_ != h.elemOffset || elemCount_ != h.elemCount ||
      dtype_ != h.dtype || op_ != h.op) {
    *why = FrameRejection::kDisagreement;
    return invalidArgument(fmt::format(
        "members disagree on chunk {}: rank {} sent seq {} offset {} count {} {} {}, but the "
        "chunk was opened with seq {} offset {} count {} {} {} (every member must issue the "
        "same collectives in the same order)",
        h.chunk, rank, h.seq, h.elemOffset, h.elemCount, dataTypeName(h.dtype),
        reduceOpName(h.op), seq_, elemOffset_, elemCount_, dataTypeName(dtype_),
        reduceOpName(op_)));
  }
  if (members_[rank].state != MemberState::kWaiting) {
    *why = FrameRejection::kDuplicate;
    return protocolError(fmt::format("rank {} sent chunk {} twice", rank, h.chunk));
  }
  return Status::ok();
}

void Slot::startReceiving(uint32_t rank) { members_[rank].state = MemberState::kReceiving; }

void Slot::startEntry(uint32_t rank, uint32_t finalPrefix) {
  startReceiving(rank);
  members_[rank].finalPrefix = finalPrefix;
  entryBegun(finalPrefix == 0);
}

void Slot::markCommitted(uint32_t rank) {
  Member& m = members_[rank];
  m.state = MemberState::kDone;
  m.received = elemCount_;
  m.committed = true;
  ++membersDone_;
  entryBegun(false);
}

void Slot::entryBegun(bool whole) {
  // Each member begins one entry (admit refuses a second), so the choice is made once, when
  // the last begins, before any of its elements is folded.
  entryNotWhole_ = entryNotWhole_ || !whole;
  cutsThrough_ = ++entriesBegun_ == members_.size() && !entryNotWhole_;
}

Result<bool> Slot::resolveLane() {
  auto chunk = failover::ResentChunk::create({.chunk = chunk_,
                                              .worldSize = static_cast<uint32_t>(members_.size()),
                                              .elemCount = elemCount_,
                                              .dtype = dtype_,
                                              .op = op_,
                                              .fp32Accumulator = fp32Accumulator_});
  if (!chunk) return chunk.status();
  const size_t bytes = static_cast<size_t>(elemCount_) * elemSize_;
  for (uint32_t r = 0; r < members_.size(); ++r) {
    const Member& m = members_[r];
    RS_RETURN_IF_ERROR(chunk->add(
        r, {.committed = m.committed,
            .finalPrefix = m.finalPrefix,
            .elements = m.committed ? std::span<const std::byte>()
                                    : std::span<const std::byte>(staging(r), bytes)}));
  }
  auto resolved = chunk->resolve({staging(0), bytes});
  if (!resolved) return resolved.status();
  if (resolved->sendResult) released_ = elemCount_;
  return resolved->sendResult;
}

size_t Slot::fold(uint32_t rank, const std::byte* src, size_t bytes) {
  Member& m = members_[rank];
  const uint64_t begin = m.received;
  const uint64_t end = begin + std::min<uint64_t>(bytes / elemSize_, elemCount_ - begin);
  if (end == begin) return 0;
  std::byte* acc = accumulator_.data();
  if (deterministic_) {
    std::memcpy(staging(rank) + begin * elemSize_, src, (end - begin) * elemSize_);
  } else if (begin < frontier_) {
    const uint64_t n = std::min(end, frontier_) - begin;
    reduce::accumulate(dtype_, op_, src, acc + begin * accSize_, n, fp32Accumulator_);
  }
  if (!deterministic_ && end > frontier_) {
    const uint64_t from = std::max(begin, frontier_);
    reduce::accumulateFirst(dtype_, src + (from - begin) * elemSize_, acc + from * accSize_,
                            end - from, fp32Accumulator_);
    frontier_ = end;
  }
  m.received = end;
  if (end == elemCount_) {
    m.state = MemberState::kDone;
    ++membersDone_;
  }
  return static_cast<size_t>((end - begin) * elemSize_);
}

bool Slot::holdBack(uint32_t rank) {
  if (lane_ || maxLeadBytes_ == 0 ||
      (members_[rank].received - released_) * elemSize_ < maxLeadBytes_)
    return false;
  heldBack_.push_back(rank);
  return true;
}

std::optional<Slot::Part> Slot::releaseReady() {
  if (lane_ && !cutsThrough_) return std::nullopt;  // resolved whole (resolveLane)
  // Members fold in whatever their sockets delivered, so the common prefix grows in uneven
  // steps: a part goes out once it has grown by minPartElems (or the chunk is complete),
  // which keeps the frame count per chunk bounded while the download still trails the upload
  // by only that much.
  uint64_t ready = members_.front().received;
  for (const Member& m : members_) ready = std::min(ready, m.received);
  if (ready <= released_) return std::nullopt;
  if (ready < elemCount_ && ready - released_ < minPartElems_) return std::nullopt;
  const uint64_t from = released_;
  if (deterministic_) {  // in rank order, in place over rank 0's staged bytes
    for (uint32_t r = 0; r < members_.size(); ++r) inputs_[r] = staging(r) + from * elemSize_;
    reduce::reduceInputs(dtype_, op_, inputs_.data(), inputs_.size(),
                         staging(0) + from * elemSize_, ready - from, fp32Accumulator_);
  } else if (!reduce::finalizeIsIdentity(dtype_, op_, fp32Accumulator_)) {
    // In place and in order: the wire-typed part lands at or below its accumulator elements,
    // behind everything not yet finalized (reduce.h allows dst to trail acc).
    std::byte* acc = accumulator_.data();
    reduce::finalize(dtype_, op_, acc + from * accSize_, acc + from * elemSize_, ready - from,
                     static_cast<uint32_t>(members_.size()), fp32Accumulator_);
  }
  released_ = ready;
  return Part{from, ready};
}

std::string Slot::ranksIn(MemberState state) const {
  std::string out;
  for (size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].state != state) continue;
    if (!out.empty()) out += ",";
    out += std::to_string(r);
  }
  return out.empty() ? "none" : out;
}

Status Slot::overdue(std::chrono::steady_clock::time_point now) const {
  if (now < deadline_) return Status::ok();
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - created_).count();
  if (complete())  // every part is in; a member has not read its result (Shard::checkTimeouts)
    return timeoutError(fmt::format(
        "the result of chunk {} of collective seq {} was still not read by every member after "
        "{} ms (timeout {} ms) on stream {}",
        chunk_, seq_, waited, timeout_.count(), stream_));
  return timeoutError(fmt::format(
      "chunk {} of collective seq {} waited {} ms (timeout {} ms) on stream {}: "
      "ranks {} never sent it, ranks {} are mid-transfer",
      chunk_, seq_, waited, timeout_.count(), stream_, ranksIn(MemberState::kWaiting),
      ranksIn(MemberState::kReceiving)));
}

}  // namespace rs::server

// A connection's lane side (proto/FAILOVER.md, proto/WIRE.md "Failover"): the FAILOVER that
// opens a lane, a resent chunk's entry (FINAL and the REDUCE of the rest, COMMITTED, or a whole
// REDUCE), whole entries held once written, the lane's COMMIT, and LOST on any stream. The rest
// (results, acknowledgements, liveness) is connection.cc's, shared with streams.
#include <spdlog/spdlog.h>

#include "client/connection.h"
#include "client/request_state.h"
#include "core/wire/failover_frames.h"

namespace rs::client {

void Connection::enqueueFailover() {
  std::vector<uint32_t> dead;
  for (uint32_t i = 0; i < lane_->dead.size(); ++i) dead.push_back(lane_->dead.nthDead(i));
  Result<wire::DeadSetFrame> frame =
      wire::failoverFrame(group_.id, group_.rank, lane_->watermark, dead, lane_->generation);
  if (!frame) return fail(frame.status());  // a DeadSet always encodes
  auto payload = std::make_shared<std::vector<uint8_t>>(std::move(frame->payload));
  queuedBytes_ += wire::kHeaderSize + payload->size();
  unwrittenBytes_ += wire::kHeaderSize + payload->size();
  writer_.enqueue({frame->header, {payload->data(), payload->size()}, payload, 0});
}

void Connection::enqueueEntry(ChunkTransfer& c) {
  const wire::FrameHeader& h = c.header;
  const size_t size = dataTypeSize(h.dtype);
  switch (c.entry) {
    case ChunkTransfer::Entry::kReduce:
      // On a fabric stream the payload starts in the channel's bytes (elemsSent()).
      c.payloadAt = onFabric() ? channelQueued_ : queuedBytes_ + wire::kHeaderSize;
      enqueueFrame(h, c.src, c.compressed, c.keep);
      return;
    case ChunkTransfer::Entry::kCommitted: {
      wire::FrameHeader marker = h;
      marker.type = wire::FrameType::kCommitted;
      marker.payloadLength = 0;
      c.payloadAt = queuedBytes_ + wire::kHeaderSize;
      enqueueFrame(marker, nullptr, false, nullptr);
      return;
    }
    case ChunkTransfer::Entry::kFinal: {
      wire::FrameHeader final = h;
      final.type = wire::FrameType::kFinal;
      final.payloadLength = static_cast<uint32_t>(c.finalPrefix * size);
      enqueueFrame(final, c.dst, c.compressed, c.keep);
      c.payloadAt = queuedBytes_ + wire::kHeaderSize - c.finalPrefix * size;
      if (c.finalPrefix == h.elemCount) return;
      const wire::FrameHeader rest = wire::remainderHeader(final);
      // The caller's buffer holds the caller's type: its offset is in the caller's elements.
      const size_t callerSize = c.compressed ? sizeof(float) : size;
      enqueueFrame(rest, static_cast<const std::byte*>(c.src) + c.finalPrefix * callerSize,
                   c.compressed, c.keep);
      return;
    }
  }
}

void Connection::popWholeEntries() {
  while (!expected_.empty() && !expected_.front().awaitsResult() &&
         expected_.front().payloadAt != ChunkTransfer::kNotQueued) {
    completed_ = expected_.front().header.chunk;  // held as it was sent
    pacer_.done(expected_.front().header.payloadLength);  // written: no result to wait for
    expected_.pop_front();
  }
  if (expected_.empty()) pacer_.idle();
}

Status Connection::checkLaneCommit(uint64_t chunk) const {
  // The survivor's first COMMIT covers the chunks below the lane's agreed point, which every
  // member holds whole (some of them may still be on their way here as whole entries): a
  // COMMIT may pass what this member has acknowledged, but never a chunk it still awaits.
  for (const ChunkTransfer& e : expected_) {
    if (e.header.chunk > chunk) break;
    if (e.awaitsResult() && e.payloadAt != ChunkTransfer::kNotQueued)
      return protocolError(fmt::format(
          "{}: COMMIT for chunk {}, but this member still awaits the result of chunk {}", name_,
          chunk, e.header.chunk));
  }
  return Status::ok();
}

void Connection::onLostPayload(const std::error_code& ec) {
  if (closed_) return;
  if (ec) return readFailed(ioError(fmt::format("{}: reading LOST: {}", name_, ec.message())));
  std::vector<uint32_t> dead;
  if (Status s = wire::decodeDeadSet(lostPayload_.data(), lostPayload_.size(), &dead);
      !s.isOk())
    return fail(protocolError(name_ + ": " + s.message()));
  for (uint32_t d : dead)
    if (d >= options_.reducers.size())
      return fail(protocolError(fmt::format("{}: LOST names reducer {}, but this member has {}",
                                            name_, d, options_.reducers.size())));
  if (lane_) lostRead_ = true;  // its survivor may retire it next
  owner_.onLost(*this, dead, in_.seq);  // seq: the set's generation
  if (!closed_) readHeader();
}

}  // namespace rs::client

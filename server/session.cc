#include "server/session.h"

#include <asio/error.hpp>
#include <asio/post.hpp>
#include <spdlog/spdlog.h>

#include <cstring>
#include <optional>

#include "core/cluster/sharding.h"
#include "server/shard.h"

namespace rs::server {
namespace {
constexpr size_t kMaxFramesPerWrite = 16;  // gather limit: 2 buffers per frame
constexpr auto kAbortGrace = std::chrono::seconds(2);
}  // namespace

Session::Session(Shard& shard, std::unique_ptr<transport::Stream> stream,
                 std::shared_ptr<Group> group, uint32_t rank, uint16_t streamIndex)
    : shard_(shard),
      stream_(std::move(stream)),
      group_(std::move(group)),
      rank_(rank),
      streamIndex_(streamIndex),
      name_(fmt::format("{} rank {} stream {} ({})", group_->name(), rank, streamIndex,
                        stream_->peerName())),
      staging_(shard.config().pieceBytes) {}

void Session::start(const wire::HelloAckPayload& ack) {
  OutFrame frame;
  wire::FrameHeader h;
  h.type = wire::FrameType::kHelloAck;
  h.group = group_->id();
  h.rank = rank_;
  h.payloadLength = wire::kHelloAckPayloadSize;
  frame.header = wire::encodeHeader(h);
  auto payload = wire::encodeHelloAck(ack);
  frame.text.assign(reinterpret_cast<const char*>(payload.data()), payload.size());
  enqueue(std::move(frame));
  readHeader();
}

// ---------------------------------------------------------------------------------------------
// Read side: header, then the payload in pieces, each folded into the slot as it lands.

void Session::readHeader() {
  if (closed_ || aborting_) return;
  readInFlight_ = true;
  stream_->asyncReadExactly(inHeaderBytes_.data(), inHeaderBytes_.size(),
                            [self = shared_from_this()](const std::error_code& ec, size_t) {
                              self->onHeader(ec);
                            });
}

void Session::onHeader(const std::error_code& ec) {
  if (!readDone()) return;
  if (ec) {
    // End of stream between frames is how a member leaves; anything else is a failure.
    if (ec == asio::error::eof) {
      shard_.memberLeft(*this);
      close(unavailableError("the member closed the stream"));
    } else {
      fail(ioError("read failed: " + ec.message()));
    }
    return;
  }
  wire::DecodeLimits limits;
  limits.maxPayloadBytes = shard_.config().maxChunkBytes;
  if (Status s = wire::decodeHeader(inHeaderBytes_.data(), inHeaderBytes_.size(), limits, &in_);
      !s.isOk()) {
    reject(FrameRejection::kMalformed, s);
    return;
  }
  switch (in_.type) {
    case wire::FrameType::kReduce:
      handleReduce();
      return;
    case wire::FrameType::kAbort:
    case wire::FrameType::kError:
      // A member gave up (for instance after a failure on another reducer): fail the group
      // everywhere so that no other member waits for a timeout.
      peerReason_.resize(in_.payloadLength);
      readInFlight_ = true;
      stream_->asyncReadExactly(peerReason_.data(), peerReason_.size(),
                                [self = shared_from_this()](const std::error_code& ec, size_t) {
                                  self->onPeerAbort(ec);
                                });
      return;
    default:
      reject(FrameRejection::kUnexpectedType,
             protocolError(fmt::format("unexpected {} frame after the handshake",
                                       wire::frameTypeName(in_.type))));
      return;
  }
}

void Session::onPeerAbort(const std::error_code& ec) {
  if (!readDone()) return;
  std::string reason;
  if (ec || !wire::decodeErrorMessage(reinterpret_cast<const uint8_t*>(peerReason_.data()),
                                      peerReason_.size(), &reason)
                 .isOk())
    reason = "no readable reason";
  fail(abortedError(fmt::format("rank {} gave up: {}", rank_, reason)));
}

void Session::handleReduce() {
  const GroupParams& p = group_->params();
  if (in_.group != group_->id() || in_.rank != rank_) {
    reject(FrameRejection::kWrongMember,
           protocolError(fmt::format("REDUCE names group {} rank {}, but this stream joined as {}",
                                     in_.group.toString(), in_.rank, name_)));
    return;
  }
  // Chunk i belongs to reducer i mod R and travels on stream (i / R) mod K: a frame that
  // breaks this rule was routed by a member that disagrees with the others.
  const uint32_t owner = cluster::reducerForChunk(in_.chunk, p.reducerCount);
  const uint32_t stream = cluster::streamForChunk(in_.chunk, p.reducerCount, p.streamCount);
  if (owner != p.reducerIndex || stream != streamIndex_) {
    reject(FrameRejection::kMisrouted,
           protocolError(fmt::format("chunk {} belongs to reducer {} stream {}, not reducer {} "
                                     "stream {}",
                                     in_.chunk, owner, stream, p.reducerIndex, streamIndex_)));
    return;
  }
  if (haveLastChunk_ && in_.chunk <= lastChunk_) {
    reject(FrameRejection::kOutOfOrder,
           protocolError(fmt::format("chunk {} arrived after chunk {}: chunks must increase",
                                     in_.chunk, lastChunk_)));
    return;
  }
  haveLastChunk_ = true;
  lastChunk_ = in_.chunk;

  std::shared_ptr<Slot> slot;
  Status error;
  switch (shard_.acquireSlot(shared_from_this(), in_, &slot, &error)) {
    case Shard::Acquire::kReady:
      beginContribution(std::move(slot));
      return;
    case Shard::Acquire::kParked:
      parked_ = true;
      return;
    case Shard::Acquire::kFailed:
      // The shard has aborted the group (this session included) with the reason.
      return;
  }
}

bool Session::readDone() {
  readInFlight_ = false;
  if (closed_) return false;
  if (aborting_) {
    drainInput();
    return false;
  }
  return true;
}

void Session::drainInput() {
  // While an ABORT goes out, keep reading (and dropping) what the member still sends: closing
  // a socket with unread input makes the kernel send RST, and an RST can destroy the ABORT
  // frame still waiting in the member's receive buffer, and with it the reason.
  if (closed_ || readInFlight_) return;
  readInFlight_ = true;
  stream_->asyncReadSome(staging_.data(), staging_.size(),
                         [self = shared_from_this()](const std::error_code& ec, size_t) {
                           self->readInFlight_ = false;
                           if (self->closed_) return;
                           if (ec) self->close(abortedError("the member closed after ABORT"));
                           else self->drainInput();
                         });
}

void Session::onSlotReady(std::shared_ptr<Slot> slot) {
  parked_ = false;
  if (closed_ || aborting_) return;
  beginContribution(std::move(slot));
}

void Session::onOthersCaughtUp() {
  if (!heldBack_ || closed_ || aborting_ || !slot_) return;
  if (slot_->holdBack(rank_)) return;  // still too far ahead: wait for the next release
  heldBack_ = false;
  readPiece();
}

void Session::beginContribution(std::shared_ptr<Slot> slot) {
  slot->startReceiving(rank_);
  slot_ = std::move(slot);
  tailBytes_ = 0;
  readPiece();
}

// Reads whatever the socket has, up to a piece, and folds it in at once: waiting for a whole
// piece would hold back the RESULT parts of a chunk no larger than a piece until all of it is
// in, and a worker's download would no longer overlap its upload.
void Session::readPiece() {
  const uint64_t leftBytes = slot_->bytesLeft(rank_) - tailBytes_;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(leftBytes, staging_.size() - tailBytes_));
  readInFlight_ = true;
  stream_->asyncReadSome(
      staging_.data() + tailBytes_, want,
      [self = shared_from_this()](const std::error_code& ec, size_t n) { self->onPiece(ec, n); },
      shard_.config().readWakeBytes);  // the stream caps the wake at `want`
}

void Session::onPiece(const std::error_code& ec, size_t bytes) {
  if (!readDone()) return;
  if (ec) {
    const Status why = ec == asio::error::eof
                           ? ioError(fmt::format("stream ended inside chunk {}", in_.chunk))
                           : ioError("read failed inside chunk " + std::to_string(in_.chunk) +
                                     ": " + ec.message());
    fail(why);
    return;
  }
  Slot& slot = *slot_;
  if (slot.dead()) return;  // the group was aborted while this piece was in flight
  shard_.stats().bytesIn.fetch_add(bytes, std::memory_order_relaxed);
  group_->counters().bytesIn.fetch_add(bytes, std::memory_order_relaxed);
  const size_t have = tailBytes_ + bytes;
  const size_t folded = slot.fold(rank_, staging_.data(), have);
  tailBytes_ = have - folded;
  if (folded == 0) {  // less than one element so far
    readPiece();
    return;
  }
  // The fold reads from the front of staging_, so a split element moves there.
  if (tailBytes_ != 0) std::memmove(staging_.data(), staging_.data() + folded, tailBytes_);

  if (!slot.memberDone(rank_)) {
    shard_.contributed(slot);
    if (closed_ || aborting_) return;
    if (slot.holdBack(rank_)) {  // over the lead limit: the shard wakes it after a release
      heldBack_ = true;
      return;
    }
    readPiece();
    return;
  }
  std::shared_ptr<Slot> finished = std::move(slot_);
  shard_.contributed(*finished);
  readHeader();
}

void Session::reject(FrameRejection why, const Status& reason) {
  if (closed_) return;
  shard_.stats().countRejection(why);
  fail(reason);
}

void Session::fail(const Status& reason) {
  if (closed_) return;
  spdlog::error("{}: {}", name_, reason.message());
  close(reason);
  shard_.failGroup(group_, Status(reason.code(), fmt::format("rank {} stream {}: {}", rank_,
                                                              streamIndex_, reason.message())));
}

// ---------------------------------------------------------------------------------------------
// Write side: a FIFO of frames, written as gather writes of up to kMaxFramesPerWrite frames.

void Session::sendResult(const std::shared_ptr<Slot>& slot, uint64_t from, uint64_t to) {
  if (closed_ || aborting_) return;
  wire::FrameHeader h;
  h.type = wire::FrameType::kResult;
  h.group = slot->group();
  h.rank = rank_;
  h.seq = slot->seq();
  h.chunk = slot->chunk();
  h.elemOffset = slot->elemOffset() + from;
  h.elemCount = static_cast<uint32_t>(to - from);
  h.dtype = slot->dtype();
  h.op = slot->op();
  h.payloadLength = static_cast<uint32_t>(h.elemCount * dataTypeSize(h.dtype));
  const bool lastPart = to == slot->elemCount();
  // Counted before the write starts: its completion handler never runs inside enqueue().
  if (lastPart) slot->lastPartQueued();
  enqueue({wire::encodeHeader(h), slot, slot->resultData(from), h.payloadLength, {}, lastPart});
}

void Session::abort(const Status& reason) {
  if (closed_ || aborting_) return;
  aborting_ = true;
  queue_.clear();  // results of an aborted group are void
  wire::FrameHeader h;
  h.type = wire::FrameType::kAbort;
  h.group = group_->id();
  h.rank = rank_;
  h.status = static_cast<uint32_t>(reason.code());
  std::string text = wire::encodeErrorMessage(reason.message());
  h.payloadLength = static_cast<uint32_t>(text.size());
  OutFrame frame{wire::encodeHeader(h), nullptr, nullptr, 0, std::move(text)};
  queue_.push_back(std::move(frame));
  graceTimer_ = std::make_unique<asio::steady_timer>(shard_.io(), kAbortGrace);
  graceTimer_->async_wait([self = shared_from_this(), reason](const std::error_code& ec) {
    if (!ec) self->close(reason);
  });
  flush();
  drainInput();  // a no-op while a read is in flight: its handler starts the drain
}

void Session::close(const Status& reason) {
  if (closed_) return;
  auto self = shared_from_this();  // detach() drops the shard's reference
  closed_ = true;
  spdlog::debug("{}: closing: {}", name_, reason.message());
  if (graceTimer_) graceTimer_->cancel();
  stream_->close();
  queue_.clear();
  slot_.reset();
  shard_.detach(*this);
}

void Session::enqueue(OutFrame frame) {
  queue_.push_back(std::move(frame));
  flush();
}

void Session::flush() {
  if (writing_ || closed_ || queue_.empty()) return;
  inFlight_.clear();
  gather_.clear();
  while (!queue_.empty() && inFlight_.size() < kMaxFramesPerWrite) {
    inFlight_.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  for (const OutFrame& f : inFlight_) {
    gather_.push_back({f.header.data(), f.header.size()});
    if (f.slot) gather_.push_back({f.data, f.bytes});
    else if (!f.text.empty()) gather_.push_back({f.text.data(), f.text.size()});
  }
  writing_ = true;
  stream_->asyncWriteAll(gather_.data(), gather_.size(),
                         [self = shared_from_this()](const std::error_code& ec, size_t) {
                           self->onWritten(ec);
                         });
}

void Session::onWritten(const std::error_code& ec) {
  writing_ = false;
  if (!ec && !closed_) countWritten();
  inFlight_.clear();  // releases the slots whose results went out
  if (closed_) return;
  if (ec) {
    if (aborting_) close(ioError("write failed while aborting: " + ec.message()));
    else fail(ioError("write failed: " + ec.message()));
    return;
  }
  if (aborting_ && queue_.empty()) {
    // The ABORT is out: send FIN, and close once the member has closed too (or at the grace
    // timer), so that it reads the reason before its connection goes away.
    stream_->shutdownSend();
    return;
  }
  flush();
}

void Session::countWritten() {
  uint64_t payload = 0;
  std::optional<std::chrono::steady_clock::time_point> now;
  for (const OutFrame& f : inFlight_) {
    if (!f.slot) continue;  // HELLO_ACK, ABORT: not result payload
    payload += f.bytes;
    if (f.lastPart && f.slot->lastPartWritten()) {
      if (!now) now = std::chrono::steady_clock::now();
      shard_.stats().reduceLatency.observe(*now - f.slot->created());
    }
  }
  if (payload == 0) return;
  shard_.stats().bytesOut.fetch_add(payload, std::memory_order_relaxed);
  group_->counters().bytesOut.fetch_add(payload, std::memory_order_relaxed);
}

}  // namespace rs::server

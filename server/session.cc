#include "server/session.h"

#include <asio/post.hpp>

#include <cstring>
#include <optional>

#include "core/cluster/sharding.h"
#include "core/common/log.h"
#include "core/transport/stream_error.h"
#include "core/wire/control_frames.h"

namespace rs::server {
namespace {
constexpr auto kAbortGrace = std::chrono::seconds(2);
}  // namespace

Session::Session(SessionOwner& owner, asio::io_context& io, const ServerConfig& config,
                 ShardStats& stats, std::unique_ptr<transport::Stream> stream,
                 std::shared_ptr<Group> group, uint32_t rank, uint16_t streamIndex,
                 std::chrono::milliseconds lossBound)
    : owner_(owner),
      io_(io),
      config_(config),
      stats_(stats),
      stream_(std::move(stream)),
      group_(std::move(group)),
      rank_(rank),
      streamIndex_(streamIndex),
      name_(fmt::format("{} rank {} stream {} ({})", group_->name(), rank, streamIndex,
                        stream_->peerName())),
      staging_(config.pieceBytes),
      writer_(
          [this](transport::IoHandler done) -> transport::IoHandler {
            return [self = shared_from_this(), done = std::move(done)](
                       const std::error_code& ec, size_t n) { done(ec, n); };
          },
          [this](const std::error_code& ec, transport::FrameWriter::Written frames) {
            onWritten(ec, frames);
          }),
      pacer_(transport::LinkShare::forProcess(
          transport::LinkShare::bytesPerSecondFromGbps(config.linkGbps))) {
  if (lossBound.count() == 0) return;
  // Each check holds the session alive, as its other operations do.
  auto hold = [this](transport::WaitHandler done) -> transport::WaitHandler {
    return [self = shared_from_this(), done = std::move(done)](const std::error_code& ec) {
      done(ec);
    };
  };
  liveness_.emplace(io, lossBound, static_cast<transport::LivenessWatch::Owner&>(*this), hold);
}

void Session::start(const wire::HelloAckPayload& ack, bool askedFabric) {
  wire::FrameHeader h;
  h.type = wire::FrameType::kHelloAck;
  h.group = group_->id();
  h.rank = rank_;
  h.payloadLength = wire::kHelloAckPayloadSize;
  auto payload = wire::encodeHelloAck(ack);
  writer_.enqueue(transport::ownedFrame(
      wire::encodeHeader(h), std::string(reinterpret_cast<const char*>(payload.data()),
                                         payload.size())));
  if (askedFabric) offerFabric();
  flush();
  // Members read their results as they come, so a shut window is a member not reading.
  if (liveness_) stream_->setLossBound(liveness_->bound(), /*unreadSendsToo=*/true);
  readHeader();
}

// ---------------------------------------------------------------------------------------------
// Read side: header, then the payload in pieces, each folded into the slot as it lands.

void Session::readHeader() {
  if (closed_ || aborting_) return;
  readInFlight_ = true;
  reader_.readHeader(*stream_, [self = shared_from_this()](const std::error_code& ec, size_t) {
    self->onHeader(ec);
  });
}

void Session::onHeader(const std::error_code& ec) {
  if (!readDone(ec)) return;
  if (ec) {
    // End of stream between frames is how a member leaves; anything else is a failure.
    if (transport::peerClosed(ec)) {
      owner_.memberLeft(*this);
      close(unavailableError("the member closed the stream"));
    } else {
      ioFailed(ec, "read failed");
    }
    return;
  }
  wire::DecodeLimits limits;
  limits.maxPayloadBytes = config_.maxChunkBytes;
  wire::FrameHeader h;
  if (Status s = wire::decodeHeader(reader_.header().data(), wire::kHeaderSize, limits, &h);
      !s.isOk()) {
    reject(FrameRejection::kMalformed, s);
    return;
  }
  if (h.type == wire::FrameType::kHeartbeat) return onHeartbeat(h);
  in_ = h;  // the last REDUCE (or ABORT) header: what the messages below name
  if (fabricState_ == FabricState::kOffered && in_.type != wire::FrameType::kFabricAccept &&
      in_.type != wire::FrameType::kFabricDecline && in_.type != wire::FrameType::kAbort &&
      in_.type != wire::FrameType::kError) {
    reject(FrameRejection::kUnexpectedType,
           protocolError(fmt::format("{} frame before the answer to FABRIC_OFFER",
                                     wire::frameTypeName(in_.type))));
    return;
  }
  if (isLane() && laneState_ == LaneState::kAwaitFailover &&
      in_.type != wire::FrameType::kFailover && in_.type != wire::FrameType::kAbort &&
      in_.type != wire::FrameType::kError) {
    reject(FrameRejection::kUnexpectedType,
           protocolError(fmt::format("{} frame before FAILOVER, which opens a lane",
                                     wire::frameTypeName(in_.type))));
    return;
  }
  switch (in_.type) {
    case wire::FrameType::kFabricAccept:
      if (fabricState_ != FabricState::kOffered) break;
      handleFabricAnswer();
      return;
    case wire::FrameType::kFabricDecline:
      // After its ACCEPT too, until its first payload: the member's probe failed (WIRE.md).
      if (fabricState_ != FabricState::kOffered &&
          (fabricState_ != FabricState::kActive || fabricUsed_))
        break;
      handleFabricAnswer();
      return;
    case wire::FrameType::kReduce:
      if (!fabricAsAgreed()) return;
      if (isLane()) handleEntry();
      else handleReduce();
      return;
    case wire::FrameType::kFinal:
    case wire::FrameType::kCommitted:
      if (!isLane()) break;
      handleEntry();
      return;
    case wire::FrameType::kFailover:
      // On a normal stream: the member moves away from this reducer (memberMovedAway).
      if (isLane() && laneState_ != LaneState::kAwaitFailover) break;
      handleFailover();
      return;
    case wire::FrameType::kReceived:
      handleReceived();
      return;
    case wire::FrameType::kJoin:
      handleJoin();
      return;
    case wire::FrameType::kAbort:
    case wire::FrameType::kError:
      // A member gave up (for instance after a failure on another reducer): fail the group
      // everywhere so that no other member waits for a timeout.
      peerReason_.resize(in_.payloadLength);
      readInFlight_ = true;
      reader_.readExactly(*stream_, peerReason_.data(), peerReason_.size(),
                          [self = shared_from_this()](const std::error_code& ec, size_t) {
                            self->onPeerAbort(ec);
                          });
      return;
    default:
      break;
  }
  reject(FrameRejection::kUnexpectedType,
         protocolError(fmt::format("unexpected {} frame after the handshake{}",
                                   wire::frameTypeName(in_.type),
                                   isLane() ? " on a lane" : "")));
}

void Session::onHeartbeat(const wire::FrameHeader& h) {
  if (h.group != group_->id() || h.rank != rank_) {
    reject(FrameRejection::kWrongMember,
           protocolError(fmt::format("HEARTBEAT names group {} rank {}, but this stream joined "
                                     "as {}",
                                     h.group.toString(), h.rank, name_)));
    return;
  }
  stats_.heartbeatsReceived.fetch_add(1, std::memory_order_relaxed);
  readHeader();
}

void Session::onPeerAbort(const std::error_code& ec) {
  if (!readDone(ec)) return;
  wire::PeerError peer;
  if (ec || !wire::parseErrorFrame(in_, reinterpret_cast<const uint8_t*>(peerReason_.data()),
                                   peerReason_.size(), &peer)
                 .isOk())
    peer.reason = "no readable reason";
  fail(abortedError(fmt::format("rank {} gave up: {}", rank_, peer.reason)));
}

bool Session::fromThisMember() {
  if (in_.group == group_->id() && in_.rank == rank_) return true;
  reject(FrameRejection::kWrongMember,
         protocolError(fmt::format("{} names group {} rank {}, but this {} joined as {}",
                                   wire::frameTypeName(in_.type), in_.group.toString(), in_.rank,
                                   isLane() ? "lane" : "stream", name_)));
  return false;
}

bool Session::fromThisStream() {
  if (!fromThisMember()) return false;
  const GroupParams& p = group_->params();
  const std::string_view type = wire::frameTypeName(in_.type);
  // Chunk i belongs to reducer i mod R and travels on stream (i / R) mod K: a frame that
  // breaks this rule was routed by a member that disagrees with the others.
  const uint32_t owner = cluster::reducerForChunk(in_.chunk, p.reducerCount);
  const uint32_t stream = cluster::streamForChunk(in_.chunk, p.reducerCount, p.streamCount);
  if (owner != p.reducerIndex || stream != streamIndex_) {
    reject(FrameRejection::kMisrouted,
           protocolError(fmt::format("{} for chunk {}: the chunk belongs to reducer {} stream {}, "
                                     "not reducer {} stream {}",
                                     type, in_.chunk, owner, stream, p.reducerIndex,
                                     streamIndex_)));
    return false;
  }
  return true;
}

void Session::handleReceived() {
  if (!fromThisRoute()) return;
  if (Status s = owner_.received(*this, in_.chunk); !s.isOk()) {
    reject(FrameRejection::kOutOfOrder, s);
    return;
  }
  // The frame behind it usually came in the same read (a RECEIVED rides in front of a REDUCE):
  // on at once, not through a post, which costs a round of the io loop. Once: a header-only
  // frame right behind it takes the post.
  if (!inlineHeader_ && reader_.takeBufferedHeader()) {
    inlineHeader_ = true;
    onHeader({});
    inlineHeader_ = false;
    return;
  }
  readHeader();
}

void Session::handleReduce() {
  if (!fromThisStream()) return;
  // A group that took this reducer back (proto/FAILOVER.md, "A reducer comes back") takes chunks
  // from its rejoin point T on, and none before JOIN_AT (rejoinAt() is 0 for any other group).
  if (in_.chunk < group_->rejoinAt() || group_->joining()) {
    reject(group_->joining() ? FrameRejection::kUnexpectedType : FrameRejection::kMisrouted,
           protocolError(group_->joining()
                             ? fmt::format("REDUCE for chunk {} before JOIN_AT: the group is "
                                           "rejoining this reducer",
                                           in_.chunk)
                             : fmt::format("REDUCE for chunk {}, below chunk {} where the group "
                                           "took this reducer back",
                                           in_.chunk, group_->rejoinAt())));
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
  lastSeq_ = in_.seq;
  awaitedChunk_.reset();
  if (chunksInFlight_++ == 0 && liveness_) liveness_->start();
  pacer_.busy(in_.payloadLength);
  acquireAndBegin();
}

void Session::acquireAndBegin() {
  std::shared_ptr<Slot> slot;
  Status error;
  switch (owner_.acquireSlot(shared_from_this(), in_, &slot, &error)) {
    case SessionOwner::Acquire::kReady:
      begin(std::move(slot), Fold::kNowIfBuffered);
      return;
    case SessionOwner::Acquire::kParked:
      parked_ = true;
      watchPeer();
      return;
    case SessionOwner::Acquire::kFailed:
      // The shard has aborted the group (this session included) with the reason.
      return;
  }
}

void Session::begin(std::shared_ptr<Slot> slot, Fold fold) {
  if (isLane()) beginEntry(std::move(slot), fold);
  else beginContribution(std::move(slot), fold);
}

bool Session::readDone(const std::error_code& ec) {
  readInFlight_ = false;
  if (closed_) return false;
  if (aborting_) {
    // The member is gone (EOF, reset): nothing to drain, and another read on a socket that
    // reported end of stream would wait for an edge that never comes, holding the group's
    // connection until the abort grace ran out.
    if (ec) close(abortedError("the member closed after ABORT"));
    else drainInput();
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
  reader_.discard();
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
  stream_->stopWatchingPeer();
  begin(std::move(slot), Fold::kLater);
}

void Session::onOthersCaughtUp() {
  if (!heldBack_ || closed_ || aborting_ || !slot_) return;
  if (slot_->holdBack(rank_)) return;  // still too far ahead: wait for the next release
  heldBack_ = false;
  stream_->stopWatchingPeer();
  readPiece(Fold::kLater);
}

void Session::othersBegan(uint64_t seq, uint64_t chunk) {
  if (!liveness_ || isLane() || closed_ || aborting_ || !haveLastChunk_ || lastSeq_ != seq ||
      lastChunk_ >= chunk || awaitedChunk_)
    return;
  awaitedChunk_ = chunk;
  // Awaited from now on, unless something owed already runs the clock (its quiet counts on).
  liveness_->startIfIdle();
}

void Session::watchPeer() {
  const bool watching = stream_->watchPeerGone(
      [self = shared_from_this()](const std::error_code& why) { self->onPeerGone(why); });
  if (!watching)
    rs::logger().debug("{}: cannot watch for the member leaving while chunk {} waits (out of "
                       "descriptors?); the collective timeout bounds the wait",
                       name_, in_.chunk);
}

void Session::onPeerGone(const std::error_code& why) {
  if (transport::cancelled(why) || closed_ || aborting_) return;
  const char* waiting = parked_                        ? "for a slot"
                        : payloadOnFabric() && !heldBack_ ? "for its payload on the fabric"
                                                          : "for the other members";
  const bool closedInOrder = transport::peerClosed(why);
  if (isLane() && closedInOrder)
    return laneEnded(fmt::format("closed while chunk {} waited {}", in_.chunk, waiting));
  if (!closedInOrder)
    return ioFailed(why, fmt::format("the connection failed while chunk {} waited {}",
                                     in_.chunk, waiting));
  fail(ioError(fmt::format("the member closed the stream while chunk {} waited {}", in_.chunk,
                           waiting)));
}

void Session::beginContribution(std::shared_ptr<Slot> slot, Fold fold) {
  slot->startReceiving(rank_);
  slot_ = std::move(slot);
  tailBytes_ = 0;
  frameLeft_ = in_.payloadLength;
  readPiece(fold);
}

// Reads whatever the socket has, up to a piece, and folds it in at once: waiting for a whole
// piece would hold back the RESULT parts of a chunk no larger than a piece until all of it is
// in, and a worker's download would no longer overlap its upload.
void Session::readPiece(Fold fold) {
  if (payloadOnFabric()) return readFabricPiece();
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(frameLeft_, staging_.size() - tailBytes_));
  readInFlight_ = true;
  // A small frame's payload usually came with its header (frame_reader.h).
  if (fold == Fold::kNowIfBuffered && reader_.buffered() != 0 && want != 0) {
    onPiece({}, reader_.take(staging_.data() + tailBytes_, want));
    return;
  }
  reader_.readSome(
      *stream_, staging_.data() + tailBytes_, want,
      [self = shared_from_this()](const std::error_code& ec, size_t n) { self->onPiece(ec, n); },
      slot_->readWakeBytes());  // the stream caps the wake at `want`
}

void Session::onPiece(const std::error_code& ec, size_t bytes) {
  if (!readDone(ec)) return;
  if (ec) {
    if (!transport::peerClosed(ec))
      return ioFailed(ec, fmt::format("read failed inside chunk {}", in_.chunk));
    if (isLane()) return laneEnded(fmt::format("ended inside chunk {}", in_.chunk));
    fail(ioError(fmt::format("stream ended inside chunk {}", in_.chunk)));
    return;
  }
  Slot& slot = *slot_;
  if (slot.dead()) return;  // the group was aborted while this piece was in flight
  frameLeft_ -= bytes;
  stats_.bytesIn.fetch_add(bytes, std::memory_order_relaxed);
  group_->counters().bytesIn.fetch_add(bytes, std::memory_order_relaxed);
  const size_t have = tailBytes_ + bytes;
  const size_t folded = slot.fold(rank_, staging_.data(), have);
  tailBytes_ = have - folded;
  if (folded == 0) {  // less than one element so far
    readPiece(Fold::kNowIfBuffered);
    return;
  }
  // The fold reads from the front of staging_, so a split element moves there.
  if (tailBytes_ != 0) std::memmove(staging_.data(), staging_.data() + folded, tailBytes_);
  afterFold(slot);
}

void Session::afterFold(Slot& slot) {
  if (!slot.memberDone(rank_) && frameLeft_ == 0) {
    // A lane's FINAL ended inside its chunk (whole elements: nothing is left over): the REDUCE
    // of the rest comes next.
    final_ = in_;
    readHeader();
    return;
  }
  if (!slot.memberDone(rank_)) {
    owner_.contributed(slot);
    if (closed_ || aborting_) return;
    if (slot.holdBack(rank_)) {  // over the lead limit: the shard wakes it after a release
      heldBack_ = true;
      watchPeer();
      return;
    }
    readPiece(Fold::kNowIfBuffered);
    return;
  }
  std::shared_ptr<Slot> finished = std::move(slot_);
  owner_.contributed(*finished);
  readHeader();
}

void Session::reject(FrameRejection why, const Status& reason) {
  if (closed_) return;
  stats_.countRejection(why);
  fail(reason);
}

void Session::fail(const Status& reason) {
  if (closed_) return;
  rs::logger().error("{}: {}", name_, reason.message());
  close(reason);
  owner_.failGroup(group_, groupReason(reason));
}

void Session::ioFailed(const std::error_code& ec, const std::string& what) {
  const bool silent = transport::timedOut(ec);  // the stream's loss bound passed
  if (isLane() && !silent) return laneEnded(what + ": " + ec.message());
  if (!silent || !liveness_) return fail(ioError(what + ": " + ec.message()));
  liveness_->cancel();  // one loss a session
  owner_.memberLost(
      *this, MemberLoss::kUnresponsive,
      unavailableError(fmt::format(
          "{}: the connection timed out: for the stream's loss bound ({} ms: the reducer's "
          "--loss-detect-ms, or the member's RS_LOSS_DETECT_MS where lower) the member's host "
          "acknowledged nothing sent to it, or the member read nothing of it: member lost",
          what, liveness_->bound().count())));
}

Status Session::groupReason(const Status& reason) const {
  return Status(reason.code(),
                fmt::format("rank {} stream {}: {}", rank_, streamIndex_, reason.message()));
}

// ---------------------------------------------------------------------------------------------
// Write side: the frame writer's FIFO, written as gather writes.

void Session::sendResult(const std::shared_ptr<Slot>& slot, uint64_t from, uint64_t to) {
  if (closed_ || aborting_) return;
  const wire::FrameHeader h = wire::resultHeader({.group = slot->group(),
                                                   .rank = rank_,
                                                   .seq = slot->seq(),
                                                   .chunk = slot->chunk(),
                                                   .elemOffset = slot->elemOffset() + from,
                                                   .elemCount = static_cast<uint32_t>(to - from),
                                                   .dtype = slot->dtype(),
                                                   .op = slot->op()});
  const bool lastPart = to == slot->elemCount();
  // Counted before the write starts: its completion handler never runs inside flush().
  if (lastPart) slot->lastPartQueued();
  if (fabricState_ == FabricState::kActive) {
    wire::FrameHeader onFabric = h;
    onFabric.flags |= wire::kFlagFabric;
    writer_.enqueue({wire::encodeHeader(onFabric), {nullptr, 0}, slot,
                     lastPart ? kLastResultPart : kResultPart});
    sendResultOnFabric(slot, from, h.payloadLength);
  } else {
    writer_.enqueue({wire::encodeHeader(h),
                     {slot->resultData(from), h.payloadLength},
                     slot,
                     lastPart ? kLastResultPart : kResultPart});
  }
  flush();
}

void Session::sendCommit(uint64_t chunk) {
  if (closed_ || aborting_) return;
  commitDue_ = chunk;
  if (writer_.queued() == 0 && !commitScheduled_) {
    commitScheduled_ = true;
    owner_.commitLater(shared_from_this());
  }
  flush();
}

void Session::sendCommitNow() {
  commitScheduled_ = false;
  if (closed_ || aborting_ || !commitDue_) return;
  commitNow_ = true;
  flush();
}

void Session::abort(const Status& reason) {
  wire::ErrorFrame frame = wire::abortFrame(group_->id(), rank_, reason);
  closeAfter(transport::ownedFrame(frame.header, std::move(frame.reason)), reason);
}

void Session::closeAfter(transport::FrameWriter::Frame frame, const Status& reason,
                         bool commitFirst) {
  if (closed_ || aborting_) return;
  aborting_ = true;
  writer_.dropQueued();  // results of an aborted group (or a retired lane) are void
  slot_.reset();         // its memory returns now, not when the member closes
  if (commitFirst && commitDue_) writer_.enqueue(commitFrame());
  commitDue_.reset();
  writer_.enqueue(std::move(frame));
  graceTimer_ = std::make_unique<asio::steady_timer>(io_, kAbortGrace);
  graceTimer_->async_wait([self = shared_from_this(), reason](const std::error_code& ec) {
    if (!ec) self->close(reason);
  });
  flush();
  stream_->stopWatchingPeer();  // a parked or held-back session drains too
  drainInput();  // a no-op while a read is in flight: its handler starts the drain
}

void Session::close(const Status& reason) {
  if (closed_) return;
  auto self = shared_from_this();  // detach() drops the shard's reference
  closed_ = true;
  rs::logger().debug("{}: closing: {}", name_, reason.message());
  if (graceTimer_) graceTimer_->cancel();
  if (liveness_) liveness_->cancel();
  pacer_.idle();
  stream_->close();
  writer_.close();
  if (channel_) channel_->close(reason);
  slot_.reset();
  owner_.detach(*this);
}

void Session::flush() {
  if (closed_) return;
  if (commitDue_ && !aborting_ && !writer_.writing() && (commitNow_ || writer_.queued() > 0)) {
    writer_.enqueueFirst(commitFrame());
    commitDue_.reset();
    commitNow_ = false;
  }
  pacer_.refresh(*stream_);
  writer_.flush(*stream_);
}

transport::FrameWriter::Frame Session::commitFrame() const {
  return {wire::encodeHeader(wire::commitHeader(group_->id(), rank_, *commitDue_)),
          {nullptr, 0},
          nullptr,
          kControlFrame};
}

// The writer releases the frames' slots once this returns.
void Session::onWritten(const std::error_code& ec, transport::FrameWriter::Written frames) {
  if (!ec && !closed_) countWritten(frames);
  if (closed_) return;
  if (ec) {
    if (aborting_) close(ioError("write failed while aborting: " + ec.message()));
    else ioFailed(ec, "write failed");
    return;
  }
  if (aborting_ && writer_.queued() == 0) {
    // The ABORT is out: send FIN, and close once the member has closed too (or at the grace
    // timer), so that it reads the reason before its connection goes away.
    stream_->shutdownSend();
    return;
  }
  flush();
}

void Session::countWritten(transport::FrameWriter::Written frames) {
  uint64_t payload = 0;
  std::optional<std::chrono::steady_clock::time_point> now;
  for (const transport::FrameWriter::Frame& f : frames) {
    if (f.tag == kControlFrame) continue;  // not result payload
    payload += f.payload.size;
    pacer_.done(f.payload.size);  // a chunk's parts add up to its header's (busy)
    if (f.tag != kLastResultPart) continue;
    if (chunksInFlight_ > 0 && --chunksInFlight_ == 0) pacer_.idle();
    auto& slot = *static_cast<Slot*>(f.owner.get());  // a RESULT part's owner is its slot
    if (slot.lastPartWritten()) {
      if (!now) now = std::chrono::steady_clock::now();
      stats_.reduceLatency.observe(*now - slot.created());
    }
  }
  if (payload == 0) return;
  stats_.bytesOut.fetch_add(payload, std::memory_order_relaxed);
  group_->counters().bytesOut.fetch_add(payload, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// Liveness: from a chunk's header until its last RESULT part is written, this stream owes the
// member results, and waits on it (for the rest of the chunk, or for the HEARTBEATs of a member
// awaiting its results) unless this side stopped reading it (parked, held back).

transport::Liveness::Sample Session::livenessSample() const {
  if (closed_ || aborting_) return {};
  const bool owing = chunksInFlight_ > 0;
  // A lane waiting for its agreed point owes its member that point, behind which its entries
  // wait for their results: HEARTBEATs go, so that the member does not take this survivor for
  // lost while another member's FAILOVER is slow to come. It waits on nothing: it reads nothing
  // until then.
  const bool awaitingPoint = laneState_ == LaneState::kAwaitPoint;
  // Behind the others inside a collective it has begun here, it owes its next chunk: awaited
  // (othersBegan), except while this side stopped reading it.
  const bool awaited = awaitedChunk_.has_value();
  return {.arrived = stream_->bytesArrived(),
          .sent = stream_->bytesSent(),
          .owing = owing || awaitingPoint,
          .waiting = (owing || awaited) && !parked_ && !heldBack_,
          .canSend = !writer_.writing() && writer_.queued() == 0 && !writer_.failed()};
}

uint64_t Session::sendHeartbeat() {
  writer_.enqueue({wire::heartbeatFrame(group_->id(), rank_), {nullptr, 0}, nullptr, kControlFrame});
  flush();
  stats_.heartbeatsSent.fetch_add(1, std::memory_order_relaxed);
  return stream_->bytesSent();
}

void Session::peerSilent(std::chrono::milliseconds silence) {
  const std::string state =
      slot_ ? fmt::format("its contribution to chunk {} (seq {}) was coming in", in_.chunk,
                          in_.seq)
      : chunksInFlight_ > 0
          ? fmt::format("the results of its chunk {} (seq {}) were owed to it", in_.chunk,
                        in_.seq)
          : fmt::format("the others had begun chunk {} of the collective (seq {}) it was in, "
                        "past its chunk {}",
                        awaitedChunk_.value_or(0), lastSeq_, lastChunk_);
  owner_.memberLost(
      *this, MemberLoss::kSilent,
      unavailableError(fmt::format(
          "silent for {} ms while {}: member lost (the stream's loss bound is {} ms: the "
          "reducer's --loss-detect-ms, or the member's RS_LOSS_DETECT_MS where lower)",
          silence.count(), state, liveness_->bound().count())));
}

}  // namespace rs::server

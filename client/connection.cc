#include "client/connection.h"

#include <spdlog/spdlog.h>

#include "client/reducer_frames.h"
#include "client/request_state.h"
#include "core/cluster/sharding.h"
#include "core/common/log.h"
#include "core/reduce/convert.h"
#include "core/transport/farewell.h"
#include "core/transport/stream_error.h"
#include "core/wire/failover_frames.h"
#include "core/wire/control_frames.h"
#include "core/wire/rejoin_frames.h"

namespace rs::client {
namespace {
constexpr auto kReasonGrace = std::chrono::milliseconds(2000);
// Bytes handed to the writer ahead of the socket: enough to fill a gather write of small
// chunks and to overlap a large chunk's conversion with the previous one's write, little
// enough that a RECEIVED waits behind little and a collective's staging memory (narrowed
// chunks) stays bounded per stream. At least one frame goes, however large.
constexpr uint64_t kWriteAhead = 512 << 10;
// On a fabric stream the payloads go to the channel, which copies each piece into its send ring
// as credits allow: handed ahead, a payload costs a pointer (a compressed chunk its staging
// buffer). Enough to keep a reducer's ring of several MiB full.
constexpr uint64_t kFabricWriteAhead = 8 << 20;

std::string connectionName(uint32_t reducer, const Endpoint& endpoint, uint32_t stream,
                           const std::optional<LaneSpec>& lane, bool redial) {
  if (!lane)
    return fmt::format("reducer {} ({}) stream {}{}", reducer, endpoint.toString(), stream,
                       redial ? " (redial)" : "");
  return fmt::format("reducer {} ({}) lane {} (reducer {} stream {}, reducers {} lost)", reducer,
                     endpoint.toString(), stream, lane->lane.deadHome, lane->lane.stream,
                     lane->dead.toString());
}
}  // namespace

Connection::Connection(ConnectionOwner& owner, const ClientOptions& options,
                       const GroupSpec& group, asio::io_context& io, AckTimer& acks,
                       uint32_t reducerIndex,
                       uint32_t streamIndex, Endpoint endpoint,
                       std::shared_ptr<transport::LinkShare> reducerLink,
                       std::optional<LaneSpec> lane,
                       std::optional<Handshake::Redial> redial,
                       transport::fabric::FabricHub* fabricHub)
    : owner_(owner),
      options_(options),
      group_(group),
      io_(io),
      acks_(acks),
      reducerIndex_(reducerIndex),
      streamIndex_(streamIndex),
      endpoint_(std::move(endpoint)),
      name_(connectionName(reducerIndex, endpoint_, streamIndex, lane, redial.has_value())),
      graceTimer_(io),
      writer_(
          // Each write is counted like every other operation, so that drain stays exact.
          [this](transport::IoHandler done) -> transport::IoHandler {
            return transport::countedHandler(shared_from_this(), pendingOps_,
                                             &Connection::opDone, std::move(done));
          },
          [this](const std::error_code& ec, transport::FrameWriter::Written frames) {
            onWritten(ec, frames);
          }),
      pacer_(transport::LinkShare::forProcess(
                 transport::LinkShare::bytesPerSecondFromGbps(options.linkGbps)),
             std::move(reducerLink)),
      fabricHub_(fabricHub),
      lane_(std::move(lane)),
      redial_(redial),
      rejoining_(redial.has_value()) {}

void Connection::opDone() {
  if (!pendingOps_.done() || !closed_ || drained_) return;
  drained_ = true;
  // held_ is the tail of expected_: every chunk whose result is not all in is there.
  std::vector<ChunkTransfer> unfinished(std::make_move_iterator(expected_.begin()),
                                        std::make_move_iterator(expected_.end()));
  held_.clear();
  expected_.clear();
  channel_.reset();  // closed, nothing pending on it: the hub may go before this connection
  owner_.onDrained(*this, std::move(unfinished));
}

// --- Connecting ------------------------------------------------------------------------------

void Connection::start() {
  pendingOps_.add();  // held until the handshake is started, so an early close drains exactly
  if (!closed_) {
    handshake_ = std::make_shared<Handshake>(options_, group_, io_, reducerIndex_, streamIndex_,
                                             endpoint_, name_, redial_, fabricHub_);
    handshake_->start(counted([this](Result<Handshake::Handshaken> handshaken) {
      onHandshaken(std::move(handshaken));
    }));
  }
  opDone();
}

void Connection::onHandshaken(Result<Handshake::Handshaken> handshaken) {
  handshake_.reset();
  if (closed_) return;
  if (!handshaken) {
    if (rejoining_) return fail(handshaken.status());  // a redial that failed: onRejoinEnded
    // A survivor that a lane cannot reach (refused, reset, silent) is lost; one that refuses
    // the lane says why, and that fails.
    const StatusCode code = handshaken.status().code();
    if (lane_ && (code == StatusCode::kUnavailable || code == StatusCode::kTimeout ||
                  code == StatusCode::kIoError))
      return lost(handshaken.status());
    return fail(handshaken.status());
  }
  stream_ = std::move(handshaken->stream);
  reader_ = std::move(handshaken->reader);
  channel_ = std::move(handshaken->channel);
  // Payload positions count in the channel's posted bytes, which include the handshake's probe.
  if (channel_) channelQueued_ = channel_->bytesPosted();
  if (channel_ || !handshaken->fabricNotUsed.empty())
    owner_.onFabricChosen(*this, handshaken->fabricNotUsed);
  queuedBytes_ = stream_->bytesSent();  // the HELLO
  if (handshaken->lossBound.count() > 0) {
    // Each check counts as a pending operation, so that drain stays exact.
    auto hold = [this](transport::WaitHandler done) -> transport::WaitHandler {
      return counted(std::move(done));
    };
    liveness_.emplace(io_, handshaken->lossBound,
                      static_cast<transport::LivenessWatch::Owner&>(*this), hold);
    // Keep-alive only: the reducer may rightly stop reading this stream longer than the
    // bound (admission, its lead limit), which TCP_USER_TIMEOUT would take for a loss.
    stream_->setLossBound(handshaken->lossBound, /*unreadSendsToo=*/false);
  }
  if (lane_) enqueueFailover();  // a lane's first frame
  feedWriter();
  owner_.onConnected(*this);
  readHeader();
  if (liveness_ && !expected_.empty()) liveness_->start();  // submitted during the handshake
}

// --- Reading ---------------------------------------------------------------------------------

void Connection::readHeader() {
  if (closed_) return;
  // The end of a read batch. In the middle of a collective on this stream (more results to
  // come) what it completed is acknowledged at once, so that its commit comes before the
  // collective completes and its results need not be kept; a stream's uploads are usually all
  // written by then, so no REDUCE frame would carry it. Between collectives, by the next REDUCE
  // frame, or by the ack timer.
  if (receivedDue() && reader_->buffered() < wire::kHeaderSize) {
    if (expected_.empty()) deferReceived();
    else acknowledgeNow();
  }
  reader_->readHeader(*stream_,
                      counted([this](const std::error_code& ec, size_t) { onHeader(ec); }));
}

void Connection::onHeader(const std::error_code& ec) {
  if (closed_ || lostByTimeout(ec)) return;
  if (Status s = decodeReducerHeader(name_, ec, *reader_, options_.maxChunkBytes, &in_);
      !s.isOk())
    return ec ? readFailed(s) : fail(s);  // a stream that ended or broke: its reducer is lost
  if (in_.type == wire::FrameType::kHeartbeat) {  // the reducer lives: its bytes were heard
    if (in_.group != group_.id || in_.rank != group_.rank)
      return fail(protocolError(fmt::format("{}: HEARTBEAT for group {} rank {}", name_,
                                            in_.group.toString(), in_.rank)));
    return readHeader();
  }
  if (in_.type == wire::FrameType::kError || in_.type == wire::FrameType::kAbort) {
    errorText_.resize(in_.payloadLength);
    reader_->readExactly(*stream_, errorText_.data(), errorText_.size(),
                         counted([this](const std::error_code& e, size_t) { onErrorText(e); }));
    return;
  }
  if (in_.type == wire::FrameType::kJoinOffer || in_.type == wire::FrameType::kJoinAt)
    return onJoinFrame();
  // A LOST may come on a redial's stream too: the reducer taken back learns the smaller dead
  // set from the members that switched first, and tells every member, also one that has its
  // JOIN_AT and has not switched yet (proto/FAILOVER.md, "Several lost"). The owner's
  // generations decide what it means.
  if (in_.type == wire::FrameType::kLost) {
    if (in_.group != group_.id || in_.rank != group_.rank)
      return fail(protocolError(fmt::format("{}: LOST for group {} rank {}", name_,
                                            in_.group.toString(), in_.rank)));
    lostPayload_.resize(in_.payloadLength);
    reader_->readExactly(*stream_, lostPayload_.data(), lostPayload_.size(),
                         counted([this](const std::error_code& e, size_t) { onLostPayload(e); }));
    return;
  }
  if (rejoining_)
    return fail(protocolError(fmt::format("{}: {} frame before this member took the reducer "
                                          "back (JOIN_AT)",
                                          name_, wire::frameTypeName(in_.type))));
  if (in_.type == wire::FrameType::kCommit) return onCommit();
  if (lane_) popWholeEntries();
  if (in_.type != wire::FrameType::kResult)
    return fail(protocolError(fmt::format("{}: unexpected {} frame", name_,
                                          wire::frameTypeName(in_.type))));
  if (expected_.empty() || !expected_.front().awaitsResult())
    return fail(protocolError(fmt::format("{}: RESULT for chunk {} that was never sent", name_,
                                          in_.chunk)));
  // A chunk's result comes as one or more parts, front to back: the reducer sends each part
  // as soon as every member's contribution to it is in.
  ChunkTransfer& next = expected_.front();
  const wire::FrameHeader& want = next.header;
  if (in_.chunk != want.chunk || in_.seq != want.seq || in_.dtype != want.dtype ||
      in_.op != want.op || in_.group != want.group || in_.rank != want.rank ||
      in_.elemOffset != want.elemOffset + next.resultElems ||
      in_.elemCount > want.elemCount - next.resultElems)
    return fail(protocolError(fmt::format(
        "{}: RESULT for chunk {} (seq {}, elements {}..{}) but elements {}..{} of chunk {} "
        "(seq {}) are next",
        name_, in_.chunk, in_.seq, in_.elemOffset, in_.elemOffset + in_.elemCount,
        want.elemOffset + next.resultElems, want.elemOffset + want.elemCount, want.chunk,
        want.seq)));
  // A part sums every member's contribution, this one's included: it cannot cover elements
  // that this member has not sent yet (which would also hand the caller a result while its
  // send buffer is still being read).
  if (const uint64_t sent = elemsSent(next); next.resultElems + in_.elemCount > sent)
    return fail(protocolError(fmt::format(
        "{}: RESULT for elements {}..{} of chunk {} (seq {}), but this worker has sent only "
        "elements {}..{} of it: a result can only follow this worker's own upload",
        name_, in_.elemOffset, in_.elemOffset + in_.elemCount, in_.chunk, in_.seq,
        want.elemOffset, want.elemOffset + sent)));
  // On a fabric stream every part's payload is on the channel, on a TCP stream none is.
  if (const bool flagged = (in_.flags & wire::kFlagFabric) != 0; flagged != onFabric())
    return fail(protocolError(fmt::format(
        "{}: RESULT for chunk {} (seq {}) {} the fabric flag on a stream {}", name_, in_.chunk,
        in_.seq, flagged ? "with" : "without",
        onFabric() ? "whose payloads go on its fabric channel" : "without a fabric channel")));
  // Straight into the caller's buffer, or for a compressed chunk into the staging buffer.
  void* dst = static_cast<std::byte*>(next.dst) + next.resultElems * dataTypeSize(in_.dtype);
  if (next.compressed) {
    resultStaging_.resize(in_.elemCount);
    dst = resultStaging_.data();
  }
  if (onFabric()) return readPieces(dst);
  // A small part usually came whole with its header: take it now, a read handler's work saved.
  if (reader_->buffered() >= in_.payloadLength) {
    reader_->take(dst, in_.payloadLength);
    return onResult({}, in_.payloadLength);
  }
  auto done = counted([this](const std::error_code& e, size_t n) { onResult(e, n); });
  if (next.inPlace())
    reader_->readWhole(*stream_, dst, in_.payloadLength, dataTypeSize(in_.dtype), std::move(done));
  else
    reader_->readExactly(*stream_, dst, in_.payloadLength, std::move(done));
}

void Connection::countPartial(size_t bytes) {
  // The whole elements of the part that came are final bits in dst (in place, readWhole wrote
  // no other, nor do a channel's pieces); a compressed part reached only the staging buffer.
  ChunkTransfer& next = expected_.front();
  if (!next.compressed) next.resultElems += bytes / dataTypeSize(in_.dtype);
}

void Connection::onResult(const std::error_code& ec, size_t bytes) {
  // What came is in dst also when this connection is closing meanwhile (a retired connection
  // hands its chunks on with their final prefix): it is counted first, whatever happens next.
  ChunkTransfer& next = expected_.front();
  if (ec) {
    countPartial(bytes);
    if (closed_ || lostByTimeout(ec)) return;
    return readFailed(ioError(fmt::format("{}: reading the result of chunk {}: {} ({} of its {} "
                                          "result elements in)",
                                          name_, in_.chunk, ec.message(), next.knownPrefix(),
                                          next.header.elemCount)));
  }
  onPartIn();
}

void Connection::onPartIn() {
  ChunkTransfer& next = expected_.front();
  if (next.compressed)
    reduce::widenToFloat32(in_.dtype, resultStaging_.data(),
                           static_cast<float*>(next.dst) + next.resultElems, in_.elemCount);
  next.resultElems += in_.elemCount;
  // The whole result is in, so the whole REDUCE went out (onHeader): the request may complete
  // without the writer still reading the caller's send buffer.
  if (next.resultElems == next.header.elemCount) {
    std::shared_ptr<RequestState> request = std::move(next.request);
    // Requests count their chunks by home reducer, wherever a chunk's result came from.
    const uint32_t home = cluster::reducerForChunk(
        next.header.chunk, static_cast<uint32_t>(options_.reducers.size()));
    completed_ = next.header.chunk;
    if (!closed_) pacer_.done(next.header.payloadLength);
    expected_.pop_front();
    if (lane_) popWholeEntries();
    if (expected_.empty() && !closed_) pacer_.idle();
    if (request && request->chunkDone(home)) owner_.onResultsIn(std::move(request));
  }
  if (closed_) return;
  // The send pace follows the others as their chunks finish, also in the middle of ours.
  if (pacer_.enabled()) pacer_.refresh(*stream_);
  readHeader();
}

void Connection::onCommit() {
  if (in_.group != group_.id || in_.rank != group_.rank)
    return fail(protocolError(fmt::format("{}: COMMIT names group {} rank {}, but this stream is "
                                          "group {} rank {}",
                                          name_, in_.group.toString(), in_.rank,
                                          group_.id.toString(), group_.rank)));
  if (committed_ && in_.chunk <= *committed_)
    return fail(protocolError(fmt::format("{}: COMMIT for chunk {} after COMMIT for chunk {}: "
                                          "commits must rise",
                                          name_, in_.chunk, *committed_)));
  if (lane_) {
    if (Status s = checkLaneCommit(in_.chunk); !s.isOk()) return fail(s);
  } else if (!acknowledged_ || in_.chunk > *acknowledged_)  // every member's RECEIVED, this one's
    return fail(protocolError(
        acknowledged_
            ? fmt::format("{}: COMMIT for chunk {}, but this worker has acknowledged only up to "
                          "chunk {} on this stream",
                          name_, in_.chunk, *acknowledged_)
            : fmt::format("{}: COMMIT for chunk {}, but this worker has acknowledged nothing on "
                          "this stream yet",
                          name_, in_.chunk)));
  committed_ = in_.chunk;
  commitFrames_.fetch_add(1, std::memory_order_relaxed);
  owner_.onCommitted(*this, in_.chunk);
  // The frame behind it usually came in the same read (a COMMIT rides in front of a RESULT):
  // on at once, not through a post, which costs a round of the io loop. Once: a header-only
  // frame right behind it takes the post.
  if (!inlineHeader_ && reader_->takeBufferedHeader()) {
    inlineHeader_ = true;
    onHeader({});
    inlineHeader_ = false;
    return;
  }
  readHeader();
}

uint64_t Connection::elemsSent(const ChunkTransfer& chunk) const {
  if (chunk.payloadAt == ChunkTransfer::kNotQueued) return 0;
  // payloadAt is in the bytes of the channel where the payloads go.
  const uint64_t sent = onFabric() ? channelBytesPosted() : stream_->bytesSent();
  if (sent <= chunk.payloadAt) return 0;
  return std::min<uint64_t>(sent - chunk.payloadAt, chunk.header.payloadLength) /
         dataTypeSize(chunk.header.dtype);
}

void Connection::onErrorText(const std::error_code& ec) {
  if (closed_) return;
  fail(reducerRefusal(name_, in_, errorText_, ec));
}

// --- Writing ---------------------------------------------------------------------------------

void Connection::submit(std::vector<ChunkTransfer> chunks) {
  if (closed_ && drained_) {  // posted after the drain (the communicator failed meanwhile)
    owner_.onLateChunks(*this, std::move(chunks));
    return opDone();
  }
  uint64_t bytes = 0;
  for (const auto& c : chunks) bytes += c.header.payloadLength;
  // A lane's chunks draw on the same link budget as the streams beside it: unpaced, they burst
  // into the host's queue and the survivor's port (bench/RESULTS.md, "The rate after a loss").
  if (!chunks.empty() && !closed_) pacer_.busy(bytes);
  const bool wasIdle = expected_.empty();
  for (auto& c : chunks) {
    expected_.push_back(c);
    held_.push_back(std::move(c));
  }
  if (liveness_ && wasIdle && !expected_.empty() && !closed_) liveness_->start();
  opDone();  // the batch is taken: closed, this connection may drain now, with it
}

void Connection::startWrites() { feedWriter(); }

void Connection::feedWriter() {
  // Not handshaken yet: onHandshaken feeds it. Lost (retired, its moveAway() on its way):
  // nothing more goes to that reducer; what is held is resent elsewhere.
  if (closed_ || retired_ || !stream_) return;
  // A RECEIVED due precedes every REDUCE frame handed over after it, and rides with them.
  if (receivedDue() && !held_.empty()) enqueueReceived();
  while (!held_.empty() && unwrittenBytes_ < kWriteAhead && channelUnsent_ < kFabricWriteAhead) {
    enqueueEntry(expected_[expected_.size() - held_.size()]);
    held_.pop_front();
  }
  if (lane_) popWholeEntries();
  flush();
}

void Connection::deferReceived() {
  if (ackDeferred_) return;
  ackDeferred_ = true;
  acks_.add(weak_from_this());
}

void Connection::acknowledgeNow() {
  ackDeferred_ = false;
  if (closed_ || !stream_ || !receivedDue()) return;
  enqueueReceived();
  flush();
}

void Connection::enqueueReceived() {
  acknowledged_ = completed_;
  receivedFrames_.fetch_add(1, std::memory_order_relaxed);
  enqueueHeaderOnly(wire::encodeHeader(wire::receivedHeader(group_.id, group_.rank, *acknowledged_)));
}

// Every frame handed to the writer is counted in both: onWritten takes each written one off
// unwrittenBytes_, and queuedBytes_ places the next REDUCE frame's payload.
void Connection::enqueueHeaderOnly(const wire::HeaderBytes& header) {
  queuedBytes_ += wire::kHeaderSize;
  unwrittenBytes_ += wire::kHeaderSize;
  writer_.enqueue({header, {nullptr, 0}, nullptr, 0});
}

// No owner for a plain chunk: the caller's buffer stays valid until its request is finished,
// and a request is failed only once every connection has drained (its writes included). A
// compressed chunk's frame owns its staging buffer; the caller's buffer is only read. A
// resent result's frame owns what keeps it (ChunkTransfer::keep).
void Connection::enqueueFrame(const wire::FrameHeader& header, const void* data, bool compressed,
                              const std::shared_ptr<void>& keep) {
  if (onFabric() && header.payloadLength != 0) {
    // The header, flagged, on the stream; the payload on the channel (a lane, which has no
    // channel, is the only sender of FINAL and COMMITTED).
    wire::FrameHeader flagged = header;
    flagged.flags |= wire::kFlagFabric;
    enqueueHeaderOnly(wire::encodeHeader(flagged));
    if (!compressed) return sendOnChannel(data, header.payloadLength, keep);
    const size_t elems = header.payloadLength / dataTypeSize(header.dtype);
    std::shared_ptr<uint16_t[]> staged(new uint16_t[elems]);
    reduce::narrowFloat32(header.dtype, static_cast<const float*>(data), staged.get(), elems);
    const uint16_t* bytes = staged.get();
    return sendOnChannel(bytes, header.payloadLength, std::move(staged));
  }
  queuedBytes_ += wire::kHeaderSize + header.payloadLength;
  unwrittenBytes_ += wire::kHeaderSize + header.payloadLength;
  if (!compressed || header.payloadLength == 0) {
    writer_.enqueue({wire::encodeHeader(header), {data, header.payloadLength}, keep, 0});
    return;
  }
  const size_t elems = header.payloadLength / dataTypeSize(header.dtype);
  std::shared_ptr<uint16_t[]> staged(new uint16_t[elems]);
  reduce::narrowFloat32(header.dtype, static_cast<const float*>(data), staged.get(), elems);
  writer_.enqueue(
      {wire::encodeHeader(header), {staged.get(), header.payloadLength}, std::move(staged), 0});
}

void Connection::flush() {
  if (closed_ || !stream_) return;
  pacer_.refresh(*stream_);
  writer_.flush(*stream_);
}

void Connection::onWritten(const std::error_code& ec, transport::FrameWriter::Written frames) {
  for (const auto& f : frames) unwrittenBytes_ -= f.header.size() + f.payload.size;
  if (closed_) return;
  if (ec) {
    // A reducer that aborts the group closes the stream after its ABORT frame, so a write can
    // fail first while the reason still waits to be read. Give the read side a moment to
    // deliver it; only if nothing better arrives is the write error the verdict: the reducer
    // is gone (a reset), or the read side already said so.
    const Status writeError = ioError(name_ + ": write failed: " + ec.message());
    graceTimer_.expires_after(kReasonGrace);
    graceTimer_.async_wait(counted([this, writeError](const std::error_code& e) {
      if (!e) readFailed(writeError);
    }));
    return;
  }
  feedWriter();
}

// --- Failure ---------------------------------------------------------------------------------

void Connection::fail(const Status& status) {
  if (closed_) return;
  // A redial that fails ends the rejoin, never the communicator.
  if (!endsAsRedial(status)) owner_.onFailed(status);  // posts close() to every connection
  close();
}

bool Connection::endsAsRedial(const Status& why) {
  if (!rejoining_) return false;
  if (owner_.onRejoinEnded(*this, why)) return true;
  rejoining_ = false;  // a stream already: its promote() was on its way
  return false;
}

void Connection::onJoinFrame() {
  const std::string_view type = wire::frameTypeName(in_.type);
  if (in_.group != group_.id || in_.rank != group_.rank)
    return fail(protocolError(fmt::format("{}: {} for group {} rank {}", name_, type,
                                          in_.group.toString(), in_.rank)));
  if (!rejoining_ || streamIndex_ != 0)
    return fail(protocolError(fmt::format("{}: {} on a stream that is not a redial's stream 0",
                                          name_, type)));
  if (in_.type == wire::FrameType::kJoinOffer) owner_.onJoinOffer(*this);
  else owner_.onJoinAt(*this, in_.chunk);
  readHeader();
}

void Connection::sendJoin(uint64_t nextChunk) {
  if (closed_) return;
  enqueueHeaderOnly(wire::encodeHeader(wire::joinHeader(group_.id, group_.rank, nextChunk)));
  flush();
}

void Connection::abortAndClose(const Status& reason) {
  if (closed_) return;
  if (stream_ && !writer_.writing() && !writer_.failed()) {
    const wire::ErrorFrame last = wire::abortFrame(group_.id, group_.rank, reason);
    std::string frame(reinterpret_cast<const char*>(last.header.data()), last.header.size());
    frame += last.reason;
    // Whole or not at all, never blocking: if it cannot go out now, the reducer notices the
    // close instead.
    (void)stream_->trySendNow(frame.data(), frame.size());
  }
  close();
}

void Connection::close() {
  if (closed_) return;
  closed_ = true;
  pendingOps_.add();  // so that the cancellations below cannot drain before we are done here
  if (handshake_) handshake_->cancel();  // its report follows, and counts as pending here
  graceTimer_.cancel();
  if (liveness_) liveness_->cancel();
  pacer_.idle();
  if (stream_) stream_->close();
  writer_.close();
  closeChannel();
  opDone();
}

// --- Liveness ----------------------------------------------------------------------------
// While a chunk is expected, this member waits on the reducer (results are due) and owes it
// (its contributions, then word that it still awaits the results).

transport::Liveness::Sample Connection::livenessSample() const {
  if (closed_) return {};
  // A lane's whole entry awaits nothing; the ones behind one not yet written are not sent.
  const bool expecting = !expected_.empty() && (!lane_ || expected_.front().awaitsResult());
  // A channel's pieces are the reducer's bytes too; its own bytes go on the stream only as
  // headers, so a long upload on the channel leaves the stream quiet and the heartbeats
  // speak for this member there.
  return {.arrived = stream_->bytesArrived() + channelReceived_,
          .sent = stream_->bytesSent(),
          .owing = expecting,
          .waiting = expecting,
          .canSend = !writer_.writing() && writer_.queued() == 0 && !writer_.failed()};
}

uint64_t Connection::sendHeartbeat() {
  enqueueHeaderOnly(wire::heartbeatFrame(group_.id, group_.rank));
  flush();
  return stream_->bytesSent();
}

void Connection::peerSilent(std::chrono::milliseconds silence) {
  const ChunkTransfer& next = expected_.front();
  const Status why = unavailableError(fmt::format(
      "{}: silent for {} ms while this member waited for the results of chunk {} (seq {}) "
      "and {} more: reducer lost (the stream's loss bound is {} ms: RS_LOSS_DETECT_MS, capped "
      "by the reducer's --loss-detect-ms)",
      name_, silence.count(), next.header.chunk,
      next.header.seq, expected_.size() - 1, liveness_->bound().count()));
  lost(why);
}

void Connection::lost(const Status& why) {
  if (closed_ || retired_) return;
  if (endsAsRedial(why)) return close();
  if (liveness_) liveness_->cancel();
  retired_ = true;  // what it held is resent, unless the owner fails instead
  // The owner posts moveAway() to every stream of the reducer it adopts as lost, this one
  // included, or close() to every connection when it fails: either ends this one.
  owner_.onReducerLost(*this, why);
}

void Connection::retire() {
  if (closed_) return;
  retired_ = true;
  close();
}

void Connection::moveAway(const cluster::DeadSet& dead, uint64_t generation) {
  if (closed_) return;
  if (stream_ && !lane_ && !redial_ && !writer_.failed()) sayMovedAway(dead, generation);
  retire();
}

// The word goes after the frame in flight, finished from a copy (the caller's buffers are
// free once this connection drained), on the stream handed to a Farewell, which lingers for
// the reducer to read it: at most the stream's loss bound. On a fabric stream the channel goes
// with it, detached: the payloads whose headers went out go on from copies (the reducer reads
// the word only after them), and the reducer's result writes still land.
void Connection::sayMovedAway(const cluster::DeadSet& dead, uint64_t generation) {
  std::vector<uint32_t> list;
  for (uint32_t i = 0; i < dead.size(); ++i) list.push_back(dead.nthDead(i));
  Result<wire::DeadSetFrame> frame =
      wire::failoverFrame(group_.id, group_.rank, /*watermark=*/0, list, generation);
  if (!frame) return;  // a DeadSet always encodes
  std::string bytes = writer_.restOfFrame(*stream_);
  bytes.append(reinterpret_cast<const char*>(frame->header.data()), frame->header.size());
  bytes.append(reinterpret_cast<const char*>(frame->payload.data()), frame->payload.size());
  Result<std::unique_ptr<transport::Stream>> handed = stream_->handOver();
  if (!handed) {
    rs::logger().debug("{}: cannot tell the reducer that this member moves away: {}", name_,
                       handed.status().message());
    return;
  }
  std::shared_ptr<transport::PayloadChannel> channel;
  if (channel_) {
    channel_->detach(abortedError(name_ + ": this member moved away from the reducer"));
    channel = channel_;
    channelHandedOver_ = true;
  }
  transport::Farewell::send(io_, std::move(*handed), std::move(bytes),
                            liveness_ ? liveness_->bound() : kReasonGrace, std::move(channel));
}

void Connection::readFailed(const Status& why) {
  if (closed_) return;
  // A lane that read LOST ends because its survivor retired it: the owner, told by the LOST,
  // opens the lanes of the larger dead set and resends from here.
  if (lostRead_) return retire();
  lost(why);
}

bool Connection::lostByTimeout(const std::error_code& ec) {
  if (!transport::timedOut(ec) || !liveness_) return false;
  lost(unavailableError(fmt::format(
      "{}: the connection timed out: the reducer's host answered nothing (TCP keep-alive from "
      "the stream's loss bound, {} ms): reducer lost",
      name_, liveness_->bound().count())));
  return true;
}

}  // namespace rs::client

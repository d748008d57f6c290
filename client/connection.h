// One stream from this member to one reducer, once its handshake (client/handshake.h) has
// handed it over: a send queue of REDUCE frames written straight from the caller's buffer and a
// FIFO of expected RESULT frames read into the caller's buffer (straight from the socket, or
// for a small part that came with its header, copied from the frame reader's buffer). A
// compressed chunk (fp32 in the caller's buffers, bf16 on the wire: RS_WIRE_DTYPE) is narrowed
// into a staging buffer just before it goes to the writer, and each RESULT part is read into a
// staging buffer and widened into the caller's buffer as it arrives, so conversion overlaps
// the transfer. Chunks submitted before the handshake ends wait, and go out after it.
//
// A stream carries its chunks in increasing order and the reducer completes them in that
// order (each member's contributions to chunk i precede those to any later chunk on the
// stream), so results must arrive in FIFO order; anything else is a protocol error. A result
// part may cover only elements this member has already handed to the socket
// (Stream::bytesSent): a sum includes this member's contribution, and a request must not
// complete while its send buffer is still being read.
//
// While a collective has chunks on this stream that are not complete, the member waits on the
// reducer and owes it (contributions, then the wait for results): a LivenessWatch with the
// stream's loss bound sends HEARTBEATs on a quiet stream and finds a silent reducer
// (proto/WIRE.md, "Heartbeats and the loss bound").
//
// Commits (proto/FAILOVER.md, "What each member keeps"): once a chunk's last part is in, the
// connection acknowledges it with RECEIVED (the highest chunk of the stream whose result it
// holds; the chunks completed by one read batch share one). While results are still to come on
// the stream it goes at once, so that the chunks of a large collective are committed before it
// completes; between collectives it goes in front of the next REDUCE frame handed to the writer,
// so that it costs no write of its own, or, when none comes within kAckDelay, alone
// (client/ack_timer.h). Either way it precedes every REDUCE frame
// handed to the writer after it became due, so the acknowledgement of a collective's results
// always precedes the chunks of any collective submitted after it completed: the reducer reads
// it even while it cannot yet read those (parked for memory, held back), and a member whose
// retention store waits for that commit is never waiting on a chunk that waits on it. The writer
// gets REDUCE frames only while less than kWriteAhead bytes are unwritten, so a RECEIVED waits
// behind that much at most. COMMIT (every member holds every result up to a chunk) goes to the
// owner, which drops what it kept; a COMMIT that does not rise or passes this member's own
// RECEIVED is a protocol error.
//
// With a fabric channel from the handshake (proto/WIRE.md, "The fabric"; client/handshake.h),
// each REDUCE frame goes as its header, flagged, on the stream and its payload on the channel
// (client/fabric_connection.cc), and each RESULT part's payload comes as the channel's pieces;
// the stream keeps everything else, heartbeats included. A channel that fails is a stream that
// failed: the reducer is lost.
//
// Everything here runs on the connection's io thread. After close(), every pending operation's
// handler still runs; once the last one has, the connection reports itself drained, and only
// then may the requests it touched be failed (their buffers are no longer in use).
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <deque>
#include <memory>
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "client/ack_timer.h"
#include "client/handshake.h"
#include "core/cluster/dead_set.h"
#include "core/cluster/lane.h"
#include "core/common/endpoint.h"
#include "core/transport/frame_reader.h"
#include "core/transport/frame_writer.h"
#include "core/transport/link_share.h"
#include "core/transport/liveness_watch.h"
#include "core/transport/payload_channel.h"
#include "core/transport/pending_ops.h"
#include "core/transport/stream.h"
#include "core/wire/frame.h"
#include "rs/client.h"

namespace rs::client {

class Connection;
class RequestState;
}  // namespace rs::client
namespace rs::transport::fabric {
class FabricHub;
}  // namespace rs::transport::fabric
namespace rs::client {
struct ChunkTransfer;

// What a connection tells the communicator that owns it, on the connection's io thread.
class ConnectionOwner {
 public:
  // The stream is up and handshaken.
  virtual void onConnected(Connection& connection) = 0;
  // A stream that asked its reducer for the fabric is through its handshake: on a channel
  // (`notUsed` empty), or on TCP for the reason `notUsed` says (before onConnected).
  virtual void onFabricChosen(Connection& connection, const std::string& notUsed) = 0;
  // The first error on any connection fails the communicator: the owner closes every
  // connection, this one included.
  virtual void onFailed(const Status& reason) = 0;
  // The reducer behind `connection` is lost: its stream ended (EOF, reset), or it was silent
  // past the stream's loss bound (`reason` says which): the one place that decides what a lost
  // reducer means (proto/FAILOVER.md: its chunks move to the survivors).
  virtual void onReducerLost(Connection& connection, const Status& reason) = 0;
  // A reducer said that a member named these reducers lost (LOST), under the dead set's
  // `generation` (cluster::DeadView): the member moves their chunks too.
  virtual void onLost(Connection& connection, const std::vector<uint32_t>& dead,
                      uint64_t generation) = 0;
  // A redial of a lost reducer (proto/FAILOVER.md, "A reducer comes back"), on its stream 0:
  // the reducer offers the rejoin (JOIN_OFFER), or names the rejoin point (JOIN_AT).
  virtual void onJoinOffer(Connection& connection) = 0;
  virtual void onJoinAt(Connection& connection, uint64_t at) = 0;
  // A redial's connection ends (refused, reset, cancelled by the reducer, a protocol error:
  // `why`): true when it ended as a redial (never onFailed or onReducerLost for it); false when
  // the owner made it a stream meanwhile (its promote() still on its way), which then ends as a
  // stream does.
  virtual bool onRejoinEnded(Connection& connection, const Status& why) = 0;
  // Every chunk's result of `request` is in its buffer (this connection had its last chunk).
  virtual void onResultsIn(std::shared_ptr<RequestState> request) = 0;
  // The reducer committed every chunk up to `chunk` on this connection's stream.
  virtual void onCommitted(Connection& connection, uint64_t chunk) = 0;
  // Closed and every handler has run: `unfinished` (the chunks this connection held whose
  // result was not all in, each with its final prefix) may be failed now, or resent
  // elsewhere (retired), since no I/O can write into their buffers any more.
  virtual void onDrained(Connection& connection, std::vector<ChunkTransfer> unfinished) = 0;
  // Chunks that reached this connection after it drained: failed with the rest, or resent
  // elsewhere when it was retired.
  virtual void onLateChunks(Connection& connection, std::vector<ChunkTransfer> chunks) = 0;

 protected:
  ~ConnectionOwner() = default;
};

// One chunk of one collective on this stream.
struct ChunkTransfer {
  std::shared_ptr<RequestState> request;  // null for a result resent from the retention store
  wire::FrameHeader header;  // the REDUCE header (RESULT must match it)
  const void* src = nullptr;
  void* dst = nullptr;
  // Of the RESULT: the reducer sends it in parts, front to back. Elements [0, resultElems) of
  // dst hold final bits, whole elements only, also after a part that ended early (the chunk's
  // final prefix: proto/FAILOVER.md, "Terms"); in place, the rest still hold the input.
  uint64_t resultElems = 0;
  // src and dst hold fp32 and the frames header.dtype (bf16): convert on the way out and in.
  bool compressed = false;
  // The result goes over the contribution (dst is src, and no conversion stages it): it is read
  // in whole elements (FrameReader::readWhole), so that none is left half result, half input.
  bool inPlace() const { return !compressed && src == dst; }
  // Where the REDUCE payload starts in the stream's bytes (Stream::bytesSent), once the frame
  // was handed to the writer; kNotQueued until then. (A FINAL's: where its REDUCE's would be
  // for the whole chunk, r elements before the rest's.)
  uint64_t payloadAt = kNotQueued;
  static constexpr uint64_t kNotQueued = UINT64_MAX;

  // On a lane (proto/WIRE.md, "Failover"), what the chunk goes as: a REDUCE of src (no final
  // prefix), a FINAL of dst's first finalPrefix elements and the REDUCE of the rest of src, or
  // the COMMITTED marker. Whole (finalPrefix n, or committed), it awaits no result and counts as
  // held once handed to the writer.
  enum class Entry : uint8_t { kReduce, kFinal, kCommitted };
  Entry entry = Entry::kReduce;
  uint32_t finalPrefix = 0;
  // Keeps src and dst alive where no caller does (a result resent from the retention store).
  std::shared_ptr<void> keep;
  bool awaitsResult() const {
    return entry == Entry::kReduce ||
           (entry == Entry::kFinal && finalPrefix < header.elemCount);
  }
  // Elements [0, prefix) of dst hold final bits: what it held before, or has received since.
  uint64_t knownPrefix() const { return std::max<uint64_t>(finalPrefix, resultElems); }
};

// A lane (proto/FAILOVER.md, "Terms"): the lost reducer and stream whose chunks it carries to
// its reducer, the dead set it is opened under, and this member's commit watermark for them.
struct LaneSpec {
  cluster::Lane lane;
  cluster::DeadSet dead;
  uint64_t watermark = 0;
  uint64_t generation = 0;  // the dead set's (cluster::DeadView), in the FAILOVER
};

class Connection final : public std::enable_shared_from_this<Connection>,
                         private transport::LivenessWatch::Owner {
 public:
  // `options` and `group` must outlive the connection (the owner holds them).
  // `reducerLink`: this member's share of the reducer's link, for pacing (may be null). `acks`:
  // the io thread's timer for RECEIVEDs that no REDUCE frame carries; it outlives the connection.
  // `lane`: a lane to reducer `reducerIndex`, whose index there is `streamIndex`. `redial`: a
  // stream to a lost reducer that redials it to take it back; it reads only JOIN_OFFER and
  // JOIN_AT until promote() makes it a stream. `fabricHub`: the io thread's (null: none), for a
  // stream that is neither a lane nor a redial.
  Connection(ConnectionOwner& owner, const ClientOptions& options, const GroupSpec& group,
             asio::io_context& io, AckTimer& acks, uint32_t reducerIndex, uint32_t streamIndex,
             Endpoint endpoint, std::shared_ptr<transport::LinkShare> reducerLink = nullptr,
             std::optional<LaneSpec> lane = std::nullopt,
             std::optional<Handshake::Redial> redial = std::nullopt,
             transport::fabric::FabricHub* fabricHub = nullptr);

  // Dials and handshakes (client/handshake.h: the two together within options.connectTimeout);
  // reports through ConnectionOwner::onConnected, or onFailed.
  void start();
  // A batch of chunks was posted to this connection's io thread for submit() (by the owner,
  // under its routing lock): it counts as a pending operation until submit() takes it, so that
  // a connection closed meanwhile drains only once it holds them, and hands them on with the
  // rest (ConnectionOwner::onDrained) rather than after its drain (onLateChunks), when its
  // owner may already have resent what it held.
  void batchPosted() { pendingOps_.add(); }
  // Queues chunks (on the io thread); startWrites() sends them. Apart, so that every stream a
  // collective keeps busy on this thread counts in the pace before any of them writes. Takes
  // the batch that batchPosted() announced.
  void submit(std::vector<ChunkTransfer> chunks);
  void startWrites();
  // Closes and cancels (on the io thread); ConnectionOwner::onDrained follows.
  void close();
  // Closes for failover (its reducer is lost, or its lane's dead set is old): the chunks it
  // held are handed back to be resent (onDrained, retired()).
  void retire();
  // Retires a stream of a reducer this member adopts as lost (with `dead`, the dead set that
  // holds it, under `generation`), telling the reducer first: a FAILOVER on the stream, which
  // a reducer that is live after all takes for this member's move away from it, and drops the
  // group without failing it (proto/WIRE.md, "Failover"). A lane or a redial just retires.
  void moveAway(const cluster::DeadSet& dead, uint64_t generation);
  // Tests: this member takes the reducer for lost, as it would on finding it silent.
  void takeForLostForTest(const Status& why) { lost(why); }
  bool retired() const { return retired_; }
  const std::optional<LaneSpec>& lane() const { return lane_; }
  // Tells the reducer that this member gives up (an ABORT frame, sent only if it can go out
  // at once and whole, between frames), then closes. The reducer fails the group everywhere
  // instead of waiting for its timeout.
  void abortAndClose(const Status& reason);
  // Writes the RECEIVED due, if any, now (the ack delay ran out, or a collective waits for
  // commits).
  void acknowledgeNow();
  // A redial (on the io thread): JOIN with this member's next chunk; promote() once the member
  // takes the reducer back, before any chunk is posted to it.
  void sendJoin(uint64_t nextChunk);
  void promote() { rejoining_ = false; }
  bool rejoining() const { return rejoining_; }

  asio::io_context& executorContext() { return io_; }
  // RECEIVED frames handed to the writer, COMMIT frames taken (any thread).
  uint64_t receivedFrames() const { return receivedFrames_.load(std::memory_order_relaxed); }
  uint64_t commitFrames() const { return commitFrames_.load(std::memory_order_relaxed); }
  uint32_t reducerIndex() const { return reducerIndex_; }
  uint32_t streamIndex() const { return streamIndex_; }
  // "reducer 2 (10.0.0.7:2222) stream 1"
  const std::string& name() const { return name_; }
  // Whether its payloads go on a fabric channel (on the io thread, once connected).
  bool onFabric() const { return channel_ != nullptr; }

 private:
  void onHandshaken(Result<Handshake::Handshaken> handshaken);
  void readHeader();
  void onHeader(const std::error_code& ec);
  // A RESULT part's payload is in (`bytes` of it, all of them unless `ec`).
  void onResult(const std::error_code& ec, size_t bytes);
  void onCommit();
  // A COMMIT on a lane may cover the chunks below its agreed point, which this member never
  // sent there: it must rise and not pass what this member holds or saw committed.
  Status checkLaneCommit(uint64_t chunk) const;
  // LOST: the dead set a reducer heard of.
  void onLostPayload(const std::error_code& ec);
  // JOIN_OFFER or JOIN_AT (in_) on a redial's stream 0.
  void onJoinFrame();
  // A redial's end, told to the owner: true when it ended as one (else it is a stream now).
  bool endsAsRedial(const Status& why);
  // Lanes: whole entries at the front of expected_ that were handed to the writer are held.
  void popWholeEntries();
  // Hands an entry's frames to the writer (a stream's chunk is a REDUCE entry).
  void enqueueEntry(ChunkTransfer& chunk);
  void enqueueFailover();
  // A read or write of a stream that failed: its reducer is lost (EOF, reset, timeout), unless
  // this connection is closing anyway or a LOST on this lane said why it ends.
  void readFailed(const Status& why);
  // A RECEIVED is due: a chunk's result is complete that no RECEIVED handed to the writer covers.
  bool receivedDue() const { return completed_ && (!acknowledged_ || *completed_ > *acknowledged_); }
  void enqueueReceived();
  void enqueueHeaderOnly(const wire::HeaderBytes& header);
  // A RECEIVED is due and no REDUCE frame is there to carry it: the ack timer sends it.
  void deferReceived();
  // Elements of `chunk` handed to the socket so far: all that a result part may cover.
  uint64_t elemsSent(const ChunkTransfer& chunk) const;
  void onErrorText(const std::error_code& ec);
  // Hands a due RECEIVED to the writer if REDUCE frames follow it, then the held chunks' REDUCE
  // frames, in order, while less than kWriteAhead bytes are unwritten (narrowing compressed
  // ones only then); then flushes.
  void feedWriter();
  // One frame of a chunk: its header and payload, narrowed on the way if `compressed`; `keep`
  // holds the payload where no caller does.
  void enqueueFrame(const wire::FrameHeader& header, const void* data, bool compressed,
                    const std::shared_ptr<void>& keep);
  void flush();
  // The fabric side (client/fabric_connection.cc). A REDUCE payload onto the channel, after
  // those before it (`keep` holds it where no caller does), and the part of a RESULT whose
  // flagged header is in_, piece by piece into `dst`.
  void sendOnChannel(const void* data, uint32_t bytes, std::shared_ptr<void> keep);
  void readPieces(void* dst);
  void nextPiece();
  void onPiece(const Status& status, std::span<const std::byte> piece);
  // A part's payload ended early (`bytes` of it in, as whole elements where it matters).
  void countPartial(size_t bytes);
  // A part's payload is all in (dst, or the staging buffer of a compressed chunk).
  void onPartIn();
  uint64_t channelBytesPosted() const { return channel_->bytesPosted(); }
  void closeChannel();
  void onWritten(const std::error_code& ec, transport::FrameWriter::Written frames);
  void fail(const Status& status);
  // LivenessWatch::Owner: started when a chunk is submitted after none was expected (or at the
  // handshake's end).
  transport::Liveness::Sample livenessSample() const override;
  uint64_t sendHeartbeat() override;
  void peerSilent(std::chrono::milliseconds silence) override;
  void sayMovedAway(const cluster::DeadSet& dead, uint64_t generation);
  // The reducer is lost: the owner decides what that means, and this connection closes.
  void lost(const Status& why);
  // A read that timed out is the transport's net under the heartbeats (keep-alive from the
  // stream's loss bound) finding the reducer's host gone: lost() and true. Else false.
  bool lostByTimeout(const std::error_code& ec);
  // Every async operation is counted so that drain is exact.
  template <typename F>
  auto counted(F&& handler);
  void opDone();

  ConnectionOwner& owner_;
  const ClientOptions& options_;
  const GroupSpec& group_;
  asio::io_context& io_;
  AckTimer& acks_;
  const uint32_t reducerIndex_;
  const uint32_t streamIndex_;
  const Endpoint endpoint_;
  const std::string name_;

  std::shared_ptr<Handshake> handshake_;  // until it reports
  asio::steady_timer graceTimer_;  // after a failed write, for the reason to arrive
  // From the handshake, once it is through: null until then.
  std::unique_ptr<transport::Stream> stream_;
  std::unique_ptr<transport::FrameReader> reader_;

  wire::FrameHeader in_;
  std::string errorText_;

  // Chunks not handed to the writer: submitted before the handshake (sent after it), waiting
  // for their turn to be narrowed, or submitted after close (failed once drained).
  std::deque<ChunkTransfer> held_;
  // Bytes handed to the writer and not yet written (frames and their payloads).
  uint64_t unwrittenBytes_ = 0;
  // Bytes handed to the stream (the handshake's, then the REDUCE frames given to the writer):
  // where the next frame starts in the stream, since the writer sends its queue in order.
  uint64_t queuedBytes_ = 0;
  // One RESULT part of a compressed chunk, read here and then widened into the caller's buffer.
  std::vector<uint16_t> resultStaging_;
  // Chunks whose result is not complete, in order. Those still in held_ are its last
  // held_.size() entries, since a result can only follow the chunk's upload.
  std::deque<ChunkTransfer> expected_;
  // The highest chunk whose whole result is in, the last RECEIVED handed to the writer, and
  // the last COMMIT.
  std::optional<uint64_t> completed_;
  std::optional<uint64_t> acknowledged_;
  std::optional<uint64_t> committed_;
  bool ackDeferred_ = false;  // on acks_' list
  bool inlineHeader_ = false;  // a header taken at once after a COMMIT is being handled
  std::atomic<uint64_t> receivedFrames_{0};
  std::atomic<uint64_t> commitFrames_{0};
  // REDUCE frames straight from the caller's buffer, and RECEIVEDs. A failed write leaves it
  // failed(): the read side may still bring the reason.
  transport::FrameWriter writer_;
  // Pacing (RS_LINK_GBPS): busy while a chunk on this stream waits for its result.
  transport::LinkShare::Pacer pacer_;
  // Loss detection, from the handshake on: none when the stream's bound is 0.
  std::optional<transport::LivenessWatch> liveness_;

  // The fabric: the hub asked for in the handshake, the channel it gave (null: TCP), payload
  // bytes handed to the channel (where the next REDUCE payload starts in its bytes, as
  // queuedBytes_ is in the stream's) and not yet delivered, result bytes taken from it, and the
  // RESULT part being read from it.
  transport::fabric::FabricHub* const fabricHub_;
  std::shared_ptr<transport::PayloadChannel> channel_;
  bool channelHandedOver_ = false;  // detached, to the Farewell of a move away
  uint64_t channelQueued_ = 0;
  uint64_t channelUnsent_ = 0;
  uint64_t channelReceived_ = 0;
  std::byte* pieceDst_ = nullptr;
  size_t pieceDone_ = 0;

  bool closed_ = false;
  bool retired_ = false;
  const std::optional<LaneSpec> lane_;
  const std::optional<Handshake::Redial> redial_;
  bool rejoining_ = false;  // a redial not promoted yet
  bool lostRead_ = false;  // a LOST came: a lane's end after it is the survivor retiring it
  std::vector<uint8_t> lostPayload_;
  transport::PendingOps pendingOps_;
  bool drained_ = false;
};

// Here, for connection.cc and fabric_connection.cc alike.
template <typename F>
auto Connection::counted(F&& handler) {
  return transport::countedHandler(shared_from_this(), pendingOps_, &Connection::opDone,
                                   std::forward<F>(handler));
}

}  // namespace rs::client

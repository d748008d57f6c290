// One worker stream on one io thread: reads REDUCE frames and hands each payload to its slot
// piece by piece as it arrives (the slot folds it in); writes RESULT frames from the slot's
// single result buffer. While a chunk of the member's is in flight here (from its header until
// its last RESULT part is written) the stream owes the member results and waits on it, so a
// LivenessWatch with the stream's loss bound sends HEARTBEATs on a quiet stream and finds a
// silent member (proto/WIRE.md, "Heartbeats and the loss bound"). Reads the member's RECEIVED
// frames for its owner's commit counter and writes the COMMITs it sends back, ahead of the next
// results.
//
// Lifetime: its SessionOwner (the Shard) holds a session while it is a group member, and every pending operation
// holds it through shared_from_this(), so a closed session lives until its last handler ran
// (the asio http/server2 pattern). Nothing here blocks, and nothing throws.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/cluster/dead_set.h"
#include "core/cluster/dead_view.h"
#include "core/cluster/lane.h"
#include "core/common/aligned_buffer.h"
#include "core/common/status.h"
#include "core/transport/frame_reader.h"
#include "core/transport/frame_writer.h"
#include "core/transport/link_share.h"
#include "core/transport/liveness_watch.h"
#include "core/transport/payload_channel.h"
#include "core/transport/stream.h"
#include "core/wire/fabric_frames.h"
#include "core/wire/frame.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"
#include "server/reducer_fabric.h"
#include "server/shard_stats.h"
#include "server/slot.h"

namespace rs::server {

class Session;

// What a session asks of the io thread that holds it (the Shard): the table of open slots and
// the group's fate. A session knows nothing else of its shard.
class SessionOwner {
 public:
  enum class Acquire { kReady, kParked, kFailed };
  // Finds or opens the slot for a REDUCE header. kParked: the session is resumed later through
  // Session::onSlotReady. kFailed: *error says why (the group has been aborted).
  virtual Acquire acquireSlot(const std::shared_ptr<Session>& session,
                              const wire::FrameHeader& header, std::shared_ptr<Slot>* slot,
                              Status* error) = 0;
  // A member folded more of its contribution into the slot: queues the RESULT part that every
  // member has now contributed to, wakes the members held back, and completes the slot when
  // that was the last element of the last member.
  virtual void contributed(Slot& slot) = 0;
  // The member's RECEIVED: it holds every result up to `chunk` on the session's stream. Its
  // stream's commit counter takes it and, when the commit watermark rose, sends COMMIT to the
  // stream's members. An error (a chunk whose result was not sent, a watermark that does not
  // rise) breaks the protocol: the session fails the group with it.
  virtual Status received(Session& session, uint64_t chunk) = 0;
  // The member closed its stream at a frame boundary. If a chunk still open on that stream
  // lacks its contribution, the group fails; otherwise later chunks on the stream will.
  virtual void memberLeft(Session& session) = 0;
  // The session closed (for any reason): forget it.
  virtual void detach(Session& session) = 0;
  // No result queued to `session`'s member can carry the COMMIT it has due: the owner calls
  // Session::sendCommitNow within a short delay (a result queued meanwhile carries it first).
  virtual void commitLater(const std::shared_ptr<Session>& session) = 0;
  // A session hit an error that dooms its group.
  virtual void failGroup(const std::shared_ptr<Group>& group, const Status& reason) = 0;
  // The member behind `session` is lost (`how`; `reason` says what was seen): the one place
  // that decides what a lost member means (today: the session fails, and its group with it).
  virtual void memberLost(Session& session, MemberLoss how, const Status& reason) = 0;
  // The member behind `session` moved away from this reducer: it takes the reducers of `dead`
  // for lost, this one among them (a FAILOVER on its stream, proto/WIRE.md "Failover"). The
  // group goes on on the survivors, so it is dropped here without failing it.
  virtual void memberMovedAway(Session& session, const cluster::DeadSet& dead) = 0;

  // Lanes (proto/FAILOVER.md; a lane's side of a session is in lane_session.cc).
  enum class LaneVerdict {
    kReady,    // the lane's agreed point is known: read its entries
    kWaiting,  // wait for the other members' FAILOVERs (Session::onLaneReady)
    kRetired,  // an older dead set than the group's: the owner retired the session (LOST)
    kFailed,   // *error says why; the group has been failed
  };
  // The lane's FAILOVER: the member's dead set and its commit watermark for the lane.
  virtual LaneVerdict laneFailover(const std::shared_ptr<Session>& session,
                                   const cluster::DeadView& dead, uint64_t watermark,
                                   Status* error) = 0;
  // Whether the lane's agreed point drops `chunk` (the session reads its entry and drops it).
  virtual bool laneDrops(Session& session, uint64_t chunk) = 0;

  // A member's JOIN on stream 0 of a joining group (proto/FAILOVER.md, "A reducer comes back"):
  // its next collective's first chunk. An error (a second answer, an answer out of turn) is the
  // member's: the session refuses the frame.
  virtual Status joinAnswered(Session& session, uint64_t nextChunk) = 0;

  // The fabric (proto/FABRIC.md): a channel for `session`'s member, offered in FABRIC_OFFER,
  // or why none (the FABRIC_DECLINE's reason); then the member's grant, connecting it.
  virtual Result<FabricOffer> offerFabric(const Session& session) = 0;
  virtual Status acceptFabric(transport::PayloadChannel& channel,
                              const wire::FabricGrant& member) = 0;

 protected:
  ~SessionOwner() = default;
};

class Session final : public std::enable_shared_from_this<Session>,
                      private transport::LivenessWatch::Owner {
 public:
  // `owner`, `config` and `stats` belong to the io thread that runs `io`, and outlive the session.
  // `lossBound`: the stream's loss bound (ServerConfig::streamLossDetectMs); 0: none.
  Session(SessionOwner& owner, asio::io_context& io, const ServerConfig& config, ShardStats& stats,
          std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group, uint32_t rank,
          uint16_t streamIndex, std::chrono::milliseconds lossBound);

  // Sends HELLO_ACK (and, when the HELLO asked for the fabric, FABRIC_OFFER or
  // FABRIC_DECLINE) and starts reading.
  void start(const wire::HelloAckPayload& ack, bool askedFabric = false);
  // Queues elements [from, to) of the slot's result to this member as one RESULT frame.
  void sendResult(const std::shared_ptr<Slot>& slot, uint64_t from, uint64_t to);
  // Tells the member that every member holds every result up to `chunk` on this stream: a
  // COMMIT ahead of the next results written to it, so that it costs no write and no wake-up of
  // its own; with none queued, at the owner's call (commitLater). Commits that come meanwhile
  // go as one, the latest.
  void sendCommit(uint64_t chunk);
  // Writes the COMMIT due, if any, alone if nothing else goes (the owner's delay ran out).
  void sendCommitNow();
  // Queues ABORT with the reason, drops queued results, and closes once it is written (or
  // after a short grace period).
  void abort(const Status& reason);
  // Closes at once; pending handlers finish with operation_aborted.
  void close(const Status& reason);
  // `reason` as the group's failure: "rank 2 stream 1: <reason>".
  Status groupReason(const Status& reason) const;
  // The slot this session was parked for is ready.
  void onSlotReady(std::shared_ptr<Slot> slot);
  // A lane's agreed point is known (every member's FAILOVER is in): its entries are read.
  void onLaneReady();
  // Tells the member the group's dead set (LOST), ahead of anything queued after it.
  void sendLost(const cluster::DeadView& dead);
  // A restarted reducer taken back (rejoin_session.cc): JOIN_OFFER, then JOIN_AT(T), on stream
  // 0 of a joining group, ahead of anything queued after them.
  void sendJoinOffer();
  void sendJoinAt(uint64_t at);
  // A lane of an older dead set than the group's: LOST with the group's, then closes (the
  // member, which reads LOST before the end, opens its lanes again under it).
  void retire(const cluster::DeadView& dead);
  // A lane, numbered at or above the group's stream count; its (lost reducer, stream) and dead
  // set once its FAILOVER was accepted (laneAssigned).
  bool isLane() const { return streamIndex_ >= group_->params().streamCount; }
  void laneAssigned(const cluster::Lane& lane, const cluster::DeadSet& dead);
  const std::optional<cluster::Lane>& lane() const { return lane_; }
  // The highest chunk whose entry this lane has read (a RECEIVED may not pass it).
  std::optional<uint64_t> lastEntry() const {
    return haveLastChunk_ ? std::optional<uint64_t>(lastChunk_) : std::nullopt;
  }
  // The others caught up in the chunk this session was held back in (see Slot): read on, or
  // wait for them again if still too far ahead.
  void onOthersCaughtUp();
  // Another member began chunk `chunk` of collective `seq` on this stream. Where this member
  // has begun that collective here and is behind (its last chunk is below), it owes that chunk:
  // the reducer awaits it from now on, until its next header (proto/WIRE.md, "Heartbeats and
  // the loss bound": a member stopped between two chunks of a collective it has begun).
  void othersBegan(uint64_t seq, uint64_t chunk);

  bool closed() const { return closed_; }
  // Closed, or closing after a last frame (ABORT, or LOST to a retired lane): it reads no more.
  bool closing() const { return closed_ || aborting_; }
  bool idle() const { return slot_ == nullptr && !parked_; }  // between frames
  uint32_t rank() const { return rank_; }
  uint16_t streamIndex() const { return streamIndex_; }
  const std::shared_ptr<Group>& group() const { return group_; }
  // "group 0123abcd rank 2 stream 1 (tcp://10.0.0.5:40312)"
  const std::string& name() const { return name_; }

 private:
  // Every read handler starts here, with its outcome: false when the session is closed or
  // aborting (then the input is drained instead of parsed, or the session closes if the
  // member has gone).
  bool readDone(const std::error_code& ec);
  void drainInput();
  void readHeader();
  void onHeader(const std::error_code& ec);
  void handleReduce();
  void handleReceived();
  // The frame just read names this session's group and rank; else it is rejected (and false).
  // The first check of fromThisStream and fromThisLane, and all of a FAILOVER's.
  bool fromThisMember();
  // fromThisMember, and the chunk belongs to this reducer and stream; else the frame is
  // rejected (and false).
  bool fromThisStream();
  // fromThisStream() or, on a lane, fromThisLane().
  bool fromThisRoute() { return isLane() ? fromThisLane() : fromThisStream(); }
  void onPeerAbort(const std::error_code& ec);
  // While it reads nothing (parked, held back), a session still watches for its member closing
  // or resetting the stream: the group fails at once, not at the collective timeout. The
  // bytes that arrive meanwhile stay in the socket for when reading resumes.
  void watchPeer();
  void onPeerGone(const std::error_code& why);
  // Whether a piece already read ahead may be folded in before readPiece returns: only where
  // this session's own read handler is running. Called from the shard (a slot became ready,
  // the others caught up), folding now would re-enter the shard; the fold is posted instead.
  enum class Fold { kNowIfBuffered, kLater };
  void beginContribution(std::shared_ptr<Slot> slot, Fold fold);
  // Finds or opens the slot of the chunk whose header (in_) was just read and begins its
  // contribution (a lane: its entry); parked, it begins in onSlotReady.
  void acquireAndBegin();
  void begin(std::shared_ptr<Slot> slot, Fold fold);
  void readPiece(Fold fold);
  void onPiece(const std::error_code& ec, size_t bytes);
  // Lanes (lane_session.cc): the FAILOVER that opens one, and each entry (FINAL, COMMITTED or
  // REDUCE) of a resent chunk; an entry below the agreed point is read and dropped.
  void handleFailover();
  void onFailoverPayload(const std::error_code& ec);
  void handleEntry();
  void beginEntry(std::shared_ptr<Slot> slot, Fold fold);
  void dropEntryPayload(const std::error_code& ec, size_t bytes);
  // A frame's header names this lane's group and rank, and its chunk is one this lane carries.
  bool fromThisLane();
  // Queues `frame` as the last, drops what else was queued, and closes once it is written (or
  // after a short grace period), draining what the member still sends: ABORT or LOST.
  // `commitFirst`: a COMMIT still due goes ahead of it (a retired lane's: its members hold what
  // it covers, and one that has not switched yet may wait for it: lane_session.cc, retire).
  void closeAfter(transport::FrameWriter::Frame frame, const Status& reason,
                  bool commitFirst = false);
  // The COMMIT due (commitDue_), as a frame.
  transport::FrameWriter::Frame commitFrame() const;
  // A protocol or I/O error on this stream: logs it, closes the stream and fails the group's
  // collectives.
  void fail(const Status& reason);
  // A read or write failed with `ec`, not the member's clean end: fail(), unless it timed out,
  // which is the transport's net under the heartbeats (Stream::setLossBound) giving up on the
  // member: a loss (MemberLoss::kUnresponsive); or unless this is a lane (laneEnded).
  void ioFailed(const std::error_code& ec, const std::string& what);
  // A lane's member closed it or its connection broke (`what`), anywhere: between frames,
  // inside an entry, while it waited for the agreed point or a slot. A member closes every lane
  // of a dead set when it adopts a larger one, which this reducer learns only from the FAILOVER
  // on the new lanes, after the close (proto/FAILOVER.md, "A second loss"): not an error. The
  // session closes; that FAILOVER retires the lane and its slots. A member that is gone instead
  // fails the group through its streams here, whose end is checked against its lanes' open
  // chunks (Shard::failIfLaneMemberLeft).
  void laneEnded(const std::string& what);
  // JOIN (rejoin_session.cc): the member's answer to JOIN_OFFER.
  void handleJoin();
  // A header-only control frame to the member (JOIN_OFFER, JOIN_AT).
  void sendControl(const wire::FrameHeader& header);
  // A HEARTBEAT from the member: nothing to do but read on (its bytes were heard).
  void onHeartbeat(const wire::FrameHeader& h);
  // A frame that breaks the protocol: counted under `why`, then fail().
  void reject(FrameRejection why, const Status& reason);
  void flush();
  void onWritten(const std::error_code& ec, transport::FrameWriter::Written frames);
  // Counts the result payload of the frames just written, and the reduce latency of each chunk
  // whose last part has now been written to every member.
  void countWritten(transport::FrameWriter::Written frames);
  // LivenessWatch::Owner: started when a chunk arrives after none was in flight.
  transport::Liveness::Sample livenessSample() const override;
  uint64_t sendHeartbeat() override;
  void peerSilent(std::chrono::milliseconds silence) override;

  // Frame tags. A RESULT part's owner is its slot.
  static constexpr uint32_t kControlFrame = 0;  // HELLO_ACK, HEARTBEAT, COMMIT, LOST, ABORT
  static constexpr uint32_t kResultPart = 1;
  static constexpr uint32_t kLastResultPart = 2;  // carries the end of its chunk's result

  SessionOwner& owner_;
  asio::io_context& io_;
  const ServerConfig& config_;
  ShardStats& stats_;
  std::unique_ptr<transport::Stream> stream_;
  std::shared_ptr<Group> group_;
  const uint32_t rank_;
  const uint16_t streamIndex_;
  const std::string name_;

  // Read side.
  transport::FrameReader reader_;
  wire::FrameHeader in_;
  std::shared_ptr<Slot> slot_;  // the slot being filled
  AlignedBuffer staging_;       // what one read brings, at most a piece (cache-sized)
  // A partial element at the front of staging_, which the slot could not fold yet (see
  // Slot::fold): the next read lands right behind it.
  size_t tailBytes_ = 0;
  bool parked_ = false;
  bool heldBack_ = false;  // over the lead limit: waiting for the others in this chunk
  bool readInFlight_ = false;
  bool inlineHeader_ = false;  // a header taken at once after a RECEIVED is being handled
  std::string peerReason_;  // an ABORT's payload from the member

  // The fabric (proto/FABRIC.md, WIRE.md "The fabric"; session_fabric.cc): offered (awaiting
  // the member's FABRIC_ACCEPT or FABRIC_DECLINE), then active: every REDUCE's payload comes
  // and every RESULT's goes on channel_, the headers on the stream.
  enum class FabricState : uint8_t { kNone, kOffered, kActive };
  FabricState fabricState_ = FabricState::kNone;
  std::shared_ptr<transport::PayloadChannel> channel_;
  BookkeepingCharge fabricCharge_;  // the channel's rings against --memory-limit
  std::vector<uint8_t> fabricAnswer_;  // a FABRIC_ACCEPT's or FABRIC_DECLINE's payload
  void offerFabric();
  // The member's answer to FABRIC_OFFER (in_), its payload read next.
  void handleFabricAnswer();
  void onFabricAnswer(const std::error_code& ec);
  // A REDUCE header's fabric flag must match the stream's state; else the frame is rejected.
  bool fabricAsAgreed();
  bool payloadOnFabric() const {
    return fabricState_ == FabricState::kActive && (in_.flags & wire::kFlagFabric) != 0;
  }
  // The next piece of the contribution in flight, from the channel, folded as it lands.
  void readFabricPiece();
  void onFabricPiece(const Status& status, std::span<const std::byte> piece);
  // The probes (WIRE.md, "The fabric"): ours after the member's ACCEPT, and the member's (the
  // first piece it writes) awaited at once; its first payload waits for it.
  void exchangeProbes();
  void onMemberProbe(const Status& status, std::span<const std::byte> piece);
  bool fabricUsed_ = false;  // a flagged REDUCE came: the member can no longer decline
  enum class MemberProbe : uint8_t { kAwaited, kIn, kFailed };
  MemberProbe memberProbe_ = MemberProbe::kAwaited;
  Status probeFailure_;              // kFailed: why
  bool payloadAwaitsProbe_ = false;  // a flagged REDUCE's payload waits for the probe
  wire::FabricProbe probeOut_{};
  // A RESULT part's payload on the channel; its header went to the writer.
  void sendResultOnFabric(const std::shared_ptr<Slot>& slot, uint64_t from, uint32_t bytes);
  // What follows a fold, whichever way the piece came: the next piece, the next header, the
  // slot's progress told to the owner, or a hold-back.
  void afterFold(Slot& slot);
  bool haveLastChunk_ = false;
  uint64_t lastChunk_ = 0;
  uint64_t lastSeq_ = 0;  // of the last chunk
  // Behind the others inside a collective it has begun here: awaited (othersBegan) until its
  // next header; the chunk the others began, for the log.
  std::optional<uint64_t> awaitedChunk_;
  // Payload bytes of the frame being read that are still to come (a lane's FINAL ends inside
  // its chunk: the rest comes in the REDUCE behind it).
  uint64_t frameLeft_ = 0;

  // Lane state (lane_session.cc).
  enum class LaneState { kAwaitFailover, kAwaitPoint, kEntries };
  LaneState laneState_ = LaneState::kAwaitFailover;
  std::optional<cluster::Lane> lane_;
  std::optional<cluster::DeadSet> laneDead_;
  std::vector<uint8_t> failoverPayload_;
  // A FINAL with r < n was read: the next frame must be the REDUCE of the rest (its header).
  std::optional<wire::FrameHeader> final_;
  bool droppingEntry_ = false;  // the entry being read is below the agreed point

  // Write side: HELLO_ACK, RESULT parts (each owned by its slot until written), COMMIT, ABORT.
  transport::FrameWriter writer_;
  std::optional<uint64_t> commitDue_;  // a COMMIT for the next write
  bool commitNow_ = false;             // ... even with nothing else to write
  bool commitScheduled_ = false;       // the owner was asked (commitLater)

  // Pacing (--link-gbps): busy from a chunk's header until its last RESULT part is written.
  transport::LinkShare::Pacer pacer_;
  uint32_t chunksInFlight_ = 0;

  // Loss detection: none when the stream's bound is 0.
  std::optional<transport::LivenessWatch> liveness_;

  bool aborting_ = false;
  bool closed_ = false;
  std::unique_ptr<asio::steady_timer> graceTimer_;
};

}  // namespace rs::server

// A session's lane side (proto/FAILOVER.md, proto/WIRE.md "Failover"): the FAILOVER that opens
// a lane, the entries of the resent chunks it carries, and LOST. The rest of a session (the
// pieces of a contribution, results, commits, liveness) is session.cc's, shared with streams.
#include "core/cluster/chunk_owner.h"
#include "core/cluster/sharding.h"
#include "core/common/log.h"
#include "core/reduce/dtype.h"
#include "core/wire/failover_frames.h"
#include "server/session.h"

namespace rs::server {

void Session::laneAssigned(const cluster::Lane& lane, const cluster::DeadSet& dead) {
  lane_ = lane;
  laneDead_ = dead;
}

void Session::handleFailover() {
  if (!fromThisMember()) return;
  failoverPayload_.resize(in_.payloadLength);
  readInFlight_ = true;
  reader_.readExactly(*stream_, failoverPayload_.data(), failoverPayload_.size(),
                      [self = shared_from_this()](const std::error_code& ec, size_t) {
                        self->onFailoverPayload(ec);
                      });
}

void Session::onFailoverPayload(const std::error_code& ec) {
  if (!readDone(ec)) return;
  if (ec) return ioFailed(ec, "read failed inside FAILOVER");
  std::vector<uint32_t> list;
  if (Status s = wire::decodeDeadSet(failoverPayload_.data(), failoverPayload_.size(), &list);
      !s.isOk())
    return reject(FrameRejection::kMalformed, s);
  const GroupParams& p = group_->params();
  Result<cluster::DeadSet> dead = cluster::DeadSet::of(p.reducerCount, list);
  if (!dead)
    return reject(FrameRejection::kMalformed,
                  protocolError("FAILOVER: " + dead.status().message()));
  if (!isLane()) {
    if (!dead->contains(p.reducerIndex))
      return reject(FrameRejection::kMisrouted,
                    protocolError(fmt::format("FAILOVER on a stream names reducers {} lost, "
                                              "but not this one ({}), which it moves away from",
                                              dead->toString(), p.reducerIndex)));
    // The member's last frame here: the group is dropped, and this session closes with it.
    return owner_.memberMovedAway(*this, *dead);
  }
  if (dead->contains(p.reducerIndex))
    return reject(FrameRejection::kMisrouted,
                  protocolError(fmt::format("FAILOVER names reducers {} lost, this one ({}) "
                                            "among them, on a lane to it",
                                            dead->toString(), p.reducerIndex)));
  Result<cluster::Lane> lane = cluster::laneAt(streamIndex_, *dead, p.streamCount);
  if (!lane) return reject(FrameRejection::kMisrouted, lane.status());
  laneAssigned(*lane, *dead);
  Status error;
  // seq: the set's generation (cluster::DeadView).
  switch (owner_.laneFailover(shared_from_this(), cluster::DeadView{in_.seq, *dead}, in_.chunk,
                              &error)) {
    case SessionOwner::LaneVerdict::kReady:
      laneState_ = LaneState::kEntries;
      readHeader();
      return;
    case SessionOwner::LaneVerdict::kWaiting:
      laneState_ = LaneState::kAwaitPoint;
      if (liveness_) liveness_->start();  // it owes the member its agreed point (livenessSample)
      watchPeer();
      return;
    case SessionOwner::LaneVerdict::kRetired:
    case SessionOwner::LaneVerdict::kFailed:
      return;
  }
}

void Session::onLaneReady() {
  if (closed_ || aborting_ || laneState_ != LaneState::kAwaitPoint) return;
  laneState_ = LaneState::kEntries;
  stream_->stopWatchingPeer();
  readHeader();
}

bool Session::fromThisLane() {
  if (!fromThisMember()) return false;
  const std::string_view type = wire::frameTypeName(in_.type);
  // A lane carries the chunks of its lost reducer and stream that this survivor owns under the
  // lane's dead set (lane.h): every member routes them alike.
  const GroupParams& p = group_->params();
  const uint32_t home = cluster::reducerForChunk(in_.chunk, p.reducerCount);
  const uint32_t stream = cluster::streamForChunk(in_.chunk, p.reducerCount, p.streamCount);
  Result<uint32_t> owner = cluster::chunkOwner(in_.chunk, *laneDead_);
  if (home != lane_->deadHome || stream != lane_->stream || !owner ||
      *owner != p.reducerIndex) {
    reject(FrameRejection::kMisrouted,
           protocolError(fmt::format(
               "{} for chunk {}: its home is reducer {} stream {}, owned by reducer {} with "
               "reducers {} lost, but this lane carries reducer {} stream {} to reducer {}",
               type, in_.chunk, home, stream, owner ? std::to_string(*owner) : "none",
               laneDead_->toString(), lane_->deadHome, lane_->stream, p.reducerIndex)));
    return false;
  }
  return true;
}

// The first frame of an entry (FINAL, COMMITTED, REDUCE), or the REDUCE that finishes a FINAL.
void Session::handleEntry() {
  if (laneState_ != LaneState::kEntries) {
    reject(FrameRejection::kUnexpectedType,
           protocolError(fmt::format("{} on a lane before its FAILOVER was taken",
                                     wire::frameTypeName(in_.type))));
    return;
  }
  if (!fromThisLane()) return;
  if (final_) {
    // Only the REDUCE of the rest of the FINAL's chunk may follow it (failover_frames.h).
    const wire::HeaderBytes want = wire::encodeHeader(wire::remainderHeader(*final_));
    if (in_.type != wire::FrameType::kReduce || wire::encodeHeader(in_) != want) {
      reject(FrameRejection::kDisagreement,
             protocolError(fmt::format(
                 "{} for chunk {} (elements {}..{}) after a FINAL of chunk {} with {} of its {} "
                 "elements: the REDUCE of elements {}..{} must follow it",
                 wire::frameTypeName(in_.type), in_.chunk, in_.elemOffset,
                 in_.elemOffset + in_.elemCount, final_->chunk, wire::finalPrefix(*final_),
                 final_->elemCount, final_->elemOffset + wire::finalPrefix(*final_),
                 final_->elemOffset + final_->elemCount)));
      return;
    }
    final_.reset();
    frameLeft_ = in_.payloadLength;
    if (droppingEntry_) return dropEntryPayload({}, 0);
    readPiece(Fold::kNowIfBuffered);  // slot_ holds the FINAL's chunk
    return;
  }
  if (haveLastChunk_ && in_.chunk <= lastChunk_) {
    reject(FrameRejection::kOutOfOrder,
           protocolError(fmt::format("chunk {} arrived after chunk {} on a lane: chunks must "
                                     "increase",
                                     in_.chunk, lastChunk_)));
    return;
  }
  haveLastChunk_ = true;
  lastChunk_ = in_.chunk;
  droppingEntry_ = owner_.laneDrops(*this, in_.chunk);
  if (droppingEntry_) {
    // Below the agreed point: every member holds its result. Read past it.
    frameLeft_ = in_.payloadLength;
    return dropEntryPayload({}, 0);
  }
  // The member awaits a result unless its entry is whole: this side owes it one from the
  // entry's header on, also while the entry waits for a slot (as a stream's chunk does, from
  // handleReduce), so that its HEARTBEATs go then too.
  const bool whole = in_.type == wire::FrameType::kCommitted ||
                     (in_.type == wire::FrameType::kFinal &&
                      wire::finalPrefix(in_) == in_.elemCount);
  if (!whole) {
    if (chunksInFlight_++ == 0 && liveness_) liveness_->start();
    // The whole chunk's RESULT goes back on this lane: paced with the streams that share the
    // link (bench/RESULTS.md, "The rate after a loss").
    pacer_.busy(uint64_t{in_.elemCount} * dataTypeSize(in_.dtype));
  }
  acquireAndBegin();
}

void Session::beginEntry(std::shared_ptr<Slot> slot, Fold fold) {
  if (in_.type == wire::FrameType::kCommitted) {
    slot->markCommitted(rank_);
    owner_.contributed(*slot);
    if (closed_ || aborting_) return;
    readHeader();
    return;
  }
  const uint32_t prefix = in_.type == wire::FrameType::kFinal ? wire::finalPrefix(in_) : 0;
  slot->startEntry(rank_, prefix);
  slot_ = std::move(slot);
  tailBytes_ = 0;
  frameLeft_ = in_.payloadLength;
  readPiece(fold);
}

// Reads and drops the rest of the frame of a dropped entry, then the next header.
void Session::dropEntryPayload(const std::error_code& ec, size_t bytes) {
  if (bytes != 0 || ec) {
    if (!readDone(ec)) return;
    if (ec) return ioFailed(ec, fmt::format("read failed inside chunk {}", in_.chunk));
  }
  frameLeft_ -= bytes;
  if (frameLeft_ == 0) {
    if (in_.type == wire::FrameType::kFinal && wire::finalPrefix(in_) < in_.elemCount)
      final_ = in_;  // its REDUCE follows, to be dropped too
    else
      droppingEntry_ = false;
    readHeader();
    return;
  }
  readInFlight_ = true;
  reader_.readSome(*stream_, staging_.data(),
                   static_cast<size_t>(std::min<uint64_t>(frameLeft_, staging_.size())),
                   [self = shared_from_this()](const std::error_code& e, size_t n) {
                     self->dropEntryPayload(e, n);
                   });
}

void Session::laneEnded(const std::string& what) {
  if (closed_) return;
  rs::logger().info("{}: the member closed this lane ({}): it adopted a larger dead set, or it "
                    "is leaving",
                    name_, what);
  close(unavailableError(fmt::format("the member ended the lane: {}", what)));
}

void Session::sendLost(const cluster::DeadView& dead) {
  if (closed_ || aborting_) return;
  std::vector<uint32_t> list;
  for (uint32_t i = 0; i < dead.dead.size(); ++i) list.push_back(dead.dead.nthDead(i));
  Result<wire::DeadSetFrame> frame = wire::lostFrame(group_->id(), rank_, list, dead.generation);
  if (!frame) return;  // a dead set always encodes (DeadSet holds at most kMaxDeadReducers)
  writer_.enqueue(transport::ownedFrame(
      frame->header, std::string(frame->payload.begin(), frame->payload.end()), kControlFrame));
  flush();
}

void Session::retire(const cluster::DeadView& dead) {
  std::vector<uint32_t> list;
  for (uint32_t i = 0; i < dead.dead.size(); ++i) list.push_back(dead.dead.nthDead(i));
  Result<wire::DeadSetFrame> frame = wire::lostFrame(group_->id(), rank_, list, dead.generation);
  const Status why = unavailableError(fmt::format(
      "a lane under reducers {} lost, but the group has {} lost",
      laneDead_ ? laneDead_->toString() : "?", dead.toString()));
  if (!frame) return close(why);
  rs::logger().debug("{}: retired: {}", name_, why.message());
  // A COMMIT still due goes first: after a rejoin, the member that switched first retires the
  // lanes of the older set here while another has not switched yet, and that one waits for
  // this COMMIT to take the reducer back (proto/FAILOVER.md, "Several lost").
  closeAfter(transport::ownedFrame(frame->header,
                                   std::string(frame->payload.begin(), frame->payload.end()),
                                   kControlFrame),
             why, /*commitFirst=*/true);
}

}  // namespace rs::server

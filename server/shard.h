// One io thread's share of the data plane: the streams it serves, their groups' open slots,
// its memory pool, and its Admission (the sessions parked waiting for memory or quota).
//
// Ownership of slots. Stream j of every member of a group lands on the same thread (see
// Group::threadFor), and chunk i always travels on the same stream index from every member,
// so exactly one thread sees every contribution to a slot and sums it without locks.
//
// Which requests for a new slot are granted and which wait (the slot quota, the memory share,
// memory in FIFO order), and why bounded memory cannot deadlock: admission.h.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/cluster/dead_set.h"
#include "core/cluster/dead_view.h"
#include "core/cluster/lane.h"
#include "core/common/status.h"
#include "core/failover/agreed_point.h"
#include "core/failover/rejoin_point.h"
#include "core/transport/delayed_calls.h"
#include "core/transport/stream.h"
#include "core/wire/frame.h"
#include "server/admission.h"
#include "server/commit_counter.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"
#include "server/session.h"
#include "server/shard_stats.h"
#include "server/slot.h"
#include "server/slot_pool.h"

namespace rs::server {

class Shard final : public SessionOwner, private Admission::Owner {
 public:
  // Aborts a group on every io thread (the data plane's broadcast). Any thread.
  // `movedAway`: a member moved away from this reducer; the group goes on on the survivors,
  // and is dropped here without an ABORT (memberMovedAway).
  using AbortGroup =
      std::function<void(const std::shared_ptr<Group>&, const Status&, bool movedAway)>;
  // The group's dead set grew: every io thread tells the group's members here (LOST) and
  // retires its lanes of an older one (groupLost). Any thread.
  using LoseReducers =
      std::function<void(const std::shared_ptr<Group>&, const cluster::DeadView&)>;
  // Every stream of a joining group is in: the thread of its stream 0 offers the rejoin there
  // (offerRejoin). Any thread.
  using OfferRejoin = std::function<void(const std::shared_ptr<Group>&)>;
  // A member left this reducer (Group::markLeft): every io thread looks at its lanes for chunks
  // that wait for it (memberLeftReducer). Any thread.
  using ReportLeft = std::function<void(const std::shared_ptr<Group>&, uint32_t rank)>;

  // `registry` is told when a stream closes; `abortGroup` fails a group everywhere;
  // `loseReducers` spreads a grown dead set; `reportLeft` a member gone. The slot pool takes its
  // budget from the registry's MemoryBudget.
  Shard(asio::io_context& io, const ServerConfig& config, uint32_t index, GroupRegistry& registry,
        AbortGroup abortGroup, LoseReducers loseReducers, OfferRejoin offerRejoin,
        ReportLeft reportLeft);
  ~Shard();

  asio::io_context& io() { return io_; }
  uint32_t index() const { return index_; }
  const ServerConfig& config() const { return config_; }
  ShardStats& stats() { return stats_; }
  // Payload bytes sent on this thread's fabric: straight from the slots' buffers (zero-copy),
  // and through the channels' send rings. Any thread.
  uint64_t fabricBytesZeroCopy() const { return fabric_ ? fabric_->bytesZeroCopy() : 0; }
  uint64_t fabricBytesCopied() const { return fabric_ ? fabric_->bytesCopied() : 0; }
  // This thread's part of --memory-limit (for the gauges; bookkeeping is charged from it).
  uint64_t poolLimit() const { return pool_->limit(); }

  // Everything below runs on this shard's thread.

  // Adopts a handshaken stream of `rank` (its HELLO was accepted by the registry), whose loss
  // bound is `lossDetectMs` (0: none).
  void attach(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
              uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs, bool askedFabric);
  // Fails every open slot of the group on this thread and sends ABORT to its sessions here;
  // closes them without one where the group was dropped because a member moved away.
  void abortGroup(const GroupId& id, const Status& reason);
  // The group's dead set is `dead` (or larger): LOST to its streams here, once, and its lanes
  // here of an older dead set retired.
  void groupLost(const GroupId& id, const cluster::DeadView& dead);
  // A joining group's streams are all in (proto/FAILOVER.md, "A reducer comes back"): JOIN_OFFER
  // to every member's stream 0 here.
  void offerRejoin(const GroupId& id);
  // `rank` left this reducer (Group::markLeft): the group fails if a lane's chunk here still
  // waits for its entry and its lane ended (failIfLaneMemberLeft).
  void memberLeftReducer(const GroupId& id, uint32_t rank);
  // Closes every session (shutdown).
  void closeAll(const Status& reason);

  // SessionOwner: called by this shard's sessions.
  Acquire acquireSlot(const std::shared_ptr<Session>& session, const wire::FrameHeader& header,
                      std::shared_ptr<Slot>* slot, Status* error) override;
  void contributed(Slot& slot) override;
  Status received(Session& session, uint64_t chunk) override;
  void commitLater(const std::shared_ptr<Session>& session) override;
  void memberLeft(Session& session) override;
  void detach(Session& session) override;
  void failGroup(const std::shared_ptr<Group>& group, const Status& reason) override;
  void memberLost(Session& session, MemberLoss how, const Status& reason) override;
  void memberMovedAway(Session& session, const cluster::DeadSet& dead) override;
  LaneVerdict laneFailover(const std::shared_ptr<Session>& session, const cluster::DeadView& dead,
                           uint64_t watermark, Status* error) override;
  bool laneDrops(Session& session, uint64_t chunk) override;
  Status joinAnswered(Session& session, uint64_t nextChunk) override;
  Result<FabricOffer> offerFabric(const Session& session) override;
  Status acceptFabric(transport::PayloadChannel& channel, const wire::FabricGrant& member) override;

 private:
  // One lane index of a group on this thread (proto/FAILOVER.md): the members' sessions on it
  // under one dead set, the lane's agreed point and its commit.
  struct LaneShard {
    LaneShard(cluster::DeadView d, cluster::Lane l, failover::AgreedPoint p, uint32_t worldSize)
        : dead(d), lane(l), point(std::move(p)), members(worldSize),
          commits(worldSize, CommitCounter::Bound::kEntries) {}
    cluster::DeadView dead;
    cluster::Lane lane;
    failover::AgreedPoint point;
    std::vector<std::shared_ptr<Session>> members;  // by rank, once its FAILOVER is in
    CommitCounter commits;
  };

  // A group's state on this thread.
  struct GroupShard {
    std::shared_ptr<Group> group;
    // members[stream][rank], for the stream indices this thread owns.
    std::unordered_map<uint16_t, std::vector<std::shared_ptr<Session>>> members;
    // Members that closed their stream cleanly: a later chunk on that stream cannot complete.
    std::unordered_map<uint16_t, std::vector<bool>> departed;
    // Per stream: the results sent, the members' RECEIVED and the commit watermark.
    std::unordered_map<uint16_t, CommitCounter> commits;
    // Per stream: the furthest chunk a member has begun, and its collective (awaitBehind).
    struct Begun {
      uint64_t seq = 0;
      uint64_t chunk = 0;
    };
    std::unordered_map<uint16_t, Begun> furthestBegun;
    // chunk -> slot. A completed one leaves it, but Admission counts it against the group's
    // quota and share while its RESULT parts are still queued to some member (heldSlots).
    std::unordered_map<uint64_t, std::shared_ptr<Slot>> open;
    // Lanes here: those whose FAILOVER has not come yet, and those taken, by lane index.
    std::vector<std::shared_ptr<Session>> pendingLanes;
    std::unordered_map<uint16_t, LaneShard> lanes;
    // The dead set whose LOST went to the group's streams here (and whose older lanes retired).
    std::optional<cluster::DeadView> lostSent;
    // A joining group (its stream 0 is here): the members' answers to JOIN_OFFER.
    std::optional<failover::RejoinPoint> rejoin;
    // --idle-timeout-ms: the group's bytes in when last seen to change, and when.
    uint64_t seenBytesIn = 0;
    std::chrono::steady_clock::time_point activeAt = std::chrono::steady_clock::now();
  };

  GroupShard* findGroup(const GroupId& id);
  // `from` began chunk h.chunk of collective h.seq on its stream: the members behind the furthest
  // chunk begun there in that collective are awaited (Session::othersBegan), `from` too when it
  // is the one behind.
  void awaitBehind(GroupShard& gs, Session& from, const wire::FrameHeader& h);
  // The members-agree check of a header for an open slot; a refusal is counted.
  Status admit(const Slot& slot, const wire::FrameHeader& header, uint32_t rank);
  // The pool buffer the chunk's slot takes (its accumulator, and the staging of a
  // deterministic group).
  static size_t slotBufferBytes(const GroupShard& gs, const wire::FrameHeader& header, bool lane);
  // `lane`: the lane index that carries it (a resent chunk), else none.
  std::shared_ptr<Slot> openSlot(GroupShard& gs, const wire::FrameHeader& header,
                                 AlignedBuffer buffer, std::optional<uint16_t> lane);
  void sendReady(GroupShard& gs, const std::shared_ptr<Slot>& slot);
  // A lane's slot after an entry's piece or marker (slot.h, lane mode): one that cuts through
  // sends the parts every entry completed, any other is resolved once every entry is in; the
  // members that lack the result get it, and a chunk whose result is all out (or needed none)
  // counts toward the lane's commit. An inconsistent chunk fails the group.
  void sendLaneReady(GroupShard& gs, const std::shared_ptr<Slot>& slot);
  // Sends the lane's COMMIT, if it rose, to the lane's members.
  void sendLaneCommit(LaneShard& lane);
  // LOST(dead) to the group's streams here, once, and its lanes of an older dead set retired.
  void applyLost(GroupShard& gs, const cluster::DeadView& dead);
  void retireLane(GroupShard& gs, uint16_t index, const cluster::DeadView& dead);
  // A lane's chunk needs every member's entry. A member whose session on the lane ended after
  // its FAILOVER and that left this reducer (Group::hasLeft: its streams here ended too) sends
  // none: the chunk can never complete, and the group fails now (memberGone, as for a stream
  // that ends with its chunk open), not at the collective timeout. A lane's end alone is no such
  // sign: a member closes its lanes under a smaller dead set when it adopts a larger one and
  // keeps its streams (proto/FAILOVER.md, "A second loss").
  void failIfLaneMemberLeft(GroupShard& gs, uint16_t index);
  // A member gone from this reducer: `silent` (lost: silent or unresponsive for the bound),
  // or its stream ended or broke inside a chunk. The group cannot complete here. A silent
  // member's group is failed (ABORT) only after the group's loss bound, and a stream's end
  // meanwhile joins that verdict (proto/FAILOVER.md, "Partitions and lost members"); else, or
  // where no failover can follow (one reducer, no loss bound), at once.
  void memberGone(const std::shared_ptr<Group>& group, const Status& reason, bool silent);
  // The verdict: the group failed here and on this reducer's other threads.
  void failGroupNow(const std::shared_ptr<Group>& group, const Status& reason);
  void completeSlot(GroupShard& gs, const Slot& slot);
  // The open slot of the header's chunk, once the members agree; else null, and the group
  // fails with *error.
  std::shared_ptr<Slot> joinOpen(const wire::FrameHeader& header, uint32_t rank, Status* error);
  // Admission::Owner: asked by admission_.
  bool isOpen(const wire::FrameHeader& header) override;
  Status refuseNew(const Admission::Request& request) override;
  bool waiting(const Admission::Request& request) override;
  std::shared_ptr<Slot> open(const Admission::Request& request, AlignedBuffer buffer) override;
  bool resume(const Admission::Request& request, std::shared_ptr<Slot> opened) override;
  // Posts admission_.service() (a slot may be freed deep inside a session's handler).
  void scheduleWaiterService();
  void scheduleTimeoutCheck();
  void checkTimeouts();
  // A group that sent nothing for --idle-timeout-ms with no collective in flight: its reason.
  Status idleVerdict(GroupShard& gs, std::chrono::steady_clock::time_point now);
  void maybeForget(const GroupId& id);

  asio::io_context& io_;
  const ServerConfig& config_;
  const uint32_t index_;
  GroupRegistry& registry_;
  const AbortGroup abortGroup_;
  const LoseReducers loseReducers_;
  const OfferRejoin offerRejoin_;
  const ReportLeft reportLeft_;
  std::shared_ptr<SlotPool> pool_;
  ShardStats stats_;
  // This thread's fabric (null: none, and noFabric_ says why). Declared before the sessions'
  // table so that it outlives every channel they hold.
  std::unique_ptr<ReducerFabric> fabric_;
  std::string noFabric_;
  std::unordered_map<GroupId, GroupShard, GroupIdHash> groups_;
  Admission admission_;
  bool waiterServicePosted_ = false;
  asio::steady_timer timeoutTimer_;
  // Sessions with a COMMIT that no result carried, each sent about kCommitDelay after it was due
  // (SessionOwner::commitLater), on one timer for the thread.
  transport::DelayedCalls<Session> lateCommits_;
  bool shuttingDown_ = false;
  // Groups with a silent member (memberGone), each failed when its timer fires.
  std::unordered_map<GroupId, std::unique_ptr<asio::steady_timer>, GroupIdHash> verdicts_;
};

}  // namespace rs::server

// The groups this reducer serves, shared by the acceptor, the io threads and gRPC.
//
// A Group object holds what every thread may read (its id, its parameters, the abort flag and
// counters); the per-thread reduction state lives in each Shard's GroupShard. The registry is
// the only place that takes a lock, and only on join, close and snapshots: never per chunk.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/cluster/dead_set.h"
#include "core/cluster/dead_view.h"
#include "core/common/status.h"
#include "core/reduce/dtype.h"
#include "core/wire/group_id.h"
#include "server/memory_budget.h"

namespace rs::server {

// What every member must agree on; the first member to arrive sets it.
struct GroupParams {
  uint32_t worldSize = 0;
  uint16_t streamCount = 0;   // streams each member opens to this reducer
  uint16_t reducerIndex = 0;  // this reducer's place in the members' reducer list
  uint16_t reducerCount = 0;
  uint32_t timeoutMs = 0;     // 0: the reducer's; the first member's value holds, up to the reducer's
  // The job the member proved itself for ("": the pool's secret, or an open reducer). The
  // group belongs to its creator's job: members of any other job are refused.
  std::string job;
  // Deterministic mode (the HELLO's kFlagDeterministic): chunks summed in rank order, so that
  // results are bit-identical whatever the arrival order (slot.h). Every member must agree.
  bool deterministic = false;
  // The accumulator of fp32 sums (the HELLO's kFlagFp64Accumulator, dtype.h). Every member
  // must agree.
  Fp32Accumulator fp32Accumulator = Fp32Accumulator::kFp32;
  // The HELLO's kFlagRejoin: the member redials this reducer to take it back (proto/FAILOVER.md,
  // "A reducer comes back"). A group created so is joining until JOIN_AT.
  bool rejoin = false;

  // The shape every member must agree on (the timeout is not part of it).
  bool sameShape(const GroupParams& o) const {
    return worldSize == o.worldSize && streamCount == o.streamCount &&
           reducerIndex == o.reducerIndex && reducerCount == o.reducerCount;
  }
};

struct GroupCounters {
  std::atomic<uint64_t> reductions{0};
  std::atomic<uint64_t> bytesIn{0};
  std::atomic<uint64_t> bytesOut{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<int64_t> openSlots{0};
};

class Group {
 public:
  Group(GroupId id, GroupParams params, uint32_t threadOffset, uint32_t effectiveTimeoutMs);

  const GroupId& id() const { return id_; }
  const GroupParams& params() const { return params_; }
  uint32_t timeoutMs() const { return timeoutMs_; }
  // Stream j of every member is served by io thread (j + threadOffset) mod T, so one thread
  // owns every chunk of that stream; the offset spreads groups over the threads.
  uint32_t threadFor(uint16_t streamIndex, uint32_t threads) const {
    return (streamIndex + threadOffset_) % threads;
  }
  // "group 0123abcd" (the first 8 hex digits), for logs.
  const std::string& name() const { return name_; }

  const std::string& job() const { return params_.job; }

  // The dead set the group's members named in their FAILOVERs (proto/FAILOVER.md): a union,
  // only growing. Any thread. learnDead adds `dead` (of this group's list: the caller checked
  // its length) and returns the union when it grew (then every member is told: LOST), nothing
  // when it held them all already.
  // Sets travel with their generation (cluster::DeadView): a newer one replaces the view, an
  // older one changes nothing.
  std::optional<cluster::DeadView> learnDead(const cluster::DeadView& dead);
  std::optional<cluster::DeadView> dead() const;

  // A restarted reducer taken back (proto/FAILOVER.md, "A reducer comes back"). A group created
  // by a rejoin HELLO is joining: it waits for all W x K streams (streamArrived is true for the
  // last), offers, and takes no chunk until its members agreed on T (joined); from then on it
  // takes no chunk below T. rejoinAt() is 0 for a group that never rejoined. Any thread.
  bool joining() const { return joining_.load(std::memory_order_acquire); }
  uint64_t rejoinAt() const { return rejoinAt_.load(std::memory_order_relaxed); }
  bool streamArrived() {
    return streamsToJoin_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  void joined(uint64_t at) {
    rejoinAt_.store(at, std::memory_order_relaxed);
    joining_.store(false, std::memory_order_release);
  }
  // When a joining group that is still joining is cancelled (the group's loss bound, or its
  // collective timeout where it has none, after its creation).
  std::chrono::steady_clock::time_point joinDeadline() const {
    const uint32_t bound = lossBoundMs() != 0 ? lossBoundMs() : timeoutMs_;
    return createdAt_ + std::chrono::milliseconds(bound);
  }

  // The first caller wins and returns true; the reason is kept for late arrivals. `movedAway`:
  // not a failure, but a member that moved away from this reducer (Shard::memberMovedAway).
  bool markAborted(const Status& reason, bool movedAway = false);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Dropped because a member moved away: no ABORT, and no tombstone (a later rejoin of the
  // group may create it again here, as on a restarted reducer). Set before aborted() reads
  // true.
  bool movedAway() const { return movedAway_.load(std::memory_order_acquire); }
  Status abortReason() const;

  GroupCounters& counters() { return counters_; }

  // The longest loss bound of the group's streams (each its member's ask capped by
  // --loss-detect-ms; 0: none): the longest a member takes to find this reducer silent, and
  // how long a member gone waits to be reported (Shard::memberGone). Any thread.
  void noteLossBound(uint32_t ms) {
    uint32_t seen = lossBoundMs_.load(std::memory_order_relaxed);
    while (seen < ms && !lossBoundMs_.compare_exchange_weak(seen, ms, std::memory_order_relaxed)) {
    }
  }
  uint32_t lossBoundMs() const { return lossBoundMs_.load(std::memory_order_relaxed); }

  // A member that ended one of its streams here between frames has left this reducer: its
  // process or host closed its connections, or it took this reducer for lost. It opens no lane
  // here after that, and sends nothing more on a lane it closed (Shard::failIfLaneMemberLeft).
  // markLeft is true the first time for the rank. Any thread.
  bool markLeft(uint32_t rank);
  bool hasLeft(uint32_t rank) const;

 private:
  friend class GroupRegistry;
  const GroupId id_;
  const GroupParams params_;
  const uint32_t threadOffset_;
  const uint32_t timeoutMs_;
  const std::string name_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> movedAway_{false};
  std::atomic<uint32_t> lossBoundMs_{0};
  std::atomic<bool> joining_;
  std::atomic<uint64_t> rejoinAt_{0};
  std::atomic<int64_t> streamsToJoin_;
  const std::chrono::steady_clock::time_point createdAt_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  Status abortReason_;
  std::vector<bool> left_;  // [rank]: markLeft
  std::optional<cluster::DeadView> dead_;  // none until a FAILOVER names a loss
  GroupCounters counters_;
  // Guarded by the registry's mutex.
  std::vector<bool> streamConnected_;  // [rank * streamCount + stream]
  std::vector<bool> declared_;         // ranks that called JoinGroup over gRPC
  // The host of each connection (stream or lane) that came from one, by connectionKey: a
  // multimap, as a member may hold a lane of one index under two dead sets for a moment.
  std::unordered_multimap<uint64_t, std::string> peerOf_;
  static uint64_t connectionKey(uint32_t rank, uint16_t index) {
    return uint64_t{rank} << 16 | index;
  }
  uint32_t openStreams_ = 0;
  bool everConnected_ = false;
  BookkeepingCharge bookkeeping_;  // this object's and its shards' state, against --memory-limit
};

// What the metrics show of the registry: one lock, no copies.
struct RegistryCounts {
  uint64_t groups = 0;
  uint64_t members = 0;  // summed over groups: ranks declared over gRPC or with a stream open
  bool draining = false;
};

struct GroupSnapshot {
  std::shared_ptr<Group> group;
  uint32_t openStreams = 0;
  uint32_t membersKnown = 0;
};

// The operator's limits, applied alike to HELLO and gRPC JoinGroup (the flags of the same names).
struct RegistryLimits {
  uint32_t maxGroups = 1024;
  // Groups one named job (RS_JOB) may hold at once, so that one tenant of a shared pool cannot
  // take every group; the job-less identity (the pool's secret, or an open reducer) has only
  // maxGroups.
  uint32_t maxGroupsPerJob = UINT32_MAX;
  uint32_t maxTimeoutMs = 300000;  // the default collective timeout and the ceiling on asks
  uint32_t maxStreamsPerWorker = 16;
  uint32_t maxConnectionsPerGroup = UINT32_MAX;
  uint32_t maxConnectionsPerPeer = UINT32_MAX;
};

class GroupRegistry {
 public:
  GroupRegistry(const RegistryLimits& limits, uint32_t ioThreads,
                std::shared_ptr<MemoryBudget> memory = nullptr);

  // What a new group's bookkeeping is charged to (none given: no limit); the io threads' slot
  // pools take their budget from it.
  const std::shared_ptr<MemoryBudget>& memory() const { return memory_; }

  // Registers stream `streamIndex` of `rank`, connected from `peerHost` (an address without
  // the port). Creates the group on first contact; later members must bring the same
  // parameters. Errors name what disagreed, or the connection cap that was reached; a member
  // of another job than the group's is refused with FAILED_PRECONDITION "group 0123abcd
  // belongs to another job" (and learns nothing else about the group).
  Result<std::shared_ptr<Group>> joinStream(const GroupId& id, uint32_t rank,
                                            uint16_t streamIndex, const GroupParams& params,
                                            const std::string& peerHost = {});
  // A stream registered by joinStream (or a lane by joinLane) closed. The group is forgotten
  // once its last stream closed and no member declared over gRPC remains (an aborted group is
  // remembered as a tombstone for a while).
  void streamClosed(const Group& group, uint32_t rank, uint16_t streamIndex);
  // Registers `rank`'s lane `laneIndex` (at least the group's stream count: proto/FAILOVER.md,
  // "Terms"), connected from `peerHost`. The group must exist (a lane carries a lost reducer's
  // chunks to a survivor of the group, never a new group) and `params` agree with it as for a
  // stream; a lane counts against the same connection caps. Lanes are not told apart here:
  // their dead set comes with their first frame, FAILOVER, and the io thread checks them.
  Result<std::shared_ptr<Group>> joinLane(const GroupId& id, uint32_t rank, uint16_t laneIndex,
                                          const GroupParams& params,
                                          const std::string& peerHost = {});

  // gRPC JoinGroup: declares a member before its streams connect. Returns members known.
  Result<uint32_t> declareMember(const GroupId& id, uint32_t rank, const GroupParams& params);
  // gRPC LeaveGroup: forgets a declared member; returns the group if it is still active
  // (null if it is gone). A caller of another job than the group's is refused as in joinStream.
  Result<std::shared_ptr<Group>> leaveMember(const GroupId& id, uint32_t rank,
                                             const std::string& job = {});

  std::shared_ptr<Group> find(const GroupId& id) const;
  std::vector<GroupSnapshot> snapshot() const;
  RegistryCounts counts() const;
  size_t size() const;
  // Draining refuses new groups; members of existing ones may still connect.
  void setDraining(bool draining);
  bool draining() const;

 private:
  // The parameters' ranges; the refusal names the field and the limit.
  Status checkLimits(uint32_t rank, const GroupParams& params) const;
  Result<std::shared_ptr<Group>> findOrCreateLocked(const GroupId& id, uint32_t rank,
                                                    const GroupParams& params);
  // The checks of an existing group against a member's parameters (job, abort, shape, modes).
  static Status agreeLocked(const Group& group, uint32_t rank, const GroupParams& params);
  // The per-peer and per-group connection caps for one more connection from `peerHost`.
  Status checkConnectionCapsLocked(const Group* group, const std::string& peerHost) const;
  // A stream or lane (`index`) of `rank` joined from `peerHost`, or closed: what the caps count.
  void countConnectionLocked(Group& group, uint32_t rank, uint16_t index,
                             const std::string& peerHost);
  void uncountConnectionLocked(Group& group, uint32_t rank, uint16_t index);
  void eraseLocked(const Group& group);
  static uint32_t streamsOfRankLocked(const Group& group, uint32_t rank);
  // Whether a member declared over gRPC has not left yet.
  static bool anyDeclaredLocked(const Group& group);
  // Ranks that declared themselves or have a stream connected.
  static uint32_t membersKnownLocked(const Group& group);

  const RegistryLimits limits_;
  const uint32_t ioThreads_;
  std::unordered_map<std::string, uint32_t> groupsOfJob_;  // named jobs only
  const std::shared_ptr<MemoryBudget> memory_;
  std::unordered_map<std::string, uint32_t> peerStreams_;  // joined streams per peer host
  mutable std::mutex mu_;
  bool draining_ = false;
  std::unordered_map<GroupId, std::shared_ptr<Group>, GroupIdHash> groups_;
  struct Tombstone {
    std::string job;
    std::string reason;
    std::chrono::steady_clock::time_point expires;
  };
  std::unordered_map<GroupId, Tombstone, GroupIdHash> tombstones_;
};

}  // namespace rs::server

// One io thread's share of the data plane: the streams it serves, their groups' open slots,
// its memory pool, and the sessions parked waiting for memory.
//
// Ownership of slots. Stream j of every member of a group lands on the same thread (see
// Group::threadFor), and chunk i always travels on the same stream index from every member,
// so exactly one thread sees every contribution to a slot and sums it without locks.
//
// Fairness. A request for a new slot waits only behind its own group (its quota of
// --max-slots-per-group, or an earlier waiting request of the same group) or behind the shared
// memory (an earlier request, of any group, that found the pool full: memory is granted FIFO).
// It never waits behind another group's quota, so a group that parks on its quota (slow,
// silent, not reading its results) stalls only itself. A group's quota counts its open slots
// and its completed ones whose RESULT parts are still queued to a member (they hold memory), so
// a member that stops reading pins at most its group's quota; the collective timeout fails the
// group if the results stay unread (checkTimeouts). A member that closes its stream while a
// chunk on it is open fails the group at once (memberLeft), and so does one that closes or
// resets it while its session reads nothing (parked here, or held back for its lead: the
// session watches for the peer's end, session.h); an aborted group's slots go back to the pool
// as its sessions let go of them.
//
// Memory share. The quota counts slots, not bytes, so a group that stalls holding memory (its
// members sent part of a collective and stopped, or stopped reading) could still pin the whole
// pool on its own. So a group may also hold at most its share of this thread's pool:
//   share = max(F, min(budget - F, budget / active))
// where F is the largest chunk's accumulator (2 x --max-chunk, which validate() makes fit),
// `budget` this thread's pool and `active` the groups holding or waiting for slot memory here
// (the requester included). A group alone keeps all but F of the pool (full speed); groups
// side by side split it evenly; a group that filled its share while alone, then stalled,
// leaves at least F: any newcomer can always reduce one chunk at a time. A request over its
// group's share waits like one over its quota, behind its own group only. Every group may
// hold F, so its oldest chunk always fits (the argument below holds).
//
// Bounded memory and why it cannot deadlock. A session that needs a new slot while the pool
// is exhausted (or another request was first in line for memory), or while its group is at its
// quota (or has an earlier request waiting), is parked: it stops reading, and TCP flow control
// stops its worker. Could every slot be held, partly filled, each waiting for a contribution
// from a parked stream? Consider one stream index j of one group, and its lowest incomplete
// chunk c. Every member sends its chunks on stream j in the same increasing order, and a slot
// exists only once some member sent that chunk. If any slot of (group, j) is held, some member
// has sent c (it precedes every later chunk on the stream), so c's slot exists too. Every
// member that has not yet sent c has c as its next frame, which needs no new memory and no
// quota (a request for an open slot is granted at once, or at the next service of the waiters
// if it parked before the slot opened, ahead of every rule above), so it is never held back and
// c completes. Hence the set of held slots always contains a slot that will complete,
// completion frees quota and (once its result is written) memory, and parked sessions resume:
// memory in FIFO order, each group's requests in its own order. A group waiting only for memory
// holds none of it, or holds a slot that completes by the same argument. The remaining risks
// are outside the reducer: a member that stops sending, or stops reading its results (both
// handled by the collective timeout, which aborts the group and frees its slots; the client
// always reads, straight into the caller's buffer). tests/integration exercises this with a
// pool of one slot; tests/dataplane/fairness_test.cc shows one group's stall leaves the others
// moving.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/common/status.h"
#include "core/transport/stream.h"
#include "core/wire/frame.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"
#include "server/session.h"
#include "server/shard_stats.h"
#include "server/slot.h"
#include "server/slot_pool.h"

namespace rs::server {

class Shard final : public SessionOwner {
 public:
  // Aborts a group on every io thread (the data plane's broadcast). Any thread.
  using AbortGroup = std::function<void(const std::shared_ptr<Group>&, const Status&)>;

  // `registry` is told when a stream closes; `abortGroup` fails a group everywhere. The slot
  // pool takes its budget from the registry's MemoryBudget.
  Shard(asio::io_context& io, const ServerConfig& config, uint32_t index, GroupRegistry& registry,
        AbortGroup abortGroup);
  ~Shard();

  asio::io_context& io() { return io_; }
  uint32_t index() const { return index_; }
  const ServerConfig& config() const { return config_; }
  ShardStats& stats() { return stats_; }
  // This thread's part of --memory-limit (for the gauges; bookkeeping is charged from it).
  uint64_t poolLimit() const { return pool_->limit(); }

  // Everything below runs on this shard's thread.

  // Adopts a handshaken stream of `rank` (its HELLO was accepted by the registry).
  void attach(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
              uint32_t rank, uint16_t streamIndex);
  // Fails every open slot of the group on this thread and sends ABORT to its sessions here.
  void abortGroup(const GroupId& id, const Status& reason);
  // Closes every session (shutdown).
  void closeAll(const Status& reason);

  // SessionOwner: called by this shard's sessions.
  Acquire acquireSlot(const std::shared_ptr<Session>& session, const wire::FrameHeader& header,
                      std::shared_ptr<Slot>* slot, Status* error) override;
  void contributed(Slot& slot) override;
  void memberLeft(Session& session) override;
  void detach(Session& session) override;
  void failGroup(const std::shared_ptr<Group>& group, const Status& reason) override;

 private:
  struct Waiter {
    std::weak_ptr<Session> session;
    wire::FrameHeader header;
  };
  // A group's state on this thread.
  struct GroupShard {
    std::shared_ptr<Group> group;
    // members[stream][rank], for the stream indices this thread owns.
    std::unordered_map<uint16_t, std::vector<std::shared_ptr<Session>>> members;
    // Members that closed their stream cleanly: a later chunk on that stream cannot complete.
    std::unordered_map<uint16_t, std::vector<bool>> departed;
    std::unordered_map<uint64_t, std::shared_ptr<Slot>> open;  // chunk -> slot
    // Completed slots whose RESULT parts are still queued to some member: they hold memory,
    // so they count against the group's quota until the last part is written (or dropped).
    std::vector<std::weak_ptr<Slot>> draining;
    uint32_t parked = 0;  // entries of waiters_ for this group
    // --idle-timeout-ms: the group's bytes in when last seen to change, and when.
    uint64_t seenBytesIn = 0;
    std::chrono::steady_clock::time_point activeAt = std::chrono::steady_clock::now();
  };

  GroupShard* findGroup(const GroupId& id);
  // The members-agree check of a header for an open slot; a refusal is counted.
  Status admit(const Slot& slot, const wire::FrameHeader& header, uint32_t rank);
  // The pool buffer the chunk's slot takes (its accumulator, and the staging of a
  // deterministic group).
  static size_t slotBufferBytes(const GroupShard& gs, const wire::FrameHeader& header);
  std::shared_ptr<Slot> openSlot(GroupShard& gs, const wire::FrameHeader& header,
                                 AlignedBuffer buffer);
  void sendReady(GroupShard& gs, const std::shared_ptr<Slot>& slot);
  void completeSlot(GroupShard& gs, const Slot& slot);
  void serviceWaiters();
  // Slots the group holds here against its quota: open plus draining (pruned of freed ones).
  uint32_t held(GroupShard& gs);
  // Whether the group may open one more slot of `bytes` (its quota and memory share).
  bool mayOpen(GroupShard& gs, size_t bytes);
  // The pool memory the group's slots hold here, and its share of the pool (see above).
  uint64_t heldBytes(GroupShard& gs);
  uint64_t memoryShare(const GroupShard& gs) const;
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
  std::shared_ptr<SlotPool> pool_;
  ShardStats stats_;
  std::unordered_map<GroupId, GroupShard, GroupIdHash> groups_;
  std::list<Waiter> waiters_;
  // Some waiter found the pool full: later allocations of every group queue behind it (memory
  // is granted FIFO). Recomputed by serviceWaiters.
  bool memoryBlocked_ = false;
  bool waiterServicePosted_ = false;
  asio::steady_timer timeoutTimer_;
  bool shuttingDown_ = false;
};

}  // namespace rs::server

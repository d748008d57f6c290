// Admission: which requests for a new slot one io thread grants now, and the queue of those
// that wait. It owns the rules (the slot quota, the memory share, memory in FIFO order) and
// the slots they count; its owner (the Shard) owns the sessions, the table of open slots and
// the sockets, and is asked through Admission::Owner. Nothing here does I/O: a waiter is the
// owner's, opaque here, so that tests/server/admission_test.cc drives it alone.
//
// Fairness. A request for a new slot waits only behind its own group (its quota of
// --max-slots-per-group, or an earlier waiting request of the same group) or behind the shared
// memory (an earlier request, of any group, that found the pool full: memory is granted FIFO).
// It never waits behind another group's quota, so a group that parks on its quota (slow,
// silent, not reading its results) stalls only itself. A group's quota counts its open slots
// and its completed ones whose RESULT parts are still queued to a member (they hold memory), so
// a member that stops reading pins at most its group's quota; the collective timeout fails the
// group if the results stay unread (Shard::checkTimeouts). A member that closes its stream
// while a chunk on it is open fails the group at once (Shard::memberLeft), and so does one that
// closes or resets it while its session reads nothing (parked here, or held back for its lead:
// the session watches for the peer's end, session.h); an aborted group's slots go back to the
// pool as its sessions let go of them.
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

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/common/status.h"
#include "core/wire/frame.h"
#include "core/wire/group_id.h"
#include "server/shard_stats.h"
#include "server/slot.h"
#include "server/slot_pool.h"

namespace rs::server {

class Admission {
 public:
  // One request for the slot of a REDUCE header's chunk.
  struct Request {
    std::weak_ptr<void> waiter;  // the owner's (its session), opaque here
    wire::FrameHeader header;    // its group and chunk, and what the owner opens the slot from
    size_t bytes = 0;            // the pool buffer a new slot of it takes (Slot::bufferBytes)
    uint64_t stateBytes = 0;     // the per-rank state charged to the pool beside it
  };

  // What admission asks of its owner, on the owner's thread.
  class Owner {
   public:
    // Whether the header's chunk has its slot open here (joining it takes no memory or quota).
    virtual bool isOpen(const wire::FrameHeader& header) = 0;
    // Ok, or why the owner refuses an arriving request a new slot whatever the memory (a
    // member of its stream has left).
    virtual Status refuseNew(const Request& request) = 0;
    // Whether a parked request still waits (its session is open); if not, it is dropped.
    virtual bool waiting(const Request& request) = 0;
    // Opens the request's slot with the buffer granted to it.
    virtual std::shared_ptr<Slot> open(const Request& request, AlignedBuffer buffer) = 0;
    // Hands a parked request its slot: `opened` (the slot open() made for it), or, when null,
    // its chunk's open slot, which it joins once the members agree. False when they did not:
    // the group failed, and the owner aborts it here (abort(), at once or later).
    virtual bool resume(const Request& request, std::shared_ptr<Slot> opened) = 0;

   protected:
    ~Owner() = default;
  };

  struct Limits {
    uint32_t maxSlotsPerGroup = 0;  // --max-slots-per-group
    uint64_t maxChunkBytes = 0;     // --max-chunk: F = 2 x this, rounded as the pool rounds
  };

  enum class Verdict {
    kJoin,      // its chunk's slot is open: the owner joins it (no memory, no quota)
    kOpened,    // a slot was opened for it (Grant::slot)
    kParked,    // queued: resumed through Owner::resume, or dropped
    kRefused,   // the owner's refusal (Grant::refusal)
    kTooLarge,  // its slot and state could never fit this thread's whole pool
  };
  struct Grant {
    Verdict verdict = Verdict::kParked;
    std::shared_ptr<Slot> slot = {};  // kOpened
    Status refusal = {};              // kRefused
  };

  // `pool` and `stats` (parks, parkedSessions) are the owner's thread's, and outlive this.
  Admission(Owner& owner, SlotPool& pool, Limits limits, ShardStats& stats);

  // Everything below runs on the owner's thread.

  // An arriving request, decided at the back of the queue.
  Grant request(Request request);
  // Decides every parked request again, front to back, and resumes those granted. Call it when
  // memory or quota may have been freed (a slot completed or went back to the pool).
  void service();
  // The requests parked now.
  size_t parked() const { return queue_.size(); }
  // The slots the group's grants opened, held until they are destroyed: open, or complete
  // with RESULT parts still queued (entries may have expired since the group last asked).
  std::span<const std::weak_ptr<Slot>> heldSlots(const GroupId& group) const;

  // Drops the group's parked requests and its slots from the count (its sessions are gone).
  void forget(const GroupId& group);
  // forget() for a group aborted while requests are parked: the one that found the pool full
  // may have been this group's, so until the next service() every arriving request waits
  // behind the queue, if one is left.
  void abort(const GroupId& group);
  // Forgets everything (shutdown).
  void clear();

 private:
  // A group's part in the rules.
  struct Tenant {
    std::vector<std::weak_ptr<Slot>> held;  // pruned of destroyed slots by heldCount()
    uint32_t parked = 0;                    // its entries of queue_
  };

  // The grant-or-park rule, written once: for a request `arriving` (at the back of the queue)
  // or parked at its place in it. `behindOwnGroup`: an earlier request of its group waits;
  // `behindMemory`: an earlier request found the pool full (set when this one does).
  Grant decide(Tenant& tenant, const Request& request, bool arriving, bool behindOwnGroup,
               bool& behindMemory);
  // Whether the group may open one more slot of `bytes` (its quota and memory share).
  bool mayOpen(Tenant& tenant, size_t bytes);
  uint32_t heldCount(Tenant& tenant);
  static uint64_t heldBytes(const Tenant& tenant);
  uint64_t memoryShare(const Tenant& tenant) const;

  Owner& owner_;
  SlotPool& pool_;
  const Limits limits_;
  ShardStats& stats_;
  std::unordered_map<GroupId, Tenant, GroupIdHash> tenants_;
  std::list<Request> queue_;
  // Some request found the pool full: later ones of every group queue behind it (memory is
  // granted FIFO). Recomputed by service().
  bool memoryBlocked_ = false;
};

}  // namespace rs::server

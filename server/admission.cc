#include "server/admission.h"

#include <algorithm>
#include <unordered_set>

namespace rs::server {

Admission::Admission(Owner& owner, SlotPool& pool, Limits limits, ShardStats& stats)
    : owner_(owner), pool_(pool), limits_(limits), stats_(stats) {}

Admission::Grant Admission::request(Request request) {
  Tenant& tenant = tenants_[request.header.group];
  Grant grant = decide(tenant, request, /*arriving=*/true, tenant.parked > 0, memoryBlocked_);
  if (grant.verdict == Verdict::kParked) {
    ++tenant.parked;
    queue_.push_back(std::move(request));
    stats_.parks.fetch_add(1, std::memory_order_relaxed);
    stats_.parkedSessions.store(queue_.size(), std::memory_order_relaxed);
  }
  return grant;
}

void Admission::service() {
  // Allocations stay FIFO within a group, and FIFO across groups for memory: once one request
  // finds the pool full, later ones wait for memory too. A request over its group's quota or
  // share blocks only its own group's later requests.
  bool memoryBlocked = false;
  std::unordered_set<const Tenant*> blocked;  // groups whose earlier request still waits
  for (auto it = queue_.begin(); it != queue_.end();) {
    Tenant& tenant = tenants_.at(it->header.group);  // forget() drops a group's entries with it
    if (!owner_.waiting(*it)) {
      --tenant.parked;
      it = queue_.erase(it);
      continue;
    }
    Grant grant = decide(tenant, *it, /*arriving=*/false, blocked.contains(&tenant),
                         memoryBlocked);
    if (grant.verdict == Verdict::kParked) {
      blocked.insert(&tenant);
      ++it;
      continue;
    }
    const Request granted = std::move(*it);
    --tenant.parked;
    it = queue_.erase(it);
    if (!owner_.resume(granted, std::move(grant.slot))) {
      // The join failed the group, whose entries may be gone with it: decide again from the
      // front.
      it = queue_.begin();
      blocked.clear();
      memoryBlocked = false;
    }
  }
  memoryBlocked_ = memoryBlocked;
  stats_.parkedSessions.store(queue_.size(), std::memory_order_relaxed);
}

Admission::Grant Admission::decide(Tenant& tenant, const Request& request, bool arriving,
                                   bool behindOwnGroup, bool& behindMemory) {
  // Needs no memory and no quota: granted at once, ahead of every rule (the deadlock argument
  // in admission.h rests on it).
  if (owner_.isOpen(request.header)) return {.verdict = Verdict::kJoin};
  if (arriving) {
    if (Status refusal = owner_.refuseNew(request); !refusal.isOk())
      return {.verdict = Verdict::kRefused, .refusal = std::move(refusal)};
    // One that never fits would hold the memory queue forever.
    if (!pool_.fitsEver(request.bytes, request.stateBytes)) return {.verdict = Verdict::kTooLarge};
  }
  // Fairness: a request waits only behind its own group (its quota or share, or an earlier
  // request of its group) or behind the shared memory (an earlier request that found the pool
  // full); never behind another group's quota or share.
  if (behindMemory || behindOwnGroup || !mayOpen(tenant, request.bytes))
    return {.verdict = Verdict::kParked};
  auto buffer = pool_.tryAcquire(request.bytes, request.stateBytes);
  if (!buffer) {
    behindMemory = true;
    return {.verdict = Verdict::kParked};
  }
  std::shared_ptr<Slot> slot = owner_.open(request, std::move(*buffer));
  tenant.held.push_back(slot);
  return {.verdict = Verdict::kOpened, .slot = std::move(slot)};
}

std::span<const std::weak_ptr<Slot>> Admission::heldSlots(const GroupId& group) const {
  auto it = tenants_.find(group);
  if (it == tenants_.end()) return {};
  return it->second.held;
}

uint32_t Admission::heldCount(Tenant& tenant) {
  std::erase_if(tenant.held, [](const std::weak_ptr<Slot>& s) { return s.expired(); });
  return static_cast<uint32_t>(tenant.held.size());
}

bool Admission::mayOpen(Tenant& tenant, size_t bytes) {
  return heldCount(tenant) < limits_.maxSlotsPerGroup &&
         heldBytes(tenant) + SlotPool::roundUp(bytes) <= memoryShare(tenant);
}

uint64_t Admission::heldBytes(const Tenant& tenant) {
  uint64_t bytes = 0;
  for (const auto& weak : tenant.held)
    if (auto slot = weak.lock()) bytes += slot->memoryBytes();
  return bytes;
}

uint64_t Admission::memoryShare(const Tenant& tenant) const {
  uint64_t active = 0;
  for (const auto& [id, other] : tenants_)
    active += (&other == &tenant || !other.held.empty() || other.parked > 0) ? 1 : 0;
  const uint64_t budget = pool_.budget();
  const uint64_t floor =
      std::min<uint64_t>(budget, SlotPool::roundUp(2ull * limits_.maxChunkBytes));
  return std::max(floor, std::min(budget - floor, budget / std::max<uint64_t>(active, 1)));
}

void Admission::forget(const GroupId& group) {
  tenants_.erase(group);
  std::erase_if(queue_, [&](const Request& r) { return r.header.group == group; });
  stats_.parkedSessions.store(queue_.size(), std::memory_order_relaxed);
}

void Admission::abort(const GroupId& group) {
  forget(group);
  memoryBlocked_ = !queue_.empty();
}

void Admission::clear() {
  tenants_.clear();
  queue_.clear();
  memoryBlocked_ = false;
}

}  // namespace rs::server

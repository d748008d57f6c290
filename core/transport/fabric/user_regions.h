// The caller's registered buffers (transport/user_memory.h) as one hub's domain knows them: each
// range registered with the domain (FI_MR_LOCAL: a write from it needs the registration's
// descriptor), so that a payload from inside one is written to the peer straight from the
// caller's memory instead of through the channel's send ring. Synced with the list at the
// first lookup after it changed: new ranges registered, removed ones let go (a send still
// writing from one keeps it until its writes complete). A range the domain refuses (the
// pinned-memory limit, a bad address) is logged once and its payloads go through the ring.
//
// Threading: the hub's io thread only (FI_THREAD_DOMAIN), like everything on the domain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/transport/fabric/registered_memory.h"
#include "core/transport/user_memory.h"

namespace rs::transport::fabric {

class FabricDomain;

struct UserRegion {
  uint64_t id = 0;
  RegisteredMemory memory;

  bool covers(const void* p, size_t bytes) const;
};

class UserRegions {
 public:
  // `name`: the hub's, for the log line of a refused range.
  UserRegions(FabricDomain& domain, std::string name) : domain_(domain), name_(std::move(name)) {}

  // The list to follow; none: every lookup finds nothing.
  void follow(std::shared_ptr<const UserMemory> list) { list_ = std::move(list); }

  // A registered range holding [p, p + bytes), after syncing with the list; null if none.
  std::shared_ptr<const UserRegion> find(const void* p, size_t bytes);
  // Whether the range listed under `id` is registered here, as of the last sync.
  bool holds(uint64_t id) const { return byId_.contains(id); }

  // Deregisters every range (the hub's shutdown: registrations go before the domain). A
  // region still held by someone is closed all the same; its memory is then unusable, and
  // no lookup finds it. Idempotent.
  void closeAll();

 private:
  // A lookup walks back this many regions from the last one starting at or below the payload:
  // enough for a buffer registered several times over (NCCL registers one per channel and
  // side); a payload missed among more overlapping ones is only copied.
  static constexpr int kLookBack = 32;

  void sync();

  FabricDomain& domain_;
  const std::string name_;
  std::shared_ptr<const UserMemory> list_;
  uint64_t generation_ = ~uint64_t{0};  // of the list as last synced
  std::unordered_map<uint64_t, std::shared_ptr<UserRegion>> byId_;
  std::multimap<uintptr_t, std::shared_ptr<UserRegion>> byBase_;  // by start address
  std::unordered_set<uint64_t> refused_;  // ranges the domain would not register: not retried
  bool closed_ = false;
};

}  // namespace rs::transport::fabric

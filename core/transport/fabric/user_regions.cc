#include "core/transport/fabric/user_regions.h"

#include "core/common/log.h"

namespace rs::transport::fabric {

bool UserRegion::covers(const void* p, size_t bytes) const {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const auto base = reinterpret_cast<uintptr_t>(memory.data());
  return memory.isRegistered() && at >= base && at - base <= memory.size() &&
         bytes <= memory.size() - (at - base);
}

std::shared_ptr<const UserRegion> UserRegions::find(const void* p, size_t bytes) {
  if (!list_ || closed_) return nullptr;
  if (list_->generation() != generation_) sync();
  auto it = byBase_.upper_bound(reinterpret_cast<uintptr_t>(p));
  for (int n = 0; n < kLookBack && it != byBase_.begin(); ++n) {
    --it;
    if (it->second->covers(p, bytes)) return it->second;
  }
  return nullptr;
}

void UserRegions::sync() {
  const std::vector<UserMemory::Range> ranges = list_->snapshot(&generation_);
  std::unordered_set<uint64_t> listed;
  for (const UserMemory::Range& r : ranges) listed.insert(r.id);
  // Let go of the removed: a send writing from one holds it until its writes complete.
  std::erase_if(byBase_, [&](const auto& entry) { return !listed.contains(entry.second->id); });
  std::erase_if(byId_, [&](const auto& entry) { return !listed.contains(entry.first); });
  std::erase_if(refused_, [&](uint64_t id) { return !listed.contains(id); });
  for (const UserMemory::Range& range : ranges) {
    if (byId_.contains(range.id) || refused_.contains(range.id)) continue;
    Result<RegisteredMemory> m = RegisteredMemory::add(domain_, range.data, range.size,
                                                       RegisteredMemory::Access::kLocal);
    if (!m.isOk()) {
      logger().warn("{}: the buffer of {} bytes at {} stays unregistered (its payloads are "
                    "copied to the fabric): {}",
                    name_, range.size, range.data, m.status().message());
      refused_.insert(range.id);
      continue;
    }
    auto region = std::make_shared<UserRegion>(UserRegion{range.id, std::move(*m)});
    byId_.emplace(range.id, region);
    byBase_.emplace(reinterpret_cast<uintptr_t>(range.data), std::move(region));
  }
}

void UserRegions::closeAll() {
  closed_ = true;
  for (auto& [id, region] : byId_) (void)region->memory.close();
  byId_.clear();
  byBase_.clear();
}

}  // namespace rs::transport::fabric

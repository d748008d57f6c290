#include "core/transport/user_memory.h"

#include <algorithm>

namespace rs::transport {

uint64_t UserMemory::add(void* data, size_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = nextId_++;
  ranges_.push_back({id, data, size});
  generation_.fetch_add(1, std::memory_order_release);
  return id;
}

bool UserMemory::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = std::find_if(ranges_.begin(), ranges_.end(),
                               [id](const Range& r) { return r.id == id; });
  if (it == ranges_.end()) return false;
  ranges_.erase(it);
  generation_.fetch_add(1, std::memory_order_release);
  return true;
}

std::vector<UserMemory::Range> UserMemory::snapshot(uint64_t* generation) const {
  std::lock_guard<std::mutex> lock(mu_);
  *generation = generation_.load(std::memory_order_relaxed);
  return ranges_;
}

size_t UserMemory::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ranges_.size();
}

}  // namespace rs::transport

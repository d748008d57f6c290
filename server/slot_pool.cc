#include "server/slot_pool.h"

#include <algorithm>

namespace rs::server {

std::optional<AlignedBuffer> SlotPool::tryAcquire(size_t bytes, uint64_t stateBytes) {
  const size_t want = roundUp(bytes);
  const uint64_t budget = this->budget();
  if (inUse_ + stateBytes_ + want + stateBytes > budget) return std::nullopt;
  stateBytes_ += stateBytes;
  // Best fit among cached buffers no more than twice the size asked for.
  auto best = cache_.end();
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->size() >= want && it->size() <= 2 * want &&
        (best == cache_.end() || it->size() < best->size()))
      best = it;
  }
  if (best != cache_.end()) {
    AlignedBuffer b = std::move(*best);
    cache_.erase(best);
    cachedBytes_ -= b.size();
    inUse_ += b.size();
    return b;
  }
  // Make room by freeing cached buffers, largest first.
  while (!cache_.empty() && inUse_ + stateBytes_ + cachedBytes_ + want > budget) {
    auto largest = std::max_element(cache_.begin(), cache_.end(),
                                    [](const auto& a, const auto& b) { return a.size() < b.size(); });
    cachedBytes_ -= largest->size();
    unlist(*largest);
    cache_.erase(largest);
  }
  inUse_ += want;
  return allocate(want);
}

AlignedBuffer SlotPool::allocate(size_t bytes) {
  AlignedBuffer b(bytes);
  if (list_) listed_.emplace(b.data(), list_->add(b.data(), b.size()));
  return b;
}

void SlotPool::unlist(const AlignedBuffer& buffer) {
  const auto it = listed_.find(buffer.data());
  if (it == listed_.end()) return;
  list_->remove(it->second);
  listed_.erase(it);
}

SlotPool::~SlotPool() {
  for (const AlignedBuffer& b : cache_) unlist(b);
}

void SlotPool::release(AlignedBuffer buffer, uint64_t stateBytes) {
  inUse_ -= buffer.size();
  stateBytes_ -= stateBytes;
  if (inUse_ + stateBytes_ + cachedBytes_ + buffer.size() <= budget()) {
    cachedBytes_ += buffer.size();
    cache_.push_back(std::move(buffer));
  } else {
    unlist(buffer);
  }
  if (onFreed_) onFreed_();
}

}  // namespace rs::server

#include "server/slot_pool.h"

#include <algorithm>

namespace rs::server {

std::optional<AlignedBuffer> SlotPool::tryAcquire(size_t bytes) {
  const size_t want = roundUp(bytes);
  if (inUse_ + want > budget_) return std::nullopt;
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
  while (!cache_.empty() && inUse_ + cachedBytes_ + want > budget_) {
    auto largest = std::max_element(cache_.begin(), cache_.end(),
                                    [](const auto& a, const auto& b) { return a.size() < b.size(); });
    cachedBytes_ -= largest->size();
    cache_.erase(largest);
  }
  inUse_ += want;
  return AlignedBuffer(want);
}

void SlotPool::release(AlignedBuffer buffer) {
  inUse_ -= buffer.size();
  if (inUse_ + cachedBytes_ + buffer.size() <= budget_) {
    cachedBytes_ += buffer.size();
    cache_.push_back(std::move(buffer));
  }
  if (onFreed_) onFreed_();
}

}  // namespace rs::server

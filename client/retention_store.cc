#include "client/retention_store.h"

#include <algorithm>
#include <cstring>

namespace rs::client {

RetentionStore::RetentionStore(uint64_t capacityBytes, uint32_t lanes)
    : capacity_(capacityBytes), lanes_(lanes), committed_(lanes) {
  stats_.capacityBytes = capacityBytes;
}

bool RetentionStore::committedLocked(const Chunk& c) const {
  const std::optional<uint64_t>& upTo = committed_[c.lane];
  return upTo && c.chunk <= *upTo;
}

std::shared_ptr<std::byte[]> RetentionStore::takeBufferLocked(size_t bytes) {
  if (const auto it = free_.lower_bound(bytes); it != free_.end() && it->first == bytes) {
    std::shared_ptr<std::byte[]> data = std::move(it->second);
    stats_.freeBytes -= bytes;
    free_.erase(it);
    ++stats_.reusedChunks;
    return data;
  }
  // Sizes that stopped coming give way, the largest first.
  while (!free_.empty() && stats_.heldBytes + stats_.freeBytes + bytes > capacity_) {
    const auto largest = std::prev(free_.end());
    stats_.freeBytes -= largest->first;
    free_.erase(largest);
  }
  // Not zeroed: every byte is copied over at once.
  return std::shared_ptr<std::byte[]>(new std::byte[bytes]);
}

void RetentionStore::recycleLocked(Held&& held) {
  // use_count 1: failover took no share of it (uncommittedFrom), and none can be taken now.
  if (held.data.use_count() != 1) return;
  if (stats_.heldBytes + stats_.freeBytes + held.bytes > capacity_) return;
  stats_.freeBytes += held.bytes;
  // First among its size (free_ is a multimap), so that the next copy takes the buffer freed
  // last, warm in cache, as the allocator would have given it.
  free_.emplace_hint(free_.lower_bound(held.bytes), held.bytes, std::move(held.data));
}

bool RetentionStore::tryKeepLocked(const Collective& collective) {
  uint64_t need = 0;
  for (const Chunk& c : collective.chunks)
    if (!committedLocked(c)) need += c.bytes;
  if (need > 0 && stats_.heldBytes + need > capacity_) return false;
  for (const Chunk& c : collective.chunks) {
    if (committedLocked(c)) continue;
    Held held{takeBufferLocked(c.bytes), c.bytes, c.header, c.compressed};
    std::memcpy(held.data.get(), c.data, c.bytes);
    lanes_[c.lane].emplace(c.chunk, std::move(held));  // a chunk is in one collective only
    stats_.heldBytes += c.bytes;
    ++stats_.heldChunks;
    ++stats_.keptChunks;
  }
  stats_.chunks += collective.chunks.size();
  stats_.keptBytes += need;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.heldBytes);
  return true;
}

RetentionStore::Outcome RetentionStore::keep(Collective collective) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return Outcome::kClosed;
    // Behind the collectives already waiting, in order, even if this one would fit.
    if (!waiting_.empty() || !tryKeepLocked(collective)) {
      ++stats_.waits;
      ++stats_.waiting;
      waiting_.push_back(std::move(collective));
      return Outcome::kWaiting;
    }
  }
  collective.request->finish(Status::ok());
  return Outcome::kKept;
}

void RetentionStore::commit(uint32_t lane, uint64_t chunk) {
  std::vector<Collective> ready;
  {
    std::lock_guard lock(mu_);
    std::optional<uint64_t>& upTo = committed_[lane];
    if (!upTo || chunk > *upTo) upTo = chunk;
    std::map<uint64_t, Held>& held = lanes_[lane];
    const auto end = held.upper_bound(chunk);
    for (auto it = held.begin(); it != end; ++it) {
      stats_.heldBytes -= it->second.bytes;
      --stats_.heldChunks;
      recycleLocked(std::move(it->second));
    }
    held.erase(held.begin(), end);
    while (!closed_ && !waiting_.empty() && tryKeepLocked(waiting_.front())) {
      ready.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
      --stats_.waiting;
    }
  }
  for (Collective& c : ready) c.request->finish(Status::ok());
}

std::vector<std::shared_ptr<RequestState>> RetentionStore::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  stats_.waiting = 0;
  std::vector<std::shared_ptr<RequestState>> out;
  for (Collective& c : waiting_) out.push_back(std::move(c.request));
  waiting_.clear();
  return out;
}

RetentionStats RetentionStore::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::optional<uint64_t> RetentionStore::committed(uint32_t lane) const {
  std::lock_guard lock(mu_);
  return committed_[lane];
}

std::optional<std::vector<std::byte>> RetentionStore::copyOf(uint64_t chunk) const {
  std::lock_guard lock(mu_);
  for (const auto& lane : lanes_) {
    const auto it = lane.find(chunk);
    if (it != lane.end())
      return std::vector<std::byte>(it->second.data.get(),
                                    it->second.data.get() + it->second.bytes);
  }
  return std::nullopt;
}

std::vector<RetentionStore::Kept> RetentionStore::uncommittedFrom(uint32_t lane,
                                                                  uint64_t from) const {
  std::lock_guard lock(mu_);
  std::map<uint64_t, Kept> out;
  for (auto it = lanes_[lane].lower_bound(from); it != lanes_[lane].end(); ++it)
    out.emplace(it->first, Kept{it->second.header, it->second.data, it->second.compressed});
  for (const Collective& waiting : waiting_) {
    for (const Chunk& c : waiting.chunks) {
      if (c.lane != lane || c.chunk < from || committedLocked(c)) continue;
      // Its buffer is the caller's once a commit lets the collective complete: copied.
      std::shared_ptr<std::byte[]> copy(new std::byte[c.bytes]);
      std::memcpy(copy.get(), c.data, c.bytes);
      out.emplace(c.chunk, Kept{c.header, std::move(copy), c.compressed});
    }
  }
  std::vector<Kept> sorted;
  sorted.reserve(out.size());
  for (auto& [chunk, kept] : out) sorted.push_back(std::move(kept));
  return sorted;
}

std::vector<RetentionStore::LaneDebt> RetentionStore::debts(uint64_t seq) const {
  std::lock_guard lock(mu_);
  std::vector<LaneDebt> out;
  for (uint32_t lane = 0; lane < lanes_.size(); ++lane)
    out.push_back({lane, lanes_[lane].size(), 0});
  for (const Collective& waiting : waiting_) {
    if (waiting.request->seq() != seq) continue;
    for (const Chunk& c : waiting.chunks)
      if (!committedLocked(c)) ++out[c.lane].waiting;
  }
  std::erase_if(out, [](const LaneDebt& d) { return d.kept == 0 && d.waiting == 0; });
  return out;
}

}  // namespace rs::client

#include "server/memory_budget.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/common/byte_size.h"

namespace rs::server {
namespace {
// An entry of an unordered_map<size_t, std::string> holding a peer address (node, key, short
// string, bucket): the registry's per-stream peer record.
constexpr uint64_t kPeerEntryBytes = 64;
}  // namespace

namespace {
// Bookkeeping may always take this part of each thread's share, even where that leaves less
// than the floor (a limit of exactly one largest chunk per thread would otherwise refuse every
// group).
constexpr uint64_t kMinBookkeepingShare = 16;  // 1/16
}  // namespace

MemoryBudget::MemoryBudget(uint64_t limit, uint32_t threads, uint64_t floor)
    : limit_(limit),
      threads_(std::max<uint32_t>(threads, 1)),
      floor_(std::min<uint64_t>(floor, limit / threads_ - limit / threads_ / kMinBookkeepingShare)) {}

Status MemoryBudget::chargeBookkeeping(uint64_t bytes, std::string_view what) {
  const uint64_t ceiling = limit_ - floor_ * threads_;
  uint64_t used = bookkeeping_.load(std::memory_order_relaxed);
  do {
    if (bytes > ceiling - std::min(used, ceiling))
      return resourceExhausted(fmt::format(
          "{}: its bookkeeping ({}) would pass --memory-limit {}: {} of bookkeeping in use, and "
          "each of the {} io threads keeps {} for slots",
          what, formatByteSize(bytes), formatByteSize(limit_), formatByteSize(used), threads_,
          formatByteSize(floor_)));
  } while (!bookkeeping_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return Status::ok();
}

void MemoryBudget::releaseBookkeeping(uint64_t bytes) {
  bookkeeping_.fetch_sub(bytes, std::memory_order_relaxed);
}

uint64_t MemoryBudget::slotPoolBudget() const {
  const uint64_t used = std::min(bookkeeping(), limit_);
  return std::max(floor_, (limit_ - used) / threads_);
}

uint64_t bookkeepingBytes(uint32_t worldSize, uint32_t streams) {
  const uint64_t memberStreams = static_cast<uint64_t>(worldSize) * streams;
  // Per (rank, stream): its session pointer in its shard's member table, its acknowledged
  // watermark in the stream's CommitCounter, the registry's connected flag, the shard's
  // departed flag and the counter's has-acknowledged flag (bits, rounded up to bytes below) and
  // the peer entry. Per rank: the declared and left flags.
  return memberStreams * (sizeof(std::shared_ptr<int>) + sizeof(uint64_t) + kPeerEntryBytes) +
         (3 * memberStreams + 2 * uint64_t{worldSize} + 7) / 8;
}

}  // namespace rs::server

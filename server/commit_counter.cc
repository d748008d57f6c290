#include "server/commit_counter.h"

#include <fmt/format.h>

#include <algorithm>

namespace rs::server {

CommitCounter::CommitCounter(uint32_t worldSize)
    : acked_(worldSize, 0), hasAcked_(worldSize, false), silent_(worldSize) {}

void CommitCounter::resultSent(uint64_t chunk) { sent_ = chunk; }

Status CommitCounter::received(uint32_t rank, uint64_t chunk) {
  if (!sent_ || chunk > *sent_)
    return protocolError(
        sent_ ? fmt::format("RECEIVED for chunk {}, whose result this reducer has not sent (the "
                            "last it sent on this stream is chunk {})",
                            chunk, *sent_)
              : fmt::format("RECEIVED for chunk {}, but this reducer has sent no result on this "
                            "stream yet",
                            chunk));
  if (hasAcked_[rank] && chunk <= acked_[rank])
    return protocolError(fmt::format("RECEIVED for chunk {} after RECEIVED for chunk {}: a "
                                     "member's acknowledgements must increase",
                                     chunk, acked_[rank]));
  const bool first = !hasAcked_[rank];
  const uint64_t before = acked_[rank];
  acked_[rank] = chunk;
  hasAcked_[rank] = true;
  if (first) {
    if (--silent_ == 0) findFloor();
  } else if (silent_ == 0 && before == floor_ && --atFloor_ == 0) {
    findFloor();
  }
  return Status::ok();
}

void CommitCounter::findFloor() {
  floor_ = *std::min_element(acked_.begin(), acked_.end());
  atFloor_ = static_cast<uint32_t>(std::count(acked_.begin(), acked_.end(), floor_));
}

std::optional<uint64_t> CommitCounter::takeCommit() {
  if (silent_ != 0 || (committed_ && floor_ <= *committed_)) return std::nullopt;
  committed_ = floor_;
  return floor_;
}

}  // namespace rs::server

#include "server/commit_counter.h"

#include <fmt/format.h>

#include <algorithm>

namespace rs::server {

CommitCounter::CommitCounter(uint32_t worldSize, Bound bound)
    : bound_(bound), acked_(worldSize, 0), hasAcked_(worldSize, false), silent_(worldSize) {}

void CommitCounter::resultSent(uint64_t chunk) { sent_ = chunk; }

void CommitCounter::commitThrough(uint64_t chunk) {
  if (!through_ || chunk > *through_) through_ = chunk;
}

Status CommitCounter::received(uint32_t rank, uint64_t chunk) {
  if (bound_ == Bound::kResults && (!sent_ || chunk > *sent_))
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
  std::optional<uint64_t> commit = through_;
  if (silent_ == 0) {
    // On a stream every acknowledgement is of a result sent; on a lane the floor may be ahead
    // of the chunks resolved.
    std::optional<uint64_t> agreed = floor_;
    if (bound_ == Bound::kEntries)
      agreed = sent_ ? std::optional<uint64_t>(std::min(floor_, *sent_)) : std::nullopt;
    if (agreed && (!commit || *agreed > *commit)) commit = agreed;
  }
  if (!commit || (committed_ && *commit <= *committed_)) return std::nullopt;
  committed_ = commit;
  return commit;
}

}  // namespace rs::server

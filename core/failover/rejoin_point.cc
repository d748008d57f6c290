#include "core/failover/rejoin_point.h"

#include <algorithm>

namespace rs::failover {

Status RejoinPoint::add(uint32_t rank, uint64_t nextChunk) {
  if (rank >= have_.size())
    return protocolError("JOIN from rank " + std::to_string(rank) + ", outside the group's " +
                         std::to_string(have_.size()) + " members");
  if (have_[rank])
    return protocolError("a second JOIN from rank " + std::to_string(rank) + " (chunk " +
                         std::to_string(nextChunk) + ")");
  have_[rank] = true;
  ++received_;
  at_ = std::max(at_, nextChunk);
  return Status::ok();
}

std::string RejoinPoint::missingRanks() const {
  std::string out;
  for (size_t r = 0; r < have_.size(); ++r)
    if (!have_[r]) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace rs::failover

// The rejoin point of a restarted reducer (proto/FAILOVER.md, "A reducer comes back"): every
// member answers the reducer's JOIN_OFFER with JOIN(n), n the first running chunk number of its
// next collective, and holds its collectives until JOIN_AT(T). T = the largest n: every member
// submits the same collectives with the same chunk counts, so T is a collective boundary for
// each, and none has submitted a chunk at or past T (it holds from its answer on). Socket-free
// (tests/unit/rejoin_point_test.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/status.h"

namespace rs::failover {

class RejoinPoint {
 public:
  explicit RejoinPoint(uint32_t worldSize) : have_(worldSize, false) {}

  // Member `rank`'s answer. Errors (its bytes are wrong): a rank outside the group, or a second
  // answer from it.
  Status add(uint32_t rank, uint64_t nextChunk);
  // Every member answered.
  bool complete() const { return received_ == have_.size(); }
  // T, once complete.
  uint64_t at() const { return at_; }
  // "2,5": the ranks whose answer is still missing (for the cancel's message).
  std::string missingRanks() const;

 private:
  std::vector<bool> have_;
  uint32_t received_ = 0;
  uint64_t at_ = 0;
};

}  // namespace rs::failover

// The rejoin point of a restarted reducer (proto/FAILOVER.md, "A reducer comes back"): every
// member answers the reducer's JOIN_OFFER with JOIN(n), n the first running chunk number of its
// next collective, and holds its collectives until JOIN_AT(T). T = the largest n: every member
// submits the same collectives with the same chunk counts, so T is a collective boundary for
// each, and none has submitted a chunk at or past T (it holds from its answer on). Socket-free
// (tests/unit/rejoin_point_test.cc).
#pragma once

#include <cstdint>
#include <string>

#include "core/common/status.h"
#include "core/failover/rank_tally.h"

namespace rs::failover {

class RejoinPoint {
 public:
  explicit RejoinPoint(uint32_t worldSize) : answers_(worldSize) {}

  // Member `rank`'s answer. Errors (its bytes are wrong): a rank outside the group, or a second
  // answer from it.
  Status add(uint32_t rank, uint64_t nextChunk);
  // Every member answered.
  bool complete() const { return answers_.complete(); }
  // T, once complete.
  uint64_t at() const { return answers_.largest(); }
  // "2,5": the ranks whose answer is still missing (for the cancel's message).
  std::string missingRanks() const { return answers_.missingRanks(); }

 private:
  RankTally answers_;
};

}  // namespace rs::failover

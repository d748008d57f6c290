// The agreed point of one lane (proto/FAILOVER.md, "The agreed point"): the survivor takes no
// chunk off a lane until every member's FAILOVER for it is in. Each names its commit
// watermark for the lane's (lost reducer, stream): the lowest chunk of it whose COMMIT that
// member has not seen. F = the largest of them: the member that sent it saw every chunk below
// F committed, so every member holds their results, and entries below F are dropped and count
// as committed (the lane's COMMIT covers them, so a member with a lower watermark frees what
// it retained for them). From F on every member resends every chunk, so the survivor gets
// exactly W entries for each (resent_chunk.h).
#pragma once

#include <cstdint>
#include <string>

#include "core/cluster/lane.h"
#include "core/common/status.h"
#include "core/failover/rank_tally.h"

namespace rs::failover {

class AgreedPoint {
 public:
  // The agreed point of `lane` in a group of `worldSize` members, with `reducers` in the list
  // and `streams` per (member, reducer). Errors: an empty group, no streams, or a lane
  // outside the list.
  static Result<AgreedPoint> create(uint32_t worldSize, cluster::Lane lane, uint32_t reducers,
                                    uint32_t streams);

  // Member `rank`'s watermark, from its FAILOVER. Errors (the member's bytes are wrong, or it
  // runs another rule): a rank outside the group, a second FAILOVER from it, or a watermark
  // that is not a chunk of the lane's reducer and stream.
  Status add(uint32_t rank, uint64_t watermark);
  // Every member's FAILOVER is in: the lane may be read.
  bool complete() const { return watermarks_.complete(); }
  // "2,5": the ranks whose FAILOVER is still missing (for the timeout's message), or "none".
  std::string missingRanks() const;
  // F, once complete: entries for chunks below it are dropped.
  uint64_t watermark() const { return watermarks_.largest(); }
  bool drops(uint64_t chunk) const { return chunk < watermark(); }

 private:
  AgreedPoint(uint32_t worldSize, cluster::Lane lane, uint32_t reducers, uint32_t streams)
      : lane_(lane), reducers_(reducers), streams_(streams), watermarks_(worldSize) {}

  cluster::Lane lane_;
  uint32_t reducers_;
  uint32_t streams_;
  RankTally watermarks_;
};

}  // namespace rs::failover

// A dead set with its generation (proto/FAILOVER.md, "A reducer comes back"): before rejoin, D
// only grew, and a set heard that was not the one held could only be news of more losses. A
// rejoin shrinks D, so a set travels (FAILOVER's and LOST's seq) with its generation, the
// number of rejoins its sender's group had taken, and a set of an older generation is stale: a
// survivor's word that r was lost, from before r came back. The survivor's rule (learn), and the
// member's (a LOST is adopted at its own generation, dropped at an older one, kept for its own
// switch at a newer one: client/communicator_rejoin.cc) are both ordered by `age` below.
#pragma once

#include <cstdint>
#include <string>

#include "core/cluster/dead_set.h"

namespace rs::cluster {

// How a generation heard compares with the one held.
enum class Age { kOlder, kSame, kNewer };
inline Age age(uint64_t held, uint64_t heard) {
  return heard < held ? Age::kOlder : heard == held ? Age::kSame : Age::kNewer;
}

struct DeadView {
  uint64_t generation = 0;
  DeadSet dead;

  // What a survivor holds after hearing `heard` (a FAILOVER): the same generation unites the
  // sets, a newer one replaces the view, an older one changes nothing (the caller answers it as
  // a lane of an old set: LOST with the view held, then the lane's end). Returns whether the
  // view changed (then every member is told: LOST). The lists must be the same length.
  bool learn(const DeadView& heard);
  // "reducers 2,5 (generation 1)"
  std::string toString() const;
  bool operator==(const DeadView&) const = default;
};

}  // namespace rs::cluster

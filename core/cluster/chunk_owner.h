// Which reducer reduces a chunk once some reducers are lost (proto/FAILOVER.md, "Terms").
// Pure arithmetic on the chunk number and the dead set, shared by the members (to route) and
// the reducers (to check routing), like sharding.h, which it extends: with no reducer dead the
// owner is the home, reducerForChunk.
#pragma once

#include <cstdint>

#include "core/cluster/dead_set.h"
#include "core/common/status.h"

namespace rs::cluster {

// The owner of chunk c under D: its home h = c mod R if live; else the first live reducer of
// c's probe sequence, a fixed order of the other R - 1 reducers that depends on c alone. So
// the owner depends on D alone (never on the order in which losses were learned), is always
// live, and a further loss moves only the chunks that the newly lost reducer owned.
// Every reducer dead is an error: the group cannot go on.
Result<uint32_t> chunkOwner(uint64_t chunk, const DeadSet& dead);

}  // namespace rs::cluster

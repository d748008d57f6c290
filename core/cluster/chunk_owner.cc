#include "core/cluster/chunk_owner.h"

#include <string>

#include "core/cluster/sharding.h"

namespace rs::cluster {

Result<uint32_t> chunkOwner(uint64_t chunk, const DeadSet& dead) {
  const uint32_t reducers = dead.reducers();
  const uint32_t home = reducerForChunk(chunk, reducers);
  if (!dead.contains(home)) return home;
  if (dead.allDead())
    return unavailableError("every reducer of the list is lost (" + dead.toString() +
                            "): chunk " + std::to_string(chunk) + " has nowhere to go");
  // The probe sequence: (h + 1 + (t + m) mod (R - 1)) mod R, m = 0, 1, ..., R - 2, with
  // t = c / R: each of the other reducers once, starting one further on for each t.
  const uint64_t t = chunk / reducers;
  for (uint32_t m = 0; m + 1 < reducers; ++m) {
    const auto next = static_cast<uint32_t>((home + 1 + (t + m) % (reducers - 1)) % reducers);
    if (!dead.contains(next)) return next;
  }
  return internalError("no live reducer in the probe sequence of chunk " + std::to_string(chunk));
}

}  // namespace rs::cluster

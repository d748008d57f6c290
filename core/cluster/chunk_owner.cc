#include "core/cluster/chunk_owner.h"

#include <array>
#include <bit>
#include <string>

#include "core/cluster/sharding.h"
#include "core/common/splitmix.h"

namespace rs::cluster {
namespace {

// The places 0..R-2 of the other reducers in cyclic order from h + 1, and which of them the
// sequence has probed.
class Places {
 public:
  // The index-th place not yet probed (index < the number left), now marked probed.
  uint32_t take(uint32_t index) {
    for (uint32_t w = 0;; ++w) {
      uint64_t free = ~probed_[w];
      const auto here = static_cast<uint32_t>(std::popcount(free));
      if (index >= here) {
        index -= here;
        continue;
      }
      for (; index > 0; --index) free &= free - 1;  // drop the lowest free places
      const auto place = static_cast<uint32_t>(std::countr_zero(free));
      probed_[w] |= uint64_t{1} << place;
      return w * 64 + place;
    }
  }

 private:
  std::array<uint64_t, DeadSet::kMaxReducers / 64> probed_{};
};

}  // namespace

Result<uint32_t> chunkOwner(uint64_t chunk, const DeadSet& dead) {
  const uint32_t reducers = dead.reducers();
  const uint32_t home = reducerForChunk(chunk, reducers);
  if (!dead.contains(home)) return home;
  if (dead.allDead())
    return unavailableError("every reducer of the list is lost (" + dead.toString() + "): chunk " +
                            std::to_string(chunk) + " has nowhere to go");
  // The probe sequence of chunk c = t R + h: probe m takes, of the n = R-1-m places not yet
  // probed (in cyclic order from h + 1), the one at (digit_m + offset_m) mod n, where digit_m
  // = floor(t / P_m) mod n is digit m of t in the mixed radix P_m = (R-1)(R-2)...(R-m), and
  // offset_m a hash of (h, m, t mod P_m), 0 for m = 0. Probe 0 is thus (h + 1 + t mod)
  // mod R: one loss rotates over the survivors. The chunks whose first m probes were the same
  // (the same t mod P_m) take successive digits, so their probe m rotates over every place
  // left and a second or third loss spreads exactly evenly too; the offset starts each such
  // class at its own place, so that with many losses the classes do not all fall on the
  // reducer after a run of dead ones, as probing in list order would. Every member and
  // reducer must compute the same owners: the hash is a fixed one (splitmix.h).
  const uint64_t t = chunk / reducers;
  uint64_t digits = t;  // floor(t / P_m)
  uint64_t radix = 1;   // P_m while it is at most t
  bool pastT = false;   // P_m > t: then floor(t / P_m) = 0 and t mod P_m = t
  Places places;
  for (uint32_t m = 0; m + 1 < reducers; ++m) {
    const uint32_t left = reducers - 1 - m;
    const uint64_t lower = pastT ? t : t % radix;  // t mod P_m: the class
    const uint64_t offset =
        m == 0 ? 0 : splitMix64(splitMix64((uint64_t{home} << 32) | m) ^ lower) % left;
    const auto index = static_cast<uint32_t>((digits % left + offset) % left);
    digits /= left;
    if (!pastT) {
      if (radix > t / left)
        pastT = true;
      else
        radix *= left;
    }
    const uint32_t next = (home + 1 + places.take(index)) % reducers;
    if (!dead.contains(next)) return next;
  }
  return internalError("no live reducer in the probe sequence of chunk " + std::to_string(chunk));
}

}  // namespace rs::cluster

// Lanes (proto/FAILOVER.md, "Terms"): the extra connections that carry a lost reducer's chunks
// to the survivors, one per (dead home, stream index) from each member to each survivor, and
// where every chunk travels under a dead set.
//
// A survivor numbers its stream indices under D as: 0..K-1 its own streams, then K per dead
// reducer in increasing index order, lane (d, s) at K + deadBelow(d) * K + s. A lane carries
// the chunks c with home d, stream (c / R) mod K and owner the survivor, so every member sends
// the same chunks on it, and in increasing chunk order when it sends in chunk order: to the
// survivor's admission rules a lane is one more stream (server/admission.h). A lane belongs
// to one dead set; when D grows the numbering is redone and the lanes are opened again.
#pragma once

#include <cstdint>
#include <optional>

#include "core/cluster/dead_set.h"
#include "core/common/status.h"

namespace rs::cluster {

struct Lane {
  uint32_t deadHome = 0;  // the lost reducer whose chunks it carries
  uint32_t stream = 0;    // their stream index on that reducer, 0..K-1
  bool operator==(const Lane&) const = default;
};

// A HELLO's stream index is 16 bits (proto/WIRE.md): a survivor's K (1 + |D|) stream indices
// must be at most this many (up to 255 lost reducers at K = 256).
inline constexpr uint64_t kMaxStreamIndices = 65536;
// OK when every lane under D has a stream index that a HELLO can carry; else why not.
Status lanesFit(const DeadSet& dead, uint32_t streams);
// The stream index of `lane` on a survivor under D with K streams per (member, reducer).
// Errors: the home is not dead, the stream is not below K, or the lanes under D do not fit
// (lanesFit).
Result<uint32_t> laneIndex(const Lane& lane, const DeadSet& dead, uint32_t streams);
// The inverse, for an index a member names (from the network): the lane, or why it is none.
Result<Lane> laneAt(uint32_t streamIndex, const DeadSet& dead, uint32_t streams);
// How many stream indices a survivor has under D: K (1 + |D|).
inline uint64_t streamIndicesUnder(const DeadSet& dead, uint32_t streams) {
  return uint64_t{streams} * (1 + dead.size());
}

// Where chunk c travels under D: its home's stream (c / R) mod K while the home is live, else
// the lane (home, that stream) on the chunk's owner (chunk_owner.h).
struct ChunkRoute {
  uint32_t reducer = 0;
  uint32_t streamIndex = 0;  // on that reducer: below K a normal stream, else a lane
  bool onLane() const { return lane.has_value(); }
  std::optional<Lane> lane;
};
Result<ChunkRoute> chunkRoute(uint64_t chunk, const DeadSet& dead, uint32_t streams);

}  // namespace rs::cluster

// How a collective is cut into chunks and which reducer and stream carry each chunk
// (design section 1). Pure arithmetic shared by the client (to route) and the reducer (to
// check routing).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace rs::cluster {

// Chunk numbers run on across a group's collectives, so a series of small collectives still
// rotates over every reducer: chunk i goes to reducer i mod R, on stream (i / R) mod K.
inline uint32_t reducerForChunk(uint64_t chunk, uint32_t reducers) {
  return static_cast<uint32_t>(chunk % reducers);
}
inline uint32_t streamForChunk(uint64_t chunk, uint32_t reducers, uint32_t streams) {
  return static_cast<uint32_t>((chunk / reducers) % streams);
}

struct ChunkingOptions {
  // Below this a collective is not split further. 16 KiB: on the emulated 1 Gbit/s cluster
  // (W=R=4) 64-128 KiB all-reduces took 2.6-3.3x less time than with 64 KiB, because W whole
  // collectives no longer converge on one reducer's link; 8-32 KiB took 10-25% more (more
  // messages per collective). bench/RESULTS.md, "Small sizes".
  uint64_t minChunkBytes = 16 << 10;
  uint64_t maxChunkBytes = 1 << 20;   // no chunk is larger
};

struct ChunkPlan {
  uint64_t chunkElems = 0;  // every chunk but the last has exactly this many elements
  uint64_t numChunks = 0;
  uint64_t elemsInChunk(uint64_t i, uint64_t count) const {
    return std::min(chunkElems, count - i * chunkElems);
  }
};

// A collective of `count` elements uses chunks of about max(minChunk, S / R) bytes, capped at
// maxChunk, so one call spreads over all reducers while a tiny one goes whole to one reducer.
// `elemSize` is what an element counts for against the limits (chunkBytesPerElement: fp8's 1
// byte counts as 2).
inline ChunkPlan planChunks(uint64_t count, size_t elemSize, uint32_t reducers,
                            const ChunkingOptions& options) {
  if (count == 0) return {};
  const uint64_t bytes = count * elemSize;
  const uint64_t share = (bytes + reducers - 1) / reducers;
  const uint64_t target = std::min(options.maxChunkBytes, std::max(options.minChunkBytes, share));
  const uint64_t elems = std::max<uint64_t>(1, target / elemSize);
  return {elems, (count + elems - 1) / elems};
}

}  // namespace rs::cluster

#include "core/cluster/lane.h"

#include <string>

#include "core/cluster/chunk_owner.h"
#include "core/cluster/sharding.h"

namespace rs::cluster {

Status lanesFit(const DeadSet& dead, uint32_t streams) {
  const uint64_t indices = streamIndicesUnder(dead, streams);
  if (indices <= kMaxStreamIndices) return Status::ok();
  return resourceExhausted(
      "with " + std::to_string(streams) + " streams per reducer and " +
      std::to_string(dead.size()) + " reducers lost (" + dead.toString() +
      "), the lanes need stream indices up to " + std::to_string(indices - 1) +
      ", past what a HELLO's 16-bit stream index holds (" + std::to_string(kMaxStreamIndices - 1) +
      "): the lost reducers' chunks cannot be moved (fewer streams per reducer, RS_STREAMS, "
      "allow more losses)");
}

Result<uint32_t> laneIndex(const Lane& lane, const DeadSet& dead, uint32_t streams) {
  if (!dead.contains(lane.deadHome))
    return invalidArgument("no lane for reducer " + std::to_string(lane.deadHome) +
                           ": it is not lost (lost: " + dead.toString() + ")");
  if (lane.stream >= streams)
    return invalidArgument("no lane for stream " + std::to_string(lane.stream) + " of reducer " +
                           std::to_string(lane.deadHome) + ": there are " +
                           std::to_string(streams) + " streams");
  RS_RETURN_IF_ERROR(lanesFit(dead, streams));
  return streams * (1 + dead.deadBelow(lane.deadHome)) + lane.stream;
}

Result<Lane> laneAt(uint32_t streamIndex, const DeadSet& dead, uint32_t streams) {
  if (streams == 0 || streamIndex < streams || streamIndex >= streamIndicesUnder(dead, streams))
    return protocolError("stream index " + std::to_string(streamIndex) + " is not a lane: with " +
                         std::to_string(streams) + " streams and reducers " + dead.toString() +
                         " lost, lanes are " + std::to_string(streams) + ".." +
                         std::to_string(streamIndicesUnder(dead, streams)) + " (exclusive)");
  const uint32_t lane = streamIndex - streams;
  return Lane{dead.nthDead(lane / streams), lane % streams};
}

Result<ChunkRoute> chunkRoute(uint64_t chunk, const DeadSet& dead, uint32_t streams) {
  if (streams == 0) return invalidArgument("a route needs at least one stream per reducer");
  const uint32_t reducers = dead.reducers();
  const uint32_t home = reducerForChunk(chunk, reducers);
  const uint32_t stream = streamForChunk(chunk, reducers, streams);
  if (!dead.contains(home)) return ChunkRoute{home, stream, std::nullopt};
  Result<uint32_t> owner = chunkOwner(chunk, dead);
  if (!owner) return owner.status();
  const Lane lane{home, stream};
  Result<uint32_t> index = laneIndex(lane, dead, streams);
  if (!index) return index.status();
  return ChunkRoute{*owner, *index, lane};
}

}  // namespace rs::cluster

#include "core/failover/agreed_point.h"

#include "core/cluster/sharding.h"

namespace rs::failover {

Result<AgreedPoint> AgreedPoint::create(uint32_t worldSize, cluster::Lane lane, uint32_t reducers,
                                        uint32_t streams) {
  if (worldSize == 0 || streams == 0 || lane.deadHome >= reducers || lane.stream >= streams)
    return invalidArgument(
        "no agreed point for the lane of reducer " + std::to_string(lane.deadHome) + " stream " +
        std::to_string(lane.stream) + " with " + std::to_string(worldSize) + " members, " +
        std::to_string(reducers) + " reducers and " + std::to_string(streams) + " streams");
  return AgreedPoint(worldSize, lane, reducers, streams);
}

Status AgreedPoint::add(uint32_t rank, uint64_t watermark) {
  const std::string where = "the FAILOVER of rank " + std::to_string(rank) + " for reducer " +
                            std::to_string(lane_.deadHome) + " stream " +
                            std::to_string(lane_.stream);
  switch (watermarks_.refusal(rank)) {
    case RankTally::Refusal::kOutside:
      return protocolError(where + ": the group has " +
                           std::to_string(watermarks_.worldSize()) + " members");
    case RankTally::Refusal::kTwice:
      return protocolError(where + " came twice");
    case RankTally::Refusal::kNone:
      break;
  }
  if (cluster::reducerForChunk(watermark, reducers_) != lane_.deadHome ||
      cluster::streamForChunk(watermark, reducers_, streams_) != lane_.stream)
    return protocolError(
        where + " names chunk " + std::to_string(watermark) + ", which belongs to reducer " +
        std::to_string(cluster::reducerForChunk(watermark, reducers_)) + " stream " +
        std::to_string(cluster::streamForChunk(watermark, reducers_, streams_)));
  watermarks_.add(rank, watermark);
  return Status::ok();
}

std::string AgreedPoint::missingRanks() const {
  const std::string missing = watermarks_.missingRanks();
  return missing.empty() ? "none" : missing;
}

}  // namespace rs::failover

#include "core/failover/rejoin_point.h"

namespace rs::failover {

Status RejoinPoint::add(uint32_t rank, uint64_t nextChunk) {
  switch (answers_.refusal(rank)) {
    case RankTally::Refusal::kOutside:
      return protocolError("JOIN from rank " + std::to_string(rank) + ", outside the group's " +
                           std::to_string(answers_.worldSize()) + " members");
    case RankTally::Refusal::kTwice:
      return protocolError("a second JOIN from rank " + std::to_string(rank) + " (chunk " +
                           std::to_string(nextChunk) + ")");
    case RankTally::Refusal::kNone:
      break;
  }
  answers_.add(rank, nextChunk);
  return Status::ok();
}

}  // namespace rs::failover

#include "core/wire/rejoin_frames.h"

#include "core/wire/control_frames.h"

namespace rs::wire {

FrameHeader joinOfferHeader(const GroupId& group, uint32_t rank) {
  return headerOnly(FrameType::kJoinOffer, group, rank, 0);
}

FrameHeader joinHeader(const GroupId& group, uint32_t rank, uint64_t nextChunk) {
  return headerOnly(FrameType::kJoin, group, rank, nextChunk);
}

FrameHeader joinAtHeader(const GroupId& group, uint32_t rank, uint64_t rejoinChunk) {
  return headerOnly(FrameType::kJoinAt, group, rank, rejoinChunk);
}

}  // namespace rs::wire

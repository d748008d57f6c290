// A session's rejoin side (proto/FAILOVER.md, "A reducer comes back"; proto/WIRE.md "Rejoin"):
// on stream 0 of a joining group, the JOIN_OFFER this reducer sends once every member's streams
// are in, the member's JOIN, and JOIN_AT. The agreement itself is the shard's (joinAnswered).
#include "core/common/log.h"
#include "core/wire/rejoin_frames.h"
#include "server/session.h"

namespace rs::server {

void Session::sendControl(const wire::FrameHeader& header) {
  if (closed_ || aborting_) return;
  writer_.enqueue(transport::ownedFrame(wire::encodeHeader(header), std::string(), kControlFrame));
  flush();
}

void Session::sendJoinOffer() { sendControl(wire::joinOfferHeader(group_->id(), rank_)); }

void Session::sendJoinAt(uint64_t at) { sendControl(wire::joinAtHeader(group_->id(), rank_, at)); }

void Session::handleJoin() {
  if (!fromThisMember()) return;
  if (isLane() || streamIndex_ != 0 || !group_->joining()) {
    reject(FrameRejection::kUnexpectedType,
           protocolError(fmt::format("JOIN on {} of a group that {}: a JOIN answers a "
                                     "JOIN_OFFER, on stream 0 of a joining group",
                                     isLane() ? "a lane" : "stream " + std::to_string(streamIndex_),
                                     group_->joining() ? "is joining" : "is not joining")));
    return;
  }
  if (Status s = owner_.joinAnswered(*this, in_.chunk); !s.isOk()) {
    reject(FrameRejection::kDuplicate, s);
    return;
  }
  readHeader();
}

}  // namespace rs::server

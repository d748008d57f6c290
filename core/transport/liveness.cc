#include "core/transport/liveness.h"

#include <algorithm>

namespace rs::transport {

Liveness::Liveness(std::chrono::milliseconds bound) : bound_(bound) {}

std::chrono::milliseconds Liveness::checkInterval() const {
  return std::max(bound_ / 12, std::chrono::milliseconds(1));
}

std::chrono::milliseconds Liveness::heartbeatAfter() const { return bound_ / 3; }

void Liveness::begin(Clock::time_point now) {
  heardAt_ = now;
  sentAt_ = now;
  checkedAt_ = now;
  active_ = true;
}

Liveness::Verdict Liveness::check(Clock::time_point now, const Sample& sample) {
  // A check more than an interval late was held up itself: its thread, its process or its
  // machine did not run. Bytes that reached this host meanwhile count all the same (`arrived`),
  // so a peer that lived is not lost for this side's stall; but a machine stopped as a whole
  // (both ends on one loaded host, a virtual machine descheduled) stopped the peer's
  // heartbeats too, and that quiet is not the peer's: the lateness does not count as silence.
  const Clock::duration late = now - checkedAt_ - checkInterval();
  if (late > checkInterval()) heardAt_ = std::min(now, heardAt_ + late);
  checkedAt_ = now;
  if (sample.arrived != arrived_) {
    arrived_ = sample.arrived;
    heardAt_ = now;
  }
  if (sample.sent != sent_) {
    sent_ = sample.sent;
    sentAt_ = now;
  }
  // Silence while nothing is awaited, and quiet while nothing is owed, do not count.
  if (!sample.waiting) heardAt_ = now;
  if (!sample.owing) sentAt_ = now;
  active_ = sample.owing || sample.waiting;
  if (sample.waiting && now - heardAt_ >= bound_) return Verdict::kLost;
  if (sample.owing && sample.canSend && now - sentAt_ >= heartbeatAfter()) {
    sentAt_ = now;
    return Verdict::kSendHeartbeat;
  }
  return Verdict::kNothing;
}

std::chrono::milliseconds Liveness::silence(Clock::time_point now) const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now - heardAt_);
}

}  // namespace rs::transport

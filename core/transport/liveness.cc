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
  active_ = true;
}

Liveness::Verdict Liveness::check(Clock::time_point now, const Sample& sample) {
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

#include "core/transport/liveness_watch.h"

namespace rs::transport {

LivenessWatch::LivenessWatch(asio::io_context& io, std::chrono::milliseconds bound, Owner& owner,
                             Hold hold)
    : owner_(owner), hold_(std::move(hold)), liveness_(bound), timer_(io) {}

void LivenessWatch::start() {
  if (cancelled_) return;
  liveness_.begin(Liveness::Clock::now());
  if (!armed_) arm();
}

void LivenessWatch::startIfIdle() {
  if (!liveness_.active()) start();
}

void LivenessWatch::cancel() {
  cancelled_ = true;
  timer_.cancel();
}

void LivenessWatch::arm() {
  armed_ = true;
  timer_.expires_after(liveness_.checkInterval());
  timer_.async_wait(hold_([this](const std::error_code& ec) {
    armed_ = false;
    if (!ec && !cancelled_) check();
  }));
}

void LivenessWatch::check() {
  const Liveness::Clock::time_point now = Liveness::Clock::now();
  switch (liveness_.check(now, owner_.livenessSample())) {
    case Liveness::Verdict::kSendHeartbeat:
      liveness_.heartbeatSent(owner_.sendHeartbeat());
      break;
    case Liveness::Verdict::kLost:
      cancelled_ = true;
      return owner_.peerSilent(liveness_.silence(now));
    case Liveness::Verdict::kNothing:
      break;
  }
  if (liveness_.active()) arm();
}

}  // namespace rs::transport

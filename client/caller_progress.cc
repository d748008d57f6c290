#include "client/caller_progress.h"

#include <algorithm>

namespace rs::client {

bool CallerProgress::runUntil(Clock::time_point until, const std::function<bool()>& done,
                              const std::function<void(Clock::time_point)>& idleWait) {
  while (!done()) {
    const auto now = Clock::now();
    if (now >= until) return false;
    std::unique_lock drive(driveMu_, std::try_to_lock);
    if (drive.owns_lock()) {
      // One handler (or the wait for one) at a time, so done() is checked after each.
      if (io_.run_one_until(until) == 0 && io_.stopped()) return done();
    } else {
      idleWait(std::min(until, now + kTakeOverCheck));
    }
  }
  return true;
}

void CallerProgress::poll() {
  std::unique_lock drive(driveMu_, std::try_to_lock);
  if (drive.owns_lock()) io_.poll();
}

}  // namespace rs::client

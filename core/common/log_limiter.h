// How often a repeated event may be logged: at most `burst` lines per `period`, and the line that
// follows a quiet spell says how many were not logged. A peer that can cause a log line (a
// refused connection, a failed accept) must not be able to fill the operator's disk with them;
// the metrics count every event regardless.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace rs {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  LogLimiter(uint32_t burst, Clock::duration period) : burst_(burst), period_(period) {}

  // For one event at `now`: nullopt when it must not be logged (it is counted), else how many
  // events were not logged since the previous line that was.
  std::optional<uint64_t> admit(Clock::time_point now = Clock::now()) {
    std::lock_guard lock(mu_);
    if (!windowStart_ || now - *windowStart_ >= period_) {
      windowStart_ = now;
      loggedInWindow_ = 0;
    }
    if (loggedInWindow_ >= burst_) {
      ++unlogged_;
      return std::nullopt;
    }
    ++loggedInWindow_;
    const uint64_t skipped = unlogged_;
    unlogged_ = 0;
    return skipped;
  }

  // The end of the line admit() allowed after `unlogged` events were not logged: "" if none,
  // else " (N more <what> not logged since the last such line; at most B lines per P s)".
  std::string unloggedNote(uint64_t unlogged, std::string_view what) const {
    if (unlogged == 0) return {};
    return fmt::format(" ({} more {} not logged since the last such line; at most {} lines per "
                       "{} s)",
                       unlogged, what, burst_,
                       std::chrono::duration_cast<std::chrono::seconds>(period_).count());
  }

  uint32_t burst() const { return burst_; }
  Clock::duration period() const { return period_; }

 private:
  const uint32_t burst_;
  const Clock::duration period_;
  std::mutex mu_;
  std::optional<Clock::time_point> windowStart_;
  uint32_t loggedInWindow_ = 0;
  uint64_t unlogged_ = 0;
};

}  // namespace rs

// Waiting for a state, never for a time: tests poll a condition until it holds, with a deadline
// far beyond any healthy run (sanitizer builds on a loaded 2-core machine are slow), so that
// the deadline only turns a hang into a failure and never decides a healthy outcome.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace rs::test {

inline constexpr std::chrono::seconds kStateDeadline{120};

// Calls `condition` until it returns true (true) or the deadline passes (false, after one last
// look).
inline bool waitUntil(const std::function<bool()>& condition,
                      std::chrono::steady_clock::duration deadline = kStateDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return condition();
}

}  // namespace rs::test

#include "core/common/log_limiter.h"

#include <catch2/catch.hpp>

namespace rs {
namespace {

using namespace std::chrono_literals;

TEST_CASE("log limiter: a burst per period, then the count of what was not logged") {
  LogLimiter limiter(3, 10s);
  const auto t0 = LogLimiter::Clock::time_point{} + 1h;
  CHECK(limiter.admit(t0) == std::optional<uint64_t>(0));
  CHECK(limiter.admit(t0 + 1s) == std::optional<uint64_t>(0));
  CHECK(limiter.admit(t0 + 2s) == std::optional<uint64_t>(0));
  // The fourth and later events of the window are counted, not logged.
  for (int i = 0; i < 1000; ++i) CHECK_FALSE(limiter.admit(t0 + 3s).has_value());
  CHECK_FALSE(limiter.admit(t0 + 9s).has_value());
  // A new window: the first line says how many were skipped, the next ones nothing.
  CHECK(limiter.admit(t0 + 10s) == std::optional<uint64_t>(1001));
  CHECK(limiter.admit(t0 + 11s) == std::optional<uint64_t>(0));
}

TEST_CASE("log limiter: one line per period, as the accept-error log uses it") {
  LogLimiter limiter(1, 10s);
  const auto t0 = LogLimiter::Clock::time_point{} + 1h;
  CHECK(limiter.admit(t0) == std::optional<uint64_t>(0));
  CHECK_FALSE(limiter.admit(t0 + 9999ms).has_value());
  CHECK_FALSE(limiter.admit(t0 + 5s).has_value());
  CHECK(limiter.admit(t0 + 10s) == std::optional<uint64_t>(2));
  // Quiet for a long time, then an event: logged, nothing skipped.
  CHECK(limiter.admit(t0 + 1h) == std::optional<uint64_t>(0));
}

}  // namespace
}  // namespace rs

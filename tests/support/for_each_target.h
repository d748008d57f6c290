// Running a check once per SIMD target this CPU can run (the reduction kernels' and the wire
// conversions' dispatch), each forced in turn and the default restored even on failure.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>

#include "core/reduce/reduce.h"

namespace rs::test {

class TargetGuard {
 public:
  explicit TargetGuard(int64_t target) { reduce::forceTargetForTesting(target); }
  ~TargetGuard() { reduce::forceTargetForTesting(0); }
  TargetGuard(const TargetGuard&) = delete;
  TargetGuard& operator=(const TargetGuard&) = delete;
};

template <class F>
void forEachTarget(F&& f) {
  const auto targets = reduce::runnableTargets();
  REQUIRE(!targets.empty());
  for (int64_t target : targets) {
    TargetGuard guard(target);
    INFO("target " << reduce::targetName(target));
    REQUIRE(reduce::activeTargetName() == reduce::targetName(target));
    f();
  }
}

}  // namespace rs::test

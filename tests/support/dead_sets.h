// A dead set for a test, from a list of lost reducers that must be valid.
#pragma once

#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "core/cluster/dead_set.h"

namespace rs::test {

inline cluster::DeadSet deadSet(uint32_t reducers, const std::vector<uint32_t>& dead) {
  Result<cluster::DeadSet> d = cluster::DeadSet::of(reducers, dead);
  REQUIRE(d.isOk());
  return *d;
}

}  // namespace rs::test

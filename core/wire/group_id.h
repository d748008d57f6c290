// A group (one communicator) is named by a 128-bit id that every member derives the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/common/status.h"

namespace rs {

struct GroupId {
  uint64_t hi = 0;
  uint64_t lo = 0;

  bool isZero() const { return hi == 0 && lo == 0; }
  friend bool operator==(const GroupId&, const GroupId&) = default;
  friend auto operator<=>(const GroupId&, const GroupId&) = default;

  // 32 lower-case hex digits, hi first.
  std::string toString() const;
  static Result<GroupId> parse(std::string_view hex);
  // A fresh id from the system's random source.
  static GroupId random();
};

struct GroupIdHash {
  size_t operator()(const GroupId& g) const noexcept {
    return std::hash<uint64_t>()(g.hi * 0x9E3779B97F4A7C15ULL ^ g.lo);
  }
};

}  // namespace rs

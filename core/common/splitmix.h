// SplitMix64's finalizer: a fixed, portable 64-bit mix (no std::hash, whose values may differ
// between builds), for values that other processes must compute alike.
#pragma once

#include <cstdint>

namespace rs {

inline uint64_t splitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace rs

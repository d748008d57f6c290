// Inputs whose sum cancels, for tests of the reducer's fp32 arithmetic: in each element two
// ranks hold +B and -B and the others small values, so the small values' bits survive only
// where the accumulator keeps them, whatever order the terms are added in.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace rs::test {

// Rank `rank`'s column of `count` elements among `world` ranks. Every rank makes the same draws
// from `seed` and keeps its own; `big(rng)` and `small(rng)` draw B and a small value.
template <class Big, class Small>
std::vector<float> cancellingInputs(int rank, int world, uint64_t count, uint32_t seed, Big big,
                                    Small small) {
  std::vector<float> out(count);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> member(0, world - 1);
  for (uint64_t i = 0; i < count; ++i) {
    const int plus = member(rng);
    const int minus = (plus + 1 + member(rng) % (world - 1)) % world;
    const float b = big(rng);
    for (int r = 0; r < world; ++r) {
      const float v = r == plus ? b : r == minus ? -b : small(rng);
      if (r == rank) out[i] = v;
    }
  }
  return out;
}

}  // namespace rs::test

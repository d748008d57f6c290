// The numerics bench's fp64 reference: compensated, so it survives the cancellation that a
// plain fp64 sum does not.
#include "bench/numerics/reference_sum.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

namespace rs::bench::numerics {
namespace {

double sum(const std::vector<double>& xs) {
  ReferenceSum s;
  for (double x : xs) s.add(x);
  return s.value();
}

TEST_CASE("ReferenceSum keeps what a plain fp64 sum loses to cancellation") {
  CHECK(sum({}) == 0.0);
  CHECK(sum({1e16, 1.0, -1e16}) == 1.0);  // a plain sum gives 0
  CHECK(sum({1.0, 1e100, 1.0, -1e100}) == 2.0);
  // The doubles nearest 0.1, 0.2 and 0.3 sum to exactly 2^-55 (a plain sum gives 2^-54).
  CHECK(sum({0.1, 0.2, -0.3}) == std::ldexp(1.0, -55));
  CHECK((0.1 + 0.2) - 0.3 == std::ldexp(1.0, -54));
}

TEST_CASE("ReferenceSum finds a small exact sum under large terms that cancel, in any order") {
  // 32 pairs +a, -a with 53-bit significands between 2^-20 and 2^20, and 8 small integers whose
  // sum (an integer below 2^15) is the exact total: a plain fp64 sum in shuffled order loses it.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::uniform_int_distribution<int> small(-4096, 4096);
  int plain_misses = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<double> xs;
    for (int k = 0; k < 32; ++k) {
      const double a = std::ldexp(unit(rng), exponent(rng));
      xs.push_back(a);
      xs.push_back(-a);
    }
    int exact = 0;
    for (int k = 0; k < 8; ++k) {
      const int r = small(rng);
      xs.push_back(r);
      exact += r;
    }
    std::shuffle(xs.begin(), xs.end(), rng);
    REQUIRE(sum(xs) == exact);
    double plain = 0;
    for (double x : xs) plain += x;
    if (plain != exact) ++plain_misses;
  }
  CHECK(plain_misses > 100);  // the case is hard enough to need the compensation
}

}  // namespace
}  // namespace rs::bench::numerics

// The numerics bench's ULP helpers: exact values, one correct rounding per type, and distances
// across sign, zero, subnormals and Inf.
#include "bench/numerics/ulp.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include <catch2/catch.hpp>

#include "core/reduce/float16.h"

namespace rs::bench::numerics {
namespace {

constexpr DataType kHalf = DataType::kFloat16;
constexpr DataType kBf16 = DataType::kBfloat16;
constexpr DataType kFp32 = DataType::kFloat32;
constexpr DataType kE4m3 = DataType::kFloat8e4m3;
constexpr DataType kE5m2 = DataType::kFloat8e5m2;

TEST_CASE("toDouble reads fp16, bf16 and fp32 bit patterns exactly") {
  CHECK(toDouble(kHalf, 0x3C00) == 1.0);
  CHECK(toDouble(kHalf, 0xC000) == -2.0);
  CHECK(toDouble(kHalf, 0x0001) == std::ldexp(1.0, -24));  // smallest subnormal
  CHECK(toDouble(kHalf, 0x7BFF) == 65504.0);
  CHECK(toDouble(kBf16, 0x3F80) == 1.0);
  CHECK(toDouble(kBf16, 0x3F81) == 1.0 + 1.0 / 128);
  CHECK(toDouble(kFp32, 0x3F800001) == 1.0 + std::ldexp(1.0, -23));
}

TEST_CASE("roundToType rounds to nearest, ties to even, in one step") {
  // fp16 around 1 has a step of 2^-10: a tie goes to the even neighbour.
  const double u = std::ldexp(1.0, -10);
  CHECK(roundToType(kHalf, 1.0 + u / 2) == 0x3C00);
  CHECK(roundToType(kHalf, 1.0 + 3 * u / 2) == 0x3C02);
  CHECK(roundToType(kHalf, 1.0 + u / 2 + 1e-12) == 0x3C01);
  CHECK(roundToType(kHalf, -1.0 - u / 2 - 1e-12) == 0xBC01);
  // A double just above a fp16 tie that is a float tie too: through float it would round to
  // the tie and then to even; one rounding goes up.
  CHECK(roundToType(kHalf, 1.0 + u / 2 + std::ldexp(1.0, -40)) == 0x3C01);
  CHECK(roundToType(kBf16, 1.0 + 1.0 / 256) == 0x3F80);
  CHECK(roundToType(kBf16, 1.0 + 3.0 / 256) == 0x3F82);
  CHECK(roundToType(kBf16, 1.0 + 1.0 / 256 + std::ldexp(1.0, -40)) == 0x3F81);
  CHECK(roundToType(kFp32, 1.0 + std::ldexp(1.0, -24)) == 0x3F800000);
}

TEST_CASE("roundToType handles subnormals, zero, overflow and NaN") {
  CHECK(roundToType(kHalf, std::ldexp(1.0, -25)) == 0x0000);  // tie with 0: even
  CHECK(roundToType(kHalf, std::ldexp(3.0, -25)) == 0x0002);  // tie 1.5 steps: even
  CHECK(roundToType(kHalf, -std::ldexp(1.0, -26)) == 0x8000);  // keeps the sign of zero
  CHECK(roundToType(kHalf, 0.0) == 0x0000);
  CHECK(roundToType(kHalf, 65519.0) == 0x7BFF);
  CHECK(roundToType(kHalf, 65520.0) == 0x7C00);  // the tie above the largest rounds to Inf
  CHECK(roundToType(kHalf, -1e9) == 0xFC00);
  CHECK(roundToType(kBf16, 1e39) == 0x7F80);
  CHECK(roundToType(kBf16, std::ldexp(1.0, -133)) == 0x0001);  // smallest bf16 subnormal
  CHECK(isNaN(kHalf, roundToType(kHalf, std::nan(""))));
  CHECK(isNaN(kBf16, roundToType(kBf16, std::nan(""))));
}

TEST_CASE("roundToType agrees with the kernels' narrowing of floats") {
  // For a float input one rounding is what float16.h does (and the SIMD kernels match it).
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const float f = reduce::floatFromBits(rng());  // any float: subnormal, huge, Inf
    if (std::isnan(f)) continue;  // NaN payloads are the kernels' business, not the bench's
    REQUIRE(roundToType(kHalf, f) == reduce::floatToHalf(f));
    REQUIRE(roundToType(kBf16, f) == reduce::floatToBfloat16(f));
  }
}

TEST_CASE("fp8: exact values, one saturating rounding, distances") {
  CHECK(toDouble(kE4m3, 0x7E) == 448.0);
  CHECK(toDouble(kE4m3, 0x01) == std::ldexp(1.0, -9));
  CHECK(toDouble(kE5m2, 0xFB) == -57344.0);
  CHECK(std::isinf(toDouble(kE5m2, 0x7C)));
  CHECK(isNaN(kE4m3, 0xFF));
  // One rounding: 1 + 2^-4 is the E4M3 tie between 1 and 1.125 (even: 1); a hair above goes up.
  CHECK(roundToType(kE4m3, 1.0 + 1.0 / 16) == 0x38);
  CHECK(roundToType(kE4m3, 1.0 + 1.0 / 16 + std::ldexp(1.0, -40)) == 0x39);
  // Past the largest finite: saturated, not Inf or NaN (as NCCL's fp8 arithmetic does).
  CHECK(roundToType(kE4m3, 1e9) == 0x7E);
  CHECK(roundToType(kE5m2, -1e9) == 0xFB);
  CHECK(roundToType(kE4m3, std::ldexp(1.0, -10)) == 0x00);  // tie with 0: even
  CHECK(ulpDistance(kE4m3, 0x01, 0x81) == 2);               // across zero
  CHECK(ulpDistance(kE4m3, 0x80, 0x00) == 0);
  CHECK(ulpDistance(kE4m3, 0x07, 0x08) == 1);               // largest subnormal to smallest normal
  CHECK(ulpDistance(kE5m2, 0x7B, 0x7C) == 1);               // largest finite to Inf
  CHECK(ulpDistance(kE4m3, 0xFE, 0x7E) == 2 * 0x7Eu);
  CHECK(ulpDistance(kE4m3, 0x7F, 0xFF) == 0);  // NaN and NaN
}

TEST_CASE("ulpDistance counts representable values between two of the same type") {
  CHECK(ulpDistance(kHalf, 0x3C00, 0x3C00) == 0);
  CHECK(ulpDistance(kHalf, 0x3C00, 0x3C01) == 1);
  CHECK(ulpDistance(kHalf, 0x3C01, 0x3C00) == 1);
  CHECK(ulpDistance(kHalf, 0x0000, 0x8000) == 0);  // +0 and -0
  CHECK(ulpDistance(kHalf, 0x0001, 0x8001) == 2);  // across zero
  CHECK(ulpDistance(kHalf, 0x03FF, 0x0400) == 1);  // largest subnormal to smallest normal
  CHECK(ulpDistance(kHalf, 0x7BFF, 0x7C00) == 1);  // largest finite to Inf
  CHECK(ulpDistance(kHalf, 0x3BFF, 0x3C00) == 1);  // across a binade
  CHECK(ulpDistance(kBf16, 0xBF80, 0x3F80) == 2 * 0x3F80u);
  CHECK(ulpDistance(kFp32, 0x80000001, 0x00000001) == 2);
  CHECK(ulpDistance(kFp32, 0x3F800000, 0x3F800005) == 5);
  CHECK(ulpDistance(kHalf, 0x7E00, 0x7E01) == 0);  // NaN and NaN
  CHECK(ulpDistance(kHalf, 0x7E00, 0x3C00) == std::numeric_limits<uint64_t>::max());
}

}  // namespace
}  // namespace rs::bench::numerics

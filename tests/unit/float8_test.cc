// The scalar fp8 conversions (float8.h), the reference of the kernels, against the formats'
// definitions: every byte's value, rounding to nearest even between every pair of neighbours,
// saturation, infinities, NaNs and signed zeros. tests/cuda/ checks them against CUDA's own.
#include "core/reduce/float8.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include "core/reduce/float16.h"

namespace rs::reduce {
namespace {

bool isNaNCode(uint8_t b, Float8Format f) {
  return f.hasInfinity ? (b & 0x7C) == 0x7C && (b & 0x03) != 0 : (b & 0x7F) == 0x7F;
}

TEST_CASE("float8: E5M2 is the top byte of an fp16") {
  for (uint32_t b = 0; b < 256; ++b) {
    const float want = halfToFloat(static_cast<uint16_t>(b << 8));
    const float got = float8ToFloat(static_cast<uint8_t>(b), kE5m2);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
      REQUIRE(isNaNCode(static_cast<uint8_t>(b), kE5m2));
    } else {
      REQUIRE(floatBits(got) == floatBits(want));
    }
  }
  CHECK(float8ToFloat(0x7B, kE5m2) == 57344.0f);
  CHECK(float8ToFloat(0x7C, kE5m2) == INFINITY);
  CHECK(float8ToFloat(0xFC, kE5m2) == -INFINITY);
  CHECK(float8ToFloat(0x04, kE5m2) == 0x1p-14f);  // smallest normal
  CHECK(float8ToFloat(0x01, kE5m2) == 0x1p-16f);  // smallest subnormal
}

TEST_CASE("float8: E4M3 values from the OCP definition") {
  // sign * 2^(e - 7) * (1 + m/8) for e in 1..15, sign * 2^-6 * m/8 for e = 0; S.1111.111 NaN.
  for (uint32_t b = 0; b < 256; ++b) {
    const float got = float8ToFloat(static_cast<uint8_t>(b), kE4m3);
    if ((b & 0x7F) == 0x7F) {
      REQUIRE(std::isnan(got));
      continue;
    }
    const int e = static_cast<int>((b >> 3) & 0xF), m = static_cast<int>(b & 7);
    double want = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
    if (b & 0x80) want = -want;
    REQUIRE(static_cast<double>(got) == want);
    REQUIRE(std::signbit(got) == ((b & 0x80) != 0));
  }
  CHECK(float8ToFloat(0x7E, kE4m3) == 448.0f);
  CHECK(float8ToFloat(0x38, kE4m3) == 1.0f);
  CHECK(float8ToFloat(0x08, kE4m3) == 0x1p-6f);  // smallest normal
  CHECK(float8ToFloat(0x01, kE4m3) == 0x1p-9f);  // smallest subnormal
  CHECK(std::isinf(float8ToFloat(0x78, kE4m3)) == false);  // 256: no infinity in E4M3
}

TEST_CASE("float8: every value narrows back to itself, NaN to 0x7F") {
  for (const Float8Format f : {kE4m3, kE5m2}) {
    for (uint32_t b = 0; b < 256; ++b) {
      const auto code = static_cast<uint8_t>(b);
      const float v = float8ToFloat(code, f);
      REQUIRE(floatToFloat8(v, f) == (isNaNCode(code, f) ? kFloat8NaN : code));
    }
  }
}

TEST_CASE("float8: narrowing rounds to nearest, ties to even, between every pair of neighbours") {
  for (const Float8Format f : {kE4m3, kE5m2}) {
    for (uint32_t b = 0; b < f.maxFinite; ++b) {
      const double lo = float8ToFloat(static_cast<uint8_t>(b), f);
      const double hi = float8ToFloat(static_cast<uint8_t>(b + 1), f);
      const double mid = (lo + hi) / 2;  // exact in fp32 and fp64
      const auto even = static_cast<uint8_t>((b & 1) ? b + 1 : b);
      INFO("between 0x" << std::hex << b << " and 0x" << b + 1);
      REQUIRE(roundToFloat8(mid, f) == even);
      REQUIRE(roundToFloat8(-mid, f) == (even | 0x80));
      REQUIRE(floatToFloat8(std::nextafter(static_cast<float>(mid), 0.0f), f) == b);
      REQUIRE(floatToFloat8(std::nextafter(static_cast<float>(mid), INFINITY), f) == b + 1);
      REQUIRE(roundToFloat8(std::nextafter(mid, 0.0), f) == b);
    }
  }
}

TEST_CASE("float8: finite overflow saturates, Inf saturates in E4M3 and stays in E5M2") {
  // E4M3: 448 is the largest; the midpoint to the next step (464) ties to 448 (even), and
  // everything above saturates rather than becoming the NaN pattern or an error.
  CHECK(floatToFloat8(464.0f, kE4m3) == 0x7E);
  CHECK(floatToFloat8(464.01f, kE4m3) == 0x7E);
  CHECK(floatToFloat8(896.0f, kE4m3) == 0x7E);
  CHECK(floatToFloat8(-1e30f, kE4m3) == 0xFE);
  CHECK(floatToFloat8(std::numeric_limits<float>::max(), kE4m3) == 0x7E);
  CHECK(floatToFloat8(INFINITY, kE4m3) == 0x7E);
  CHECK(floatToFloat8(-INFINITY, kE4m3) == 0xFE);
  // E5M2: 61440 is the midpoint between 57344 and 2^16 (past the range): saturated too.
  CHECK(floatToFloat8(61439.0f, kE5m2) == 0x7B);
  CHECK(floatToFloat8(61440.0f, kE5m2) == 0x7B);
  CHECK(floatToFloat8(114688.0f, kE5m2) == 0x7B);
  CHECK(floatToFloat8(-1e30f, kE5m2) == 0xFB);
  CHECK(floatToFloat8(INFINITY, kE5m2) == 0x7C);
  CHECK(floatToFloat8(-INFINITY, kE5m2) == 0xFC);
}

TEST_CASE("float8: NaN of any sign or payload is 0x7F, zeros and underflow keep the sign") {
  for (const Float8Format f : {kE4m3, kE5m2}) {
    CHECK(floatToFloat8(std::numeric_limits<float>::quiet_NaN(), f) == 0x7F);
    CHECK(floatToFloat8(-std::numeric_limits<float>::quiet_NaN(), f) == 0x7F);
    CHECK(floatToFloat8(floatFromBits(0x7F800001u), f) == 0x7F);  // signalling, low payload
    CHECK(floatToFloat8(0.0f, f) == 0x00);
    CHECK(floatToFloat8(-0.0f, f) == 0x80);
    CHECK(floatToFloat8(std::numeric_limits<float>::denorm_min(), f) == 0x00);
    CHECK(floatToFloat8(-std::numeric_limits<float>::denorm_min(), f) == 0x80);
  }
  // Half the smallest subnormal ties to 0 (even); just above it rounds to the subnormal.
  CHECK(floatToFloat8(0x1p-10f, kE4m3) == 0x00);
  CHECK(floatToFloat8(std::nextafter(0x1p-10f, 1.0f), kE4m3) == 0x01);
  CHECK(floatToFloat8(-0x1p-17f, kE5m2) == 0x80);
  CHECK(floatToFloat8(std::nextafter(0x1p-17f, 1.0f), kE5m2) == 0x01);
  // Three halves of the smallest subnormal tie up to 2 (even); the carry out of the subnormals
  // lands on the smallest normal.
  CHECK(floatToFloat8(1.5f * 0x1p-9f, kE4m3) == 0x02);
  CHECK(floatToFloat8(0x1p-6f - 0x1p-11f, kE4m3) == 0x08);
}

TEST_CASE("float8: one rounding from a double, not two through fp32") {
  // 1 + 2^-4 + 2^-40: above the E4M3 midpoint between 1 and 1.125 by 2^-40, which fp32 cannot
  // hold; rounding it to fp32 first would make it the tie and round down to 1.
  const double x = 1.0 + 0x1p-4 + 0x1p-40;
  CHECK(roundToFloat8(x, kE4m3) == 0x39);
  CHECK(floatToFloat8(static_cast<float>(x), kE4m3) == 0x38);
}

}  // namespace
}  // namespace rs::reduce

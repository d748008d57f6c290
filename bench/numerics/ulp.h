// Values of fp8 (E4M3, E5M2), fp16, bf16 and fp32 as bit patterns (held in a uint32_t), their
// exact value as a double, correct rounding of a double into each type, and the distance in
// ULPs between two values of one type. numerics_bench measures sums with these;
// tests/unit/ulp_test.cc checks them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "core/reduce/dtype.h"
#include "core/reduce/float16.h"
#include "core/reduce/float8.h"

namespace rs::bench::numerics {

// The value of `bits` in type t (fp8, fp16, bf16 or fp32); exact, as every such value is a
// double.
inline double toDouble(DataType t, uint32_t bits) {
  switch (t) {
    case DataType::kFloat16: return reduce::halfToFloat(static_cast<uint16_t>(bits));
    case DataType::kBfloat16: return reduce::bfloat16ToFloat(static_cast<uint16_t>(bits));
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2:
      return reduce::float8ToFloat(static_cast<uint8_t>(bits), reduce::float8Format(t));
    default: return reduce::floatFromBits(bits);
  }
}

// x rounded once, to nearest even, into type t: overflow gives Inf (fp8: saturates to the
// largest finite, float8.h), and values below the smallest normal round on the subnormal grid.
// Going through float first would round twice (x to float, then float to fp16), which can
// differ from one rounding by an ULP.
inline uint32_t roundToType(DataType t, double x) {
  if (t == DataType::kFloat32) return reduce::floatBits(static_cast<float>(x));
  if (isFloat8(t)) return reduce::roundToFloat8(x, reduce::float8Format(t));
  if (std::isnan(x)) return t == DataType::kFloat16 ? 0x7E00u : 0x7FC0u;
  const bool half = t == DataType::kFloat16;
  const int digits = half ? 11 : 8;          // significand bits, the implicit one included
  const int min_exp = half ? -14 : -126;     // exponent of the smallest normal
  const double max = half ? 65504.0 : 0x1.FEp127;
  double r = x;
  if (x != 0 && std::isfinite(x)) {
    // The grid step at x's binade (the subnormal step below the normals); x / step is exact,
    // and nearbyint rounds to nearest even in the default rounding mode.
    const int exp = std::max(std::ilogb(x), min_exp);
    const double step = std::ldexp(1.0, exp - (digits - 1));
    r = std::nearbyint(x / step) * step;
    if (std::fabs(r) > max) r = std::copysign(std::numeric_limits<double>::infinity(), x);
  }
  // r is now exactly representable in t, so these conversions do not round.
  const float f = static_cast<float>(r);
  return half ? reduce::floatToHalf(f) : reduce::floatToBfloat16(f);
}

// Position of a non-NaN value on the line of t's values in order, where adjacent values are one
// apart and +0 and -0 are both 0 (they are the same number). Inf is one past the largest finite.
// (Sign-magnitude orders every one of these types, E4M3's NaN aside.)
inline int64_t orderedIndex(DataType t, uint32_t bits) {
  const uint32_t sign_bit = t == DataType::kFloat32 ? 0x80000000u : isFloat8(t) ? 0x80u : 0x8000u;
  const int64_t magnitude = bits & (sign_bit - 1);
  return (bits & sign_bit) != 0 ? -magnitude : magnitude;
}

inline bool isNaN(DataType t, uint32_t bits) { return std::isnan(toDouble(t, bits)); }

// How many representable values of t lie between a and b, counting one end: 0 when equal
// (+0 and -0 included), 1 for neighbours, and across zero the values on both sides count. NaN
// against anything but NaN is infinitely far (UINT64_MAX).
inline uint64_t ulpDistance(DataType t, uint32_t a, uint32_t b) {
  const bool nan_a = isNaN(t, a), nan_b = isNaN(t, b);
  if (nan_a || nan_b) return nan_a && nan_b ? 0 : std::numeric_limits<uint64_t>::max();
  return static_cast<uint64_t>(std::llabs(orderedIndex(t, a) - orderedIndex(t, b)));
}

}  // namespace rs::bench::numerics

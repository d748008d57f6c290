// Scalar fp8 <-> fp32 conversions, the reference for the SIMD kernels (reduce-inl.h), which
// must equal them bit for bit on every target. Tests, the numerics benchmark and code that
// handles a few elements (logs, tools) use them directly.
//
// The two formats are the OCP 8-bit floating point formats that NCCL's ncclFloat8e4m3 and
// ncclFloat8e5m2 (CUDA's __nv_fp8_e4m3, __nv_fp8_e5m2) hold, sign bit first:
//   E4M3 ("E4M3FN"): 4 exponent bits, bias 7, 3 mantissa bits. No infinities; the only NaNs are
//     S.1111.111 (0x7F, 0xFF). Largest finite 448 (0x7E), smallest normal 2^-6, smallest
//     subnormal 2^-9.
//   E5M2: 5 exponent bits, bias 15, 2 mantissa bits: IEEE-like (the top byte of an fp16), with
//     infinities S.11111.00 (0x7C, 0xFC) and NaNs S.11111.{01,10,11}. Largest finite 57344
//     (0x7B), smallest normal 2^-14, smallest subnormal 2^-16.
// Widening is exact. Narrowing rounds to nearest, ties to even, from the value as it is (one
// rounding, subnormals included), and:
//   - a finite value past the largest finite saturates to it, keeping the sign: CUDA's
//     __NV_SATFINITE, the conversion NCCL's own fp8 reductions use (src/device/reduce_kernel.h:
//     the sum in fp16 or fp32, then the __nv_fp8_* constructor, which saturates), so a sum
//     that overflows gives +-448 / +-57344, as NCCL's would;
//   - an infinity stays one in E5M2 (IEEE: an infinite input makes an infinite or NaN sum) and
//     saturates in E4M3, which has none. Here NCCL differs for E5M2: its saturating conversion
//     turns an infinite sum into +-57344;
//   - every NaN becomes 0x7F in both formats, whatever its sign and payload (CUDA's canonical
//     NaN; which NaN an fp32 sum of two NaNs keeps differs between targets, so no bit of it is
//     carried).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/reduce/dtype.h"

namespace rs::reduce {

// One fp8 format's layout. kE4m3 and kE5m2 below are the two there are.
struct Float8Format {
  int mantissaBits;
  int bias;
  bool hasInfinity;
  uint8_t maxFinite;  // the largest finite magnitude's bits
};
inline constexpr Float8Format kE4m3{3, 7, false, 0x7E};
inline constexpr Float8Format kE5m2{2, 15, true, 0x7B};
inline constexpr uint8_t kFloat8NaN = 0x7F;  // what every NaN narrows to
inline constexpr uint8_t kFloat8E5m2Infinity = 0x7C;

inline constexpr Float8Format float8Format(DataType t) {
  return t == DataType::kFloat8e5m2 ? kE5m2 : kE4m3;
}

inline float float8ToFloat(uint8_t b, Float8Format f) {
  const int exp = (b & 0x7F) >> f.mantissaBits;
  const int mant = b & ((1 << f.mantissaBits) - 1);
  const int top = 0x7F >> f.mantissaBits;  // the all-ones exponent
  double v;
  if (f.hasInfinity && exp == top) {
    v = mant == 0 ? INFINITY : NAN;
  } else if (!f.hasInfinity && (b & 0x7F) == 0x7F) {
    v = NAN;
  } else {
    // Subnormals have exponent 1 - bias and no implicit bit.
    const int units = exp == 0 ? mant : mant + (1 << f.mantissaBits);
    v = std::ldexp(units, (exp == 0 ? 1 : exp) - f.bias - f.mantissaBits);
  }
  return static_cast<float>((b & 0x80) != 0 ? -v : v);
}

// x rounded once into the format (the rules above). A double so that an exact sum can be
// rounded without first rounding to fp32; every float converts to it exactly.
inline uint8_t roundToFloat8(double x, Float8Format f) {
  if (std::isnan(x)) return kFloat8NaN;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | (f.hasInfinity ? kFloat8E5m2Infinity : f.maxFinite);
  if (a == 0) return sign;
  // The grid step at a's binade, the subnormal step below the normals; a / step is exact and
  // nearbyint rounds to nearest even (the default rounding mode).
  const int minExp = 1 - f.bias;
  const int exp = std::max(std::ilogb(a), minExp);
  const double units = std::nearbyint(a / std::ldexp(1.0, exp - f.mantissaBits));
  const double maxFinite = float8ToFloat(f.maxFinite, f);
  if (units * std::ldexp(1.0, exp - f.mantissaBits) > maxFinite) return sign | f.maxFinite;
  // units is in [2^m, 2^(m+1)] for a normal (2^(m+1): rounded up into the next binade), its
  // implicit bit standing for one exponent step, and in [0, 2^m] below the normals, where
  // exp == minExp; so units plus (exp - minExp) exponent steps is the encoding in both.
  return sign | static_cast<uint8_t>(static_cast<int>(units) + ((exp - minExp) << f.mantissaBits));
}

inline uint8_t floatToFloat8(float x, Float8Format f) { return roundToFloat8(x, f); }

}  // namespace rs::reduce

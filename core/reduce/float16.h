// Scalar fp16 / bf16 <-> fp32 conversions with the exact semantics of the SIMD kernels:
// widening is exact, narrowing rounds to nearest even, overflow becomes Inf, and a NaN stays a
// NaN (quieted, keeping the top payload bits, as x86 F16C does). Tests use these as the
// reference, and code that handles a few elements (logs, tools) can use them directly.
#pragma once

#include <cstdint>
#include <cstring>

namespace rs::reduce {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float floatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return floatFromBits(sign | 0x7F800000u | (mant << 13));  // Inf, NaN
  if (exp != 0) return floatFromBits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
  if (mant == 0) return floatFromBits(sign);
  // Subnormal: normalise; the value is mant * 2^-24.
  int e = -14;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return floatFromBits(sign | static_cast<uint32_t>(e + 127) << 23 | ((mant & 0x3FFu) << 13));
}

inline uint16_t floatToHalf(float f) {
  const uint32_t bits = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u)  // NaN: quiet, top payload bits kept
    return static_cast<uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520 rounds to Inf (and Inf itself)
  // Keep the 11 significant bits the half will hold (fewer below 2^-14), round the rest.
  const int exp = static_cast<int>(abs >> 23) - 127;
  uint32_t mant = (abs & 0x7FFFFFu) | (abs >= 0x00800000u ? 0x800000u : 0);
  const int shift = exp >= -14 ? 13 : 13 + (-14 - exp);  // bits dropped from the 24-bit mant
  if (shift > 24) return sign;                           // below half the smallest subnormal
  const uint32_t kept = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
  if (exp < -14) return static_cast<uint16_t>(sign | rounded);  // subnormal (may carry to normal)
  // Normal: rounded holds the implicit bit; a carry out of it bumps the exponent, which the
  // addition does for us.
  rounded += static_cast<uint32_t>(exp + 15 - 1) << 10;
  return static_cast<uint16_t>(sign | rounded);
}

inline float bfloat16ToFloat(uint16_t b) { return floatFromBits(static_cast<uint32_t>(b) << 16); }

inline uint16_t floatToBfloat16(float f) {
  const uint32_t bits = floatBits(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace rs::reduce

// Whole-buffer conversions between fp32 and a 16-bit float type (bf16, fp16), for wire
// compression: a worker narrows its fp32 chunk to the wire type before it sends it and widens
// the result back into the caller's fp32 buffer. The SIMD codecs are the reducer's own
// (reduce-inl.h), so the rounding is the same bit for bit as the reducer's and float16.h:
// narrowing rounds to nearest even, overflow becomes Inf, a NaN stays a NaN (quieted); widening
// is exact. No I/O and no allocation; pointers need no alignment. Apart from the kernels
// (reduce.h) so that the NCCL plugin links these alone.
#pragma once

#include <cstddef>
#include <string>

#include "core/reduce/dtype.h"

namespace rs::reduce {

// True for the types these functions convert to and from fp32: kBfloat16 and kFloat16.
constexpr bool isNarrowFloat(DataType t) {
  return t == DataType::kBfloat16 || t == DataType::kFloat16;
}

// dst[i] = narrow(src[i]) for `to` (isNarrowFloat). src and dst must not overlap.
void narrowFloat32(DataType to, const float* src, void* dst, size_t count);

// dst[i] = widen(src[i]) for `from` (isNarrowFloat). src and dst must not overlap.
void widenToFloat32(DataType from, const void* src, float* dst, size_t count);

// The SIMD target these conversions dispatch to now, e.g. "AVX3" (the plugin's version line).
std::string conversionTargetName();

}  // namespace rs::reduce

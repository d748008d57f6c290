// fp32 <-> bf16/fp16 buffer conversions, one loop per direction and SIMD target (compiled once
// per target via foreach_target.h, chosen at run time by HWY_DYNAMIC_DISPATCH). They use the
// reducer's own codecs (reduce-inl.h), so the bits are the kernels' bits, but not the kernels:
// the NCCL plugin needs only these, and reduce.cc's eight targets of every type and op would
// add about a megabyte to it and a minute to its build.

#include "core/reduce/convert.h"

#include <cstdint>
#include <cstring>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/reduce/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "core/reduce/reduce-inl.h"

HWY_BEFORE_NAMESPACE();
namespace rs::reduce::HWY_NAMESPACE {

// Whole vectors straight from and to the caller's buffers (no alignment needed); the tail
// through a zero-padded aligned vector, so nothing past `count` is read or written.
template <class Codec>
HWY_INLINE void widenAll(const uint16_t* src, float* dst, size_t count) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<uint16_t, decltype(d)> d16;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) hn::StoreU(Codec::widen(d, hn::LoadU(d16, src + i)), d, dst + i);
  if (i == count) return;
  HWY_ALIGN uint16_t in[HWY_MAX_BYTES / sizeof(float)] = {};
  HWY_ALIGN float out[HWY_MAX_BYTES / sizeof(float)];
  std::memcpy(in, src + i, (count - i) * sizeof(uint16_t));
  hn::Store(Codec::widen(d, hn::Load(d16, in)), d, out);
  std::memcpy(dst + i, out, (count - i) * sizeof(float));
}

template <class Codec>
HWY_INLINE void narrowAll(const float* src, uint16_t* dst, size_t count) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<uint16_t, decltype(d)> d16;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) hn::StoreU(Codec::narrow(d, hn::LoadU(d, src + i)), d16, dst + i);
  if (i == count) return;
  HWY_ALIGN float in[HWY_MAX_BYTES / sizeof(float)] = {};
  HWY_ALIGN uint16_t out[HWY_MAX_BYTES / sizeof(float)];
  std::memcpy(in, src + i, (count - i) * sizeof(float));
  hn::Store(Codec::narrow(d, hn::Load(d, in)), d16, out);
  std::memcpy(dst + i, out, (count - i) * sizeof(uint16_t));
}

// The per-target entry points; `bfloat16` picks the type (the callers checked isNarrowFloat).
void widenKernel(bool bfloat16, const void* src, float* dst, size_t count) {
  const auto* in = static_cast<const uint16_t*>(src);
  if (bfloat16) {
    widenAll<Bfloat16Codec>(in, dst, count);
  } else {
    widenAll<HalfCodec>(in, dst, count);
  }
}

void narrowKernel(bool bfloat16, const float* src, void* dst, size_t count) {
  auto* out = static_cast<uint16_t*>(dst);
  if (bfloat16) {
    narrowAll<Bfloat16Codec>(src, out, count);
  } else {
    narrowAll<HalfCodec>(src, out, count);
  }
}

int64_t conversionTarget() { return HWY_TARGET; }

}  // namespace rs::reduce::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rs::reduce {

HWY_EXPORT(widenKernel);
HWY_EXPORT(narrowKernel);
HWY_EXPORT(conversionTarget);

void narrowFloat32(DataType to, const float* src, void* dst, size_t count) {
  if (!isNarrowFloat(to) || count == 0) return;
  HWY_DYNAMIC_DISPATCH(narrowKernel)(to == DataType::kBfloat16, src, dst, count);
}

void widenToFloat32(DataType from, const void* src, float* dst, size_t count) {
  if (!isNarrowFloat(from) || count == 0) return;
  HWY_DYNAMIC_DISPATCH(widenKernel)(from == DataType::kBfloat16, src, dst, count);
}

std::string conversionTargetName() {
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(conversionTarget)());
}

}  // namespace rs::reduce
#endif  // HWY_ONCE

// Per-target SIMD pieces of the reduction kernels: how an operand is loaded into accumulator
// lanes and stored back (codecs), and how two lanes combine (ops). reduce.cc includes this once
// per target through foreach_target.h, so there is no ordinary include guard.
//
// fp16/bf16 conversions: Highway 1.0.3's bf16 DemoteTo truncates, and its fp16 conversions on
// targets without F16C (SSSE3, SSE4, EMU128) mishandle Inf/NaN and truncate, so those are done
// here with integer ops. They match float16.h (and F16C) bit for bit. fp8 has no conversions in
// Highway or in x86 at all; its integer ops here match float8.h bit for bit.

#if defined(RS_CORE_REDUCE_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef RS_CORE_REDUCE_REDUCE_INL_H_
#undef RS_CORE_REDUCE_REDUCE_INL_H_
#else
#define RS_CORE_REDUCE_REDUCE_INL_H_
#endif

#include <cstdint>

#include "core/reduce/float8.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rs::reduce::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x86 AVX2 and AVX3 imply F16C, whose conversions round to nearest even and keep NaNs.
constexpr bool kNativeHalf = HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2;

template <class DF>
using HalfBits = hn::Vec<hn::Rebind<uint16_t, DF>>;

template <class DF>
HWY_INLINE hn::Vec<DF> widenHalf(DF df, HalfBits<DF> h) {
  if constexpr (kNativeHalf) {
    return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), h));
  } else {
    const hn::RebindToUnsigned<DF> du;
    const auto bits = hn::PromoteTo(du, h);
    const auto sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000)));
    const auto shifted = hn::ShiftLeft<13>(hn::And(bits, hn::Set(du, 0x7FFF)));
    const auto exp = hn::And(shifted, hn::Set(du, 0x0F800000));
    const auto rebias = hn::Set(du, (127 - 15) << 23);
    auto r = hn::Add(shifted, rebias);
    // Inf/NaN: exponent 31 becomes 255.
    r = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x0F800000)), hn::Add(r, rebias), r);
    // Zero/subnormal: 2^-14 * (1 + m/1024) - 2^-14 is m * 2^-24, exactly.
    const auto subnormal = hn::BitCast(
        du, hn::Sub(hn::BitCast(df, hn::Add(r, hn::Set(du, 1u << 23))), hn::Set(df, 0x1p-14f)));
    r = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), subnormal, r);
    return hn::BitCast(df, hn::Or(r, sign));
  }
}

// 2^e, exactly, for |e| < 64.
constexpr float pow2(int e) {
  return e >= 0 ? static_cast<float>(1ull << e) : 1.0f / static_cast<float>(1ull << -e);
}

// The bits of a magnitude (abs: fp32 bits, sign clear, finite) rounded to nearest even into a
// smaller binary float with kMantissa mantissa bits and exponent bias kBias (fp16, fp8), in u32
// lanes; the callers set overflow, Inf and NaN apart. Normal: rebias and round the dropped bits;
// a carry bumps the exponent, which the addition does for us. Below the smallest normal: adding
// a float whose one ulp is the format's subnormal step (0.5 for fp16) makes the FPU's own
// rounding the format's, and a carry into the normals encodes right.
template <int kMantissa, int kBias, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> roundMagnitude(DF df,
                                                          hn::Vec<hn::RebindToUnsigned<DF>> abs) {
  constexpr int kDropped = 23 - kMantissa;
  constexpr uint32_t kRebiasLessHalf =
      (static_cast<uint32_t>(127 - kBias) << 23) - ((1u << (kDropped - 1)) - 1);
  constexpr int32_t kMinNormal = (127 + 1 - kBias) << 23;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;  // magnitudes are < 2^31: signed compares are exact
  const auto odd = hn::And(hn::ShiftRight<kDropped>(abs), hn::Set(du, 1));
  const auto normal =
      hn::ShiftRight<kDropped>(hn::Add(hn::Sub(abs, hn::Set(du, kRebiasLessHalf)), odd));
  const auto magic = hn::Set(df, pow2(24 - kBias - kMantissa));
  const auto subnormal =
      hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), magic)), hn::BitCast(du, magic));
  const auto below = hn::RebindMask(du, hn::Lt(hn::BitCast(di, abs), hn::Set(di, kMinNormal)));
  return hn::IfThenElse(below, subnormal, normal);
}

template <class DF>
HWY_INLINE HalfBits<DF> narrowHalf(DF df, hn::Vec<DF> v) {
  const hn::Rebind<uint16_t, DF> d16;
  if constexpr (kNativeHalf) {
    return hn::BitCast(d16, hn::DemoteTo(hn::Rebind<hwy::float16_t, DF>(), v));
  } else {
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;  // magnitudes are < 2^31: signed compares are exact
    const auto bits = hn::BitCast(du, v);
    const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
    const auto sign = hn::ShiftRight<16>(hn::AndNot(abs, bits));
    const auto abs_i = hn::BitCast(di, abs);
    auto r = roundMagnitude<10, 15>(df, abs);
    // From 65520 up (and Inf) the result is Inf; a NaN is quieted and keeps its top payload.
    const auto quiet_nan =
        hn::Or(hn::Set(du, 0x7E00), hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 0x3FF)));
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(abs_i, hn::Set(di, 0x477FEFFF))),
                       hn::Set(du, 0x7C00), r);
    r = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet_nan, r);
    return hn::DemoteTo(d16, hn::BitCast(di, hn::Or(r, sign)));
  }
}

// fp32 bits rounded to nearest even at bit 16, so the top half is the bf16; a NaN is quieted.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> roundToBfloat16(DF /* df */, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1));
  const auto rounded = hn::Add(hn::Add(bits, hn::Set(du, 0x7FFF)), odd);
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Or(bits, hn::Set(du, 0x400000)),
                        rounded);
}

// Codecs: how 2 * Lanes(d) consecutive elements (a pair of vectors) are loaded into
// accumulator lanes and stored back. Stored is the element type in memory, Lane the
// accumulator lane type.
template <typename T>
struct PlainCodec {
  using Stored = T;
  using Lane = T;
  template <class D>
  static HWY_INLINE void load(D d, const T* p, hn::Vec<D>& lo, hn::Vec<D>& hi) {
    lo = hn::LoadU(d, p);
    hi = hn::LoadU(d, p + hn::Lanes(d));
  }
  template <class D>
  static HWY_INLINE void store(D d, hn::Vec<D> lo, hn::Vec<D> hi, T* p) {
    hn::StoreU(lo, d, p);
    hn::StoreU(hi, d, p + hn::Lanes(d));
  }
};

template <class DF>
HWY_INLINE hn::Vec<DF> widenBfloat16(DF df, HalfBits<DF> b) {
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(hn::RebindToUnsigned<DF>(), b)));
}

template <class DF>
HWY_INLINE HalfBits<DF> narrowBfloat16(DF df, hn::Vec<DF> v) {
  const hn::RebindToSigned<DF> di;
  return hn::DemoteTo(hn::Rebind<uint16_t, DF>(),
                      hn::BitCast(di, hn::ShiftRight<16>(roundToBfloat16(df, v))));
}

// fp16 or bf16 elements in their natural order, widened and narrowed a vector at a time.
template <bool kBfloat16>
struct Float16Codec {
  using Stored = uint16_t;
  using Lane = float;
  template <class D>
  static HWY_INLINE hn::Vec<D> widen(D d, HalfBits<D> bits) {
    if constexpr (kBfloat16) {
      return widenBfloat16(d, bits);
    } else {
      return widenHalf(d, bits);
    }
  }
  template <class D>
  static HWY_INLINE HalfBits<D> narrow(D d, hn::Vec<D> v) {
    if constexpr (kBfloat16) {
      return narrowBfloat16(d, v);
    } else {
      return narrowHalf(d, v);
    }
  }
  template <class D>
  static HWY_INLINE void load(D d, const uint16_t* p, hn::Vec<D>& lo, hn::Vec<D>& hi) {
    const hn::Rebind<uint16_t, D> d16;
    lo = widen(d, hn::LoadU(d16, p));
    hi = widen(d, hn::LoadU(d16, p + hn::Lanes(d)));
  }
  template <class D>
  static HWY_INLINE void store(D d, hn::Vec<D> lo, hn::Vec<D> hi, uint16_t* p) {
    const hn::Rebind<uint16_t, D> d16;
    hn::StoreU(narrow(d, lo), d16, p);
    hn::StoreU(narrow(d, hi), d16, p + hn::Lanes(d));
  }
};
using HalfCodec = Float16Codec<false>;
using Bfloat16Codec = Float16Codec<true>;

// fp8 (float8.h) bytes in fp32 lanes, through fp16 (F16C where there is one), exactly. E5M2
// is the top byte of an fp16. E4M3's bits moved to an fp16's places (exponent and mantissa up
// 7 bits, the sign to the top) are an fp16 of its value times 2^-8, subnormals included (they
// are fp16 subnormals), so one exact multiply by 256 rescales it; its NaN, S.1111.111, reads
// as +-480 that way, a value E4M3 does not have, and is set apart.
template <DataType kType, class DF>
HWY_INLINE hn::Vec<DF> widenFloat8(DF df, hn::Vec<hn::Rebind<uint8_t, DF>> b) {
  if constexpr (float8Format(kType).hasInfinity) {
    return widenHalf(df, hn::ShiftLeft<8>(hn::PromoteTo(hn::Rebind<uint16_t, DF>(), b)));
  } else {
    const hn::Rebind<int16_t, DF> d16;
    // Sign-extended, shifted up 7: the sign lands in bit 15 (and 14, which the mask clears).
    const auto extended = hn::PromoteTo(d16, hn::BitCast(hn::Rebind<int8_t, DF>(), b));
    const auto half = hn::And(hn::ShiftLeft<7>(extended), hn::Set(d16, int16_t{-0x4080}));
    const auto v = hn::Mul(widenHalf(df, hn::BitCast(hn::Rebind<uint16_t, DF>(), half)),
                           hn::Set(df, 256.0f));
    return hn::IfThenElse(hn::Eq(hn::Abs(v), hn::Set(df, 480.0f)), hn::NaN(df), v);
  }
}

// fp32 lanes narrowed to fp8 bytes as floatToFloat8 does: to nearest even, a finite value past
// the largest finite saturating to it, E5M2's Inf kept, every NaN 0x7F.
template <DataType kType, class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint8_t, DF>> narrowFloat8(DF df, hn::Vec<DF> v) {
  constexpr Float8Format kF = float8Format(kType);
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;  // magnitudes are < 2^31: signed compares are exact
  const auto bits = hn::BitCast(du, v);
  const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto sign = hn::ShiftRight<24>(hn::AndNot(abs, bits));
  const auto abs_i = hn::BitCast(di, abs);
  auto r = hn::BitCast(di, roundMagnitude<kF.mantissaBits, kF.bias>(df, abs));
  r = hn::Min(r, hn::Set(di, kF.maxFinite));  // saturate (Inf too, in E4M3)
  if constexpr (kF.hasInfinity) {
    r = hn::IfThenElse(hn::Eq(abs_i, hn::Set(di, 0x7F800000)), hn::Set(di, kFloat8E5m2Infinity),
                       r);
  }
  r = hn::Or(r, hn::BitCast(di, sign));
  r = hn::IfThenElse(hn::RebindMask(di, hn::IsNaN(v)), hn::Set(di, kFloat8NaN), r);
  return hn::DemoteTo(hn::Rebind<uint8_t, DF>(), r);
}

template <DataType kType>
struct Float8Codec {
  using Stored = uint8_t;
  using Lane = float;
  template <class D>
  static HWY_INLINE void load(D d, const uint8_t* p, hn::Vec<D>& lo, hn::Vec<D>& hi) {
    const hn::Rebind<uint8_t, D> d8;
    lo = widenFloat8<kType>(d, hn::LoadU(d8, p));
    hi = widenFloat8<kType>(d, hn::LoadU(d8, p + hn::Lanes(d)));
  }
  template <class D>
  static HWY_INLINE void store(D d, hn::Vec<D> lo, hn::Vec<D> hi, uint8_t* p) {
    const hn::Rebind<uint8_t, D> d8;
    hn::StoreU(narrowFloat8<kType>(d, lo), d8, p);
    hn::StoreU(narrowFloat8<kType>(d, hi), d8, p + hn::Lanes(d));
  }
};

#if HWY_HAVE_FLOAT64
// fp32 elements in fp64 lanes, for a group with an fp64 accumulator (dtype.h, Fp32Accumulator):
// every fold over fp32 operands, the fused one included, then rounds once, when it stores.
struct Float32InDoubleCodec {
  using Stored = float;
  using Lane = double;
  template <class D>
  static HWY_INLINE void load(D d, const float* p, hn::Vec<D>& lo, hn::Vec<D>& hi) {
    const hn::Rebind<float, D> d32;
    lo = hn::PromoteTo(d, hn::LoadU(d32, p));
    hi = hn::PromoteTo(d, hn::LoadU(d32, p + hn::Lanes(d)));
  }
  template <class D>
  static HWY_INLINE void store(D d, hn::Vec<D> lo, hn::Vec<D> hi, float* p) {
    const hn::Rebind<float, D> d32;
    hn::StoreU(narrow(d32, lo), d32, p);
    hn::StoreU(narrow(d32, hi), d32, p + hn::Lanes(d));
  }
  // IEEE narrowing, to nearest even and past fp32's range to Inf. Highway's SCALAR and EMU128
  // DemoteTo clamp to the largest finite fp32 instead (GCC builds SCALAR as the fallback, Clang
  // EMU128), so their lanes are converted by the compiler.
  template <class D32, class V>
  static HWY_INLINE hn::Vec<D32> narrow(D32 d32, V v) {
    if constexpr (HWY_TARGET == HWY_SCALAR) {
      return hn::Set(d32, static_cast<float>(hn::GetLane(v)));
    } else if constexpr (HWY_TARGET == HWY_EMU128) {
      constexpr size_t kLanes = hn::MaxLanes(d32);
      double wide[kLanes];
      float narrowed[kLanes];
      hn::StoreU(v, hn::Rebind<double, D32>(), wide);
      for (size_t i = 0; i < kLanes; ++i) narrowed[i] = static_cast<float>(wide[i]);
      return hn::LoadU(d32, narrowed);
    } else {
      return hn::DemoteTo(d32, v);
    }
  }
};
#endif

// A faster bf16 codec for folds whose operands are all bf16 (reduceInputs). bf16 is the top
// half of an fp32: read as u32 lanes, 2 * Lanes bf16 hold the even elements in the low halves
// and the odd ones in the high halves (little-endian), so widening is one shift or mask and
// narrowing merges the halves back, with no lane shuffles. The pair is (even, odd) elements,
// not (first, second half), which elementwise folds do not mind as long as every operand uses
// the same layout; the fp32 accumulator of accumulate() keeps the natural order instead.
// SCALAR has one lane of any width, so it cannot pair.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "bf16 pairs assume little-endian lanes");
constexpr bool kPairedBfloat16 = HWY_TARGET != HWY_SCALAR;

struct Bfloat16PairCodec {
  using Stored = uint16_t;
  using Lane = float;
  template <class D>
  static HWY_INLINE void load(D d, const uint16_t* p, hn::Vec<D>& even, hn::Vec<D>& odd) {
    const hn::RebindToUnsigned<D> du;
    const auto pairs = hn::BitCast(du, hn::LoadU(hn::Repartition<uint16_t, D>(), p));
    even = hn::BitCast(d, hn::ShiftLeft<16>(pairs));
    odd = hn::BitCast(d, hn::And(pairs, hn::Set(du, 0xFFFF0000u)));
  }
  template <class D>
  static HWY_INLINE void store(D d, hn::Vec<D> even, hn::Vec<D> odd, uint16_t* p) {
    const hn::Repartition<uint16_t, D> d16;
    const auto low = hn::ShiftRight<16>(roundToBfloat16(d, even));
    const auto high =
        hn::And(roundToBfloat16(d, odd), hn::Set(hn::RebindToUnsigned<D>(), 0xFFFF0000u));
    hn::StoreU(hn::BitCast(d16, hn::Or(low, high)), d16, p);
  }
};

// Ops. Integer add/mul wrap (lanes are unsigned for those); max/min of floats return NaN when
// either operand is NaN, which hn::Max does not promise (x86 maxps returns its second operand).
struct SumOp {
  template <class V>
  static HWY_INLINE V apply(V a, V b) {
    return hn::Add(a, b);
  }
};

struct ProdOp {
  template <class V>
  static HWY_INLINE V apply(V a, V b) {
    return hn::Mul(a, b);
  }
};

struct MaxOp {
  template <class V>
  static HWY_INLINE V apply(V a, V b) {
    if constexpr (hwy::IsFloat<hn::TFromV<V>>()) {
      return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), hn::Max(a, b));
    } else {
      return hn::Max(a, b);
    }
  }
};

struct MinOp {
  template <class V>
  static HWY_INLINE V apply(V a, V b) {
    if constexpr (hwy::IsFloat<hn::TFromV<V>>()) {
      return hn::IfThenElse(hn::Or(hn::IsNaN(a), hn::IsNaN(b)), hn::Add(a, b), hn::Min(a, b));
    } else {
      return hn::Min(a, b);
    }
  }
};

}  // namespace rs::reduce::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle

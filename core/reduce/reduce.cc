// Reduction kernels: one type-erased entry point per SIMD target (compiled once per target via
// foreach_target.h), chosen at run time once per call by HWY_DYNAMIC_DISPATCH.
//
// Every public function is a fold over operands, elementwise, in input order:
//   out[i] = finish(op(...op(op(load0(in0[i]), load(in1[i])), load(in2[i]))...))
// where the codecs (reduce-inl.h) say how each operand is stored (wire type or a wider
// accumulator: fp32 for fp16/bf16/fp8, fp64 for fp32 where the group asks for it) and finish
// divides for avg. So there is one loop template, fold(), and the instantiations are per
// (lane type, op, codec triple): about sixty per target, not per (public function x dtype x op).

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/reduce/reduce.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/reduce/reduce.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "core/reduce/reduce-inl.h"

#ifndef RS_CORE_REDUCE_KERNEL_ARGS_
#define RS_CORE_REDUCE_KERNEL_ARGS_
namespace rs::reduce {
namespace {

// Which operands are in accumulator form; only matters for types whose accumulator is wider
// (fp16/bf16/fp8: fp32; fp32 with an fp64 accumulator).
enum class Pass : uint8_t {
  kReduce,      // wire inputs -> wire output
  kAccumulate,  // inputs[0] is the accumulator (also the output), the others are wire
  kFirst,       // one wire input -> accumulator
  kFinalize,    // one accumulator input -> wire output
};

struct KernelArgs {
  Pass pass;
  DataType type;
  ReduceOp op;  // kAvg folds like kSum; `divisor` does the division for floating types
  const void* const* inputs;
  size_t ninputs;
  void* out;
  size_t count;
  uint32_t divisor;  // 0: none
  Fp32Accumulator fp32;
};

}  // namespace
}  // namespace rs::reduce
#endif

HWY_BEFORE_NAMESPACE();
namespace rs::reduce::HWY_NAMESPACE {
namespace {

template <class Codec>
HWY_INLINE const typename Codec::Stored* operand(const KernelArgs& a, size_t k) {
  return static_cast<const typename Codec::Stored*>(a.inputs[k]);
}

template <class D>
HWY_INLINE hn::Vec<D> finish(D d, hn::Vec<D> v, uint32_t divisor) {
  if constexpr (hwy::IsFloat<hn::TFromD<D>>()) {
    if (divisor != 0) v = hn::Div(v, hn::Set(d, static_cast<hn::TFromD<D>>(divisor)));
  }
  return v;
}

// Where foldPair reads the operands of one pair at element i: straight from the caller's
// buffers, or for the last partial pair through zero-padded aligned stack copies, so the same
// vector code runs there too. (Highway 1.0.3's one-lane float loads dereference a float
// pointer, undefined when misaligned, and its AVX2 MaskedLoad of 8/16-bit lanes reads the
// whole vector; neither may touch the caller's buffers past the end.)
template <class First, class Rest>
struct DirectOperands {
  const KernelArgs& a;
  size_t i;
  const typename First::Stored* first() const { return operand<First>(a, 0) + i; }
  const typename Rest::Stored* input(size_t k) const { return operand<Rest>(a, k) + i; }
};

template <class First, class Rest, size_t kMax>
class StagedOperands {
 public:
  StagedOperands(const KernelArgs& a, size_t i) : a_(a), i_(i), rest_(a.count - i) {}
  const typename First::Stored* first() {
    std::memcpy(first_, operand<First>(a_, 0) + i_, rest_ * sizeof(first_[0]));
    return first_;
  }
  const typename Rest::Stored* input(size_t k) {
    std::memcpy(input_, operand<Rest>(a_, k) + i_, rest_ * sizeof(input_[0]));
    return input_;
  }

 private:
  const KernelArgs& a_;
  size_t i_, rest_;
  HWY_ALIGN typename First::Stored first_[kMax] = {};
  HWY_ALIGN typename Rest::Stored input_[kMax] = {};
};

// One pair of vectors (2 * Lanes(d) elements) of the fold, stored to out.
template <class Op, class First, class Rest, class Out, class D, class Operands>
HWY_INLINE void foldPair(D d, const KernelArgs& a, Operands& src, typename Out::Stored* out) {
  hn::Vec<D> lo, hi, x, y;
  First::load(d, src.first(), lo, hi);
  for (size_t k = 1; k < a.ninputs; ++k) {
    Rest::load(d, src.input(k), x, y);
    lo = Op::apply(lo, x);
    hi = Op::apply(hi, y);
  }
  Out::store(d, finish(d, lo, a.divisor), finish(d, hi, a.divisor), out);
}

// Software prefetch, where kernel_bench measured a gain (256 MiB per input): 16-bit streams
// cost more vector work per byte, which keeps fewer loads in flight, and prefetching them lifts
// bf16/fp16 sums of 4 inputs from ~0.75 to ~0.93 of the triad; any type with two inputs goes
// from ~0.9 to ~0.97. Wider streams with more inputs do as well or better on the hardware
// prefetcher alone. The distance shrinks as inputs grow so the lines in flight fit the L1.
// 0 means no prefetch.
template <class Codec>
size_t prefetchDistance(size_t ninputs) {
  if (sizeof(typename Codec::Stored) != 2 && ninputs > 2) return 0;
  return std::clamp<size_t>(6144 / ninputs, 512, 1536) & ~size_t{63};
}

template <class Codec>
HWY_INLINE void prefetchAhead(const typename Codec::Stored* p, size_t bytes, size_t distance) {
  if (distance == 0) return;
  const char* q = reinterpret_cast<const char*>(p) + distance;
  for (size_t j = 0; j < bytes; j += 64) hwy::Prefetch(q + j);
}

template <class Op, class First, class Rest, class Out>
HWY_NOINLINE void fold(const KernelArgs& a) {
  using T = typename Out::Lane;
  static_assert(std::is_same_v<T, typename First::Lane> && std::is_same_v<T, typename Rest::Lane>);
  using D = hn::ScalableTag<T>;
  const D d;
  const size_t n = 2 * hn::Lanes(d);  // elements per pair
  const size_t count = a.count;
  auto* out = static_cast<typename Out::Stored*>(a.out);
  const auto* in0 = operand<First>(a, 0);
  const size_t first_distance = prefetchDistance<First>(a.ninputs);
  const size_t rest_distance = prefetchDistance<Rest>(a.ninputs);
  size_t i = 0;
  // Two pairs (four vectors) per step keep several loads per input in flight. Every load of a
  // step happens before its stores, so out may alias inputs[0] (in place, or narrowing fp32 to
  // 16 bits in place, where the stores trail the loads).
  if (count >= 2 * n) {
    for (; i <= count - 2 * n; i += 2 * n) {
      hn::Vec<D> v0, v1, v2, v3, x0, x1, x2, x3;
      prefetchAhead<First>(in0 + i, 2 * n * sizeof(*in0), first_distance);
      First::load(d, in0 + i, v0, v1);
      First::load(d, in0 + i + n, v2, v3);
      for (size_t k = 1; k < a.ninputs; ++k) {
        const auto* in = operand<Rest>(a, k) + i;
        prefetchAhead<Rest>(in, 2 * n * sizeof(*in), rest_distance);
        Rest::load(d, in, x0, x1);
        Rest::load(d, in + n, x2, x3);
        v0 = Op::apply(v0, x0);
        v1 = Op::apply(v1, x1);
        v2 = Op::apply(v2, x2);
        v3 = Op::apply(v3, x3);
      }
      Out::store(d, finish(d, v0, a.divisor), finish(d, v1, a.divisor), out + i);
      Out::store(d, finish(d, v2, a.divisor), finish(d, v3, a.divisor), out + i + n);
    }
  }
  if (i + n <= count) {
    DirectOperands<First, Rest> src{a, i};
    foldPair<Op, First, Rest, Out>(d, a, src, out + i);
    i += n;
  }
  if (i < count) {
    constexpr size_t kMax = 2 * hn::MaxLanes(D());
    StagedOperands<First, Rest, kMax> src(a, i);
    HWY_ALIGN typename Out::Stored result[kMax];
    foldPair<Op, First, Rest, Out>(d, a, src, result);
    std::memcpy(out + i, result, (count - i) * sizeof(result[0]));
  }
}

// Highway 1.0.3 has no 8-bit multiply on any target and 64-bit multiply only on AVX3, so
// products of those widths are a plain loop (the compiler vectorises it where it can). T is
// unsigned so the product wraps; memcpy because the pointers may be misaligned.
template <typename T>
HWY_NOINLINE void productLoop(const KernelArgs& a) {
  auto* out = static_cast<uint8_t*>(a.out);
  for (size_t i = 0; i < a.count; ++i) {
    T acc;
    std::memcpy(&acc, static_cast<const uint8_t*>(a.inputs[0]) + i * sizeof(T), sizeof(T));
    for (size_t k = 1; k < a.ninputs; ++k) {
      T x;
      std::memcpy(&x, static_cast<const uint8_t*>(a.inputs[k]) + i * sizeof(T), sizeof(T));
      acc = static_cast<T>(acc * x);
    }
    std::memcpy(out + i * sizeof(T), &acc, sizeof(T));
  }
}

template <typename T>
void integerKernel(const KernelArgs& a) {
  using U = std::make_unsigned_t<T>;
  using P = PlainCodec<U>;
  using S = PlainCodec<T>;
  switch (a.op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return fold<SumOp, P, P, P>(a);
    case ReduceOp::kProd:
      if constexpr (sizeof(T) == 4) {
        return fold<ProdOp, P, P, P>(a);
      } else {
        return productLoop<U>(a);
      }
    case ReduceOp::kMax: return fold<MaxOp, S, S, S>(a);
    case ReduceOp::kMin: return fold<MinOp, S, S, S>(a);
  }
}

template <class First, class Rest, class Out>
void floatKernel(const KernelArgs& a) {
  switch (a.op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return fold<SumOp, First, Rest, Out>(a);
    case ReduceOp::kProd: return fold<ProdOp, First, Rest, Out>(a);
    case ReduceOp::kMax: return fold<MaxOp, First, Rest, Out>(a);
    case ReduceOp::kMin: return fold<MinOp, First, Rest, Out>(a);
  }
}

// Types with a wider accumulator (Acc): Wire keeps the natural element order (it meets the
// accumulator); Fused may reorder inside a vector pair, as only wire operands meet in
// reduceInputs, and folds in the accumulator's lanes too, so it also rounds once.
template <class Wire, class Fused, class Acc>
void widenedKernel(const KernelArgs& a) {
  switch (a.pass) {
    case Pass::kReduce: return floatKernel<Fused, Fused, Fused>(a);
    case Pass::kAccumulate: return floatKernel<Acc, Wire, Acc>(a);
    case Pass::kFirst: return fold<SumOp, Wire, Wire, Acc>(a);
    case Pass::kFinalize: return fold<SumOp, Acc, Acc, Wire>(a);
  }
}

// Other types accumulate in themselves, so for them every pass is the same fold.
void foldAnyType(const KernelArgs& a) {
  switch (a.type) {
    case DataType::kInt8: return integerKernel<int8_t>(a);
    case DataType::kUint8: return integerKernel<uint8_t>(a);
    case DataType::kInt32: return integerKernel<int32_t>(a);
    case DataType::kUint32: return integerKernel<uint32_t>(a);
    case DataType::kInt64: return integerKernel<int64_t>(a);
    case DataType::kUint64: return integerKernel<uint64_t>(a);
    case DataType::kFloat16: return widenedKernel<HalfCodec, HalfCodec, PlainCodec<float>>(a);
    case DataType::kBfloat16:
      if constexpr (kPairedBfloat16) {
        return widenedKernel<Bfloat16Codec, Bfloat16PairCodec, PlainCodec<float>>(a);
      } else {
        return widenedKernel<Bfloat16Codec, Bfloat16Codec, PlainCodec<float>>(a);
      }
    case DataType::kFloat8e4m3: {
      using Codec = Float8Codec<DataType::kFloat8e4m3>;
      return widenedKernel<Codec, Codec, PlainCodec<float>>(a);
    }
    case DataType::kFloat8e5m2: {
      using Codec = Float8Codec<DataType::kFloat8e5m2>;
      return widenedKernel<Codec, Codec, PlainCodec<float>>(a);
    }
    case DataType::kFloat32:
#if HWY_HAVE_FLOAT64
      if (a.fp32 == Fp32Accumulator::kFp64)
        return widenedKernel<Float32InDoubleCodec, Float32InDoubleCodec, PlainCodec<double>>(a);
#endif
      return floatKernel<PlainCodec<float>, PlainCodec<float>, PlainCodec<float>>(a);
    case DataType::kFloat64:
#if HWY_HAVE_FLOAT64
      return floatKernel<PlainCodec<double>, PlainCodec<double>, PlainCodec<double>>(a);
#else
      return;  // no target without fp64 lanes is built for a platform we run on
#endif
  }
}

// Many inputs are more streams than the hardware prefetchers follow well (kernel_bench, 256 MiB,
// fp32 with 16 inputs: ~0.89 of the triad in one pass). Folding kGroup inputs at a time over a
// block whose partial result stays in L1 keeps fewer streams live (~0.96) and folds in the same
// order, so results do not change. Partial results of widened types are in their accumulator
// type (the accumulate passes).
constexpr size_t kGroup = 8;
constexpr size_t kBlockBytes = 8192;

void reduceInGroups(const KernelArgs& a) {
  const bool widened = accumulatesWidened(a.type, a.fp32);
  const size_t wire = dataTypeSize(a.type);
  const size_t block = kBlockBytes / accumulatorSize(a.type, a.fp32);
  HWY_ALIGN uint8_t partial[kBlockBytes];
  const void* in[kGroup + 1];
  for (size_t b = 0; b < a.count; b += block) {
    const size_t m = std::min(block, a.count - b);
    const auto at = [&a, b, wire](size_t k) {
      return static_cast<const uint8_t*>(a.inputs[k]) + b * wire;
    };
    void* out = static_cast<uint8_t*>(a.out) + b * wire;
    for (size_t g = 0; g < a.ninputs; g += kGroup) {
      const size_t end = std::min(a.ninputs, g + kGroup);
      const bool last = end == a.ninputs;
      size_t n = 0;
      if (g != 0) in[n++] = partial;
      for (size_t k = g; k < end; ++k) in[n++] = at(k);
      if (!widened) {
        foldAnyType({Pass::kReduce, a.type, a.op, in, n, last ? out : partial, m,
                     last ? a.divisor : 0, a.fp32});
        continue;
      }
      if (g == 0) {
        foldAnyType({Pass::kFirst, a.type, ReduceOp::kSum, in, 1, partial, m, 0, a.fp32});
        in[0] = partial;
      }
      if (n > 1) foldAnyType({Pass::kAccumulate, a.type, a.op, in, n, partial, m, 0, a.fp32});
      if (last) {
        in[0] = partial;
        foldAnyType({Pass::kFinalize, a.type, ReduceOp::kSum, in, 1, out, m, a.divisor, a.fp32});
      }
    }
  }
}

// The per-target entry point.
void runKernel(const KernelArgs& a) {
  if (a.pass == Pass::kReduce && a.ninputs > kGroup) return reduceInGroups(a);
  foldAnyType(a);
}

int64_t kernelTarget() { return HWY_TARGET; }

}  // namespace
}  // namespace rs::reduce::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rs::reduce {

HWY_EXPORT(runKernel);
HWY_EXPORT(kernelTarget);

namespace {

void run(const KernelArgs& a) { HWY_DYNAMIC_DISPATCH(runKernel)(a); }

// Integer avg: Highway has no vector integer division, and avg of integers is rare, so a plain
// loop divides the wrapped sums in place. Wide is 64-bit so every uint32 divisor fits.
template <typename T>
void divideInPlace(void* data, size_t count, uint32_t divisor) {
  using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  auto* p = static_cast<uint8_t*>(data);
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    v = static_cast<T>(static_cast<Wide>(v) / static_cast<Wide>(divisor));
    std::memcpy(p + i * sizeof(T), &v, sizeof(T));
  }
}

void divideIntegers(DataType type, void* data, size_t count, uint32_t divisor) {
  switch (type) {
    case DataType::kInt8: return divideInPlace<int8_t>(data, count, divisor);
    case DataType::kUint8: return divideInPlace<uint8_t>(data, count, divisor);
    case DataType::kInt32: return divideInPlace<int32_t>(data, count, divisor);
    case DataType::kUint32: return divideInPlace<uint32_t>(data, count, divisor);
    case DataType::kInt64: return divideInPlace<int64_t>(data, count, divisor);
    case DataType::kUint64: return divideInPlace<uint64_t>(data, count, divisor);
    default: return;
  }
}

}  // namespace

void accumulateFirst(DataType type, const void* src, void* acc, size_t count,
                     Fp32Accumulator fp32) {
  if (count == 0 || !isValidDataType(static_cast<uint32_t>(type))) return;
  if (accumulatesWidened(type, fp32)) {
    run({Pass::kFirst, type, ReduceOp::kSum, &src, 1, acc, count, 0, fp32});
  } else if (src != acc) {
    std::memmove(acc, src, count * dataTypeSize(type));
  }
}

void accumulate(DataType type, ReduceOp op, const void* src, void* acc, size_t count,
                Fp32Accumulator fp32) {
  if (count == 0 || !isValidReduceOp(static_cast<uint32_t>(op))) return;
  const void* inputs[2] = {acc, src};
  run({Pass::kAccumulate, type, op, inputs, 2, acc, count, 0, fp32});
}

void finalize(DataType type, ReduceOp op, const void* acc, void* dst, size_t count,
              uint32_t contributors, Fp32Accumulator fp32) {
  if (count == 0 || !isValidDataType(static_cast<uint32_t>(type)) ||
      !isValidReduceOp(static_cast<uint32_t>(op)))
    return;
  // Zero contributors has nothing to divide by; it leaves the sum as it is.
  const uint32_t divisor = op == ReduceOp::kAvg && contributors > 1 ? contributors : 0;
  if (accumulatesWidened(type, fp32) || (divisor != 0 && isFloatingPoint(type))) {
    run({Pass::kFinalize, type, ReduceOp::kSum, &acc, 1, dst, count, divisor, fp32});
    return;
  }
  if (dst != acc) std::memmove(dst, acc, count * dataTypeSize(type));
  if (divisor != 0) divideIntegers(type, dst, count, divisor);
}

bool finalizeIsIdentity(DataType type, ReduceOp op, Fp32Accumulator fp32) {
  return !accumulatesWidened(type, fp32) && op != ReduceOp::kAvg;
}

void reduceInputs(DataType type, ReduceOp op, const void* const* inputs, size_t ninputs, void* dst,
                  size_t count, Fp32Accumulator fp32) {
  if (count == 0 || ninputs == 0 || !isValidReduceOp(static_cast<uint32_t>(op))) return;
  const bool avg = op == ReduceOp::kAvg && ninputs > 1;
  const auto divisor = static_cast<uint32_t>(avg ? ninputs : 0);
  run({Pass::kReduce, type, op, inputs, ninputs, dst, count, isFloatingPoint(type) ? divisor : 0,
       fp32});
  if (avg && !isFloatingPoint(type)) divideIntegers(type, dst, count, divisor);
}

std::string activeTargetName() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(kernelTarget)()); }

std::vector<int64_t> runnableTargets() {
  // Cached on first use: while a target is forced, Highway reports only that one.
  static const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  return targets;
}

std::string targetName(int64_t target) { return hwy::TargetName(target); }

void forceTargetForTesting(int64_t target) {
  const auto targets = runnableTargets();
  if (target != 0 && std::find(targets.begin(), targets.end(), target) == targets.end()) return;
  hwy::SetSupportedTargetsForTest(target);
}

}  // namespace rs::reduce
#endif  // HWY_ONCE

// Reduction kernels: one type-erased entry point per SIMD target (compiled once per target via
// foreach_target.h), chosen at run time once per call by HWY_DYNAMIC_DISPATCH.
//
// Every public function is a fold over operands, elementwise, in input order:
//   out[i] = finish(op(...op(op(load0(in0[i]), load(in1[i])), load(in2[i]))...))
// where the codecs (reduce-inl.h) say how each operand is stored (wire type or fp32
// accumulator) and finish divides for avg. So there is one loop template, fold(), and the
// instantiations are per (lane type, op, codec triple): about fifty per target, not per
// (public function x dtype x op).

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/reduce/reduce.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/reduce/reduce.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "core/reduce/reduce-inl.h"

#ifndef RS_CORE_REDUCE_KERNEL_ARGS_
#define RS_CORE_REDUCE_KERNEL_ARGS_
namespace rs::reduce {
namespace {

// Which operands are in accumulator form; only matters for fp16/bf16, whose accumulator is fp32.
enum class Pass : uint8_t {
  kReduce,      // wire inputs -> wire output
  kAccumulate,  // inputs[0] is the accumulator (also the output), inputs[1] is wire
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

// One vector of the fold at element i.
template <class Op, class First, class Rest, class Out, class D>
HWY_INLINE void foldVector(D d, const KernelArgs& a, size_t i) {
  auto v = First::load(d, operand<First>(a, 0) + i);
  for (size_t k = 1; k < a.ninputs; ++k) v = Op::apply(v, Rest::load(d, operand<Rest>(a, k) + i));
  Out::store(d, finish(d, v, a.divisor), static_cast<typename Out::Stored*>(a.out) + i);
}

// The last count - i < Lanes(d) elements: staged through zero-padded aligned stack buffers so
// the same vector code runs once more. (Highway 1.0.3's one-lane float loads dereference a
// float pointer, undefined when misaligned, and its AVX2 MaskedLoad of 8/16-bit lanes reads
// the whole vector; neither may touch the caller's unaligned buffers.)
template <class Op, class First, class Rest, class Out, class D>
HWY_NOINLINE void foldTail(D d, const KernelArgs& a, size_t i) {
  constexpr size_t kMax = hn::MaxLanes(D());
  const size_t rest = a.count - i;
  HWY_ALIGN typename First::Stored first[kMax] = {};
  HWY_ALIGN typename Rest::Stored other[kMax] = {};
  HWY_ALIGN typename Out::Stored out[kMax];
  std::memcpy(first, operand<First>(a, 0) + i, rest * sizeof(first[0]));
  auto v = First::load(d, first);
  for (size_t k = 1; k < a.ninputs; ++k) {
    std::memcpy(other, operand<Rest>(a, k) + i, rest * sizeof(other[0]));
    v = Op::apply(v, Rest::load(d, other));
  }
  Out::store(d, finish(d, v, a.divisor), out);
  std::memcpy(static_cast<typename Out::Stored*>(a.out) + i, out, rest * sizeof(out[0]));
}

template <class Op, class First, class Rest, class Out>
HWY_NOINLINE void fold(const KernelArgs& a) {
  using T = typename Out::Lane;
  static_assert(std::is_same_v<T, typename First::Lane> && std::is_same_v<T, typename Rest::Lane>);
  const hn::ScalableTag<T> d;
  const size_t n = hn::Lanes(d);
  const size_t count = a.count;
  auto* out = static_cast<typename Out::Stored*>(a.out);
  const auto* in0 = operand<First>(a, 0);
  size_t i = 0;
  // Four independent vectors per step keep several loads per input in flight. Every load of a
  // step happens before its stores, so out may alias inputs[0] (in place, or narrowing fp32 to
  // 16 bits in place, where the stores trail the loads).
  if (count >= 4 * n) {
    for (; i <= count - 4 * n; i += 4 * n) {
      auto v0 = First::load(d, in0 + i);
      auto v1 = First::load(d, in0 + i + n);
      auto v2 = First::load(d, in0 + i + 2 * n);
      auto v3 = First::load(d, in0 + i + 3 * n);
      for (size_t k = 1; k < a.ninputs; ++k) {
        const auto* in = operand<Rest>(a, k) + i;
        v0 = Op::apply(v0, Rest::load(d, in));
        v1 = Op::apply(v1, Rest::load(d, in + n));
        v2 = Op::apply(v2, Rest::load(d, in + 2 * n));
        v3 = Op::apply(v3, Rest::load(d, in + 3 * n));
      }
      Out::store(d, finish(d, v0, a.divisor), out + i);
      Out::store(d, finish(d, v1, a.divisor), out + i + n);
      Out::store(d, finish(d, v2, a.divisor), out + i + 2 * n);
      Out::store(d, finish(d, v3, a.divisor), out + i + 3 * n);
    }
  }
  for (; i + n <= count; i += n) foldVector<Op, First, Rest, Out>(d, a, i);
  if (i < count) foldTail<Op, First, Rest, Out>(d, a, i);
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

template <class Wire>
void float32AccumulatedKernel(const KernelArgs& a) {
  using Acc = PlainCodec<float>;
  switch (a.pass) {
    case Pass::kReduce: return floatKernel<Wire, Wire, Wire>(a);
    case Pass::kAccumulate: return floatKernel<Acc, Wire, Acc>(a);
    case Pass::kFirst: return fold<SumOp, Wire, Wire, Acc>(a);
    case Pass::kFinalize: return fold<SumOp, Acc, Acc, Wire>(a);
  }
}

// The per-target entry point. Types other than fp16/bf16 accumulate in themselves, so for them
// every pass is the same fold.
void runKernel(const KernelArgs& a) {
  switch (a.type) {
    case DataType::kInt8: return integerKernel<int8_t>(a);
    case DataType::kUint8: return integerKernel<uint8_t>(a);
    case DataType::kInt32: return integerKernel<int32_t>(a);
    case DataType::kUint32: return integerKernel<uint32_t>(a);
    case DataType::kInt64: return integerKernel<int64_t>(a);
    case DataType::kUint64: return integerKernel<uint64_t>(a);
    case DataType::kFloat16: return float32AccumulatedKernel<HalfCodec>(a);
    case DataType::kBfloat16: return float32AccumulatedKernel<Bfloat16Codec>(a);
    case DataType::kFloat32:
      return floatKernel<PlainCodec<float>, PlainCodec<float>, PlainCodec<float>>(a);
    case DataType::kFloat64:
#if HWY_HAVE_FLOAT64
      return floatKernel<PlainCodec<double>, PlainCodec<double>, PlainCodec<double>>(a);
#else
      return;  // no target without fp64 lanes is built for a platform we run on
#endif
  }
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

void accumulateFirst(DataType type, const void* src, void* acc, size_t count) {
  if (count == 0 || !isValidDataType(static_cast<uint32_t>(type))) return;
  if (accumulatesInFloat32(type)) {
    run({Pass::kFirst, type, ReduceOp::kSum, &src, 1, acc, count, 0});
  } else if (src != acc) {
    std::memmove(acc, src, count * dataTypeSize(type));
  }
}

void accumulate(DataType type, ReduceOp op, const void* src, void* acc, size_t count) {
  if (count == 0 || !isValidReduceOp(static_cast<uint32_t>(op))) return;
  const void* inputs[2] = {acc, src};
  run({Pass::kAccumulate, type, op, inputs, 2, acc, count, 0});
}

void finalize(DataType type, ReduceOp op, const void* acc, void* dst, size_t count,
              uint32_t contributors) {
  if (count == 0 || !isValidDataType(static_cast<uint32_t>(type)) ||
      !isValidReduceOp(static_cast<uint32_t>(op)))
    return;
  // Zero contributors has nothing to divide by; it leaves the sum as it is.
  const uint32_t divisor = op == ReduceOp::kAvg && contributors > 1 ? contributors : 0;
  if (accumulatesInFloat32(type) || (divisor != 0 && isFloatingPoint(type))) {
    run({Pass::kFinalize, type, ReduceOp::kSum, &acc, 1, dst, count, divisor});
    return;
  }
  if (dst != acc) std::memmove(dst, acc, count * dataTypeSize(type));
  if (divisor != 0) divideIntegers(type, dst, count, divisor);
}

bool finalizeIsIdentity(DataType type, ReduceOp op) {
  return !accumulatesInFloat32(type) && op != ReduceOp::kAvg;
}

void reduceInputs(DataType type, ReduceOp op, const void* const* inputs, size_t ninputs, void* dst,
                  size_t count) {
  if (count == 0 || ninputs == 0 || !isValidReduceOp(static_cast<uint32_t>(op))) return;
  const bool avg = op == ReduceOp::kAvg && ninputs > 1;
  const auto divisor = static_cast<uint32_t>(avg ? ninputs : 0);
  run({Pass::kReduce, type, op, inputs, ninputs, dst, count, isFloatingPoint(type) ? divisor : 0});
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

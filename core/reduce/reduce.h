// Reduction kernels over user buffers, with runtime dispatch to the best SIMD target (Highway).
// No I/O and no allocation. Pointers need no alignment; counts may be any value, 0 included.
//
// The reducer sums while it receives: the first contribution to a slot initialises an
// accumulator, later ones are folded in piece by piece, and finalize() writes the wire-typed
// result once all contributions are in. The accumulator holds accumulatorSize(t) bytes per
// element: fp32 for fp16/bf16/fp8, and fp64 for fp32 where the group asks for it (`fp32`,
// dtype.h), each rounded once, to nearest even, in finalize; the type itself otherwise.
//
// Semantics: integers wrap modulo 2^bits for sum and prod; avg is sum / contributors (integer
// division truncates toward zero). Floating point follows IEEE 754: Inf and NaN propagate
// through sum/prod/avg, and max/min return NaN if any input is NaN (IEEE 754-2019 maximum /
// minimum, so a diverging gradient is never hidden). fp8 rounds as float8.h says: a finite
// result past the format's largest finite saturates to it, as NCCL's fp8 reductions do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/reduce/dtype.h"

namespace rs::reduce {

// acc[i] = widen(src[i]).
void accumulateFirst(DataType type, const void* src, void* acc, size_t count,
                     Fp32Accumulator fp32 = Fp32Accumulator::kFp32);

// acc[i] = op(acc[i], widen(src[i])). For kAvg this sums.
void accumulate(DataType type, ReduceOp op, const void* src, void* acc, size_t count,
                Fp32Accumulator fp32 = Fp32Accumulator::kFp32);

// dst[i] = narrow(acc[i]), divided by `contributors` for kAvg. dst may alias acc or trail it
// (dst < acc, overlapping): stores never overtake loads, so a part of an accumulator can be
// narrowed in place at its wire offset.
void finalize(DataType type, ReduceOp op, const void* acc, void* dst, size_t count,
              uint32_t contributors, Fp32Accumulator fp32 = Fp32Accumulator::kFp32);

// True when finalize() with dst == acc changes nothing, so the accumulator already holds the
// result in wire form and can be sent as it is (every op but avg on types that accumulate in
// themselves).
bool finalizeIsIdentity(DataType type, ReduceOp op,
                        Fp32Accumulator fp32 = Fp32Accumulator::kFp32);

// Fused: dst[i] = narrow(op over k of widen(inputs[k][i])), /ninputs for kAvg; fp16/bf16/fp8
// accumulate in fp32 (fp32 in fp64 with kFp64) and round once. ninputs >= 1. dst may alias
// inputs[0].
void reduceInputs(DataType type, ReduceOp op, const void* const* inputs, size_t ninputs,
                  void* dst, size_t count, Fp32Accumulator fp32 = Fp32Accumulator::kFp32);

// The SIMD target the kernels dispatch to now, e.g. "AVX3" or "AVX2".
std::string activeTargetName();

// Every target compiled into this binary that this CPU can run, best first, and a way to pin
// dispatch to one of them (tests and benchmarks compare targets). 0 restores the default.
std::vector<int64_t> runnableTargets();
std::string targetName(int64_t target);
void forceTargetForTesting(int64_t target);

}  // namespace rs::reduce

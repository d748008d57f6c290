// Element types and reduction operators. The numeric values equal NCCL's ncclDataType_t and
// ncclRedOp_t, so the plugin maps them without a table; they are also the wire encoding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rs {

enum class DataType : uint8_t {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8e4m3 = 10,  // OCP FP8 E4M3 ("E4M3FN"); semantics in float8.h
  kFloat8e5m2 = 11,  // OCP FP8 E5M2
};
inline constexpr int kNumDataTypes = 12;

enum class ReduceOp : uint8_t {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kAvg = 4,
};
inline constexpr int kNumReduceOps = 5;

inline constexpr bool isValidDataType(uint32_t v) { return v < kNumDataTypes; }
inline constexpr bool isValidReduceOp(uint32_t v) { return v < kNumReduceOps; }

// Bytes per element on the wire and in user buffers.
inline constexpr size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2: return 1;
    case DataType::kFloat16:
    case DataType::kBfloat16: return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64: return 8;
  }
  return 0;
}

// The accumulator of fp32 sums, a group's choice (RS_FP32_ACCUMULATOR). kFp32, the default:
// fp32 accumulates in itself and so rounds at each of W-1 adds, as a ring does (equal to it in
// distribution). kFp64: in fp64, rounded once at the end, as fp16/bf16 are in fp32; it beats
// the ring at every W but costs a reducer 13-21% more CPU per byte, for an accumulator twice
// the chunk (bench/RESULTS.md, "fp32 in an fp64 accumulator"), so it is opt-in.
enum class Fp32Accumulator : uint8_t { kFp32, kFp64 };
inline constexpr std::string_view fp32AccumulatorName(Fp32Accumulator a) {
  return a == Fp32Accumulator::kFp64 ? "fp64" : "fp32";
}
// The inverse of fp32AccumulatorName: "fp32" or "fp64".
inline constexpr std::optional<Fp32Accumulator> parseFp32Accumulator(std::string_view name) {
  if (name == "fp32") return Fp32Accumulator::kFp32;
  if (name == "fp64") return Fp32Accumulator::kFp64;
  return std::nullopt;
}

// NCCL's two 8-bit float formats (float8.h).
inline constexpr bool isFloat8(DataType t) {
  return t == DataType::kFloat8e4m3 || t == DataType::kFloat8e5m2;
}

// fp16, bf16 and fp8 accumulate in fp32 and are rounded once at the end; fp32 in fp64 where the
// group asks for it; every other type accumulates in itself (integers wrap modulo 2^bits, as
// NCCL's do; fp64 has nothing wider).
inline constexpr bool accumulatesInFloat32(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16 || isFloat8(t);
}
inline constexpr bool accumulatesInFloat64(DataType t, Fp32Accumulator fp32) {
  return t == DataType::kFloat32 && fp32 == Fp32Accumulator::kFp64;
}
// The accumulator is wider than the wire type: first, accumulate and finalize convert.
inline constexpr bool accumulatesWidened(DataType t, Fp32Accumulator fp32) {
  return accumulatesInFloat32(t) || accumulatesInFloat64(t, fp32);
}
inline constexpr size_t accumulatorSize(DataType t,
                                        Fp32Accumulator fp32 = Fp32Accumulator::kFp32) {
  return accumulatesInFloat32(t) ? 4 : accumulatesInFloat64(t, fp32) ? 8 : dataTypeSize(t);
}
inline constexpr bool isFloatingPoint(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64 || isFloat8(t);
}

// What one element counts for against a chunk's byte limit (the client's RS_MAX_CHUNK, the
// reducer's --max-chunk, a frame's maxPayloadBytes): its size, but at least half its
// accumulator, so that a chunk's accumulator never exceeds twice the limit, which the
// reducer's memory limit counts on (a floor of 2 x --max-chunk per chunk). Only fp8, whose fp32
// accumulator is four times the element, counts for more than its size: 2 bytes, so fp8 is
// chunked element for element as fp16 is.
inline constexpr size_t chunkBytesPerElement(DataType t) {
  const size_t size = dataTypeSize(t), half = accumulatorSize(t) / 2;
  return size > half ? size : half;
}

// Lower-case names as the benchmarks and logs print them: "int8", ..., "bf16", "fp8e4m3",
// "fp8e5m2"; "sum", ...
std::string_view dataTypeName(DataType t);
std::string_view reduceOpName(ReduceOp op);
std::optional<DataType> parseDataType(std::string_view name);
std::optional<ReduceOp> parseReduceOp(std::string_view name);

}  // namespace rs

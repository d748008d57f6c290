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
};
inline constexpr int kNumDataTypes = 10;

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
    case DataType::kUint8: return 1;
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

// fp16 and bf16 accumulate in fp32 and are rounded once at the end; every other type
// accumulates in itself (integers wrap modulo 2^bits, as NCCL's do).
inline constexpr bool accumulatesInFloat32(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16;
}
inline constexpr size_t accumulatorSize(DataType t) {
  return accumulatesInFloat32(t) ? 4 : dataTypeSize(t);
}
inline constexpr bool isFloatingPoint(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64;
}

// Lower-case names as the benchmarks and logs print them: "int8", ..., "bf16"; "sum", ...
std::string_view dataTypeName(DataType t);
std::string_view reduceOpName(ReduceOp op);
std::optional<DataType> parseDataType(std::string_view name);
std::optional<ReduceOp> parseReduceOp(std::string_view name);

}  // namespace rs

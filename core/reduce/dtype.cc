#include "core/reduce/dtype.h"

#include <array>

namespace rs {
namespace {
constexpr std::array<std::string_view, kNumDataTypes> kTypeNames = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "fp16", "fp32",  "fp64",  "bf16",   "fp8e4m3", "fp8e5m2"};
constexpr std::array<std::string_view, kNumReduceOps> kOpNames = {"sum", "prod", "max", "min",
                                                                  "avg"};
}  // namespace

std::string_view dataTypeName(DataType t) {
  auto i = static_cast<size_t>(t);
  return i < kTypeNames.size() ? kTypeNames[i] : "invalid";
}

std::string_view reduceOpName(ReduceOp op) {
  auto i = static_cast<size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : "invalid";
}

std::optional<DataType> parseDataType(std::string_view name) {
  for (size_t i = 0; i < kTypeNames.size(); ++i)
    if (kTypeNames[i] == name) return static_cast<DataType>(i);
  if (name == "float16" || name == "half") return DataType::kFloat16;
  if (name == "float32" || name == "float") return DataType::kFloat32;
  if (name == "float64" || name == "double") return DataType::kFloat64;
  if (name == "bfloat16") return DataType::kBfloat16;
  if (name == "float8e4m3" || name == "e4m3") return DataType::kFloat8e4m3;
  if (name == "float8e5m2" || name == "e5m2") return DataType::kFloat8e5m2;
  return std::nullopt;
}

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (size_t i = 0; i < kOpNames.size(); ++i)
    if (kOpNames[i] == name) return static_cast<ReduceOp>(i);
  return std::nullopt;
}

}  // namespace rs

#include "tests/support/verify_pattern.h"

#include <algorithm>
#include <cmath>

#include "core/reduce/float16.h"
#include "core/reduce/float8.h"

namespace rs::test {

double exactInput(int rank, uint64_t i, ReduceOp op) {
  // Products stay exact and small with factors 1 and 2 only.
  if (op == ReduceOp::kProd) return ((i + static_cast<uint64_t>(rank)) % 3 == 0) ? 2.0 : 1.0;
  return static_cast<double>((static_cast<uint64_t>(rank) * 5 + i * 3) % 11);
}

void storeAs(DataType t, void* buffer, uint64_t i, double v) {
  switch (t) {
    case DataType::kInt8: static_cast<int8_t*>(buffer)[i] = static_cast<int8_t>(v); break;
    case DataType::kUint8: static_cast<uint8_t*>(buffer)[i] = static_cast<uint8_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(buffer)[i] = static_cast<int32_t>(v); break;
    case DataType::kUint32: static_cast<uint32_t*>(buffer)[i] = static_cast<uint32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(buffer)[i] = static_cast<int64_t>(v); break;
    case DataType::kUint64: static_cast<uint64_t*>(buffer)[i] = static_cast<uint64_t>(v); break;
    case DataType::kFloat16:
      static_cast<uint16_t*>(buffer)[i] = reduce::floatToHalf(static_cast<float>(v));
      break;
    case DataType::kBfloat16:
      static_cast<uint16_t*>(buffer)[i] = reduce::floatToBfloat16(static_cast<float>(v));
      break;
    case DataType::kFloat32: static_cast<float*>(buffer)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(buffer)[i] = v; break;
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2:
      static_cast<uint8_t*>(buffer)[i] = reduce::roundToFloat8(v, reduce::float8Format(t));
      break;
  }
}

double loadAs(DataType t, const void* buffer, uint64_t i) {
  switch (t) {
    case DataType::kInt8: return static_cast<const int8_t*>(buffer)[i];
    case DataType::kUint8: return static_cast<const uint8_t*>(buffer)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(buffer)[i];
    case DataType::kUint32: return static_cast<const uint32_t*>(buffer)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(buffer)[i]);
    case DataType::kUint64: return static_cast<double>(static_cast<const uint64_t*>(buffer)[i]);
    case DataType::kFloat16:
      return reduce::halfToFloat(static_cast<const uint16_t*>(buffer)[i]);
    case DataType::kBfloat16:
      return reduce::bfloat16ToFloat(static_cast<const uint16_t*>(buffer)[i]);
    case DataType::kFloat32: return static_cast<const float*>(buffer)[i];
    case DataType::kFloat64: return static_cast<const double*>(buffer)[i];
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2:
      return reduce::float8ToFloat(static_cast<const uint8_t*>(buffer)[i], reduce::float8Format(t));
  }
  return NAN;
}

// v as a member holds it in type t: itself, but for fp8, which rounds some of the inputs
// (E5M2 holds the integers to 8 exactly, E4M3 to 16).
double asStored(DataType t, double v) {
  if (!isFloat8(t)) return v;
  uint8_t b = 0;
  storeAs(t, &b, 0, v);
  return loadAs(t, &b, 0);
}

double expectedResult(DataType t, ReduceOp op, int world, uint64_t i) {
  double acc = asStored(t, exactInput(0, i, op));
  for (int r = 1; r < world; ++r) {
    double v = asStored(t, exactInput(r, i, op));
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: acc += v; break;
      case ReduceOp::kProd: acc *= v; break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
    }
  }
  if (op == ReduceOp::kAvg) {
    if (isFloatingPoint(t)) {
      // The reducer divides in the accumulator type and rounds once to the wire type.
      double q = acc / world;
      double stored = 0;
      storeAs(t, &stored, 0, q);
      return loadAs(t, &stored, 0);
    }
    return std::trunc(acc / world);
  }
  // fp8 sums and products are exact in the fp32 accumulator and rounded once to the type.
  return asStored(t, acc);
}

}  // namespace rs::test

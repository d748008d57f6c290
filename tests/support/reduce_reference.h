// The semantics of core/reduce/reduce.h one element at a time, for tests that check a kernel's
// or its callers' results bit for bit: the element kinds of every type (wire and accumulator
// types and their conversions), a reference that folds inputs in order, a comparison that
// names the first differing element, and random inputs that make sums round.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/reduce/dtype.h"
#include "core/reduce/float16.h"
#include "core/reduce/float8.h"

namespace rs::test {

using reduce::bfloat16ToFloat;
using reduce::float8Format;
using reduce::float8ToFloat;
using reduce::floatToBfloat16;
using reduce::floatToFloat8;
using reduce::floatToHalf;
using reduce::halfToFloat;

inline constexpr DataType kAllTypes[] = {
    DataType::kInt8,    DataType::kUint8,      DataType::kInt32,     DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,     DataType::kFloat16,   DataType::kFloat32,
    DataType::kFloat64, DataType::kBfloat16,   DataType::kFloat8e4m3, DataType::kFloat8e5m2};
inline constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax,
                                       ReduceOp::kMin, ReduceOp::kAvg};

// ---- Element kinds: wire type, accumulator type and the conversions between them.
template <typename T>
struct Plain {
  using Wire = T;
  using Acc = T;
  static T widen(T v) { return v; }
  static T narrow(T v) { return v; }
};
struct Half {
  using Wire = uint16_t;
  using Acc = float;
  static float widen(uint16_t h) { return halfToFloat(h); }
  static uint16_t narrow(float f) { return floatToHalf(f); }
};
struct Bfloat16 {
  using Wire = uint16_t;
  using Acc = float;
  static float widen(uint16_t b) { return bfloat16ToFloat(b); }
  static uint16_t narrow(float f) { return floatToBfloat16(f); }
};
template <DataType kType>
struct Float8 {
  using Wire = uint8_t;
  using Acc = float;
  static float widen(uint8_t b) { return float8ToFloat(b, float8Format(kType)); }
  static uint8_t narrow(float f) { return floatToFloat8(f, float8Format(kType)); }
};

// fp32 in the group's fp64 accumulator (RS_FP32_ACCUMULATOR=fp64): summed in fp64, rounded once.
struct Float32InDouble {
  using Wire = float;
  using Acc = double;
  static double widen(float v) { return v; }
  static float narrow(double v) { return static_cast<float>(v); }
};

template <class F>
void visitType(DataType t, F&& f) {
  switch (t) {
    case DataType::kInt8: return f(Plain<int8_t>{});
    case DataType::kUint8: return f(Plain<uint8_t>{});
    case DataType::kInt32: return f(Plain<int32_t>{});
    case DataType::kUint32: return f(Plain<uint32_t>{});
    case DataType::kInt64: return f(Plain<int64_t>{});
    case DataType::kUint64: return f(Plain<uint64_t>{});
    case DataType::kFloat16: return f(Half{});
    case DataType::kFloat32: return f(Plain<float>{});
    case DataType::kFloat64: return f(Plain<double>{});
    case DataType::kBfloat16: return f(Bfloat16{});
    case DataType::kFloat8e4m3: return f(Float8<DataType::kFloat8e4m3>{});
    case DataType::kFloat8e5m2: return f(Float8<DataType::kFloat8e5m2>{});
  }
}
// The kind that accumulates as a group with accumulator `fp32` does.
template <class F>
void visitType(DataType t, Fp32Accumulator fp32, F&& f) {
  if (accumulatesInFloat64(t, fp32)) return f(Float32InDouble{});
  visitType(t, std::forward<F>(f));
}

// ---- The reference: the semantics of reduce.h, one element at a time.
template <typename A>
A refApply(ReduceOp op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;  // wraps, with no signed overflow
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
      case ReduceOp::kProd: return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
      case ReduceOp::kMax: return a < b ? b : a;
      case ReduceOp::kMin: return b < a ? b : a;
    }
  } else {
    const bool nan = std::isnan(a) || std::isnan(b);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return a + b;
      case ReduceOp::kProd: return a * b;
      case ReduceOp::kMax: return nan ? std::numeric_limits<A>::quiet_NaN() : (a < b ? b : a);
      case ReduceOp::kMin: return nan ? std::numeric_limits<A>::quiet_NaN() : (b < a ? b : a);
    }
  }
  return a;
}

template <typename A>
A refDivide(A sum, uint64_t n) {
  if constexpr (std::is_integral_v<A>) {
    using Wide = std::conditional_t<std::is_signed_v<A>, int64_t, uint64_t>;
    return static_cast<A>(static_cast<Wide>(sum) / static_cast<Wide>(n));
  } else {
    return sum / static_cast<A>(n);
  }
}

template <typename T>
T loadAt(const uint8_t* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void storeAt(uint8_t* p, size_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

// out = narrow(op over inputs, in order; / n for avg), wire bytes.
inline std::vector<uint8_t> reference(DataType type, ReduceOp op,
                                      const std::vector<const uint8_t*>& in, size_t count,
                                      Fp32Accumulator fp32 = Fp32Accumulator::kFp32) {
  std::vector<uint8_t> out(count * dataTypeSize(type));
  visitType(type, fp32, [&](auto kind) {
    using K = decltype(kind);
    using W = typename K::Wire;
    for (size_t i = 0; i < count; ++i) {
      auto acc = K::widen(loadAt<W>(in[0], i));
      for (size_t k = 1; k < in.size(); ++k) acc = refApply(op, acc, K::widen(loadAt<W>(in[k], i)));
      if (op == ReduceOp::kAvg) acc = refDivide(acc, in.size());
      storeAt(out.data(), i, K::narrow(acc));
    }
  });
  return out;
}

// "" when equal; else where and what differs.
inline std::string mismatch(DataType type, ReduceOp op, const uint8_t* got,
                            const uint8_t* want, size_t count) {
  std::string result;
  visitType(type, [&](auto kind) {
    using K = decltype(kind);
    using W = typename K::Wire;
    for (size_t i = 0; i < count && result.empty(); ++i) {
      const W g = loadAt<W>(got, i);
      const W w = loadAt<W>(want, i);
      bool same = std::memcmp(&g, &w, sizeof(W)) == 0;
      if constexpr (std::is_floating_point_v<typename K::Acc>) {
        const auto gv = K::widen(g);
        const auto wv = K::widen(w);
        if (std::isnan(gv) && std::isnan(wv)) same = true;
        if ((op == ReduceOp::kMax || op == ReduceOp::kMin) && gv == wv) same = true;  // +-0
      }
      if (!same) {
        std::ostringstream s;
        s << dataTypeName(type) << " " << reduceOpName(op) << ": element " << i << " of " << count
          << " is " << +K::widen(g) << ", expected " << +K::widen(w);
        result = s.str();
      }
    }
  });
  return result;
}

// Random wire values: integers over their whole range (sums wrap), floats of mixed magnitude so
// that additions round.
inline void fillRandom(DataType type, uint8_t* p, size_t count, std::mt19937_64& rng) {
  visitType(type, [&](auto kind) {
    using K = decltype(kind);
    using W = typename K::Wire;
    using A = typename K::Acc;
    for (size_t i = 0; i < count; ++i) {
      if constexpr (std::is_integral_v<A>) {
        storeAt(p, i, static_cast<W>(rng()));
      } else {
        const uint64_t r = rng();
        const A frac = static_cast<A>(r >> 11) * static_cast<A>(0x1p-53);
        const A v = std::ldexp(1 + frac, static_cast<int>((r >> 1) % 9) - 4);
        storeAt(p, i, K::narrow((r & 1) ? -v : v));
      }
    }
  });
}

}  // namespace rs::test

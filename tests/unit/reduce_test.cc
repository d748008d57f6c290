// Reduction kernels against a scalar reference that folds in the same order, so results must be
// bit-exact (NaN == NaN, and -0 == +0 for max/min), on every SIMD target this CPU can run.
#include "core/reduce/reduce.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/reduce/float16.h"
#include "core/reduce/float8.h"
#include "tests/support/for_each_target.h"
#include "tests/support/reduce_reference.h"

namespace rs::reduce {
namespace {

using namespace rs::test;  // the scalar reference (reduce_reference.h), forEachTarget
using rs::test::reference;  // overloaded below for Buffers

constexpr DataType kFloat8Types[] = {DataType::kFloat8e4m3, DataType::kFloat8e5m2};
// Around every vector width (1..64 lanes) and the 4-vector unrolled step, plus odd sizes.
constexpr size_t kLengths[] = {0,  1,  2,  3,  4,  5,   7,   8,   9,   15,  16,  17,  31,
                               32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1031};

// A byte buffer whose data starts `offset` bytes into its allocation, sized exactly (so ASan
// sees any overrun), optionally followed by canary bytes that must survive.
class Buffer {
 public:
  Buffer(size_t bytes, size_t offset, size_t canary = 0)
      : bytes_(offset + bytes + canary, 0xA5), offset_(offset), size_(bytes), canary_(canary) {}
  uint8_t* data() { return bytes_.data() + offset_; }
  const uint8_t* data() const { return bytes_.data() + offset_; }
  size_t size() const { return size_; }
  bool canaryIntact() const {
    for (size_t i = 0; i < canary_; ++i)
      if (bytes_[offset_ + size_ + i] != 0xA5) return false;
    return true;
  }

 private:
  std::vector<uint8_t> bytes_;
  size_t offset_, size_, canary_;
};

// Both ways the reducer can compute a result: reduceInputs (fused) and accumulateFirst +
// accumulate + finalize. The finalize either writes to a separate buffer or in place.
enum class Path { kFused, kFusedInPlace, kAccumulate, kAccumulateInPlace };
constexpr Path kAllPaths[] = {Path::kFused, Path::kFusedInPlace, Path::kAccumulate,
                              Path::kAccumulateInPlace};
const char* pathName(Path p) {
  switch (p) {
    case Path::kFused: return "reduceInputs";
    case Path::kFusedInPlace: return "reduceInputs into inputs[0]";
    case Path::kAccumulate: return "accumulate+finalize";
    case Path::kAccumulateInPlace: return "accumulate+finalize into acc";
  }
  return "?";
}

std::vector<uint8_t> reference(DataType type, ReduceOp op, const std::vector<Buffer>& inputs,
                               size_t count) {
  std::vector<const uint8_t*> in;
  for (const auto& b : inputs) in.push_back(b.data());
  return reference(type, op, in, count);
}

// Runs one path over wire inputs of `count` elements; returns "" when the result equals `want`.
std::string runPath(Path path, DataType type, ReduceOp op, const std::vector<Buffer>& inputs,
                    size_t count, size_t offset, const std::vector<uint8_t>& want) {
  const size_t wire = count * dataTypeSize(type);
  constexpr size_t kCanary = 16;
  std::vector<const uint8_t*> in;
  for (const auto& b : inputs) in.push_back(b.data());
  std::vector<const void*> ptrs(in.begin(), in.end());
  Buffer out(wire, offset, kCanary);
  const uint8_t* result = out.data();
  bool intact = true;
  switch (path) {
    case Path::kFused: reduceInputs(type, op, ptrs.data(), ptrs.size(), out.data(), count); break;
    case Path::kFusedInPlace: {
      Buffer first(wire, offset, kCanary);
      if (wire != 0) std::memcpy(first.data(), in[0], wire);
      ptrs[0] = first.data();
      reduceInputs(type, op, ptrs.data(), ptrs.size(), first.data(), count);
      std::memcpy(out.data(), first.data(), wire);
      intact = first.canaryIntact();
      break;
    }
    case Path::kAccumulate:
    case Path::kAccumulateInPlace: {
      Buffer acc(count * accumulatorSize(type), offset, kCanary);
      accumulateFirst(type, in[0], acc.data(), count);
      for (size_t k = 1; k < in.size(); ++k) accumulate(type, op, in[k], acc.data(), count);
      const auto n = static_cast<uint32_t>(in.size());
      if (path == Path::kAccumulate) {
        finalize(type, op, acc.data(), out.data(), count, n);
      } else {
        finalize(type, op, acc.data(), acc.data(), count, n);
        std::memcpy(out.data(), acc.data(), wire);
      }
      intact = acc.canaryIntact();
      break;
    }
  }
  if (!intact || !out.canaryIntact()) return "wrote past the end";
  return mismatch(type, op, result, want.data(), count);
}

// Runs reduceInputs and returns the wire result (fp32 in `fp32`'s accumulator).
template <typename T>
std::vector<T> fusedWith(Fp32Accumulator fp32, DataType type, ReduceOp op,
                         const std::vector<std::vector<T>>& values) {
  std::vector<const void*> in;
  for (const auto& v : values) in.push_back(v.data());
  std::vector<T> out(values[0].size());
  reduceInputs(type, op, in.data(), in.size(), out.data(), out.size(), fp32);
  return out;
}
template <typename T>
std::vector<T> fused(DataType type, ReduceOp op, const std::vector<std::vector<T>>& values) {
  return fusedWith(Fp32Accumulator::kFp32, type, op, values);
}

// Runs accumulateFirst + accumulate + finalize and returns the wire result (fp32 in `fp32`'s
// accumulator).
template <typename T>
std::vector<T> accumulatedWith(Fp32Accumulator fp32, DataType type, ReduceOp op,
                               const std::vector<std::vector<T>>& values) {
  const size_t count = values[0].size();
  std::vector<uint8_t> acc(count * accumulatorSize(type, fp32));
  accumulateFirst(type, values[0].data(), acc.data(), count, fp32);
  for (size_t k = 1; k < values.size(); ++k)
    accumulate(type, op, values[k].data(), acc.data(), count, fp32);
  std::vector<T> out(count);
  finalize(type, op, acc.data(), out.data(), count, static_cast<uint32_t>(values.size()), fp32);
  return out;
}
template <typename T>
std::vector<T> accumulated(DataType type, ReduceOp op, const std::vector<std::vector<T>>& values) {
  return accumulatedWith(Fp32Accumulator::kFp32, type, op, values);
}

// ---- Scalar conversions (the reference's own reference).

TEST_CASE("reduce: float16 every half widens exactly and narrows back to itself") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = halfToFloat(static_cast<uint16_t>(h));
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (nan) {
      REQUIRE(std::isnan(f));
      REQUIRE(floatToHalf(f) == (h | 0x200));  // quieted, payload kept
      continue;
    }
    // Independent value: sign * mant * 2^(exp - 25), with the implicit bit for normals.
    const int exp = static_cast<int>((h >> 10) & 0x1F);
    const double mant = (h & 0x3FF) + (exp != 0 ? 1024 : 0);
    double want = exp == 31 ? INFINITY : std::ldexp(mant, (exp != 0 ? exp : 1) - 25);
    if (h & 0x8000) want = -want;
    REQUIRE(static_cast<double>(f) == want);
    REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));
    REQUIRE(floatToHalf(f) == h);
  }
}

TEST_CASE("reduce: float16 narrowing rounds to nearest, ties to even, overflow to Inf") {
  // Between each pair of neighbouring finite halves: the midpoint goes to the even one, and
  // anything off the midpoint goes to the nearer one.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double lo = halfToFloat(static_cast<uint16_t>(h));
    const double hi = halfToFloat(static_cast<uint16_t>(h + 1));
    const auto mid = static_cast<float>((lo + hi) / 2);  // exact in fp32
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    REQUIRE(floatToHalf(mid) == even);
    REQUIRE(floatToHalf(-mid) == (even | 0x8000));
    REQUIRE(floatToHalf(std::nextafter(mid, 0.0f)) == h);
    REQUIRE(floatToHalf(std::nextafter(mid, INFINITY)) == h + 1);
  }
  REQUIRE(floatToHalf(65504.0f) == 0x7BFF);
  REQUIRE(floatToHalf(65519.99f) == 0x7BFF);
  REQUIRE(floatToHalf(65520.0f) == 0x7C00);
  REQUIRE(floatToHalf(-1e30f) == 0xFC00);
  REQUIRE(floatToHalf(0x1p-25f) == 0);                        // tie with 0: even
  REQUIRE(floatToHalf(std::nextafter(0x1p-25f, 1.0f)) == 1);  // just above: smallest subnormal
  REQUIRE(floatToHalf(-0x1p-26f) == 0x8000);
  REQUIRE(floatToHalf(std::numeric_limits<float>::denorm_min()) == 0);
}

TEST_CASE("reduce: float16 bfloat16 rounds to nearest even and keeps NaN") {
  for (uint32_t b = 0; b < 0x7F7F; ++b) {
    const float lo = bfloat16ToFloat(static_cast<uint16_t>(b));
    const float hi = bfloat16ToFloat(static_cast<uint16_t>(b + 1));
    REQUIRE(floatToBfloat16(lo) == b);
    const float mid = floatFromBits((floatBits(lo) + floatBits(hi)) / 2);  // same exponent/binade
    const uint16_t even = (b & 1) ? static_cast<uint16_t>(b + 1) : static_cast<uint16_t>(b);
    REQUIRE(floatToBfloat16(mid) == even);
    REQUIRE(floatToBfloat16(std::nextafter(mid, 0.0f)) == b);
    REQUIRE(floatToBfloat16(std::nextafter(mid, INFINITY)) == b + 1);
  }
  REQUIRE(floatToBfloat16(std::numeric_limits<float>::max()) == 0x7F80);  // rounds up to Inf
  REQUIRE(floatToBfloat16(-INFINITY) == 0xFF80);
  // A NaN whose payload sits only in the low 16 bits must not truncate to Inf.
  REQUIRE(floatToBfloat16(floatFromBits(0x7F800001u)) == 0x7FC0);
  REQUIRE(std::isnan(bfloat16ToFloat(floatToBfloat16(floatFromBits(0xFF800001u)))));
}

// ---- Kernels against the reference.

TEST_CASE("reduce: targets are listed, named and can be forced") {
  const auto targets = runnableTargets();
  REQUIRE(!targets.empty());
  const std::string best = activeTargetName();
  REQUIRE(best == targetName(targets.front()));
  for (int64_t t : targets) {
    forceTargetForTesting(t);
    CHECK(activeTargetName() == targetName(t));
  }
  forceTargetForTesting(0);
  REQUIRE(activeTargetName() == best);
  REQUIRE(runnableTargets() == targets);
}

TEST_CASE("reduce: every type and op matches the reference, on every target and path") {
  std::mt19937_64 rng(42);
  forEachTarget([&] {
    for (DataType type : kAllTypes) {
      for (size_t ninputs : {1, 2, 5}) {
        for (size_t count : kLengths) {
          for (size_t offset : {0, 1}) {  // 1: every multi-byte element is misaligned
            std::vector<Buffer> inputs;
            for (size_t k = 0; k < ninputs; ++k) {
              inputs.emplace_back(count * dataTypeSize(type), offset);
              fillRandom(type, inputs.back().data(), count, rng);
            }
            for (ReduceOp op : kAllOps) {
              const auto want = reference(type, op, inputs, count);
              for (Path path : kAllPaths) {
                INFO(pathName(path) << ", " << ninputs << " inputs, offset " << offset);
                const std::string bad = runPath(path, type, op, inputs, count, offset, want);
                if (!bad.empty()) FAIL(bad);
              }
            }
          }
        }
      }
    }
  });
}

TEST_CASE("reduce: large odd sizes") {
  std::mt19937_64 rng(7);
  constexpr size_t kCount = 10'007;
  forEachTarget([&] {
    for (DataType type : {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16,
                          DataType::kInt32, DataType::kUint8, DataType::kFloat64,
                          DataType::kFloat8e4m3, DataType::kFloat8e5m2}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kAvg}) {
        std::vector<Buffer> inputs;
        for (size_t k = 0; k < 4; ++k) {
          inputs.emplace_back(kCount * dataTypeSize(type), 1);
          fillRandom(type, inputs.back().data(), kCount, rng);
        }
        const auto want = reference(type, op, inputs, kCount);
        for (Path path : {Path::kFused, Path::kAccumulateInPlace}) {
          INFO(pathName(path));
          CHECK(runPath(path, type, op, inputs, kCount, 1, want) == "");
        }
      }
    }
  });
}

TEST_CASE("reduce: many inputs (folded in groups over blocks) match the reference") {
  std::mt19937_64 rng(9);
  // 9: two groups; 17: first, middle and last group. 3001 elements span two blocks of fp32.
  forEachTarget([&] {
    for (DataType type : kAllTypes) {
      for (size_t ninputs : {9, 17}) {
        for (size_t count : {5, 3001}) {
          std::vector<Buffer> inputs;
          for (size_t k = 0; k < ninputs; ++k) {
            inputs.emplace_back(count * dataTypeSize(type), 1);
            fillRandom(type, inputs.back().data(), count, rng);
          }
          for (ReduceOp op : kAllOps) {
            const auto want = reference(type, op, inputs, count);
            for (Path path : {Path::kFused, Path::kFusedInPlace}) {
              INFO(pathName(path) << ", " << ninputs << " inputs");
              CHECK(runPath(path, type, op, inputs, count, 1, want) == "");
            }
          }
        }
      }
    }
    // int8 blocks hold 8192 elements: cross one.
    std::vector<Buffer> inputs;
    for (size_t k = 0; k < 10; ++k) {
      inputs.emplace_back(10'007, 1);
      fillRandom(DataType::kInt8, inputs.back().data(), 10'007, rng);
    }
    const auto want = reference(DataType::kInt8, ReduceOp::kAvg, inputs, 10'007);
    CHECK(runPath(Path::kFused, DataType::kInt8, ReduceOp::kAvg, inputs, 10'007, 1, want) == "");
  });
}

TEST_CASE("reduce: zero elements touches nothing, even with null pointers") {
  forEachTarget([] {
    for (DataType type : kAllTypes) {
      for (ReduceOp op : kAllOps) {
        const void* in[2] = {nullptr, nullptr};
        reduceInputs(type, op, in, 2, nullptr, 0);
        accumulateFirst(type, nullptr, nullptr, 0);
        accumulate(type, op, nullptr, nullptr, 0);
        finalize(type, op, nullptr, nullptr, 0, 3);
      }
    }
  });
}

TEST_CASE("reduce: Inf and NaN follow IEEE 754") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Special values at positions that land in the unrolled body, the single-vector loop and the
  // tail for every width; ordinary numbers elsewhere.
  forEachTarget([&] {
    for (DataType type :
         {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBfloat16,
          DataType::kFloat8e4m3, DataType::kFloat8e5m2}) {
      const std::vector<std::pair<float, float>> cases = {
          {inf, -inf}, {inf, 2.0f}, {-inf, 0.0f},  {nan, 1.0f},   {1.0f, nan},
          {nan, -inf}, {inf, inf},  {-inf, -2.0f}, {0.0f, -0.0f}, {-0.0f, 0.0f}};
      constexpr size_t kCount = 301;
      for (ReduceOp op : kAllOps) {
        std::vector<Buffer> inputs;
        for (size_t k = 0; k < 2; ++k) inputs.emplace_back(kCount * dataTypeSize(type), 1);
        visitType(type, [&](auto kind) {
          using K = decltype(kind);
          using A = typename K::Acc;
          for (size_t i = 0; i < kCount; ++i) {
            const auto& c = cases[i % cases.size()];
            storeAt(inputs[0].data(), i, K::narrow(static_cast<A>(c.first)));
            storeAt(inputs[1].data(), i, K::narrow(static_cast<A>(c.second)));
          }
        });
        const auto want = reference(type, op, inputs, kCount);
        for (Path path : kAllPaths) {
          INFO(pathName(path));
          CHECK(runPath(path, type, op, inputs, kCount, 1, want) == "");
        }
      }
    }
    // The reference itself, on fp32 and bf16, both paths.
    const std::vector<std::vector<float>> in = {{inf, nan, 1.0f, inf, 0.0f, inf},
                                                {-inf, 1.0f, nan, 2.0f, inf, inf}};
    for (auto run : {fused<float>, accumulated<float>}) {
      const auto sum = run(DataType::kFloat32, ReduceOp::kSum, in);
      CHECK(std::isnan(sum[0]));  // Inf + -Inf
      CHECK(std::isnan(sum[1]));
      CHECK(std::isnan(sum[2]));
      CHECK(sum[3] == inf);
      const auto max = run(DataType::kFloat32, ReduceOp::kMax, in);
      CHECK(std::isnan(max[1]));  // NaN first
      CHECK(std::isnan(max[2]));  // NaN second: x86 maxps alone would return 1
      CHECK(max[0] == inf);
      const auto min = run(DataType::kFloat32, ReduceOp::kMin, in);
      CHECK(std::isnan(min[1]));
      CHECK(std::isnan(min[2]));
      CHECK(min[0] == -inf);
      const auto prod = run(DataType::kFloat32, ReduceOp::kProd, in);
      CHECK(prod[3] == inf);       // Inf * 2
      CHECK(std::isnan(prod[4]));  // 0 * Inf
      CHECK(prod[5] == inf);
    }
    const uint16_t bf_inf = 0x7F80, bf_one = 0x3F80, bf_nan = 0x7FC1;
    const std::vector<std::vector<uint16_t>> bf = {{bf_inf, bf_nan, bf_one},
                                                   {uint16_t(bf_inf | 0x8000), bf_one, bf_nan}};
    for (auto run : {fused<uint16_t>, accumulated<uint16_t>}) {
      const auto sum = run(DataType::kBfloat16, ReduceOp::kSum, bf);
      for (uint16_t v : sum) CHECK(std::isnan(bfloat16ToFloat(v)));
      const auto max = run(DataType::kBfloat16, ReduceOp::kMax, bf);
      CHECK(max[0] == bf_inf);
      CHECK(std::isnan(bfloat16ToFloat(max[1])));
      CHECK(std::isnan(bfloat16ToFloat(max[2])));
    }
  });
}

TEST_CASE("reduce: fp16 and bf16 accumulate in fp32 and round once, to nearest even") {
  forEachTarget([] {
    // bf16 keeps 8 significant bits: the ulp at 1 is 2^-7.
    const uint16_t one = floatToBfloat16(1.0f);
    const uint16_t small = floatToBfloat16(0x1p-9f);  // a quarter ulp
    // Rounding per step would leave 1 each time; the fp32 sum 1 + 3 * 2^-9 rounds up.
    const std::vector<std::vector<uint16_t>> bf = {{one}, {small}, {small}, {small}};
    const std::vector<std::vector<uint16_t>> bf_tie = {
        {one, floatToBfloat16(1.0f + 0x1p-7f)},
        {floatToBfloat16(0x1p-8f), floatToBfloat16(0x1p-8f)}};
    for (auto run : {fused<uint16_t>, accumulated<uint16_t>}) {
      CHECK(run(DataType::kBfloat16, ReduceOp::kSum, bf)[0] == floatToBfloat16(1.0f + 0x1p-7f));
      const auto tie = run(DataType::kBfloat16, ReduceOp::kSum, bf_tie);
      CHECK(tie[0] == one);                              // 1 + half ulp: tie to even (down)
      CHECK(tie[1] == floatToBfloat16(1.0f + 0x1p-6f));  // odd + half ulp: tie to even (up)
      CHECK(bfloat16ToFloat(tie[1]) == 1.0f + 0x1p-6f);
    }
    // fp16 keeps 11 significant bits: the ulp at 1 is 2^-10.
    const uint16_t h_one = floatToHalf(1.0f);
    const uint16_t h_small = floatToHalf(0x1p-12f);
    const std::vector<std::vector<uint16_t>> h = {{h_one}, {h_small}, {h_small}, {h_small}};
    const std::vector<std::vector<uint16_t>> h_tie = {
        {h_one, floatToHalf(1.0f + 0x1p-10f)}, {floatToHalf(0x1p-11f), floatToHalf(0x1p-11f)}};
    for (auto run : {fused<uint16_t>, accumulated<uint16_t>}) {
      CHECK(halfToFloat(run(DataType::kFloat16, ReduceOp::kSum, h)[0]) == 1.0f + 0x1p-10f);
      const auto tie = run(DataType::kFloat16, ReduceOp::kSum, h_tie);
      CHECK(halfToFloat(tie[0]) == 1.0f);
      CHECK(halfToFloat(tie[1]) == 1.0f + 0x1p-9f);
      // fp32 sums past 65504 become Inf; halves' subnormals survive the round trip.
      const std::vector<std::vector<uint16_t>> big = {{floatToHalf(60000.0f), 0x0001},
                                                      {floatToHalf(60000.0f), 0x0001}};
      const auto r = run(DataType::kFloat16, ReduceOp::kSum, big);
      CHECK(r[0] == 0x7C00);
      CHECK(r[1] == 0x0002);
    }
    // avg divides the fp32 sum, then rounds once: (1 + 1 + 2^-9) / 3 in bf16.
    const std::vector<std::vector<uint16_t>> avg = {{one}, {one}, {small}};
    for (auto run : {fused<uint16_t>, accumulated<uint16_t>})
      CHECK(run(DataType::kBfloat16, ReduceOp::kAvg, avg)[0] ==
            floatToBfloat16((1.0f + 1.0f + 0x1p-9f) / 3.0f));
  });
}

TEST_CASE("reduce: integers wrap and avg truncates toward zero") {
  forEachTarget([] {
    for (auto run : {fused<int8_t>, accumulated<int8_t>}) {
      CHECK(run(DataType::kInt8, ReduceOp::kSum, {{100, -100, -128}, {100, -100, -1}}) ==
            std::vector<int8_t>{-56, 56, 127});
      CHECK(run(DataType::kInt8, ReduceOp::kProd, {{16, -3, 127}, {16, 5, 2}}) ==
            std::vector<int8_t>{0, -15, -2});
      CHECK(run(DataType::kInt8, ReduceOp::kAvg, {{-7, 7, 100}, {2, 2, 100}}) ==
            std::vector<int8_t>{-2, 4, -28});  // (-5)/2, 9/2, wrapped 200 = -56, /2
      CHECK(run(DataType::kInt8, ReduceOp::kMax, {{-1, 5}, {-2, -128}}) ==
            std::vector<int8_t>{-1, 5});
    }
    for (auto run : {fused<uint8_t>, accumulated<uint8_t>}) {
      CHECK(run(DataType::kUint8, ReduceOp::kSum, {{200, 255}, {100, 1}}) ==
            std::vector<uint8_t>{44, 0});
      CHECK(run(DataType::kUint8, ReduceOp::kMin, {{200, 0}, {100, 255}}) ==
            std::vector<uint8_t>{100, 0});
    }
    const int32_t imax = std::numeric_limits<int32_t>::max();
    const int32_t imin = std::numeric_limits<int32_t>::min();
    for (auto run : {fused<int32_t>, accumulated<int32_t>}) {
      CHECK(run(DataType::kInt32, ReduceOp::kSum, {{imax, imin}, {1, -1}}) ==
            std::vector<int32_t>{imin, imax});
      CHECK(run(DataType::kInt32, ReduceOp::kProd, {{65536, imin}, {65536, -1}}) ==
            std::vector<int32_t>{0, imin});
      CHECK(run(DataType::kInt32, ReduceOp::kAvg, {{-9, imax}, {0, 0}, {0, 0}}) ==
            std::vector<int32_t>{-3, imax / 3});
    }
    const uint64_t umax = std::numeric_limits<uint64_t>::max();
    for (auto run : {fused<uint64_t>, accumulated<uint64_t>}) {
      CHECK(run(DataType::kUint64, ReduceOp::kSum, {{umax, 5}, {1, 6}}) ==
            std::vector<uint64_t>{0, 11});
      CHECK(run(DataType::kUint64, ReduceOp::kProd,
                {{uint64_t{1} << 32, 3}, {uint64_t{1} << 32, 7}}) == std::vector<uint64_t>{0, 21});
      CHECK(run(DataType::kUint64, ReduceOp::kMax, {{umax, 0}, {1, uint64_t{1} << 63}}) ==
            std::vector<uint64_t>{umax, uint64_t{1} << 63});
      CHECK(run(DataType::kUint64, ReduceOp::kAvg, {{umax, 7}, {umax, 0}}) ==
            std::vector<uint64_t>{umax / 2, 3});  // wrapped sum umax - 1, / 2
    }
    const int64_t lmin = std::numeric_limits<int64_t>::min();
    for (auto run : {fused<int64_t>, accumulated<int64_t>}) {
      CHECK(run(DataType::kInt64, ReduceOp::kMin, {{lmin, -1}, {0, 1}}) ==
            std::vector<int64_t>{lmin, -1});
      CHECK(run(DataType::kInt64, ReduceOp::kAvg, {{-3, lmin}, {0, 0}}) ==
            std::vector<int64_t>{-1, lmin / 2});
    }
  });
}

// fp32 with the group's fp64 accumulator (Fp32Accumulator::kFp64), both kernel paths.
std::vector<float> fusedInFp64(ReduceOp op, const std::vector<std::vector<float>>& values) {
  return fusedWith(Fp32Accumulator::kFp64, DataType::kFloat32, op, values);
}
std::vector<float> accumulatedInFp64(ReduceOp op, const std::vector<std::vector<float>>& values) {
  return accumulatedWith(Fp32Accumulator::kFp64, DataType::kFloat32, op, values);
}

TEST_CASE("reduce: fp32 in an fp64 accumulator rounds once, to nearest even") {
  CHECK(accumulatorSize(DataType::kFloat32) == 4);
  CHECK(accumulatorSize(DataType::kFloat32, Fp32Accumulator::kFp64) == 8);
  CHECK(accumulatorSize(DataType::kBfloat16, Fp32Accumulator::kFp64) == 4);  // fp32 only
  CHECK(accumulatorSize(DataType::kFloat64, Fp32Accumulator::kFp64) == 8);
  forEachTarget([] {
    // fp32's ulp at 1 is 2^-23. Rounding per step would leave 1 each time; the fp64 sum
    // 1 + 3 * 2^-25 is 0.75 ulp above 1 and rounds up, once.
    const std::vector<std::vector<float>> quarters = {{1.0f}, {0x1p-25f}, {0x1p-25f}, {0x1p-25f}};
    // A tie in the sum (1 + 2^-24, half an ulp) goes to the even neighbour, 1.
    const std::vector<std::vector<float>> tie = {{1.0f}, {0x1p-25f}, {0x1p-25f}};
    // Cancellation: fp32 steps lose the 1 against 2^25 (ulp 4); fp64 keeps it to the end.
    const std::vector<std::vector<float>> cancel = {{0x1p25f}, {1.0f}, {-0x1p25f}};
    // Past fp32's range the fp64 sum is finite, and narrows to Inf (IEEE, every target).
    const float big = std::numeric_limits<float>::max();
    const std::vector<std::vector<float>> over = {{big, -big}, {big, -big}};
    for (auto run : {fusedInFp64, accumulatedInFp64}) {
      CHECK(run(ReduceOp::kSum, quarters)[0] == 1.0f + 0x1p-23f);
      CHECK(run(ReduceOp::kSum, tie)[0] == 1.0f);
      CHECK(run(ReduceOp::kSum, cancel)[0] == 1.0f);
      CHECK(run(ReduceOp::kSum, over) == std::vector<float>{INFINITY, -INFINITY});
      // avg divides the fp64 sum, then rounds: (2^25 + 1 - 2^25) / 3 in one rounding.
      CHECK(run(ReduceOp::kAvg, cancel)[0] == static_cast<float>(1.0 / 3.0));
    }
    // The default fp32 accumulator rounds at each add and loses the 1.
    CHECK(fused<float>(DataType::kFloat32, ReduceOp::kSum, cancel)[0] == 0.0f);
    CHECK(accumulated<float>(DataType::kFloat32, ReduceOp::kSum, cancel)[0] == 0.0f);
  });
}

TEST_CASE("reduce: fp32 in an fp64 accumulator equals an fp64 fold in input order") {
  // Random inputs of every magnitude and sign, many sizes (the vector tails), 2 to 19 inputs
  // (the fused path groups inputs by 8 past 8): each result is the in-order fp64 sum, and for
  // max/min the plain fp32 answer (no rounding anywhere), narrowed once.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mag(-30, 30);
  forEachTarget([&] {
    for (size_t world : {2, 3, 8, 9, 19}) {
      for (size_t count : kLengths) {
        std::vector<std::vector<float>> in(world, std::vector<float>(count));
        for (auto& v : in)
          for (float& x : v)
            x = static_cast<float>((rng() % 2 ? 1.0 : -1.0) * std::exp2(mag(rng)));
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
          std::vector<float> want(count);
          for (size_t i = 0; i < count; ++i) {
            double acc = in[0][i];
            for (size_t k = 1; k < world; ++k) {
              const double x = in[k][i];
              acc = op == ReduceOp::kMax ? std::max(acc, x)
                    : op == ReduceOp::kMin ? std::min(acc, x)
                                           : acc + x;
            }
            if (op == ReduceOp::kAvg) acc /= static_cast<double>(world);
            want[i] = static_cast<float>(acc);
          }
          INFO("W=" << world << " count=" << count << " " << reduceOpName(op));
          CHECK(fusedInFp64(op, in) == want);
          CHECK(accumulatedInFp64(op, in) == want);
        }
      }
    }
  });
}

TEST_CASE("reduce: avg of floats is the sum divided by the count") {
  forEachTarget([] {
    for (auto run : {fused<float>, accumulated<float>}) {
      CHECK(run(DataType::kFloat32, ReduceOp::kAvg, {{1.0f, -3.0f}, {2.0f, 0.5f}, {4.0f, 1.0f}}) ==
            std::vector<float>{7.0f / 3.0f, -1.5f / 3.0f});
    }
    for (auto run : {fused<double>, accumulated<double>}) {
      CHECK(run(DataType::kFloat64, ReduceOp::kAvg, {{1.0, 1e308}, {2.0, 1e308}}) ==
            std::vector<double>{1.5, INFINITY});  // the sum overflows before the division
    }
  });
}

TEST_CASE("reduce: finalize in place in parts, front to back, equals one finalize") {
  // The reducer finalizes a chunk's result in parts as members' contributions arrive, each
  // part written at its wire offset, which trails its accumulator offset for fp16/bf16 (and
  // fp32 in an fp64 accumulator).
  std::mt19937_64 rng(7);
  constexpr size_t kCount = 1031;
  constexpr size_t kCuts[] = {0, 1, 17, 64, 65, 300, 512, 1000, kCount};
  std::vector<std::pair<DataType, Fp32Accumulator>> kinds;
  for (DataType type : kAllTypes) kinds.emplace_back(type, Fp32Accumulator::kFp32);
  kinds.emplace_back(DataType::kFloat32, Fp32Accumulator::kFp64);
  forEachTarget([&] {
    for (auto [type, wide] : kinds) {
      std::vector<std::vector<uint8_t>> inputs(3, std::vector<uint8_t>(kCount * dataTypeSize(type)));
      for (auto& in : inputs) fillRandom(type, in.data(), kCount, rng);
      const size_t accSize = accumulatorSize(type, wide);
      for (ReduceOp op : kAllOps) {
        std::vector<uint8_t> acc(kCount * accSize);
        accumulateFirst(type, inputs[0].data(), acc.data(), kCount, wide);
        for (size_t k = 1; k < inputs.size(); ++k)
          accumulate(type, op, inputs[k].data(), acc.data(), kCount, wide);
        std::vector<uint8_t> want(kCount * dataTypeSize(type));
        finalize(type, op, acc.data(), want.data(), kCount, 3, wide);
        for (size_t i = 0; i + 1 < std::size(kCuts); ++i) {
          const size_t from = kCuts[i], to = kCuts[i + 1];
          finalize(type, op, acc.data() + from * accSize, acc.data() + from * dataTypeSize(type),
                   to - from, 3, wide);
        }
        INFO(dataTypeName(type) << " " << reduceOpName(op) << " accumulator "
                                << fp32AccumulatorName(wide));
        const std::string bad = mismatch(type, op, acc.data(), want.data(), kCount);
        if (!bad.empty()) FAIL(bad);
      }
    }
  });
}

TEST_CASE("reduce: finalizeIsIdentity") {
  for (DataType type : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      const bool identity = !accumulatesInFloat32(type) && op != ReduceOp::kAvg;
      CHECK(finalizeIsIdentity(type, op) == identity);
      CHECK(finalizeIsIdentity(type, op, Fp32Accumulator::kFp64) ==
            (identity && type != DataType::kFloat32));
    }
  }
  // And it holds: finalize in place changes nothing then.
  std::vector<int32_t> acc = {1, -2, 3};
  finalize(DataType::kInt32, ReduceOp::kSum, acc.data(), acc.data(), acc.size(), 3);
  CHECK(acc == std::vector<int32_t>{1, -2, 3});
}

// ---- fp8 (float8.h): the kernels' own conversions and arithmetic, exhaustively where they can be.

// Every byte value, 256 times: inputs[0][i] = i / 256 and inputs[1][i] = i % 256 hold all pairs.
std::vector<Buffer> allPairs(size_t offset) {
  std::vector<Buffer> in;
  in.emplace_back(65536, offset);
  in.emplace_back(65536, offset);
  for (size_t i = 0; i < 65536; ++i) {
    in[0].data()[i] = static_cast<uint8_t>(i >> 8);
    in[1].data()[i] = static_cast<uint8_t>(i);
  }
  return in;
}

TEST_CASE("reduce: fp8 every pair of values, every op, on every target and path", "[values]") {
  forEachTarget([] {
    for (DataType type : kFloat8Types) {
      const Float8Format f = float8Format(type);
      for (size_t offset : {0, 1}) {
        const std::vector<Buffer> in = allPairs(offset);
        for (ReduceOp op : kAllOps) {
          const auto want = reference(type, op, in, 65536);
          for (Path path : kAllPaths) {
            INFO(dataTypeName(type) << " " << pathName(path) << ", offset " << offset);
            const std::string bad = runPath(path, type, op, in, 65536, offset, want);
            if (!bad.empty()) FAIL(bad);
          }
        }
        // The sum of two is the exact sum rounded once (fp32 holds it, or rounds it far from
        // any fp8 midpoint), NaN and Inf included: bit for bit, with no tolerance for NaN.
        std::vector<uint8_t> sum(65536);
        const void* ptrs[2] = {in[0].data(), in[1].data()};
        reduceInputs(type, ReduceOp::kSum, ptrs, 2, sum.data(), 65536);
        for (size_t i = 0; i < 65536; ++i) {
          const double exact = static_cast<double>(float8ToFloat(in[0].data()[i], f)) +
                               static_cast<double>(float8ToFloat(in[1].data()[i], f));
          INFO(dataTypeName(type) << " 0x" << std::hex << (i >> 8) << " + 0x" << (i & 0xFF));
          REQUIRE(+sum[i] == +roundToFloat8(exact, f));
        }
      }
    }
  });
}

// [values]: the lengths, alignments and input counts of fp8's kernels are also those of 'every
// type and op' and 'many inputs' above, which the sanitizer trees run; what this case adds is
// the bytes themselves (36 s under ASan).
TEST_CASE("reduce: fp8 random bytes of every kind, many inputs, every length and alignment",
          "[values]") {
  // Any byte: subnormals, zeros of both signs, NaNs of any sign, E5M2's infinities, so sums
  // overflow (saturate) and products underflow as they may.
  std::mt19937_64 rng(8);
  forEachTarget([&] {
    for (DataType type : kFloat8Types) {
      for (size_t ninputs : {2, 3, 9, 17}) {
        for (size_t count : kLengths) {
          for (size_t offset : {0, 1, 3}) {
            std::vector<Buffer> in;
            for (size_t k = 0; k < ninputs; ++k) {
              in.emplace_back(count, offset);
              for (size_t i = 0; i < count; ++i) in.back().data()[i] = static_cast<uint8_t>(rng());
            }
            for (ReduceOp op : kAllOps) {
              const auto want = reference(type, op, in, count);
              for (Path path : kAllPaths) {
                INFO(dataTypeName(type) << " " << pathName(path) << ", " << ninputs
                                        << " inputs, offset " << offset);
                const std::string bad = runPath(path, type, op, in, count, offset, want);
                if (!bad.empty()) FAIL(bad);
              }
            }
          }
        }
      }
    }
  });
}

TEST_CASE("reduce: fp8 narrowing of fp32 matches float8.h at every rounding boundary", "[values]") {
  // finalize of an fp32 accumulator is the kernels' narrowing: between every pair of
  // neighbouring fp8 values the midpoint and the fp32 values either side of it, every fp32
  // with a top 16-bit pattern and low bits at both formats' halfway points, random fp32 bits.
  std::vector<float> in;
  for (DataType type : kFloat8Types) {
    const Float8Format f = float8Format(type);
    for (uint32_t b = 0; b < f.maxFinite; ++b) {
      const float mid = (float8ToFloat(static_cast<uint8_t>(b), f) +
                         float8ToFloat(static_cast<uint8_t>(b + 1), f)) / 2;
      for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
        in.push_back(x);
        in.push_back(-x);
      }
    }
  }
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : {0x0000u, 0x7FFFu, 0x8000u, 0xFFFFu})
      in.push_back(floatFromBits(hi << 16 | lo));
  std::mt19937 rng(5);
  for (int i = 0; i < 100000; ++i) in.push_back(floatFromBits(static_cast<uint32_t>(rng())));
  forEachTarget([&] {
    for (DataType type : kFloat8Types) {
      const Float8Format f = float8Format(type);
      for (size_t offset : {0, 1}) {
        std::vector<uint8_t> out(in.size() + offset);
        finalize(type, ReduceOp::kSum, in.data(), out.data() + offset, in.size(), 1);
        for (size_t i = 0; i < in.size(); ++i) {
          INFO(dataTypeName(type) << " fp32 0x" << std::hex << floatBits(in[i]));
          REQUIRE(+out[i + offset] == +floatToFloat8(in[i], f));
        }
      }
    }
  });
}

TEST_CASE("reduce: fp8 widening of every byte is exact") {
  forEachTarget([] {
    for (DataType type : kFloat8Types) {
      const Float8Format f = float8Format(type);
      std::vector<uint8_t> bytes(257);
      for (size_t i = 0; i < 256; ++i) bytes[i + 1] = static_cast<uint8_t>(i);
      std::vector<float> acc(256);
      accumulateFirst(type, bytes.data() + 1, acc.data(), 256);
      for (size_t b = 0; b < 256; ++b) {
        const float want = float8ToFloat(static_cast<uint8_t>(b), f);
        INFO(dataTypeName(type) << " byte 0x" << std::hex << b);
        if (std::isnan(want)) {
          REQUIRE(std::isnan(acc[b]));
        } else {
          REQUIRE(floatBits(acc[b]) == floatBits(want));
        }
      }
    }
  });
}

TEST_CASE("reduce: fp8 accumulates in fp32, rounds once and saturates only at the end") {
  const auto e4m3 = [](float x) { return floatToFloat8(x, kE4m3); };
  const auto e5m2 = [](float x) { return floatToFloat8(x, kE5m2); };
  constexpr DataType kE4 = DataType::kFloat8e4m3, kE5 = DataType::kFloat8e5m2;
  forEachTarget([&] {
    for (auto run : {fused<uint8_t>, accumulated<uint8_t>}) {
      // E4M3 keeps 4 significant bits: the ulp at 1 is 2^-3. Rounding per step would leave 1
      // each time; the fp32 sum 1 + 3 * 2^-5 is 0.75 ulp above 1 and rounds up, once.
      const uint8_t quarter = e4m3(0x1p-5f);
      CHECK(run(kE4, ReduceOp::kSum, {{e4m3(1)}, {quarter}, {quarter}, {quarter}}) ==
            std::vector<uint8_t>{e4m3(1.125f)});
      // Ties to even: 1 + half an ulp stays 1, 1.125 + half an ulp goes up to 1.25.
      CHECK(run(kE4, ReduceOp::kSum, {{e4m3(1), e4m3(1.125f)}, {e4m3(0x1p-4f), e4m3(0x1p-4f)}}) ==
            std::vector<uint8_t>{e4m3(1), e4m3(1.25f)});
      // Overflow saturates: 448 + 448 is 448, not NaN; E5M2 57344 + 57344 is 57344, not Inf.
      CHECK(run(kE4, ReduceOp::kSum, {{0x7E, 0xFE}, {0x7E, 0xFE}}) ==
            std::vector<uint8_t>{0x7E, 0xFE});
      CHECK(run(kE5, ReduceOp::kSum, {{0x7B, 0xFB}, {0x7B, 0xFB}}) ==
            std::vector<uint8_t>{0x7B, 0xFB});
      // ... only at the end: 448 + 448 - 448 is 448 in fp32, where a ring that saturates at
      // every hop gets 448 - 448 = 0; an average of maxima is the maximum.
      CHECK(run(kE4, ReduceOp::kSum, {{0x7E}, {0x7E}, {0xFE}}) == std::vector<uint8_t>{0x7E});
      CHECK(run(kE4, ReduceOp::kAvg, {{0x7E}, {0x7E}, {0x7E}}) == std::vector<uint8_t>{0x7E});
      CHECK(run(kE4, ReduceOp::kProd, {{e4m3(32)}, {e4m3(32)}, {e4m3(0.25f)}}) ==
            std::vector<uint8_t>{e4m3(256)});
      // Subnormals: 2^-9 + 2^-9 = 2^-8; their average 2^-9; 2^-9 / 2 ties to 0 (even).
      CHECK(run(kE4, ReduceOp::kSum, {{0x01}, {0x01}}) == std::vector<uint8_t>{0x02});
      CHECK(run(kE4, ReduceOp::kAvg, {{0x01, 0x01}, {0x01, 0x00}}) ==
            std::vector<uint8_t>{0x01, 0x00});
      // NaN in, NaN (0x7F) out, whatever its sign; E4M3's 0xFF is its negative NaN.
      CHECK(run(kE4, ReduceOp::kSum, {{0xFF, 0x7F}, {e4m3(1), 0x7E}}) ==
            std::vector<uint8_t>{0x7F, 0x7F});
      CHECK(run(kE4, ReduceOp::kMax, {{0xFF}, {0x7E}}) == std::vector<uint8_t>{0x7F});
      // E5M2's infinities are IEEE: Inf + finite = Inf, Inf - Inf = NaN, max(Inf, x) = Inf.
      CHECK(run(kE5, ReduceOp::kSum, {{0x7C, 0xFC, 0x7C}, {e5m2(1), 0x7B, 0xFC}}) ==
            std::vector<uint8_t>{0x7C, 0xFC, 0x7F});
      CHECK(run(kE5, ReduceOp::kMax, {{0xFC, 0x7C}, {0x7B, e5m2(1)}}) ==
            std::vector<uint8_t>{0x7B, 0x7C});
      CHECK(run(kE5, ReduceOp::kMin, {{0xFC, 0x7D}, {0x7B, e5m2(1)}}) ==
            std::vector<uint8_t>{0xFC, 0x7F});
      // Signed zeros: -0 + -0 = -0, -0 + 0 = +0.
      CHECK(run(kE5, ReduceOp::kSum, {{0x80, 0x80}, {0x80, 0x00}}) ==
            std::vector<uint8_t>{0x80, 0x00});
    }
  });
}

}  // namespace
}  // namespace rs::reduce

// fp32 <-> bf16/fp16 buffer conversions (wire compression) against the scalar reference in
// float16.h, bit for bit, on every SIMD target this CPU can run: every bf16 value, and for
// narrowing every bf16 value with the dropped low half at the rounding boundaries (ties to
// even, one below and above), so normals, denormals, Inf, NaN and overflow are all covered.
#include "core/reduce/convert.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/reduce/float16.h"
#include "core/reduce/reduce.h"
#include "tests/support/for_each_target.h"

namespace rs::reduce {
namespace {

using test::forEachTarget;

// fp32 inputs: every bf16 value in the top half, each low half in `lows` below it.
std::vector<float> boundaryInputs() {
  const uint32_t lows[] = {0x0000, 0x0001, 0x3FFF, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF};
  std::vector<float> v;
  v.reserve(65536 * std::size(lows));
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : lows) v.push_back(floatFromBits(hi << 16 | lo));
  return v;
}

// Offsets 0 and 1 element: the kernels must not need alignment.
template <typename T>
T* at(std::vector<T>& v, size_t offset) {
  return v.data() + offset;
}

TEST_CASE("convert: fp32 to bf16 rounds to nearest even, bit for bit with the scalar one") {
  const std::vector<float> in = boundaryInputs();
  forEachTarget([&] {
    for (size_t offset : {0, 1}) {
      std::vector<uint16_t> out(in.size() + 1, 0xABCD);
      narrowFloat32(DataType::kBfloat16, in.data() + offset, at(out, offset), in.size() - offset);
      for (size_t i = offset; i < in.size(); ++i) {
        const uint16_t want = floatToBfloat16(in[i]);
        if (out[i] != want)
          FAIL("fp32 0x" << std::hex << floatBits(in[i]) << " -> 0x" << out[i] << ", want 0x"
                         << want);
      }
      REQUIRE(out[offset == 0 ? in.size() : 0] == 0xABCD);  // nothing written past the end
    }
  });
}

TEST_CASE("convert: bf16 to fp32 is exact for every bf16 value") {
  std::vector<uint16_t> in(65536 + 1);
  for (uint32_t b = 0; b < 65536; ++b) in[b + 1] = static_cast<uint16_t>(b);
  forEachTarget([&] {
    std::vector<float> out(65536);
    widenToFloat32(DataType::kBfloat16, in.data() + 1, out.data(), 65536);
    for (uint32_t b = 0; b < 65536; ++b)
      if (floatBits(out[b]) != b << 16) FAIL("bf16 0x" << std::hex << b << " widened wrongly");
  });
}

TEST_CASE("convert: named bf16 cases: ties, denormals, overflow, Inf and NaN") {
  struct Case {
    uint32_t in;
    uint16_t want;
  };
  const Case cases[] = {
      {0x3F808000u, 0x3F80},  // 1 + 2^-8: a tie, down to the even 1.0
      {0x3F818000u, 0x3F82},  // a tie above an odd bf16: up to the even one
      {0x3F808001u, 0x3F81},  // just above a tie: up
      {0x00008000u, 0x0000},  // the smallest tie among denormals: down to +0
      {0x00018000u, 0x0002},  // a denormal tie above an odd: up
      {0x807FFFFFu, 0x8080},  // the largest negative denormal rounds to -FLT_MIN
      {0x7F7FFFFFu, 0x7F80},  // FLT_MAX rounds to +Inf
      {0xFF7F7FFFu, 0xFF7F},  // just below the overflow tie stays finite
      {0x7F800000u, 0x7F80},  // +Inf
      {0xFF800000u, 0xFF80},  // -Inf
      {0x7F800001u, 0x7FC0},  // a signalling NaN is quieted, not turned into Inf
      {0xFFFFFFFFu, 0xFFFF},  // a NaN whose rounding would carry keeps its bits
      {0x80000000u, 0x8000},  // -0 stays -0
  };
  forEachTarget([&] {
    std::vector<float> in;
    for (const Case& c : cases) in.push_back(floatFromBits(c.in));
    std::vector<uint16_t> out(in.size());
    narrowFloat32(DataType::kBfloat16, in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      INFO("fp32 0x" << std::hex << cases[i].in);
      CHECK(out[i] == cases[i].want);
      CHECK(out[i] == floatToBfloat16(in[i]));
    }
  });
}

TEST_CASE("convert: fp16 both ways matches the scalar reference") {
  std::mt19937 rng(7);
  std::vector<float> in = boundaryInputs();
  for (int i = 0; i < 100000; ++i) in.push_back(floatFromBits(static_cast<uint32_t>(rng())));
  forEachTarget([&] {
    std::vector<uint16_t> half(in.size());
    narrowFloat32(DataType::kFloat16, in.data(), half.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
      if (half[i] != floatToHalf(in[i])) FAIL("fp32 0x" << std::hex << floatBits(in[i]));
    std::vector<float> back(in.size());
    widenToFloat32(DataType::kFloat16, half.data(), back.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
      if (floatBits(back[i]) != floatBits(halfToFloat(half[i])))
        FAIL("fp16 0x" << std::hex << half[i]);
  });
}

TEST_CASE("convert: other types and zero elements touch nothing") {
  float f = 1.0f;
  uint16_t h = 0x1234;
  narrowFloat32(DataType::kFloat32, &f, &h, 1);
  widenToFloat32(DataType::kInt32, &h, &f, 1);
  CHECK(h == 0x1234);
  CHECK(f == 1.0f);
  narrowFloat32(DataType::kBfloat16, nullptr, nullptr, 0);
  widenToFloat32(DataType::kBfloat16, nullptr, nullptr, 0);
}

}  // namespace
}  // namespace rs::reduce

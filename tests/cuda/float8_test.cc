// fp8 against CUDA's own conversions (cuda_fp8.h, whose functions also compile for the host,
// so no device is needed): our rounding (float8.h, which the kernels equal bit for bit) is
// CUDA's __NV_SATFINITE rounding, and a two-member sum is what one hop of NCCL's fp8 reduction
// gives (src/device/reduce_kernel.h on sm_90+: both widened to fp16, __hadd, then the
// saturating __nv_fp8 conversion), except for the one difference float8.h states: an E5M2
// infinity stays one here and saturates to +-57344 in CUDA and NCCL.
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/reduce/float16.h"
#include "core/reduce/float8.h"

namespace rs::reduce {
namespace {

struct Format {
  Float8Format ours;
  __nv_fp8_interpretation_t cuda;
  const char* name;
};
const Format kFormats[] = {{kE4m3, __NV_E4M3, "E4M3"}, {kE5m2, __NV_E5M2, "E5M2"}};

bool isInfinity(float x) { return std::isinf(x); }

float cudaWiden(uint8_t b, __nv_fp8_interpretation_t f) {
  return halfToFloat(__nv_cvt_fp8_to_halfraw(b, f).x);
}

TEST_CASE("float8 vs CUDA: every byte widens to the same value") {
  for (const Format& f : kFormats) {
    INFO(f.name);
    for (uint32_t b = 0; b < 256; ++b) {
      const float ours = float8ToFloat(static_cast<uint8_t>(b), f.ours);
      const float cuda = cudaWiden(static_cast<uint8_t>(b), f.cuda);
      INFO("byte 0x" << std::hex << b);
      if (std::isnan(cuda)) {
        REQUIRE(std::isnan(ours));
      } else {
        REQUIRE(floatBits(ours) == floatBits(cuda));
      }
    }
  }
}

TEST_CASE("float8 vs CUDA: fp32 narrows as __NV_SATFINITE, but E5M2 keeps Inf") {
  // Every fp32 whose top 16 bits are any pattern and whose low bits sit at the rounding
  // boundaries of both formats (the halfway bit of E5M2 is 2^20, of E4M3 2^19), and random ones.
  std::vector<float> in;
  const uint32_t lows[] = {0x00000, 0x00001, 0x3FFFF, 0x40000, 0x40001, 0x7FFFF,
                           0x80000, 0x80001, 0xBFFFF, 0xC0000, 0xFFFFF};
  for (uint32_t hi = 0; hi < 4096; ++hi)
    for (uint32_t lo : lows) in.push_back(floatFromBits(hi << 20 | lo));
  std::mt19937 rng(3);
  for (int i = 0; i < 200000; ++i) in.push_back(floatFromBits(static_cast<uint32_t>(rng())));
  for (const Format& f : kFormats) {
    INFO(f.name);
    for (float x : in) {
      const uint8_t ours = floatToFloat8(x, f.ours);
      const uint8_t cuda = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, f.cuda);
      INFO("fp32 0x" << std::hex << floatBits(x));
      if (f.ours.hasInfinity && isInfinity(x)) {
        REQUIRE(ours == (x > 0 ? 0x7C : 0xFC));
        REQUIRE(cuda == (x > 0 ? 0x7B : 0xFB));
      } else {
        REQUIRE(ours == cuda);
      }
    }
  }
}

TEST_CASE("float8 vs CUDA: a two-member sum is one hop of NCCL's fp8 reduction") {
  for (const Format& f : kFormats) {
    INFO(f.name);
    for (uint32_t a = 0; a < 256; ++a) {
      for (uint32_t b = 0; b < 256; ++b) {
        const float x = float8ToFloat(static_cast<uint8_t>(a), f.ours);
        const float y = float8ToFloat(static_cast<uint8_t>(b), f.ours);
        // Ours: the fp32 sum, rounded once (reduce.h); what the kernels compute for two members.
        const uint8_t ours = floatToFloat8(x + y, f.ours);
        const __half hx(__nv_cvt_fp8_to_halfraw(static_cast<uint8_t>(a), f.cuda));
        const __half hy(__nv_cvt_fp8_to_halfraw(static_cast<uint8_t>(b), f.cuda));
        const uint8_t nccl =
            __nv_cvt_halfraw_to_fp8(__half_raw(__hadd(hx, hy)), __NV_SATFINITE, f.cuda);
        INFO("0x" << std::hex << a << " + 0x" << b);
        if (isInfinity(x + y)) {
          REQUIRE(f.ours.hasInfinity);  // E4M3 inputs never sum to Inf
          REQUIRE(ours == (x + y > 0 ? 0x7C : 0xFC));
          REQUIRE(nccl == (x + y > 0 ? 0x7B : 0xFB));
        } else {
          REQUIRE(ours == nccl);
        }
      }
    }
  }
}

}  // namespace
}  // namespace rs::reduce

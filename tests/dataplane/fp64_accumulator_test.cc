// fp32 sums in an fp64 accumulator (RS_FP32_ACCUMULATOR=fp64) through real reducers on
// loopback: every member gets the correctly rounded sum, in the normal mode whatever order the
// bytes meet in and in deterministic mode; the default fp32 accumulator does not; a member
// whose setting differs from its group's is refused with the reason.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tests/support/cancelling_inputs.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

constexpr int kFp64World = 6;
constexpr uint64_t kFp64Count = 100003;

// Rank r's inputs: in each element two ranks hold +B and -B (multiples of 16 up to 2^28) and
// the others small values (multiples of 2^-20 below 4). Every partial sum then fits in 49
// bits, so an fp64 accumulator sums exactly in any order and rounds once, where an fp32 one
// (ulp 16 at 2^28) loses the small values behind B.
std::vector<float> exactlySummableInputs(int rank) {
  std::uniform_int_distribution<int32_t> bigSteps(1 << 20, (1 << 24) - 1);
  std::uniform_int_distribution<int32_t> smallSteps(-(1 << 22) + 1, (1 << 22) - 1);
  return cancellingInputs(
      rank, kFp64World, kFp64Count, 777,
      [&](std::mt19937& rng) { return std::ldexp(static_cast<float>(bigSteps(rng)), 4); },
      [&](std::mt19937& rng) { return std::ldexp(static_cast<float>(smallSteps(rng)), -20); });
}

// The exact sum (fp64 holds it, see above), rounded once to fp32.
std::vector<float> correctlyRounded() {
  std::vector<double> sum(kFp64Count, 0.0);
  for (int r = 0; r < kFp64World; ++r) {
    const std::vector<float> in = exactlySummableInputs(r);
    for (uint64_t i = 0; i < kFp64Count; ++i) sum[i] += in[i];
  }
  std::vector<float> out(kFp64Count);
  for (uint64_t i = 0; i < kFp64Count; ++i) out[i] = static_cast<float>(sum[i]);
  return out;
}

// One group's fp32 sum, in small chunks over 3 reducers x 3 streams, so that the members' bytes
// meet in the reducers in varying order. Returns every rank's result.
std::vector<std::vector<float>> runFp32Sum(const LocalPool& pool, Fp32Accumulator accumulator,
                                           bool deterministic) {
  auto options = testClientOptions(pool.endpoints(), 3);
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 16 << 10;
  options.fp32Accumulator = accumulator;
  options.deterministic = deterministic;
  const GroupId id = GroupId::random();
  std::vector<std::vector<float>> out(kFp64World, std::vector<float>(kFp64Count));
  Status st = runRanks(kFp64World, [&](int rank) -> Status {
    auto comm =
        client::Communicator::connect(options, {id, kFp64World, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    const std::vector<float> in = exactlySummableInputs(rank);
    return (*comm)->allReduce(in.data(), out[rank].data(), kFp64Count, DataType::kFloat32,
                              ReduceOp::kSum);
  });
  REQUIRE(st.toString() == "OK");
  return out;
}

uint64_t differing(const std::vector<float>& a, const std::vector<float>& b) {
  uint64_t n = 0;
  for (uint64_t i = 0; i < kFp64Count; ++i) n += std::memcmp(&a[i], &b[i], 4) != 0 ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("fp64 accumulator: every member gets the correctly rounded fp32 sum",
          "[fp64-accumulator]") {
  LocalPool pool(3);
  const std::vector<float> want = correctlyRounded();
  for (bool deterministic : {false, true}) {
    INFO((deterministic ? "deterministic" : "normal") << " mode");
    const auto wide = runFp32Sum(pool, Fp32Accumulator::kFp64, deterministic);
    for (int r = 0; r < kFp64World; ++r) {
      INFO("rank " << r);
      CHECK(differing(wide[r], want) == 0);
    }
    // The fp32 accumulator on the same inputs loses the small values in most elements.
    const auto narrow = runFp32Sum(pool, Fp32Accumulator::kFp32, deterministic);
    CHECK(differing(narrow[0], want) > kFp64Count / 2);
  }
}

TEST_CASE("fp64 accumulator: a member whose setting differs from the group's is refused",
          "[fp64-accumulator]") {
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  auto options = testClientOptions(pool.endpoints(), 2);
  options.fp32Accumulator = Fp32Accumulator::kFp64;
  auto first = client::Communicator::connect(options, {id, 2, 0});
  REQUIRE(first.isOk());
  options.fp32Accumulator = Fp32Accumulator::kFp32;
  auto second = client::Communicator::connect(options, {id, 2, 1});
  REQUIRE_FALSE(second.isOk());
  INFO(second.status().toString());
  CHECK(second.status().message().find(
            "rank 1 asks for an fp32 accumulator for fp32 sums, but the group was created with "
            "an fp64 one (set RS_FP32_ACCUMULATOR alike on every member)") != std::string::npos);
}

TEST_CASE("fp64 accumulator: RS_FP32_ACCUMULATOR sets the client option", "[fp64-accumulator]") {
  client::ClientOptions o;
  ::setenv("RS_FP32_ACCUMULATOR", "fp64", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.fp32Accumulator == Fp32Accumulator::kFp64);
  ::setenv("RS_FP32_ACCUMULATOR", "fp32", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.fp32Accumulator == Fp32Accumulator::kFp32);
  ::setenv("RS_FP32_ACCUMULATOR", "double", 1);
  const Status bad = o.applyEnvironment();
  ::unsetenv("RS_FP32_ACCUMULATOR");
  CHECK_FALSE(bad.isOk());
  CHECK(bad.message().find("RS_FP32_ACCUMULATOR") != std::string::npos);
  CHECK(bad.message().find("'double' is not an accumulator for fp32 sums") != std::string::npos);
}

}  // namespace rs::test

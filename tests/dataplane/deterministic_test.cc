// Deterministic mode (RS_DETERMINISTIC) through real reducers on loopback: repeated runs of the
// same inputs give bit-identical results equal to the rank-order sum, and a member whose mode
// differs from its group's is refused with the reason.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/reduce/float16.h"
#include "tests/support/cancelling_inputs.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

constexpr int kDeterministicWorld = 6;
constexpr uint64_t kDeterministicCount = 100003;

// Rank r's fp32 inputs: in each element two ranks hold +B and -B (about 2^20..2^28) and the
// others small values, so the fp32 sum depends on the order the reducer adds them in.
std::vector<float> orderSensitiveInputs(int rank) {
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> smallExp(-4, 4), bigExp(20, 28);
  return cancellingInputs(
      rank, kDeterministicWorld, kDeterministicCount, 4242,
      [&](std::mt19937& rng) { return std::ldexp(mantissa(rng), bigExp(rng)); },
      [&](std::mt19937& rng) { return std::ldexp(mantissa(rng), smallExp(rng)); });
}

struct Sums {
  std::vector<std::vector<float>> f32 = std::vector<std::vector<float>>(kDeterministicWorld);
  std::vector<std::vector<uint16_t>> bf16 = std::vector<std::vector<uint16_t>>(kDeterministicWorld);
};

// One group of kDeterministicWorld members: an fp32 and a bf16 sum of the inputs, in small chunks
// spread over 3 reducers x 3 streams, so that the members' bytes meet in the reducers in varying
// order.
Sums runSums(const LocalPool& pool, bool deterministic) {
  auto options = testClientOptions(pool.endpoints(), 3);
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 16 << 10;
  options.deterministic = deterministic;
  const GroupId id = GroupId::random();
  Sums run;
  Status st = runRanks(kDeterministicWorld, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(
        options, {id, kDeterministicWorld, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    const std::vector<float> a = orderSensitiveInputs(rank);
    std::vector<uint16_t> b(kDeterministicCount);
    for (uint64_t i = 0; i < kDeterministicCount; ++i) b[i] = reduce::floatToBfloat16(a[i]);
    run.f32[rank].resize(kDeterministicCount);
    run.bf16[rank].resize(kDeterministicCount);
    RS_RETURN_IF_ERROR((*comm)->allReduce(a.data(), run.f32[rank].data(), kDeterministicCount,
                                          DataType::kFloat32, ReduceOp::kSum));
    return (*comm)->allReduce(b.data(), run.bf16[rank].data(), kDeterministicCount,
                              DataType::kBfloat16, ReduceOp::kSum);
  });
  REQUIRE(st.toString() == "OK");
  return run;
}

}  // namespace

TEST_CASE("deterministic mode: repeated runs are bit-identical and equal the rank-order sum",
          "[deterministic]") {
  LocalPool pool(3);
  std::vector<std::vector<float>> in;
  for (int r = 0; r < kDeterministicWorld; ++r) in.push_back(orderSensitiveInputs(r));
  std::vector<float> f32(kDeterministicCount);
  std::vector<uint16_t> bf16(kDeterministicCount);
  for (uint64_t i = 0; i < kDeterministicCount; ++i) {
    float acc = in[0][i], accB = reduce::bfloat16ToFloat(reduce::floatToBfloat16(in[0][i]));
    for (int r = 1; r < kDeterministicWorld; ++r) {
      acc += in[r][i];
      accB += reduce::bfloat16ToFloat(reduce::floatToBfloat16(in[r][i]));
    }
    f32[i] = acc;
    bf16[i] = reduce::floatToBfloat16(accB);
  }
  for (int repeat = 0; repeat < 4; ++repeat) {
    INFO("run " << repeat);
    const Sums run = runSums(pool, /*deterministic=*/true);
    for (int r = 0; r < kDeterministicWorld; ++r) {
      INFO("rank " << r);
      CHECK(std::memcmp(run.f32[r].data(), f32.data(), kDeterministicCount * 4) == 0);
      CHECK(std::memcmp(run.bf16[r].data(), bf16.data(), kDeterministicCount * 2) == 0);
    }
  }
  // The normal mode on the same inputs: whatever order the bytes met in, every member got the
  // same result (printed, not required: loopback may or may not reorder them).
  const Sums normal = runSums(pool, /*deterministic=*/false);
  uint64_t differ = 0;
  for (uint64_t i = 0; i < kDeterministicCount; ++i) differ += normal.f32[0][i] != f32[i] ? 1 : 0;
  WARN("normal mode: " << differ << " of " << kDeterministicCount
                       << " fp32 elements differ from the rank-order sum");
}

TEST_CASE("deterministic mode: a member whose mode differs from the group's is refused",
          "[deterministic]") {
  LocalPool pool(1);
  const GroupId id = GroupId::random();
  auto options = testClientOptions(pool.endpoints(), 2);
  options.deterministic = true;
  auto first = client::Communicator::connect(options, {id, 2, 0});
  REQUIRE(first.isOk());
  options.deterministic = false;
  auto second = client::Communicator::connect(options, {id, 2, 1});
  REQUIRE_FALSE(second.isOk());
  INFO(second.status().toString());
  CHECK(second.status().message().find("rank 1 does not ask for deterministic mode, but the "
                                       "group was created with it") != std::string::npos);
}

TEST_CASE("deterministic mode: RS_DETERMINISTIC sets the client option", "[deterministic]") {
  client::ClientOptions o;
  ::setenv("RS_DETERMINISTIC", "1", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.deterministic);
  ::setenv("RS_DETERMINISTIC", "0", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK_FALSE(o.deterministic);
  ::setenv("RS_DETERMINISTIC", "2", 1);
  const Status bad = o.applyEnvironment();
  ::unsetenv("RS_DETERMINISTIC");
  CHECK_FALSE(bad.isOk());
  CHECK(bad.message().find("RS_DETERMINISTIC") != std::string::npos);
}

}  // namespace rs::test

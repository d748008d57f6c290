// Wire compression (RS_WIRE_DTYPE=bf16) through real reducers on loopback: an fp32 sum or avg
// gives exactly what converting each member's input to bf16, summing in fp32 and rounding once
// to bf16 gives, widened back to fp32; the send buffer is never written; other types and ops
// are untouched; and the option is read from the environment with a clear refusal.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "core/reduce/float16.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

using reduce::bfloat16ToFloat;
using reduce::floatBits;
using reduce::floatFromBits;
using reduce::floatToBfloat16;

float toBf16(float x) { return bfloat16ToFloat(floatToBfloat16(x)); }

// Member `rank`'s input. Magnitudes in [2^-6, 2^6) keep every bf16 value's bits within 2^-13
// .. 2^6, so an fp32 sum of up to 8 of them is exact whatever the order the reducer adds them
// in, and the reference below is the only right answer. Every 5th element is an exact tie of
// two bf16 neighbours (low half 0x8000), so rounding to even is checked on every member.
std::vector<float> memberInput(int rank, size_t count) {
  std::mt19937 rng(1000 + static_cast<unsigned>(rank));
  std::uniform_real_distribution<float> mag(-6.0f, 6.0f);
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) {
    float x = std::exp2(mag(rng)) * (rng() & 1 ? -1.0f : 1.0f);
    if (i % 5 == 0) x = floatFromBits((floatBits(x) & 0xFFFF0000u) | 0x8000u);
    v[i] = x;
  }
  return v;
}

// Each input rounded to bf16, summed in fp32, divided for avg, rounded once to bf16.
std::vector<float> reference(int world, size_t count, ReduceOp op) {
  std::vector<float> sum(count, 0.0f);
  for (int r = 0; r < world; ++r) {
    const auto in = memberInput(r, count);
    for (size_t i = 0; i < count; ++i) sum[i] += toBf16(in[i]);
  }
  for (float& s : sum) s = toBf16(op == ReduceOp::kAvg ? s / static_cast<float>(world) : s);
  return sum;
}

client::ClientOptions compressedOptions(const LocalPool& pool, uint32_t streams) {
  auto options = testClientOptions(pool.endpoints(), streams);
  options.float32WireType = DataType::kBfloat16;
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 32 << 10;  // many chunks, and results in several parts
  return options;
}

struct ScopedEnv {
  ScopedEnv(const char* n, const char* value) : name(n) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

TEST_CASE("wire bf16: fp32 sum and avg equal the bf16 reference, send buffer untouched",
          "[wire_compression]") {
  const auto progress = GENERATE(client::ClientOptions::Progress::kIoThreads,
                                 client::ClientOptions::Progress::kCaller);
  const int world = 3;
  LocalPool pool(2);
  auto options = compressedOptions(pool, 2);
  options.progress = progress;
  const GroupId id = GroupId::random();
  const std::vector<size_t> counts = {1, 7, 2048, 16383, 100001};
  Status st = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(
        options, {id, static_cast<uint32_t>(world), static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg})
      for (size_t n : counts)
        for (bool inPlace : {false, true}) {
          const auto input = memberInput(rank, n);
          std::vector<float> send = input, recv(n, -1.0f);
          float* out = inPlace ? send.data() : recv.data();
          RS_RETURN_IF_ERROR((*comm)->allReduce(send.data(), out, n, DataType::kFloat32, op));
          if (!inPlace && std::memcmp(send.data(), input.data(), n * sizeof(float)) != 0)
            return internalError(fmt::format("{} elements: the send buffer was written", n));
          const auto want = reference(world, n, op);
          for (size_t i = 0; i < n; ++i)
            if (floatBits(out[i]) != floatBits(want[i]))
              return internalError(fmt::format(
                  "{} of {} elements{}: element {} is {:a}, expected {:a}", reduceOpName(op), n,
                  inPlace ? " in place" : "", i, out[i], want[i]));
        }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("wire bf16: Inf, NaN, overflow and denormals at W=2", "[wire_compression]") {
  LocalPool pool(1);
  const auto options = compressedOptions(pool, 1);
  const GroupId id = GroupId::random();
  const float inf = INFINITY, big = 3.0e38f, tiny = floatFromBits(0x00018000u);
  // {rank 0, rank 1} -> expected (fp32 sum of the bf16 inputs, rounded to bf16).
  const std::vector<std::array<float, 2>> in = {
      {inf, 1.0f}, {-inf, -1.0f}, {inf, -inf}, {NAN, 1.0f}, {big, big}, {-big, -big},
      {tiny, 0.0f}, {tiny, tiny}, {-0.0f, -0.0f}, {1.0f, floatFromBits(0x3F808000u)}};
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<float> send, recv(in.size());
    for (const auto& pair : in) send.push_back(pair[static_cast<size_t>(rank)]);
    RS_RETURN_IF_ERROR((*comm)->allReduce(send.data(), recv.data(), send.size(),
                                          DataType::kFloat32, ReduceOp::kSum));
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = toBf16(toBf16(in[i][0]) + toBf16(in[i][1]));
      const bool same =
          std::isnan(want) ? std::isnan(recv[i]) : floatBits(recv[i]) == floatBits(want);
      if (!same)
        return internalError(fmt::format("case {}: got {:a}, expected {:a}", i, recv[i], want));
    }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("wire bf16: other ops and types go through unchanged", "[wire_compression]") {
  LocalPool pool(2);
  const auto options = compressedOptions(pool, 2);
  const GroupId id = GroupId::random();
  const size_t n = 5000;
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    // fp32 max keeps full precision: the inputs are not bf16 values.
    std::vector<float> f(n), fout(n);
    for (size_t i = 0; i < n; ++i) f[i] = 1.0f + static_cast<float>(i * 2 + rank) * 0x1p-20f;
    RS_RETURN_IF_ERROR(
        (*comm)->allReduce(f.data(), fout.data(), n, DataType::kFloat32, ReduceOp::kMax));
    for (size_t i = 0; i < n; ++i)
      if (fout[i] != 1.0f + static_cast<float>(i * 2 + 1) * 0x1p-20f)
        return internalError(fmt::format("fp32 max: element {} is {:a}", i, fout[i]));
    // fp64 sum: exact, not compressed.
    std::vector<double> d(n, 1.0 + 0x1p-40), dout(n);
    RS_RETURN_IF_ERROR(
        (*comm)->allReduce(d.data(), dout.data(), n, DataType::kFloat64, ReduceOp::kSum));
    for (size_t i = 0; i < n; ++i)
      if (dout[i] != 2.0 + 0x1p-39) return internalError("fp64 sum was changed");
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("wire bf16: RS_WIRE_DTYPE is read, and a bad value refused by name",
          "[wire_compression]") {
  client::ClientOptions o;
  {
    ScopedEnv env("RS_WIRE_DTYPE", "bf16");
    REQUIRE(o.applyEnvironment().isOk());
    CHECK(o.float32WireType == DataType::kBfloat16);
    CHECK(o.wireType(DataType::kFloat32, ReduceOp::kSum) == DataType::kBfloat16);
    CHECK(o.wireType(DataType::kFloat32, ReduceOp::kAvg) == DataType::kBfloat16);
    CHECK(o.wireType(DataType::kFloat32, ReduceOp::kMax) == DataType::kFloat32);
    CHECK(o.wireType(DataType::kFloat16, ReduceOp::kSum) == DataType::kFloat16);
  }
  {
    ScopedEnv env("RS_WIRE_DTYPE", "fp32");
    REQUIRE(o.applyEnvironment().isOk());
    CHECK(o.float32WireType == DataType::kFloat32);
  }
  ScopedEnv env("RS_WIRE_DTYPE", "fp16");
  const Status s = o.applyEnvironment();
  REQUIRE(!s.isOk());
  CHECK_THAT(s.message(), Catch::Contains("RS_WIRE_DTYPE") && Catch::Contains("'fp16'") &&
                              Catch::Contains("'fp32'") && Catch::Contains("'bf16'"));
}

TEST_CASE("wire bf16: members that disagree on it fail, not hang", "[wire_compression]") {
  LocalPool pool(1);
  auto options = compressedOptions(pool, 1);
  options.collectiveTimeout = std::chrono::milliseconds(20000);
  const GroupId id = GroupId::random();
  Status st = runRanks(2, [&](int rank) -> Status {
    auto o = options;
    if (rank == 1) o.float32WireType = DataType::kFloat32;
    auto comm = client::Communicator::connect(o, {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<float> v(1000, 1.0f);
    const Status s = (*comm)->allReduce(v.data(), v.data(), v.size(), DataType::kFloat32,
                                        ReduceOp::kSum);
    if (s.isOk()) return internalError("a mixed group succeeded");
    if (s.code() == StatusCode::kTimeout) return s;
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

}  // namespace
}  // namespace rs::test

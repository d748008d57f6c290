// All-reduce through real reducers on loopback: every type and op, many shapes of pool, sizes
// that do not divide into chunks, many collectives in flight, many groups at once.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstring>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "core/common/aligned_buffer.h"
#include "tests/support/checked_all_reduce.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

struct Shape {
  int world, reducers;
  uint32_t streams;
  client::ClientOptions::Progress progress = client::ClientOptions::Progress::kIoThreads;
};

void runShape(const Shape& s, const std::vector<uint64_t>& counts,
              const std::vector<DataType>& types, const std::vector<ReduceOp>& ops,
              uint64_t maxChunk = 64 << 10) {
  LocalPool pool(s.reducers);
  auto options = testClientOptions(pool.endpoints(), s.streams);
  options.progress = s.progress;
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = maxChunk;
  const GroupId id = GroupId::random();
  Status st = runRanks(s.world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(
        options, {id, static_cast<uint32_t>(s.world), static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    bool inPlace = false;
    for (DataType t : types)
      for (ReduceOp op : ops)
        for (uint64_t n : counts) {
          RS_RETURN_IF_ERROR(checkedAllReduce(**comm, rank, s.world, n, t, op, inPlace));
          inPlace = !inPlace;
        }
    return Status::ok();
  });
  INFO("W=" << s.world << " R=" << s.reducers << " K=" << s.streams);
  REQUIRE(st.toString() == "OK");
}

std::vector<DataType> allTypes() {
  std::vector<DataType> v;
  for (int t = 0; t < kNumDataTypes; ++t) v.push_back(static_cast<DataType>(t));
  return v;
}
std::vector<ReduceOp> allOps() {
  std::vector<ReduceOp> v;
  for (int o = 0; o < kNumReduceOps; ++o) v.push_back(static_cast<ReduceOp>(o));
  return v;
}

// One type of each path through the data plane: 1, 2, 4 and 8-byte elements, summed as they
// are (int8, fp32, fp64) or in an fp32 accumulator (bf16, fp8); the other types take one of
// these paths. Sum and avg: the ops differ only in the kernel, avg also in the finalize pass.
const std::vector<DataType> kOneTypePerPath = {DataType::kInt8, DataType::kBfloat16,
                                                DataType::kFloat8e4m3, DataType::kFloat32,
                                                DataType::kFloat64};
const std::vector<ReduceOp> kSumAndAvg = {ReduceOp::kSum, ReduceOp::kAvg};

}  // namespace

TEST_CASE("every type and op at W=3 R=2 K=2 with sizes around the chunk boundary", "[allreduce]") {
  // 16 KiB chunks of fp32 hold 4096 elements; 4095..4097 and 3 chunks + 1 cross the edges.
  runShape({3, 2, 2}, {1, 7, 4095, 4096, 4097, 3 * 4096 + 1}, allTypes(), allOps(), 16 << 10);
}

TEST_CASE("fp8 chunks count 2 bytes an element, so RS_MAX_CHUNK = --max-chunk works",
          "[allreduce]") {
  // An fp8 chunk's fp32 accumulator is 4 bytes an element: the reducer takes at most
  // --max-chunk / 2 elements of fp8 (so the accumulator stays within its memory floor of
  // 2 x --max-chunk), and the client must plan fp8 chunks that way at its own limit.
  server::ServerConfig config = testServerConfig();
  config.maxChunkBytes = 64 << 10;
  LocalPool pool(1, config);
  auto options = testClientOptions(pool.endpoints(), 2);
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = config.maxChunkBytes;
  const int world = 2;
  const GroupId id = GroupId::random();
  Status st = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (DataType t : {DataType::kFloat8e4m3, DataType::kFloat8e5m2})
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg})
        RS_RETURN_IF_ERROR(checkedAllReduce(**comm, rank, world, 3 * 65536 + 5, t, op, false));
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

// Each shape below runs twice: with every type and op ([values]: the release tree only), and
// with one type per path and two ops, which the sanitizer trees run too: what they check (the
// threads, buffers and sockets of each shape) is the same for every type and op, and the W=3
// case above runs every type and op there. The full matrix took 96 s under TSan.
namespace {
void worldSizes1To8(const std::vector<DataType>& types, const std::vector<ReduceOp>& ops) {
  for (int w = 1; w <= 8; ++w) {
    const Shape s{w, (w % 4) + 1, static_cast<uint32_t>((w * 3) % 8 + 1)};
    runShape(s, {1, 4097, 100003}, types, ops, 16 << 10);
  }
}
}  // namespace

TEST_CASE("every type and op for world sizes 1..8 with varied reducers and streams",
          "[allreduce][values]") {
  worldSizes1To8(allTypes(), allOps());
}

TEST_CASE("one type per path for world sizes 1..8 with varied reducers and streams",
          "[allreduce]") {
  worldSizes1To8(kOneTypePerPath, kSumAndAvg);
}

TEST_CASE("every reducer count 1..4 with every stream count 1..8", "[allreduce]") {
  for (int r = 1; r <= 4; ++r)
    for (uint32_t k = 1; k <= 8; ++k)
      runShape({2, r, k}, {70001}, {DataType::kFloat32}, {ReduceOp::kSum});
}

TEST_CASE("results are bit-identical on every member (random fp32 and bf16)", "[allreduce]") {
  LocalPool pool(3);
  auto options = testClientOptions(pool.endpoints(), 3);
  options.minChunkBytes = 8 << 10;
  options.maxChunkBytes = 32 << 10;
  const int world = 5;
  const uint64_t count = 200003;
  const GroupId id = GroupId::random();
  std::vector<std::vector<float>> f32(world);
  std::vector<std::vector<uint16_t>> b16(world);
  Status st = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::mt19937 rng(1234 + rank);
    std::normal_distribution<float> dist(0, 1);
    std::vector<float> a(count);
    for (auto& v : a) v = dist(rng);
    std::vector<uint16_t> b(count);
    for (uint64_t i = 0; i < count; ++i) storeAs(DataType::kBfloat16, b.data(), i, a[i] * 3);
    f32[rank].resize(count);
    b16[rank].resize(count);
    RS_RETURN_IF_ERROR((*comm)->allReduce(a.data(), f32[rank].data(), count, DataType::kFloat32,
                                          ReduceOp::kSum));
    return (*comm)->allReduce(b.data(), b16[rank].data(), count, DataType::kBfloat16,
                              ReduceOp::kAvg);
  });
  REQUIRE(st.toString() == "OK");
  for (int r = 1; r < world; ++r) {
    CHECK(std::memcmp(f32[0].data(), f32[r].data(), count * 4) == 0);
    CHECK(std::memcmp(b16[0].data(), b16[r].data(), count * 2) == 0);
  }
}

TEST_CASE("many collectives in flight on one communicator", "[allreduce]") {
  LocalPool pool(2);
  auto options = testClientOptions(pool.endpoints(), 2);
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 16 << 10;
  const int world = 3, inFlight = 40;
  const GroupId id = GroupId::random();
  Status st = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<std::vector<int32_t>> in(inFlight), out(inFlight);
    std::vector<std::shared_ptr<client::AllReduceRequest>> reqs;
    for (int k = 0; k < inFlight; ++k) {
      const uint64_t n = 1 + static_cast<uint64_t>(k) * 997;  // 1 .. ~39k elements
      in[k].resize(n);
      out[k].assign(n, -1);
      for (uint64_t i = 0; i < n; ++i) in[k][i] = static_cast<int32_t>(rank * 1000 + k + i);
      auto r = (*comm)->allReduceAsync(in[k].data(), out[k].data(), n, DataType::kInt32,
                                       ReduceOp::kSum);
      if (!r) return r.status();
      reqs.push_back(*r);
    }
    // Finish out of order: poll the last ones first.
    for (int k = inFlight - 1; k >= 0; --k) RS_RETURN_IF_ERROR(reqs[k]->wait());
    for (int k = 0; k < inFlight; ++k)
      for (uint64_t i = 0; i < out[k].size(); ++i) {
        const int32_t want = static_cast<int32_t>(3 * (k + i) + 1000 * (0 + 1 + 2));
        if (out[k][i] != want)
          return internalError(fmt::format("collective {} element {}: {} != {}", k, i,
                                           out[k][i], want));
      }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

namespace {
void callerProgressShapes(const std::vector<DataType>& types, const std::vector<ReduceOp>& ops) {
  const auto caller = client::ClientOptions::Progress::kCaller;
  for (Shape s : {Shape{1, 1, 1, caller}, Shape{3, 2, 2, caller}, Shape{4, 3, 4, caller}})
    runShape(s, {1, 1023, 1024, 1025, 40000, 300001}, types, ops);
}
}  // namespace

// As for world sizes 1..8 above: the full matrix in the release tree, one type per path in all.
TEST_CASE("caller progress: every type and op, and chunks spread over reducers and streams",
          "[allreduce][values]") {
  callerProgressShapes(allTypes(), allOps());
}

TEST_CASE("caller progress: one type per path, and chunks spread over reducers and streams",
          "[allreduce]") {
  callerProgressShapes(kOneTypePerPath, kSumAndAvg);
}

// With caller progress, a thread that waits does the I/O of every collective in flight: two
// threads per member submit and wait concurrently, and each one's wait must also carry the
// other's collectives when it holds the driving role.
TEST_CASE("caller progress: several threads waiting on one communicator", "[allreduce]") {
  LocalPool pool(2);
  auto options = testClientOptions(pool.endpoints(), 2);
  options.progress = client::ClientOptions::Progress::kCaller;
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 16 << 10;
  const int world = 2, threads = 2, rounds = 30;
  const GroupId id = GroupId::random();
  Status st = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    // Both threads of a member submit in lockstep under a mutex so that the group sees the
    // same order on every member; each waits on its own requests outside the lock.
    std::mutex submitOrder;
    int turn = 0;
    std::condition_variable turnCv;
    std::vector<Status> results(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::vector<int32_t> buf;
        for (int k = 0; k < rounds; ++k) {
          const uint64_t n = 1000 + static_cast<uint64_t>(t * 7001 + k * 313);
          buf.assign(n, rank + t + k);
          std::shared_ptr<client::AllReduceRequest> req;
          {
            std::unique_lock lock(submitOrder);
            turnCv.wait(lock, [&] { return turn % threads == t; });
            auto r = (*comm)->allReduceAsync(buf.data(), buf.data(), n, DataType::kInt32,
                                             ReduceOp::kSum);
            ++turn;
            turnCv.notify_all();
            if (!r) { results[t] = r.status(); return; }
            req = *r;
          }
          if (Status s = req->wait(); !s.isOk()) { results[t] = s; return; }
          for (uint64_t i = 0; i < n; ++i)
            if (buf[i] != 2 * (t + k) + 1) {
              results[t] = internalError(fmt::format("thread {} round {} element {}: {}", t, k,
                                                     i, buf[i]));
              return;
            }
        }
      });
    for (auto& th : pool) th.join();
    for (const Status& s : results) RS_RETURN_IF_ERROR(s);
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("many groups at once on one pool", "[allreduce]") {
  LocalPool pool(2);
  const int groups = 6, world = 3;
  std::vector<GroupId> ids;
  for (int g = 0; g < groups; ++g) ids.push_back(GroupId::random());
  Status st = runRanks(groups * world, [&](int member) -> Status {
    const int g = member / world, rank = member % world;
    auto options = testClientOptions(pool.endpoints(), 1 + g % 3);
    options.minChunkBytes = 4 << 10;
    options.maxChunkBytes = 8 << 10;
    auto comm = client::Communicator::connect(options, {ids[g], world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (int round = 0; round < 5; ++round)
      RS_RETURN_IF_ERROR(checkedAllReduce(**comm, rank, world, 20000 + g * 101, DataType::kFloat32,
                                          ReduceOp::kSum, round % 2 == 0));
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("zero-element all-reduce completes at once", "[allreduce]") {
  LocalPool pool(1);
  auto options = testClientOptions(pool.endpoints(), 1);
  const GroupId id = GroupId::random();
  Status st = runRanks(2, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, 2, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    RS_RETURN_IF_ERROR((*comm)->allReduce(nullptr, nullptr, 0, DataType::kFloat32, ReduceOp::kSum));
    return checkedAllReduce(**comm, rank, 2, 5, DataType::kFloat32, ReduceOp::kSum, false);
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("large buffers up to 256 MiB", "[allreduce][large]") {
  LocalPool pool(2);
  auto options = testClientOptions(pool.endpoints(), 4);
  const GroupId id = GroupId::random();
  const int world = 2;
  Status st = runRanks(world, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, world, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (uint64_t bytes : {1ull << 20, (16ull << 20) + 12, 256ull << 20}) {
      const uint64_t n = bytes / 4;
      std::vector<float> buf(n);
      for (uint64_t i = 0; i < n; ++i) buf[i] = static_cast<float>((i + rank) % 1000);
      RS_RETURN_IF_ERROR((*comm)->allReduce(buf.data(), buf.data(), n, DataType::kFloat32,
                                            ReduceOp::kSum));
      for (uint64_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(i % 1000 + (i + 1) % 1000);
        if (buf[i] != want)
          return internalError(fmt::format("{} bytes: element {} is {}, expected {}", bytes, i,
                                           buf[i], want));
      }
    }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

}  // namespace rs::test

// Bounded memory: with a pool of one slot per io thread and a quota of one open chunk per
// group, many groups with many streams and many collectives in flight must still finish (the
// deadlock argument in server/admission.h), and the reducer must actually have pushed back.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "core/common/aligned_buffer.h"
#include "tests/support/local_pool.h"

namespace rs::test {

namespace {
// --memory-limit covers the groups' bookkeeping too, beyond one largest chunk per io thread:
// room for it, less than the pool's 64 KiB granule, so the slot counts below are unchanged.
constexpr uint64_t kBookkeepingRoom = 32 << 10;

void runTinyPool(DataType type, uint64_t memoryLimit, int groups, int world, uint32_t streams) {
  server::ServerConfig config = testServerConfig();
  config.ioThreads = 1;
  config.maxChunkBytes = 64 << 10;
  config.memoryLimitBytes = memoryLimit;
  config.maxSlotsPerGroup = 1;
  LocalPool pool(2, config);
  std::vector<GroupId> ids;
  for (int g = 0; g < groups; ++g) ids.push_back(GroupId::random());
  const uint64_t count = (256 << 10) / dataTypeSize(type);
  const int inFlight = 12;
  Status st = runRanks(groups * world, [&](int member) -> Status {
    const int g = member / world, rank = member % world;
    auto options = testClientOptions(pool.endpoints(), streams);
    options.minChunkBytes = 16 << 10;
    options.maxChunkBytes = 64 << 10;
    auto comm = client::Communicator::connect(options, {ids[g], static_cast<uint32_t>(world),
                                                        static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    std::vector<AlignedBuffer> bufs;
    std::vector<std::shared_ptr<client::AllReduceRequest>> reqs;
    for (int k = 0; k < inFlight; ++k) {
      bufs.emplace_back(count * dataTypeSize(type));
      for (uint64_t i = 0; i < count; ++i)
        storeAs(type, bufs.back().data(), i, exactInput(rank, i + k, ReduceOp::kSum));
      auto r = (*comm)->allReduceAsync(bufs.back().data(), bufs.back().data(), count, type,
                                       ReduceOp::kSum);
      if (!r) return r.status();
      reqs.push_back(*r);
    }
    for (auto& r : reqs) RS_RETURN_IF_ERROR(r->wait());
    for (int k = 0; k < inFlight; ++k)
      for (uint64_t i = 0; i < count; ++i) {
        double want = 0;
        for (int r = 0; r < world; ++r) want += exactInput(r, i + k, ReduceOp::kSum);
        if (loadAs(type, bufs[k].data(), i) != want)
          return internalError(fmt::format("collective {} element {} wrong", k, i));
      }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  uint64_t parks = pool.reducer(0).dataPlane().stats().parks +
                   pool.reducer(1).dataPlane().stats().parks;
  INFO("backpressure events: " << parks);
  CHECK(parks > 0);
}
}  // namespace

TEST_CASE("a pool of exactly one fp16 slot per thread makes progress", "[backpressure]") {
  // An fp16 chunk of 64 KiB needs a 128 KiB fp32 accumulator: the whole pool.
  runTinyPool(DataType::kFloat16, (128 << 10) + kBookkeepingRoom, 3, 3, 4);
}

TEST_CASE("a pool of two fp32 slots shared by many groups and streams", "[backpressure]") {
  runTinyPool(DataType::kFloat32, (128 << 10) + kBookkeepingRoom, 4, 2, 3);
}

}  // namespace rs::test

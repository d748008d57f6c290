// Workers over the fabric end to end (client/fabric_hubs.h, client/handshake.h,
// client/fabric_connection.cc against server/session_fabric.cc): reducers started with a
// provider (libfabric's tcp provider on loopback, or RS_TEST_FABRIC_PROVIDER's) and members with
// RS_FABRIC set alike move every payload on the streams' channels, and the results are exact in
// every path (fp32, other types, in place, bf16 on the wire, chunks larger than a ring slot,
// many in flight), registered buffers' chunks and the reducers' results leaving without a copy
// (zero-copy); a reducer stopped mid-run is lost as on TCP (its channels fail with its streams)
// and its chunks go to the survivors; a reducer without the fabric declines and the members go on over TCP, saying
// so once per reducer.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <array>
#include <atomic>
#include <thread>

#include "core/common/aligned_buffer.h"
#include "tests/support/checked_all_reduce.h"
#include "tests/support/fabric_choice.h"
#include "tests/support/local_pool.h"
#include "tests/support/log_capture.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

server::ServerConfig reducerWithFabric() {
  server::ServerConfig c = testServerConfig();
  c.fabricProvider = fabricUnderTest().provider;
  c.fabricNode = fabricUnderTest().node;
  return c;
}

client::ClientOptions memberWithFabric(const std::vector<Endpoint>& reducers, uint32_t streams) {
  client::ClientOptions o = testClientOptions(reducers, streams);
  o.fabric = fabricUnderTest().provider;
  o.fabricNode = fabricUnderTest().node;
  return o;
}

}  // namespace

TEST_CASE("client over the fabric: every payload on the streams' channels, results exact in "
          "every path") {
  LogCapture log;
  constexpr int kWorld = 2, kReducers = 2;
  constexpr uint32_t kStreams = 2;
  LocalPool pool(kReducers, reducerWithFabric());
  for (bool bf16 : {false, true}) {
    INFO("bf16 on the wire: " << bf16);
    auto options = memberWithFabric(pool.endpoints(), kStreams);
    options.minChunkBytes = 4 << 10;
    options.maxChunkBytes = 1 << 20;  // four of the worker's 256 KiB ring slots
    if (bf16) options.float32WireType = DataType::kBfloat16;
    const GroupId id = GroupId::random();
    std::array<client::FabricStats, kWorld> fabricStats;
    const Status st = runRanks(kWorld, [&](int rank) -> Status {
      auto comm = client::Communicator::connect(
          options, {id, kWorld, static_cast<uint32_t>(rank)});
      if (!comm) return comm.status();
      bool inPlace = false;
      for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kInt64,
                         DataType::kFloat8e4m3})
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax})
          for (uint64_t n : {uint64_t{1}, uint64_t{4097}, uint64_t{700001}}) {
            RS_RETURN_IF_ERROR(checkedAllReduce(**comm, rank, kWorld, n, t, op, inPlace));
            inPlace = !inPlace;
          }
      // Several in flight at once, each on every stream.
      constexpr int kInFlight = 4;
      constexpr uint64_t kCount = 300000;
      std::vector<AlignedBuffer> buffers;
      std::vector<std::shared_ptr<client::AllReduceRequest>> requests;
      for (int c = 0; c < kInFlight; ++c) {
        buffers.emplace_back(kCount * sizeof(float));
        for (uint64_t i = 0; i < kCount; ++i)
          storeAs(DataType::kFloat32, buffers.back().data(), i,
                  exactInput(rank, i + c, ReduceOp::kSum));
      }
      // Registered: their chunks leave from them (zero-copy), unless converted for the wire.
      const client::FabricStats before = (*comm)->fabric();
      std::vector<client::BufferRegistration> registered;
      for (auto& b : buffers) {
        auto reg = (*comm)->registerBuffer(b.data(), b.size());
        if (!reg) return reg.status();
        registered.push_back(*reg);
      }
      for (int c = 0; c < kInFlight; ++c) {
        auto r = (*comm)->allReduceAsync(buffers[c].data(), buffers[c].data(), kCount,
                                         DataType::kFloat32, ReduceOp::kSum);
        if (!r) return r.status();
        requests.push_back(std::move(*r));
      }
      for (int c = 0; c < kInFlight; ++c) {
        RS_RETURN_IF_ERROR(requests[c]->wait());
        for (uint64_t i = 0; i < kCount; ++i)
          if (loadAs(DataType::kFloat32, buffers[c].data(), i) !=
              expectedResult(DataType::kFloat32, ReduceOp::kSum, kWorld, i + c))
            return internalError(fmt::format("collective {} in flight: element {} is wrong", c, i));
      }
      for (const auto& reg : registered) RS_RETURN_IF_ERROR((*comm)->deregisterBuffer(reg));
      if ((*comm)->deregisterBuffer(registered.front()).isOk())
        return internalError("a buffer deregistered twice");
      fabricStats[rank] = (*comm)->fabric();
      fabricStats[rank].bytesFromRegistered -= before.bytesFromRegistered;
      return Status::ok();
    });
    REQUIRE(st.toString() == "OK");
    for (const client::FabricStats& f : fabricStats) {
      CHECK(f.provider == "tcp;ofi_rxm");
      // Every byte of the registered collectives, and only those; bf16 goes from the staging
      // copy that narrows it.
      CHECK(f.bytesFromRegistered == (bf16 ? 0 : 4 * 300000 * sizeof(float)));
      CHECK(f.bytesCopied > 0);  // the unregistered collectives before
    }
  }
  // The reducers send every result straight from its slot: only the probes are copied.
  uint64_t zeroCopy = 0, copied = 0;
  for (int r = 0; r < kReducers; ++r) {
    zeroCopy += pool.reducer(r).dataPlane().stats().fabricBytesZeroCopy;
    copied += pool.reducer(r).dataPlane().stats().fabricBytesCopied;
  }
  WARN("reducers' fabric payload bytes: " << zeroCopy << " zero-copy, " << copied << " copied");
  CHECK(zeroCopy > 0);
  CHECK(copied == 64 * 2 * kWorld * kReducers * kStreams);  // one 64-byte probe per stream
  // Every stream of both communicators was offered the fabric and took it (a member that
  // declines says so in a warning); after an accept the reducer refuses a REDUCE without the
  // flag, so the results above came through the channels.
  uint64_t offered = 0;
  for (int r = 0; r < kReducers; ++r) offered += pool.reducer(r).dataPlane().stats().fabricStreams;
  CHECK(offered == 2 * kWorld * kReducers * kStreams);
  CHECK(log.count("fabric not used") == 0);
}

TEST_CASE("client over the fabric: a reducer without one declines, and the members go on over "
          "TCP, saying so once per reducer") {
  LogCapture log;
  constexpr int kWorld = 2, kReducers = 2;
  LocalPool pool(kReducers);  // --fabric-provider off
  auto options = memberWithFabric(pool.endpoints(), 3);
  const GroupId id = GroupId::random();
  const Status st = runRanks(kWorld, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, kWorld, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    return checkedAllReduce(**comm, rank, kWorld, 200003, DataType::kFloat32, ReduceOp::kSum,
                           false);
  });
  REQUIRE(st.toString() == "OK");
  CHECK(log.count("fabric not used (the reducer declined: no fabric on this reducer") ==
        kWorld * kReducers);
  CHECK(log.count("data over TCP") == kWorld * kReducers);
}

TEST_CASE("client over the fabric: a reducer stopped mid-run is lost, its chunks go to the "
          "survivors, and every collective completes exact") {
  constexpr int kWorld = 2, kReducers = 3, kCollectives = 10;
  LocalPool pool(kReducers, reducerWithFabric());
  auto options = memberWithFabric(pool.endpoints(), 2);
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 512 << 10;
  options.rejoin = std::chrono::milliseconds(0);  // the stopped reducer stays lost
  const GroupId id = GroupId::random();
  std::atomic<int> done{0};
  std::thread killer([&] {
    // Mid-run: collectives behind the members and more on the channels.
    waitUntil([&] { return done.load() >= 3; });
    pool.stopReducer(1);
  });
  std::atomic<uint32_t> lost{0};
  const Status st = runRanks(kWorld, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(options, {id, kWorld, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (int k = 0; k < kCollectives; ++k) {
      RS_RETURN_IF_ERROR(checkedAllReduce(**comm, rank, kWorld, 1000003, DataType::kFloat32,
                                          ReduceOp::kSum, k % 2 == 1));
      if (rank == 0) ++done;
    }
    lost += (*comm)->failover().lostNow;
    return Status::ok();
  });
  killer.join();
  REQUIRE(st.toString() == "OK");
  CHECK(lost == kWorld);  // each member took reducer 1 for lost
}

}  // namespace rs::test

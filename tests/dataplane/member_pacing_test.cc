// Members paced to their share of the link (core/transport/link_share.h) in real all-reduces:
// exact results with pacing on at both ends, after which no stream is still counted busy; the
// options that set the rates (RS_LINK_GBPS, RS_REDUCER_LINK_GBPS, the automatic stream count);
// a worker's pace to a reducer bounded by the reducers' link rate / W; a lane counted as a
// stream. The share arithmetic and a TCP stream's pace: tests/transport/link_share_test.cc.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/transport/link_share.h"
#include "tests/support/local_pool.h"
#include "tests/support/verify_pattern.h"
#include "tests/support/wait_until.h"

namespace rs::test {

using transport::LinkShare;

TEST_CASE("all-reduces with both ends paced are exact and leave no stream counted busy",
          "[link_share]") {
  constexpr double kGbps = 40;  // far above loopback's share of this machine: exactness only
  server::ServerConfig config = testServerConfig();
  config.linkGbps = kGbps;
  LocalPool pool(2, config);
  auto options = testClientOptions(pool.endpoints(), 2);
  options.linkGbps = kGbps;
  options.minChunkBytes = 4 << 10;
  options.maxChunkBytes = 64 << 10;
  const GroupId id = GroupId::random();
  constexpr int kWorld = 3;
  Status st = runRanks(kWorld, [&](int rank) -> Status {
    auto comm = client::Communicator::connect(
        options, {id, static_cast<uint32_t>(kWorld), static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    for (uint64_t count : {1ull, 1000ull, 70000ull, 300000ull}) {
      AlignedBuffer send(count * 4), recv(count * 4);
      for (uint64_t i = 0; i < count; ++i)
        storeAs(DataType::kFloat32, send.data(), i, exactInput(rank, i, ReduceOp::kSum));
      RS_RETURN_IF_ERROR((*comm)->allReduce(send.data(), recv.data(), count, DataType::kFloat32,
                                            ReduceOp::kSum));
      for (uint64_t i = 0; i < count; ++i)
        if (loadAs(DataType::kFloat32, recv.data(), i) !=
            expectedResult(DataType::kFloat32, ReduceOp::kSum, kWorld, i))
          return internalError("element " + std::to_string(i) + " of " + std::to_string(count));
    }
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  // Every client stream went idle with its last result; the reducers' with their last write,
  // whose completion may run just after the member read it (and the pool still holds them).
  auto link = LinkShare::forProcess(LinkShare::bytesPerSecondFromGbps(kGbps));
  CHECK(waitUntil([&] { return link->busyStreams() == 0; }));
}

}  // namespace rs::test

namespace rs::test {

TEST_CASE("the automatic stream count keeps a worker near 16 streams", "[link_share]") {
  using client::ClientOptions;
  CHECK(ClientOptions::streamsFor(1) == 4);
  CHECK(ClientOptions::streamsFor(4) == 4);
  CHECK(ClientOptions::streamsFor(5) == 3);
  CHECK(ClientOptions::streamsFor(8) == 2);
  CHECK(ClientOptions::streamsFor(16) == 1);
  CHECK(ClientOptions::streamsFor(300) == 1);
  ClientOptions o;
  o.reducers.resize(8);
  CHECK(o.effectiveStreams() == 2);
  o.streamsPerReducer = 3;
  CHECK(o.effectiveStreams() == 3);
}

TEST_CASE("RS_LINK_GBPS and RS_STREAMS=0 are read, a bad rate is refused by name",
          "[link_share]") {
  client::ClientOptions o;
  ::setenv("RS_LINK_GBPS", "12.5", 1);
  ::setenv("RS_STREAMS", "0", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.linkGbps == 12.5);
  CHECK(o.streamsPerReducer == 0);
  ::setenv("RS_LINK_GBPS", "fast", 1);
  const Status bad = o.applyEnvironment();
  ::unsetenv("RS_LINK_GBPS");
  ::unsetenv("RS_STREAMS");
  CHECK_FALSE(bad.isOk());
  CHECK(bad.message().find("RS_LINK_GBPS") != std::string::npos);
}

}  // namespace rs::test

namespace rs::test {

TEST_CASE("RS_REDUCER_LINK_GBPS is read, 0 or unset meaning RS_LINK_GBPS's, a bad rate is refused "
          "by name",
          "[link_share]") {
  client::ClientOptions o;
  o.linkGbps = 100;
  CHECK(o.effectiveReducerLinkGbps() == 100);  // unset: the reducers are machines like this one
  ::setenv("RS_REDUCER_LINK_GBPS", "32", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.reducerLinkGbps == 32);
  CHECK(o.linkGbps == 100);
  CHECK(o.effectiveReducerLinkGbps() == 32);
  ::setenv("RS_REDUCER_LINK_GBPS", "23.5", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.effectiveReducerLinkGbps() == 23.5);
  ::setenv("RS_REDUCER_LINK_GBPS", "0", 1);
  REQUIRE(o.applyEnvironment().isOk());
  CHECK(o.effectiveReducerLinkGbps() == 100);
  for (const char* bad : {"32G", "-1", "100001", "fast"}) {
    INFO(bad);
    ::setenv("RS_REDUCER_LINK_GBPS", bad, 1);
    const Status st = o.applyEnvironment();
    CHECK_FALSE(st.isOk());
    CHECK(st.message().find("RS_REDUCER_LINK_GBPS") != std::string::npos);
  }
  ::unsetenv("RS_REDUCER_LINK_GBPS");
  o.reducers = {Endpoint{"127.0.0.1", 2222}};
  o.reducerLinkGbps = 100001;  // set in code rather than from the environment
  const Status invalid = o.validate();
  CHECK_FALSE(invalid.isOk());
  CHECK(invalid.message().find("RS_REDUCER_LINK_GBPS") != std::string::npos);
  o.reducerLinkGbps = 32;
  CHECK(o.validate().isOk());
}

}  // namespace rs::test

namespace rs::test {
namespace {

// The pace of every TCP socket of this process whose peer is 127.0.0.1:`port`: the members'
// streams to that reducer (the reducer's own sockets have the port as their local one).
std::vector<uint64_t> pacingRatesTo(uint16_t port) {
  std::vector<uint64_t> rates;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 ||
        peer.sin_family != AF_INET || ntohs(peer.sin_port) != port)
      continue;
    uint64_t rate = 0;
    socklen_t rateLen = sizeof(rate);
    if (::getsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, &rateLen) == 0)
      rates.push_back(rateLen == sizeof(uint32_t) ? static_cast<uint32_t>(rate) : rate);
  }
  return rates;
}

// `world` members of one new group, connected on `options`.
std::vector<std::unique_ptr<client::Communicator>> connectAll(const client::ClientOptions& options,
                                                              int world) {
  const GroupId id = GroupId::random();
  std::vector<std::unique_ptr<client::Communicator>> comms(static_cast<size_t>(world));
  REQUIRE(runRanks(world, [&](int rank) -> Status {
            auto comm = client::Communicator::connect(
                options, {id, static_cast<uint32_t>(world), static_cast<uint32_t>(rank)});
            if (!comm) return comm.status();
            comms[static_cast<size_t>(rank)] = std::move(*comm);
            return Status::ok();
          }).toString() == "OK");
  return comms;
}

// Each rank's exact fp32 input of `count` elements, and its receive buffer.
struct ExactBuffers {
  ExactBuffers(int world, uint64_t count) {
    for (int rank = 0; rank < world; ++rank) {
      send.emplace_back(count * 4);
      recv.emplace_back(count * 4);
      for (uint64_t i = 0; i < count; ++i)
        storeAs(DataType::kFloat32, send.back().data(), i, exactInput(rank, i, ReduceOp::kSum));
    }
  }
  // Every 997th element of every rank's result is the exact sum.
  void requireSums(int world, uint64_t count) const {
    for (int rank = 0; rank < world; ++rank)
      for (uint64_t i = 0; i < count; i += 997)
        REQUIRE(loadAs(DataType::kFloat32, recv[static_cast<size_t>(rank)].data(), i) ==
                expectedResult(DataType::kFloat32, ReduceOp::kSum, world, i));
  }
  std::vector<AlignedBuffer> send, recv;
};

}  // namespace

TEST_CASE("a member sends each reducer its 1/W of the reducers' link rate, not of its own",
          "[link_share]") {
  // Workers at 8 Gbit/s, reducers at 0.8. Rank 0 alone starts a 1 MiB all-reduce (past
  // kUnpacedBytes: paced) on its one stream to the one reducer, which holds it until rank 1's
  // part comes: meanwhile that stream stays busy at its pace.
  constexpr int kWorld = 2;
  constexpr double kWorkerGbps = 8, kReducerGbps = 0.8;
  LocalPool pool(1);
  auto options = testClientOptions(pool.endpoints(), 1);
  options.linkGbps = kWorkerGbps;
  options.reducerLinkGbps = kReducerGbps;
  auto comms = connectAll(options, kWorld);

  constexpr uint64_t kCount = 256 << 10;
  ExactBuffers b(kWorld, kCount);
  auto& send = b.send;
  auto& recv = b.recv;
  auto first = comms[0]->allReduceAsync(send[0].data(), recv[0].data(), kCount,
                                        DataType::kFloat32, ReduceOp::kSum);
  REQUIRE(first.isOk());
  constexpr uint64_t kNoCap = (uint64_t{1} << 32) - 1;  // rank 1's idle stream, never paced
  uint64_t pace = 0;
  CHECK(waitUntil([&] {
    for (uint64_t rate : pacingRatesTo(pool.endpoints()[0].port))
      if (rate < kNoCap) pace = rate;
    return pace != 0;
  }));
  // The smaller of this host's share (0.9 x 1 GB/s, one busy stream) and the reducer's 1/W:
  // 0.9 x 100 MB/s / 2 = 45 MB/s; with the worker's rate it would be 450 MB/s.
  const auto share = [](double gbps) {
    return LinkShare(LinkShare::bytesPerSecondFromGbps(gbps) / kWorld).share();
  };
  CHECK(pace == share(kReducerGbps));
  CHECK(pace != share(kWorkerGbps));

  REQUIRE(comms[1]->allReduce(send[1].data(), recv[1].data(), kCount, DataType::kFloat32,
                              ReduceOp::kSum).toString() == "OK");
  REQUIRE((*first)->wait().toString() == "OK");
  b.requireSums(kWorld, kCount);
}

TEST_CASE("a member's lane counts on the host's link as its streams do", "[link_share][failover]") {
  // Two reducers, one stream each; reducer 1 is lost, so chunk 3 of rank 0's second all-reduce
  // (home 1) goes on its lane to reducer 0 beside chunk 2 on its stream. Rank 0 alone starts
  // it; reducer 0 holds both chunks until rank 1's parts come, so both connections stay busy
  // with their chunks' bytes. Lanes were never counted: unpaced beside the paced streams, their
  // bursts overflowed the survivor's link after a loss (bench/RESULTS.md, "The rate after a
  // loss").
  constexpr int kWorld = 2;
  constexpr double kGbps = 0.0779;  // this test's own rate: its LinkShare is the members'
  LocalPool pool(2);
  auto options = testClientOptions(pool.endpoints(), 1);
  options.linkGbps = kGbps;
  auto comms = connectAll(options, kWorld);

  constexpr uint64_t kCount = 256 << 10;  // two chunks of 512 KiB, one per reducer
  ExactBuffers b(kWorld, kCount);
  auto& send = b.send;
  auto& recv = b.recv;
  pool.stopReducer(1);
  // The first all-reduce after the loss moves reducer 1's chunk to the lane.
  REQUIRE(runRanks(kWorld, [&](int rank) -> Status {
            return comms[rank]->allReduce(send[rank].data(), recv[rank].data(), kCount,
                                          DataType::kFloat32, ReduceOp::kSum);
          }).toString() == "OK");

  auto link = LinkShare::forProcess(LinkShare::bytesPerSecondFromGbps(kGbps));
  auto first = comms[0]->allReduceAsync(send[0].data(), recv[0].data(), kCount,
                                        DataType::kFloat32, ReduceOp::kSum);
  REQUIRE(first.isOk());
  CHECK(waitUntil([&] { return link->busyStreams() == 2; }));
  CHECK(link->bytesUnderWay() == kCount * 4);

  REQUIRE(comms[1]->allReduce(send[1].data(), recv[1].data(), kCount, DataType::kFloat32,
                              ReduceOp::kSum).toString() == "OK");
  REQUIRE((*first)->wait().toString() == "OK");
  CHECK(waitUntil([&] { return link->busyStreams() == 0 && link->bytesUnderWay() == 0; }));
  b.requireSums(kWorld, kCount);
}

}  // namespace rs::test

// The member's side of commits (proto/FAILOVER.md, "What each member keeps") on loopback: with
// real reducers every chunk of a run of collectives is committed and every member's retention
// store drains to nothing; a member at its bound waits for commits before it completes the next
// collective (back pressure, not an error), its in-place results intact and their copy kept
// while the caller reuses the buffer; a reducer that never commits fails the waiting collective
// at its timeout with a message naming it; and a COMMIT the member did not earn is a protocol
// error naming the reducer.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "client/communicator_core.h"
#include "tests/support/fake_reducer.h"
#include "tests/support/local_pool.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;
using client::RetentionStats;

// A reducer of a one-member group: answers each REDUCE with its own payload as the RESULT (the
// sum of one member), and each RECEIVED by calling `onReceived` (which may answer with a COMMIT
// through `commit`).
FakeReducer::Serve echoReducer(
    std::function<void(FakeReducer::Socket&, const wire::FrameHeader&)> onReceived) {
  return [onReceived](FakeReducer::Socket& s) {
    acceptMember(s, 8u << 20);
    for (;;) {
      const wire::FrameHeader h = readHeaderOf(s);
      if (h.type == wire::FrameType::kReceived) {
        onReceived(s, h);
        continue;
      }
      std::vector<uint8_t> payload(h.payloadLength);
      asio::read(s, asio::buffer(payload));
      sendResultPart(s, h, h.elemOffset, payload);
    }
  };
}

void sendCommit(FakeReducer::Socket& s, const wire::FrameHeader& received, uint64_t chunk) {
  const wire::HeaderBytes commit =
      wire::encodeHeader(wire::commitHeader(received.group, received.rank, chunk));
  writeBytes(s, commit.data(), commit.size());
}

// Options for one collective of 1000 fp32 elements a chunk, on `streams` streams per reducer.
client::ClientOptions oneChunkOptions(const std::vector<Endpoint>& reducers,
                                      uint32_t streams = 1) {
  auto options = testClientOptions(reducers, streams);
  options.minChunkBytes = options.maxChunkBytes = 1000 * sizeof(float);
  return options;
}

}  // namespace

TEST_CASE("with real reducers every chunk of a run of collectives is committed, and every "
          "member's retention store drains to nothing",
          "[retention]") {
  constexpr int kWorld = 3;
  LocalPool pool(2);
  const GroupId id = GroupId::random();
  std::vector<RetentionStats> stats(kWorld);
  std::vector<uint64_t> chunks(kWorld, 0);
  const Status s = runRanks(kWorld, [&](int rank) -> Status {
    auto options = testClientOptions(pool.endpoints(), 2);
    options.minChunkBytes = 4 << 10;
    options.maxChunkBytes = 64 << 10;
    auto comm = client::Communicator::connect(options, {id, kWorld, static_cast<uint32_t>(rank)});
    if (!comm) return comm.status();
    const cluster::ChunkingOptions chunking{options.minChunkBytes, options.maxChunkBytes};
    // One at a time, then four in flight at once; sizes of one element to many chunks.
    std::vector<std::vector<float>> bufs;
    for (size_t n : {size_t{1}, size_t{1000}, size_t{100000}, size_t{300000}, size_t{7},
                     size_t{50000}, size_t{4096}, size_t{200000}})
      bufs.emplace_back(n);
    for (size_t round = 0; round < bufs.size(); ++round) {
      const bool batch = round >= 4;
      std::vector<std::shared_ptr<client::AllReduceRequest>> inFlight;
      for (size_t b = batch ? 4 : round; b < (batch ? bufs.size() : round + 1); ++b) {
        std::vector<float>& buf = bufs[b];
        for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(rank + i % 11);
        auto r = (*comm)->allReduceAsync(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                         ReduceOp::kSum);
        if (!r) return r.status();
        inFlight.push_back(*r);
        chunks[rank] += cluster::planChunks(buf.size(), sizeof(float), 2, chunking).numChunks;
      }
      for (auto& r : inFlight) RS_RETURN_IF_ERROR(r->wait());
      for (size_t b = batch ? 4 : round; b < (batch ? bufs.size() : round + 1); ++b)
        for (size_t i = 0; i < bufs[b].size(); ++i)
          if (bufs[b][i] != static_cast<float>(3 + kWorld * (i % 11)))
            return internalError(fmt::format("collective {} element {} wrong", b, i));
      if (batch) break;
    }
    // The last collectives' commits trail their results: wait for the state, not a time.
    if (!waitUntil([&] { return (*comm)->retention().heldBytes == 0; }))
      return internalError("the retention store did not drain");
    stats[rank] = (*comm)->retention();
    return Status::ok();
  });
  REQUIRE(s.toString() == "OK");
  for (int rank = 0; rank < kWorld; ++rank) {
    INFO("rank " << rank);
    const RetentionStats& st = stats[rank];
    CHECK(st.heldChunks == 0);
    CHECK(st.waiting == 0);
    CHECK(st.keptChunks > 0);  // the collectives did complete before their commits
    CHECK(st.keptBytes > 0);
    CHECK(st.peakBytes <= st.capacityBytes);
    // At most one of each per chunk (fewer where they coalesce), and some of each.
    CHECK(st.receivedFrames > 0);
    CHECK(st.receivedFrames <= chunks[rank]);
    CHECK(st.commitFrames > 0);
    CHECK(st.commitFrames <= chunks[rank]);
  }
}

TEST_CASE("a member at its retention bound waits for commits before it completes the next "
          "collective, its in-place results intact and their copy kept while it reuses the "
          "buffer",
          "[retention]") {
  constexpr uint32_t kCount = 1000;  // one chunk a collective (oneChunkOptions)
  LocalPool pool(1);
  const GroupId group = GroupId::random();
  // Rank 1 is a raw member, so that the test decides when it acknowledges its results; rank 0
  // keeps at most one chunk.
  asio::io_context io;
  RawMember raw(io, pool.endpoints()[0].port, group, 2, 1);
  auto options = oneChunkOptions(pool.endpoints());
  options.retainBytes = kCount * sizeof(float);
  auto core = std::make_shared<client::CommunicatorCore>(options, client::GroupSpec{group, 2, 0});
  REQUIRE(core->start().toString() == "OK");

  // Rank 0 sends i, the raw member 1 + i (RawMember): every result is 2i + 1.
  std::vector<float> buf(kCount);
  auto input = [&] {
    for (uint32_t i = 0; i < kCount; ++i) buf[i] = static_cast<float>(i);
  };
  auto exact = [&] {
    for (uint32_t i = 0; i < kCount; ++i)
      if (buf[i] != static_cast<float>(2 * i + 1)) return false;
    return true;
  };
  auto bytesOf = [&] {
    const auto* p = reinterpret_cast<const std::byte*>(buf.data());
    return std::vector<std::byte>(p, p + kCount * sizeof(float));
  };
  auto finish = [&](const std::shared_ptr<client::RequestState>& r) {
    REQUIRE(core->waitFor(*r, std::chrono::steady_clock::now() + kStateDeadline));
    Status st;
    r->done(&st);
    return st;
  };

  // Collective 0 completes, and its result, not committed (rank 1 has not acknowledged it), is
  // kept: the store is full.
  input();
  auto first = core->submit(buf.data(), buf.data(), kCount, DataType::kFloat32, ReduceOp::kSum,
                            std::chrono::milliseconds(0));
  REQUIRE(first.isOk());
  raw.sendChunk(0, kCount);
  raw.readResult(0, kCount);
  REQUIRE(finish(*first).toString() == "OK");
  CHECK(exact());
  const std::vector<std::byte> result0 = bytesOf();
  CHECK(core->retentionStore().copyOf(0) == result0);
  CHECK(core->retention().heldBytes == kCount * sizeof(float));

  // The caller reuses its buffer at once: the copy is untouched. Collective 1's results come
  // in, but there is no room to keep them: it waits, unfinished.
  input();
  CHECK(core->retentionStore().copyOf(0) == result0);
  auto second = core->submit(buf.data(), buf.data(), kCount, DataType::kFloat32, ReduceOp::kSum,
                             std::chrono::milliseconds(0));
  REQUIRE(second.isOk());
  raw.sendChunk(1, kCount);
  raw.readResult(1, kCount);
  REQUIRE(waitUntil([&] { return core->retention().waiting == 1; }));
  CHECK_FALSE((*second)->done(nullptr));
  CHECK(exact());  // every result is in its buffer already

  // Rank 1 acknowledges chunk 0: the reducer commits it, the store drops it and keeps chunk 1,
  // and collective 1 completes.
  raw.sendReceived(0);
  CHECK(raw.readCommit() == 0);
  REQUIRE(finish(*second).toString() == "OK");
  CHECK(exact());
  CHECK_FALSE(core->retentionStore().copyOf(0));
  CHECK(core->retentionStore().copyOf(1) == bytesOf());
  raw.sendReceived(1);
  CHECK(raw.readCommit() == 1);
  REQUIRE(waitUntil([&] { return core->retention().heldBytes == 0; }));
  const RetentionStats st = core->retention();
  CHECK(st.waits == 1);
  CHECK(st.keptChunks == 2);
  CHECK(st.peakBytes == kCount * sizeof(float));
  core->shutdown();
}

TEST_CASE("a member at its retention bound acknowledges its lanes' results at once too: a lost "
          "reducer's chunk it keeps is committed without the ack delay",
          "[retention][failover]") {
  // Two reducers, two members, one chunk of 1000 fp32 a collective, two streams each: chunk c
  // is reducer c mod 2's, on its stream (c / 2) mod 2. Reducer 1 is stopped after collective
  // 0, so chunks 1 and 3 move to reducer 0 on two lanes, (1, 0) and (1, 1). Rank 0 keeps one
  // chunk at most and its ack delay is an hour. Collective 1's result (chunk 1, lane (1, 0)) is
  // kept, uncommitted; collective 3's (chunk 3, lane (1, 1)) needs that room, so it waits for
  // chunk 1's commit, which needs rank 0's RECEIVED on lane (1, 0): no REDUCE goes there to
  // carry it, so only the store's wait sends it at once (before, it did so on the normal
  // streams only, and the lane's waited for the ack delay).
  constexpr uint32_t kCount = 1000;  // one chunk a collective (oneChunkOptions)
  LocalPool pool(2);
  const GroupId group = GroupId::random();
  const auto options = oneChunkOptions(pool.endpoints(), 2);
  std::vector<std::shared_ptr<client::CommunicatorCore>> cores;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    auto rankOptions = options;
    if (rank == 0) rankOptions.retainBytes = kCount * sizeof(float);
    cores.push_back(
        std::make_shared<client::CommunicatorCore>(rankOptions, client::GroupSpec{group, 2, rank}));
  }
  cores[0]->setAckDelayForTest(std::chrono::hours(1));
  for (auto& core : cores) REQUIRE(core->start().toString() == "OK");
  std::vector<std::vector<float>> bufs(2, std::vector<float>(kCount));
  auto allReduce = [&](int k) {
    INFO("collective " << k);
    std::vector<std::shared_ptr<client::RequestState>> requests;
    for (uint32_t rank = 0; rank < 2; ++rank) {
      for (uint32_t i = 0; i < kCount; ++i) bufs[rank][i] = static_cast<float>(rank + i);
      auto r = cores[rank]->submit(bufs[rank].data(), bufs[rank].data(), kCount,
                                   DataType::kFloat32, ReduceOp::kSum, std::chrono::milliseconds(0));
      REQUIRE(r.isOk());
      requests.push_back(*r);
    }
    for (uint32_t rank = 0; rank < 2; ++rank) {
      REQUIRE(cores[rank]->waitFor(*requests[rank],
                                   std::chrono::steady_clock::now() + kStateDeadline));
      Status st;
      requests[rank]->done(&st);
      REQUIRE(st.toString() == "OK");
      uint64_t wrong = 0;
      for (uint32_t i = 0; i < kCount; ++i) wrong += bufs[rank][i] != static_cast<float>(2 * i + 1);
      CHECK(wrong == 0);
    }
  };
  allReduce(0);
  pool.stopReducer(1);
  for (int k = 1; k < 4; ++k) allReduce(k);
  CHECK(cores[0]->failover().lostNow == 1);
  CHECK(cores[0]->retention().waits >= 1);
  for (auto& core : cores) core->shutdown();
}

TEST_CASE("a member acknowledges each collective's results before it sends any chunk of the "
          "next, in front of it or alone after the ack delay",
          "[retention]") {
  // A reducer of a one-member group that records the frames it reads, and commits nothing.
  std::mutex mu;
  std::vector<std::pair<wire::FrameType, uint64_t>> seen;
  auto record = [&](const wire::FrameHeader& h) {
    std::lock_guard lock(mu);
    seen.emplace_back(h.type, h.chunk);
  };
  FakeReducer fake([&](FakeReducer::Socket& s) {
    acceptMember(s, 8u << 20);
    for (;;) {
      const wire::FrameHeader h = readHeaderOf(s);
      record(h);
      if (h.type == wire::FrameType::kReceived) continue;
      std::vector<uint8_t> payload(h.payloadLength);
      asio::read(s, asio::buffer(payload));
      sendResultPart(s, h, h.elemOffset, payload);
    }
  });
  auto comm = client::Communicator::connect(oneChunkOptions({fake.endpoint()}),
                                            {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  constexpr uint64_t kCollectives = 6;
  std::vector<float> buf(1000, 1.0f);
  for (uint64_t k = 0; k < kCollectives; ++k)
    REQUIRE((*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                               ReduceOp::kSum)
                .toString() == "OK");
  // The last one's RECEIVED has no REDUCE to ride on: the ack timer sends it.
  REQUIRE(waitUntil([&] {
    std::lock_guard lock(mu);
    return !seen.empty() && seen.back().first == wire::FrameType::kReceived &&
           seen.back().second == kCollectives - 1;
  }));
  std::lock_guard lock(mu);
  std::vector<std::pair<wire::FrameType, uint64_t>> expected;
  for (uint64_t k = 0; k < kCollectives; ++k) {
    expected.emplace_back(wire::FrameType::kReduce, k);
    expected.emplace_back(wire::FrameType::kReceived, k);
  }
  CHECK(seen == expected);
}

TEST_CASE("a reducer that never commits fails the collective waiting at the bound at its "
          "timeout, with a message naming the reducer",
          "[retention]") {
  FakeReducer fake(echoReducer([](FakeReducer::Socket&, const wire::FrameHeader&) {}));
  auto options = oneChunkOptions({fake.endpoint()});
  options.retainBytes = 1000 * sizeof(float);
  auto comm = client::Communicator::connect(options, {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  std::vector<float> buf(1000, 1.0f);
  REQUIRE((*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                             ReduceOp::kSum)
              .toString() == "OK");
  CHECK((*comm)->retention().heldChunks == 1);
  auto next = (*comm)->allReduceAsync(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                      ReduceOp::kSum, std::chrono::milliseconds(500));
  REQUIRE(next.isOk());
  REQUIRE(waitUntil([&] { return (*comm)->retention().waiting == 1; }));
  const Status s = (*next)->wait();
  CHECK(s.code() == StatusCode::kTimeout);
  CHECK_THAT(s.message(), Contains("all-reduce seq 1 timed out after "));
  CHECK_THAT(s.message(), Contains(" ms with every result in, waiting for room to keep the "
                                   "uncommitted ones (RS_RETAIN_BYTES, 4000 bytes"));
  CHECK_THAT(s.message(), Contains("reducer 0 (" + fake.endpoint().toString() +
                                   ") has not committed 1 chunks kept and 1 of this collective"));
  CHECK((*comm)->health().code() == StatusCode::kTimeout);
}

TEST_CASE("a COMMIT the member has not acknowledged, or one that does not rise, is a protocol "
          "error naming the reducer",
          "[retention]") {
  struct Bad {
    const char* what;
    std::function<void(FakeReducer::Socket&, const wire::FrameHeader&)> onReceived;
    const char* reason;
  };
  const Bad bad = GENERATE_COPY(
      Bad{"ahead of the member's RECEIVED",
          [](FakeReducer::Socket& s, const wire::FrameHeader& h) { sendCommit(s, h, h.chunk + 7); },
          "COMMIT for chunk 7, but this worker has acknowledged only up to chunk 0 on this "
          "stream"},
      Bad{"twice",
          [](FakeReducer::Socket& s, const wire::FrameHeader& h) {
            sendCommit(s, h, h.chunk);
            sendCommit(s, h, h.chunk);
          },
          "COMMIT for chunk 0 after COMMIT for chunk 0: commits must rise"});
  CAPTURE(bad.what);
  FakeReducer fake(echoReducer(bad.onReceived));
  auto comm = client::Communicator::connect(oneChunkOptions({fake.endpoint()}),
                                            {GroupId::random(), 1, 0});
  REQUIRE(comm.isOk());
  std::vector<float> buf(1000, 1.0f);
  // The COMMIT follows the collective's result, so the failure may come after it completed.
  (void)(*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                           ReduceOp::kSum);
  REQUIRE(waitUntil([&] { return !(*comm)->health().isOk(); }));
  const Status s = (*comm)->health();
  CHECK(s.code() == StatusCode::kProtocolError);
  CHECK_THAT(s.message(), Contains("reducer 0 (" + fake.endpoint().toString() + ") stream 0: " +
                                   bad.reason));
}

}  // namespace rs::test

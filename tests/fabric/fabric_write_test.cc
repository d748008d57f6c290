// RMA writes with immediate data on the real tcp provider over loopback: the exact bytes land at
// the target's registered buffer, and the target learns of each write by its completion.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "tests/support/fabric_side.h"

namespace fab = rs::transport::fabric;
using rs::test::FabricPoller;
using rs::test::FabricSide;

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr auto kBound = std::chrono::seconds(60);  // a hang's bound, far beyond a healthy run

std::vector<uint8_t> patternBytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

bool hasRemoteWrite(const std::vector<fab::FabricCompletion>& done, uint32_t immediate) {
  for (const auto& c : done) {
    if (c.op == fab::FabricOp::kRemoteWrite && c.immediate == immediate) return true;
  }
  return false;
}

// The first byte in [from, to) that is not `untouched`, or `to`.
size_t firstTouched(const std::vector<uint8_t>& bytes, size_t from, size_t to, uint8_t untouched) {
  for (size_t i = from; i < to; ++i) {
    if (bytes[i] != untouched) return i;
  }
  return to;
}

}  // namespace

TEST_CASE("RMA writes land the exact bytes, 1 B to 8 MiB at odd offsets, and the target learns "
          "of each by its immediate data", "[fabric]") {
  // tcp (RDM through ofi_rxm, as verbs), and shm: on the same host only, but the one provider
  // here that keeps FI_MR_VIRT_ADDR, so that remote addresses are virtual addresses as on verbs
  // and EFA (tcp's are offsets into the region).
  const std::string provider =
      GENERATE(as<std::string>{}, rs::test::fabricUnderTest().provider, "shm");
  INFO("provider " << provider);
  const fab::FabricChoice choice =
      provider == "shm" ? fab::FabricChoice{"shm", ""} : rs::test::fabricUnderTest();
  FabricSide target = rs::test::openFabricSide("target", true, choice);
  FabricSide writer = rs::test::openFabricSide("writer", true, choice);
  if (provider == "shm") REQUIRE(target.domain->info().virtualAddresses());
  constexpr uint8_t kUntouched = 0xEE;
  std::vector<uint8_t> slot(8 * kMiB + 64, kUntouched);
  std::vector<uint8_t> source = patternBytes(8 * kMiB + 64, 7);
  fab::RegisteredMemory slotMemory = rs::test::registerFabricMemory(
      target, slot, fab::RegisteredMemory::Access::kRemoteWrite);
  fab::RegisteredMemory sourceMemory =
      rs::test::registerFabricMemory(writer, source, fab::RegisteredMemory::Access::kLocal);
  rs::Result<fab::FabricEndpoint::PeerId> peer =
      writer.endpoint->addPeer(target.endpoint->address(), "target");
  REQUIRE(peer.status().toString() == "OK");
  // What the target hands the writer (in the handshake, on the data path): only a part of the
  // slot, so that the bounds it names are the ones checked.
  const fab::RemoteBuffer granted = slotMemory.remote(0, slot.size());

  struct Case {
    size_t size, sourceOffset, slotOffset;
  };
  const Case cases[] = {{1, 0, 0},           {1, 3, 5},           {3, 1, 7},
                        {4095, 17, 33},      {4096, 1, 4095},     {65537, 9, 11},
                        {kMiB + 7, 3, 13},   {8 * kMiB, 0, 0},    {8 * kMiB, 31, 63},
                        {8 * kMiB - 1, 1, 1}};
  FabricPoller poller(*target.endpoint);
  uint32_t immediate = 0x5EED0000;
  for (const Case& c : cases) {
    INFO("size " << c.size << " source offset " << c.sourceOffset << " slot offset "
                 << c.slotOffset);
    ++immediate;
    REQUIRE(writer.endpoint
                ->postWrite(*peer, sourceMemory, c.sourceOffset, c.size, granted, c.slotOffset,
                            immediate, /*token=*/immediate)
                .toString() == "OK");
    rs::Result<fab::FabricCompletion> done = writer.endpoint->next(kBound);
    REQUIRE(done.status().toString() == "OK");
    CHECK(done->op == fab::FabricOp::kWrite);
    CHECK(done->token == immediate);
    REQUIRE(done->status.toString() == "OK");
    REQUIRE(poller.waitFor([&](const auto& all) { return hasRemoteWrite(all, immediate); }));
    CHECK(std::memcmp(slot.data() + c.slotOffset, source.data() + c.sourceOffset, c.size) == 0);
    // Not a byte beside it.
    CHECK(firstTouched(slot, 0, c.slotOffset, kUntouched) == c.slotOffset);
    CHECK(firstTouched(slot, c.slotOffset + c.size, slot.size(), kUntouched) == slot.size());
    std::memset(slot.data(), kUntouched, slot.size());
  }
  // Each write reached the target exactly once, and none failed there.
  const auto all = poller.completions();
  CHECK(all.size() == std::size(cases));
  for (const auto& c : all) CHECK(c.status.toString() == "OK");
  CHECK(writer.endpoint->pending() == 0);
}

TEST_CASE("a write outside the peer's granted buffer is refused before it is posted",
          "[fabric]") {
  FabricSide target = rs::test::openFabricSide("target");
  FabricSide writer = rs::test::openFabricSide("writer");
  std::vector<uint8_t> slot(4096), source(8192);
  fab::RegisteredMemory slotMemory = rs::test::registerFabricMemory(
      target, slot, fab::RegisteredMemory::Access::kRemoteWrite);
  fab::RegisteredMemory sourceMemory =
      rs::test::registerFabricMemory(writer, source, fab::RegisteredMemory::Access::kLocal);
  auto peer = writer.endpoint->addPeer(target.endpoint->address(), "target");
  REQUIRE(peer.isOk());
  const fab::RemoteBuffer granted = slotMemory.remote(1024, 1024);
  CHECK(writer.endpoint->postWrite(*peer, sourceMemory, 0, 1025, granted, 0, 1, 1).code() ==
        rs::StatusCode::kInvalidArgument);
  CHECK(writer.endpoint->postWrite(*peer, sourceMemory, 0, 1, granted, 1024, 1, 1).code() ==
        rs::StatusCode::kInvalidArgument);
  CHECK(writer.endpoint->postWrite(*peer, sourceMemory, 8000, 193, granted, 0, 1, 1).code() ==
        rs::StatusCode::kInvalidArgument);
  fab::RemoteBuffer wrapping = granted;
  wrapping.address = ~uint64_t{0} - 10;
  CHECK(writer.endpoint->postWrite(*peer, sourceMemory, 0, 100, wrapping, 20, 1, 1).code() ==
        rs::StatusCode::kInvalidArgument);
  CHECK(writer.endpoint->pending() == 0);
}

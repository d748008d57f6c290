// CollNet groups as the NCCL plugin creates them: the id from the exchanged handles, the
// blocking collective connect with its rendezvous, and its failure on every node.
#include <catch2/catch.hpp>

#include <cstring>

#include "rs/nccl/collnet_group.h"
#include "rs/nccl/net_interfaces.h"
#include "tests/support/local_pool.h"

namespace rs::test {
namespace {

std::vector<std::array<char, 128>> makeHandles(int n) {
  std::vector<std::array<char, 128>> out(static_cast<size_t>(n));
  for (auto& h : out) {
    h.fill(0);
    const auto handle = nccl::CollNetHandle::fresh();
    std::memcpy(h.data(), &handle, sizeof handle);
  }
  return out;
}

std::vector<const void*> pointers(const std::vector<std::array<char, 128>>& handles) {
  std::vector<const void*> out;
  for (const auto& h : handles) out.push_back(h.data());
  return out;
}

}  // namespace

TEST_CASE("CollNet group ids come from the handles: same handles, same id", "[collnet]") {
  auto a = makeHandles(3), b = makeHandles(3);
  auto idA = nccl::groupIdFromHandles(pointers(a).data(), 3);
  auto idA2 = nccl::groupIdFromHandles(pointers(a).data(), 3);
  auto idB = nccl::groupIdFromHandles(pointers(b).data(), 3);
  REQUIRE(idA.isOk());
  CHECK(*idA == *idA2);
  CHECK(!(*idA == *idB));  // a second communicator gets its own group
  auto two = nccl::groupIdFromHandles(pointers(a).data(), 2);
  CHECK(!(*two == *idA));
  std::array<char, 128> foreign{};
  foreign.fill(0x5A);
  std::vector<const void*> bad = pointers(a);
  bad[1] = foreign.data();
  auto refused = nccl::groupIdFromHandles(bad.data(), 3);
  REQUIRE(!refused.isOk());
  CHECK(refused.status().message().find("handle 1") != std::string::npos);
}

TEST_CASE("CollNet reduceSupport: every NCCL type, fp8 included", "[collnet]") {
  for (int t = 0; t < 12; ++t)  // ncclNumTypes of NCCL 2.28: fp8 E4M3 and E5M2 are 10 and 11
    for (int o = 0; o < 4; ++o) CHECK(nccl::CollNetGroup::supports(t, o));
  CHECK(!nccl::CollNetGroup::supports(12, 0));
  CHECK(!nccl::CollNetGroup::supports(-1, 0));
  CHECK(!nccl::CollNetGroup::supports(7, 5));
}

TEST_CASE("CollNet connect is collective: all nodes up, then all-reduces work", "[collnet]") {
  LocalPool pool(2);
  const int nodes = 3;
  auto handles = makeHandles(nodes);
  auto ptrs = pointers(handles);
  Status st = runRanks(nodes, [&](int rank) -> Status {
    auto group = nccl::CollNetGroup::connect(testClientOptions(pool.endpoints()), ptrs.data(),
                                               nodes, rank, std::chrono::seconds(120));
    if (!group) return group.status();
    std::vector<float> buf(300000, static_cast<float>(rank + 1));
    auto r = (*group)->allReduceAsync(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                      ReduceOp::kSum);
    if (!r) return r.status();
    RS_RETURN_IF_ERROR((*r)->wait());
    for (float v : buf)
      if (v != 6.0f) return internalError("wrong CollNet result");
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
}

TEST_CASE("CollNet connect fails on every node when one node never comes", "[collnet]") {
  LocalPool pool(1);
  auto handles = makeHandles(3);
  auto ptrs = pointers(handles);
  std::vector<Status> results(2);
  Status st = runRanks(2, [&](int rank) -> Status {  // node 2 of 3 never calls connect
    auto group = nccl::CollNetGroup::connect(testClientOptions(pool.endpoints()), ptrs.data(),
                                               3, rank, std::chrono::milliseconds(500));
    results[rank] = group.status();
    return Status::ok();
  });
  REQUIRE(st.toString() == "OK");
  for (const Status& r : results) {
    INFO(r.toString());
    CHECK(!r.isOk());
    CHECK(r.message().find("rendezvous of 3 nodes failed") != std::string::npos);
  }
}

TEST_CASE("interface selection follows NCCL_SOCKET_IFNAME syntax", "[collnet]") {
  CHECK(nccl::interfaceMatches("eth", "eth0"));
  CHECK(nccl::interfaceMatches("ens,eth", "eth1"));
  CHECK(!nccl::interfaceMatches("ens", "eth0"));
  CHECK(!nccl::interfaceMatches("^eth", "eth0"));
  CHECK(nccl::interfaceMatches("^eth,docker", "ens5"));
  CHECK(nccl::interfaceMatches("=eth0", "eth0"));
  CHECK(!nccl::interfaceMatches("=eth", "eth0"));
  auto lo = nccl::findInterfaces("lo");
  REQUIRE(lo.isOk());
  CHECK(lo->front().name == "lo");
  CHECK(lo->front().address == "127.0.0.1");
  auto none = nccl::findInterfaces("=no-such-interface");
  REQUIRE(!none.isOk());
  CHECK(none.status().message().find("no-such-interface") != std::string::npos);
}

}  // namespace rs::test

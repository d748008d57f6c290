// The group registry's members-agree rules for deterministic mode (RS_DETERMINISTIC) and the
// fp32 accumulator (RS_FP32_ACCUMULATOR): the first member sets them, over a stream's HELLO or
// gRPC JoinGroup alike, and a member that differs is refused with the reason.
#include "server/group_registry.h"

#include <catch2/catch.hpp>
#include <string>

#include "tests/support/text_contains.h"

namespace rs::server {
namespace {

using test::contains;

GroupParams modeParams(bool deterministic, Fp32Accumulator fp32 = Fp32Accumulator::kFp32) {
  GroupParams p;
  p.worldSize = 3;
  p.streamCount = 1;
  p.reducerCount = 1;
  p.deterministic = deterministic;
  p.fp32Accumulator = fp32;
  return p;
}

}  // namespace

TEST_CASE("group registry: members must agree on deterministic mode") {
  GroupRegistry registry(RegistryLimits{}, 1);
  for (bool first : {true, false}) {
    INFO("the group created " << (first ? "with" : "without") << " it");
    const GroupId id = GroupId::random();
    auto created = registry.joinStream(id, 0, 0, modeParams(first));
    REQUIRE(created.status().toString() == "OK");
    CHECK((*created)->params().deterministic == first);

    auto differs = registry.joinStream(id, 1, 0, modeParams(!first));
    REQUIRE_FALSE(differs.isOk());
    CHECK(differs.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(differs.status().message(),
                   std::string("rank 1 ") + (first ? "does not ask for" : "asks for") +
                       " deterministic mode, but the group was created " +
                       (first ? "with" : "without") + " it"));
    auto declared = registry.declareMember(id, 2, modeParams(!first));  // gRPC JoinGroup
    CHECK_FALSE(declared.isOk());

    CHECK(registry.joinStream(id, 1, 0, modeParams(first)).isOk());
    CHECK(registry.declareMember(id, 2, modeParams(first)).isOk());
  }
}

TEST_CASE("group registry: members must agree on the fp32 accumulator") {
  GroupRegistry registry(RegistryLimits{}, 1);
  constexpr auto kFp32 = Fp32Accumulator::kFp32, kFp64 = Fp32Accumulator::kFp64;
  for (Fp32Accumulator first : {kFp64, kFp32}) {
    const Fp32Accumulator other = first == kFp64 ? kFp32 : kFp64;
    INFO("the group created with an " << fp32AccumulatorName(first) << " accumulator");
    const GroupId id = GroupId::random();
    auto created = registry.joinStream(id, 0, 0, modeParams(false, first));
    REQUIRE(created.status().toString() == "OK");
    CHECK((*created)->params().fp32Accumulator == first);

    auto differs = registry.joinStream(id, 1, 0, modeParams(false, other));
    REQUIRE_FALSE(differs.isOk());
    CHECK(differs.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(differs.status().message(),
                   "rank 1 asks for an " + std::string(fp32AccumulatorName(other)) +
                       " accumulator for fp32 sums, but the group was created with an " +
                       std::string(fp32AccumulatorName(first)) +
                       " one (set RS_FP32_ACCUMULATOR alike on every member)"));
    CHECK_FALSE(registry.declareMember(id, 2, modeParams(false, other)).isOk());  // gRPC JoinGroup

    CHECK(registry.joinStream(id, 1, 0, modeParams(false, first)).isOk());
    CHECK(registry.declareMember(id, 2, modeParams(false, first)).isOk());
  }
}

}  // namespace rs::server

// The group registry's members-agree rule for deterministic mode (RS_DETERMINISTIC): the first
// member sets it, over a stream's HELLO or gRPC JoinGroup alike, and a member that differs is
// refused with the reason.
#include "server/group_registry.h"

#include <catch2/catch.hpp>
#include <string>

namespace rs::server {
namespace {

GroupParams paramsOf(bool deterministic) {
  GroupParams p;
  p.worldSize = 3;
  p.streamCount = 1;
  p.reducerCount = 1;
  p.deterministic = deterministic;
  return p;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("group registry: members must agree on deterministic mode") {
  GroupRegistry registry(RegistryLimits{}, 1);
  for (bool first : {true, false}) {
    INFO("the group created " << (first ? "with" : "without") << " it");
    const GroupId id = GroupId::random();
    auto created = registry.joinStream(id, 0, 0, paramsOf(first));
    REQUIRE(created.status().toString() == "OK");
    CHECK((*created)->params().deterministic == first);

    auto differs = registry.joinStream(id, 1, 0, paramsOf(!first));
    REQUIRE_FALSE(differs.isOk());
    CHECK(differs.status().code() == StatusCode::kInvalidArgument);
    CHECK(contains(differs.status().message(),
                   std::string("rank 1 ") + (first ? "does not ask for" : "asks for") +
                       " deterministic mode, but the group was created " +
                       (first ? "with" : "without") + " it"));
    auto declared = registry.declareMember(id, 2, paramsOf(!first));  // gRPC JoinGroup
    CHECK_FALSE(declared.isOk());

    CHECK(registry.joinStream(id, 1, 0, paramsOf(first)).isOk());
    CHECK(registry.declareMember(id, 2, paramsOf(first)).isOk());
  }
}

}  // namespace rs::server

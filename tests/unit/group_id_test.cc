#include "core/wire/group_id.h"

#include <set>
#include <unordered_set>

#include <catch2/catch.hpp>

using Catch::Matchers::Contains;
using rs::GroupId;
using rs::StatusCode;

TEST_CASE("group id: toString is 32 lower-case hex digits, hi first") {
  GroupId g{0x0123456789ABCDEFull, 0xFEDCBA9876543210ull};
  REQUIRE(g.toString() == "0123456789abcdeffedcba9876543210");
  REQUIRE(GroupId{}.toString() == "00000000000000000000000000000000");
  REQUIRE(GroupId{~0ull, ~0ull}.toString() == "ffffffffffffffffffffffffffffffff");
  REQUIRE(GroupId{0, 1}.toString() == "00000000000000000000000000000001");
  REQUIRE(GroupId{1, 0}.toString() == "00000000000000010000000000000000");
}

TEST_CASE("group id: parse round-trips toString") {
  GroupId g{0x0123456789ABCDEFull, 0xFEDCBA9876543210ull};
  auto parsed = GroupId::parse(g.toString());
  REQUIRE(parsed.isOk());
  REQUIRE(*parsed == g);
  for (int i = 0; i < 100; ++i) {
    GroupId r = GroupId::random();
    auto p = GroupId::parse(r.toString());
    REQUIRE(p.isOk());
    REQUIRE(*p == r);
  }
}

TEST_CASE("group id: parse accepts upper and mixed case") {
  auto p = GroupId::parse("0123456789ABCDEFfedcba9876543210");
  REQUIRE(p.isOk());
  REQUIRE(p->hi == 0x0123456789ABCDEFull);
  REQUIRE(p->lo == 0xFEDCBA9876543210ull);
}

TEST_CASE("group id: parse rejects wrong lengths") {
  for (std::string_view s : {"", "0", "0123456789abcdef0123456789abcde",
                             "0123456789abcdef0123456789abcdef0"}) {
    auto p = GroupId::parse(s);
    REQUIRE_FALSE(p.isOk());
    REQUIRE(p.status().code() == StatusCode::kInvalidArgument);
    REQUIRE_THAT(p.status().message(), Contains("expected 32 hex digits"));
    REQUIRE_THAT(p.status().message(), Contains("got " + std::to_string(s.size())));
  }
}

TEST_CASE("group id: parse rejects non-hex characters and says where") {
  std::string s = "0123456789abcdef0123456789abcdef";
  for (char bad : {'g', 'G', ' ', '-', 'x', '\0', '\xff'}) {
    for (size_t pos : {size_t{0}, size_t{15}, size_t{16}, size_t{31}}) {
      std::string t = s;
      t[pos] = bad;
      auto p = GroupId::parse(t);
      REQUIRE_FALSE(p.isOk());
      REQUIRE(p.status().code() == StatusCode::kInvalidArgument);
      REQUIRE_THAT(p.status().message(), Contains("character " + std::to_string(pos)));
      REQUIRE_THAT(p.status().message(), Contains("not a hex digit"));
    }
  }
  // A "0x" prefix is not part of the format.
  REQUIRE_FALSE(GroupId::parse("0x23456789abcdef0123456789abcdef").isOk());
}

TEST_CASE("group id: random ids are non-zero and distinct") {
  std::set<GroupId> seen;
  for (int i = 0; i < 1000; ++i) {
    GroupId g = GroupId::random();
    REQUIRE_FALSE(g.isZero());
    REQUIRE(seen.insert(g).second);
  }
}

TEST_CASE("group id: ordering, equality and hashing") {
  GroupId a{1, 2}, b{1, 3}, c{2, 0};
  REQUIRE(a < b);
  REQUIRE(b < c);
  REQUIRE(a == GroupId{1, 2});
  REQUIRE(a != b);
  std::unordered_set<GroupId, rs::GroupIdHash> set{a, b, c, a};
  REQUIRE(set.size() == 3);
}

// PackedHost (core/transport/packed_host.h): numeric hosts packed into the p2p handle's bytes
// and printed back as they were written, names refused, the wildcard addresses told apart.
#include "core/transport/packed_host.h"

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>

using rs::transport::packHost;
using rs::transport::PackedHost;
using rs::transport::unpackHost;

TEST_CASE("packed host: IPv4 fills the first four bytes, no scope") {
  const auto packed = packHost("10.0.0.7");
  REQUIRE(packed.has_value());
  CHECK(packed->family == 4);
  CHECK(packed->address == std::array<uint8_t, 16>{10, 0, 0, 7});
  CHECK(packed->scopeId == 0);
  CHECK(!packed->unspecified());
  CHECK(unpackHost(*packed) == "10.0.0.7");
}

TEST_CASE("packed host: IPv6 fills all sixteen bytes") {
  const auto packed = packHost("2001:db8::1");
  REQUIRE(packed.has_value());
  CHECK(packed->family == 6);
  CHECK(packed->address[0] == 0x20);
  CHECK(packed->address[1] == 0x01);
  CHECK(packed->address[2] == 0x0d);
  CHECK(packed->address[3] == 0xb8);
  CHECK(packed->address[15] == 1);
  CHECK(packed->scopeId == 0);
  CHECK(unpackHost(*packed) == "2001:db8::1");
}

TEST_CASE("packed host: a link-local IPv6 address keeps its scope") {
  // Loopback's index is 1 on Linux; a numeric scope reads the same wherever it is.
  const auto packed = packHost("fe80::1%1");
  REQUIRE(packed.has_value());
  CHECK(packed->family == 6);
  CHECK(packed->scopeId == 1);
  const std::string printed = unpackHost(*packed);
  CAPTURE(printed);
  const auto again = packHost(printed);
  REQUIRE(again.has_value());
  CHECK(again->address == packed->address);
  CHECK(again->scopeId == 1);
}

TEST_CASE("packed host: round trips print what was packed") {
  for (const char* host : {"127.0.0.1", "255.255.255.255", "::1", "::ffff:10.1.2.3",
                           "fd00:1:2:3:4:5:6:7"}) {
    INFO(host);
    const auto packed = packHost(host);
    REQUIRE(packed.has_value());
    CHECK(unpackHost(*packed) == host);
  }
}

TEST_CASE("packed host: names and junk are not numeric hosts") {
  for (const char* host : {"", "localhost", "reducer-0.rs.svc", "10.0.0", "10.0.0.256", "1::2::3",
                           "[::1]", "10.0.0.7:80"}) {
    INFO("'" << host << "'");
    CHECK(!packHost(host).has_value());
  }
}

TEST_CASE("packed host: the wildcard addresses name no interface") {
  for (const char* host : {"0.0.0.0", "::"}) {
    INFO(host);
    const auto packed = packHost(host);
    REQUIRE(packed.has_value());
    CHECK(packed->unspecified());
  }
  CHECK(!packHost("0.0.0.1")->unspecified());
  CHECK(!packHost("::1")->unspecified());
}

TEST_CASE("packed host: what a handle decoder accepts unpacks") {
  PackedHost v4;
  v4.family = 4;
  v4.address = {192, 168, 1, 20};
  CHECK(unpackHost(v4) == "192.168.1.20");
  PackedHost v6;
  v6.family = 6;
  v6.address[15] = 1;
  CHECK(unpackHost(v6) == "::1");
}

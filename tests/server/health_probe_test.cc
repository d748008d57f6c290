// Where `reduction-server --health-probe` looks when no address is given: the gRPC address the
// same configuration makes the daemon listen on, as reached from the same host.
#include "server/health_probe.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/parse_server_args.h"

namespace {

using rs::test::parseServerArgs;

std::string probeAddress(std::vector<std::string> args) {
  auto parsed = parseServerArgs(std::move(args));
  REQUIRE(parsed.exitCode == -1);
  auto address = rs::server::healthProbeAddress(parsed.config);
  REQUIRE(address.isOk());
  return *address;
}

}  // namespace

TEST_CASE("health probe: the flag with and without an address, and its deadline") {
  auto bare = parseServerArgs({"--health-probe"});
  CHECK(bare.exitCode == -1);
  CHECK(bare.healthProbe);
  CHECK(bare.healthProbeAddress.empty());
  CHECK(bare.healthProbeTimeoutMs == 3000);

  auto given =
      parseServerArgs({"--health-probe", "10.0.0.5:7000", "--health-probe-timeout-ms", "500"});
  CHECK(given.healthProbe);
  CHECK(given.healthProbeAddress == "10.0.0.5:7000");
  CHECK(given.healthProbeTimeoutMs == 500);

  CHECK_FALSE(parseServerArgs({"--data-listen", "127.0.0.1:0"}).healthProbe);
  CHECK(parseServerArgs({"--health-probe", "--health-probe-timeout-ms", "0"}).exitCode > 0);
}

TEST_CASE("health probe: the daemon's knobs are not validated in probe mode") {
  // A probe must not fail because of a knob only the serving daemon uses.
  auto parsed = parseServerArgs({"--health-probe", "--memory-limit", "1K"});
  CHECK(parsed.exitCode == -1);
  CHECK(parsed.healthProbe);
}

TEST_CASE("health probe: the address follows the daemon's listen addresses") {
  CHECK(probeAddress({}) == "127.0.0.1:2223");  // default 0.0.0.0:2222, gRPC data + 1
  CHECK(probeAddress({"--data-listen", "10.1.2.3:5000"}) == "10.1.2.3:5001");
  CHECK(probeAddress({"--data-listen", "[::]:5000"}) == "[::1]:5001");
  CHECK(probeAddress({"--grpc-listen", "0.0.0.0:9000"}) == "127.0.0.1:9000");
  CHECK(probeAddress({"--data-listen", "0.0.0.0:0", "--grpc-listen", "10.1.2.3:9000"}) ==
        "10.1.2.3:9000");
}

TEST_CASE("health probe: an address that cannot be known is an error naming its source") {
  auto check = [](std::vector<std::string> args, const std::string& want) {
    auto parsed = parseServerArgs(std::move(args));
    REQUIRE(parsed.exitCode == -1);
    auto address = rs::server::healthProbeAddress(parsed.config);
    REQUIRE_FALSE(address.isOk());
    CHECK_THAT(address.status().message(), Catch::Contains(want));
  };
  check({"--data-listen", "127.0.0.1:0"}, "--data-listen");
  check({"--grpc-listen", "127.0.0.1:0"}, "--grpc-listen");
  check({"--data-listen", "127.0.0.1:65535"}, "65535");
}

TEST_CASE("health probe: nothing listening is a failure, exit 1, never 2") {
  // Port 1 on loopback: privileged and unused on any test machine; refused at once.
  CHECK(rs::server::runHealthProbe("127.0.0.1:1", std::chrono::milliseconds(5000)) == 1);
}

// The fabric's options (RS_FABRIC, RS_FABRIC_NODE, RS_FABRIC_PROBE_TIMEOUT_MS;
// client/fabric_hubs.h): what each value asks for, and the values refused.
#include <catch2/catch.hpp>

#include "client/fabric_hubs.h"
#include "rs/client.h"
#include "tests/support/scoped_env.h"

namespace rs::test {
namespace {

using client::ClientOptions;
using client::FabricHubs;

}  // namespace

TEST_CASE("RS_FABRIC: auto by default, off, a provider, and RS_FABRIC_NODE as given") {
  {
    ScopedEnv fabric("RS_FABRIC", nullptr), node("RS_FABRIC_NODE", nullptr);
    ClientOptions o;
    REQUIRE(o.applyEnvironment().toString() == "OK");
    CHECK(o.fabric == "auto");
    CHECK(o.fabricNode.empty());
  }
  for (const char* value : {"off", "auto", "tcp", "verbs", "efa", "verbs;ofi_rxm"}) {
    INFO(value);
    ScopedEnv fabric("RS_FABRIC", value), node("RS_FABRIC_NODE", "127.0.0.1");
    ClientOptions o;
    REQUIRE(o.applyEnvironment().toString() == "OK");
    CHECK(o.fabric == value);
    CHECK(o.fabricNode == "127.0.0.1");
  }
}

TEST_CASE("RS_FABRIC: a value that names no provider is refused, naming what is expected") {
  for (const char* value : {"tcp verbs", "x/y", "verbs\n"}) {
    INFO(value);
    ScopedEnv fabric("RS_FABRIC", value);
    ClientOptions o;
    const Status s = o.applyEnvironment();
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Matchers::Contains("RS_FABRIC") &&
                                Catch::Matchers::Contains("'off', 'auto' or a libfabric"));
  }
  ClientOptions o;
  o.reducers = {{"127.0.0.1", 1}};
  o.fabric = "";
  CHECK_THAT(o.validate().message(), Catch::Matchers::Contains("fabric (RS_FABRIC)"));
}

TEST_CASE("RS_FABRIC_PROBE_TIMEOUT_MS: 10 s by default, a value in ms, 0 and words refused") {
  {
    ScopedEnv probe("RS_FABRIC_PROBE_TIMEOUT_MS", nullptr);
    ClientOptions o;
    REQUIRE(o.applyEnvironment().toString() == "OK");
    CHECK(o.fabricProbeTimeout == std::chrono::milliseconds(10000));
  }
  {
    ScopedEnv probe("RS_FABRIC_PROBE_TIMEOUT_MS", "2500");
    ClientOptions o;
    REQUIRE(o.applyEnvironment().toString() == "OK");
    CHECK(o.fabricProbeTimeout == std::chrono::milliseconds(2500));
  }
  for (const char* value : {"0", "ten", "-1"}) {
    INFO(value);
    ScopedEnv probe("RS_FABRIC_PROBE_TIMEOUT_MS", value);
    ClientOptions o;
    const Status s = o.applyEnvironment();
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(s.message(), Catch::Matchers::Contains("RS_FABRIC_PROBE_TIMEOUT_MS"));
  }
}

TEST_CASE("RS_FABRIC: the providers tried, in order: none when off, verbs then efa when auto "
          "(never tcp), else the one named") {
  CHECK(FabricHubs::candidates("off").empty());
  CHECK(FabricHubs::candidates("auto") == std::vector<std::string>{"verbs", "efa"});
  CHECK(FabricHubs::candidates("tcp") == std::vector<std::string>{"tcp"});
}

}  // namespace rs::test

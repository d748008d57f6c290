// The reducer's resource limits added for hostile peers: their flags, RS_* twins, defaults
// and range checks (config_test.cc covers the rest of the flags).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "server/config.h"
#include "tests/support/parse_server_args.h"

namespace {

using rs::test::parseServerArgs;

}  // namespace

TEST_CASE("limits config: the handshake pool, in all and per peer address") {
  const rs::server::ServerConfig defaults;
  CHECK(defaults.maxPendingHandshakes == 4096);
  CHECK(defaults.maxPendingHandshakesPerPeer == 1024);  // a quarter of the pool
  auto caps = parseServerArgs({"--data-listen", "127.0.0.1:0", "--max-pending-handshakes", "64",
                               "--max-pending-handshakes-per-peer", "8"});
  REQUIRE(caps.exitCode == -1);
  CHECK(caps.config.maxPendingHandshakes == 64);
  CHECK(caps.config.maxPendingHandshakesPerPeer == 8);
  setenv("RS_MAX_PENDING_HANDSHAKES_PER_PEER", "5", 1);
  auto env = parseServerArgs({"--data-listen", "127.0.0.1:0"});
  unsetenv("RS_MAX_PENDING_HANDSHAKES_PER_PEER");
  CHECK(env.config.maxPendingHandshakesPerPeer == 5);

  rs::server::ServerConfig c;
  c.ioThreads = 1;
  c.maxPendingHandshakes = 0;
  CHECK(c.validate().message().find("--max-pending-handshakes") != std::string::npos);
  c.maxPendingHandshakes = 1;
  c.maxPendingHandshakesPerPeer = 0;
  CHECK(c.validate().message().find("--max-pending-handshakes-per-peer") != std::string::npos);
  c.maxPendingHandshakesPerPeer = 1;
  CHECK(c.validate().isOk());
}

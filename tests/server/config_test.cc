// The reducer's flags and their RS_* twins, parsed as main() parses them.
#include "server/config.h"

#include <catch2/catch.hpp>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/support/parse_server_args.h"
#include "tests/support/scoped_env.h"

namespace {

using rs::test::parseServerArgs;
using rs::test::ScopedEnv;

}  // namespace

TEST_CASE("server config: size flags take units and land in their fields") {
  auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0", "--max-chunk", "4MiB",
                                 "--memory-limit", "1GB", "--piece", "128K", "--read-wake", "32KiB",
                                 "--max-lead", "1MiB", "--socket-send-buffer", "512KiB"});
  REQUIRE(parsed.exitCode == -1);
  const auto& c = parsed.config;
  CHECK(c.maxChunkBytes == 4u << 20);
  CHECK(c.memoryLimitBytes == 1000000000ull);
  CHECK(c.pieceBytes == 128u << 10);
  CHECK(c.readWakeBytes == 32u << 10);
  CHECK(c.maxLeadBytes == 1u << 20);
  CHECK(c.transport.tcp.sendBufferBytes == 512 << 10);
  // --max-lead bounds the receive window unless --socket-recv-buffer is given.
  CHECK(c.transport.tcp.recvBufferBytes == 1 << 20);
  CHECK(c.validate().isOk());
}

TEST_CASE("server config: defaults stand when no size flag is given") {
  auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0"});
  REQUIRE(parsed.exitCode == -1);
  const rs::server::ServerConfig defaults;
  CHECK(parsed.config.maxChunkBytes == defaults.maxChunkBytes);
  CHECK(parsed.config.memoryLimitBytes == defaults.memoryLimitBytes);
  CHECK(parsed.config.pieceBytes == defaults.pieceBytes);
  CHECK(parsed.config.readWakeBytes == defaults.readWakeBytes);
  CHECK(parsed.config.maxLeadBytes == 0);
  CHECK(parsed.config.transport.tcp.recvBufferBytes == 0);
}

TEST_CASE("server config: RS_* variables set flags and sizes, and flags win over them") {
  ScopedEnv lead("RS_MAX_LEAD", "2MiB");
  ScopedEnv piece("RS_PIECE", "64KiB");
  ScopedEnv rcvbuf("RS_SOCKET_RECV_BUFFER", "8MiB");
  ScopedEnv threads("RS_IO_THREADS", "3");
  ScopedEnv timeout("RS_COLLECTIVE_TIMEOUT_MS", "1234");
  auto parsed =
      parseServerArgs({"--data-listen", "127.0.0.1:0", "--piece", "256KiB", "--io-threads", "2"});
  REQUIRE(parsed.exitCode == -1);
  CHECK(parsed.config.ioThreads == 2);  // the flag, not RS_IO_THREADS
  CHECK(parsed.config.collectiveTimeoutMs == 1234);
  CHECK(parsed.config.maxLeadBytes == 2u << 20);
  CHECK(parsed.config.pieceBytes == 256u << 10);        // the flag, not RS_PIECE
  CHECK(parsed.config.transport.tcp.recvBufferBytes == 8 << 20);  // given, so --max-lead leaves it
}

TEST_CASE("server config: sizes beyond a field's type saturate instead of wrapping") {
  auto parsed =
      parseServerArgs({"--data-listen", "127.0.0.1:0", "--socket-send-buffer", "8GiB",
                       "--max-chunk", "16GiB", "--memory-limit", "64GiB", "--io-threads", "1"});
  REQUIRE(parsed.exitCode == -1);
  CHECK(parsed.config.transport.tcp.sendBufferBytes == INT_MAX);
  CHECK(parsed.config.maxChunkBytes == UINT32_MAX);
}

TEST_CASE("server config: a malformed size stops start-up") {
  auto parsed = parseServerArgs({"--data-listen", "127.0.0.1:0", "--piece", "12XB"});
  CHECK(parsed.exitCode > 0);
}

TEST_CASE("server config: out-of-range values stop start-up, and the reason names the flag") {
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--piece", "1000"}).exitCode == 2);
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--max-lead", "64KiB"}).exitCode == 2);

  rs::server::ServerConfig c;
  c.ioThreads = 1;
  c.pieceBytes = 1000;
  CHECK(c.validate().message().find("--piece") != std::string::npos);
  c.pieceBytes = 256u << 10;
  c.maxLeadBytes = 64u << 10;
  CHECK(c.validate().message().find("--max-lead") != std::string::npos);
  c.maxLeadBytes = 0;
  c.memoryLimitBytes = 1u << 20;
  CHECK(c.validate().message().find("--memory-limit") != std::string::npos);
  c.memoryLimitBytes = 2ull << 30;
  CHECK(c.validate().isOk());
  c.maxConnectionsPerGroup = 0;
  CHECK(c.validate().message().find("--max-connections-per-group") != std::string::npos);
  c.maxConnectionsPerGroup = 1;
  c.maxConnectionsPerPeer = 0;
  CHECK(c.validate().message().find("--max-connections-per-peer") != std::string::npos);
  c.maxConnectionsPerPeer = 1;
  CHECK(c.validate().isOk());
  auto caps = parseServerArgs({"--data-listen", "127.0.0.1:0", "--max-connections-per-group", "7",
                               "--max-connections-per-peer", "9", "--idle-timeout-ms", "0"});
  REQUIRE(caps.exitCode == -1);
  CHECK(caps.config.idleTimeoutMs == 0);  // off
  CHECK(rs::server::ServerConfig().idleTimeoutMs == 3600000);
  CHECK(caps.config.maxConnectionsPerGroup == 7);
  CHECK(caps.config.maxConnectionsPerPeer == 9);
}

TEST_CASE("server config: --metrics-listen and RS_METRICS_LISTEN, off by default") {
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0"}).config.metricsListen.empty());
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--metrics-listen", "0.0.0.0:2224"})
            .config.metricsListen == "0.0.0.0:2224");
  {
    ScopedEnv env("RS_METRICS_LISTEN", "127.0.0.1:0");
    CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0"}).config.metricsListen == "127.0.0.1:0");
  }
  for (const char* bad : {"2224", ":2224", "host:", "host:http", "host:70000", "a:1,b:2"}) {
    INFO(bad);
    CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--metrics-listen", bad}).exitCode == 2);
    rs::server::ServerConfig c;
    c.ioThreads = 1;
    c.metricsListen = bad;
    CHECK(c.validate().message().find("--metrics-listen") != std::string::npos);
  }
}

TEST_CASE("server config: --loss-detect-ms, 10 s by default, caps what a member asks, 0 is off") {
  CHECK(rs::server::ServerConfig().lossDetectMs == 10000);
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--loss-detect-ms", "2500"})
            .config.lossDetectMs == 2500);
  {
    ScopedEnv env("RS_LOSS_DETECT_MS", "0");
    CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0"}).config.lossDetectMs == 0);
  }
  CHECK(parseServerArgs({"--data-listen", "127.0.0.1:0", "--loss-detect-ms", "99"}).exitCode == 2);
  rs::server::ServerConfig c;
  c.ioThreads = 1;
  c.lossDetectMs = 50;
  CHECK(c.validate().message() ==
        "--loss-detect-ms must be 0 (off) or at least 100, got 50");
  c.lossDetectMs = 100;
  CHECK(c.validate().isOk());

  // A stream's bound: the member's ask, capped by the operator's; no ask: the operator's.
  c.lossDetectMs = 10000;
  CHECK(c.streamLossDetectMs(0) == 10000);
  CHECK(c.streamLossDetectMs(3000) == 3000);
  CHECK(c.streamLossDetectMs(60000) == 10000);
  // Off on the reducer: off for every stream, whatever a member asks.
  c.lossDetectMs = 0;
  CHECK(c.streamLossDetectMs(0) == 0);
  CHECK(c.streamLossDetectMs(3000) == 0);
}

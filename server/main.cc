// reduction-server: flags and environment -> ServerConfig -> Server::run (or, with
// --health-probe, a health check of a running daemon).

#include "core/common/log.h"
#include "core/wire/auth.h"
#include "server/config.h"
#include "server/health_probe.h"
#include "server/server.h"

namespace {

int probe(const rs::server::ParsedConfig& parsed) {
  std::string address = parsed.healthProbeAddress;
  if (address.empty()) {
    auto derived = rs::server::healthProbeAddress(parsed.config);
    if (!derived) {
      fmt::print("reduction-server health probe: {}\n", derived.status().message());
      return 1;
    }
    address = *derived;
  }
  return rs::server::runHealthProbe(address,
                                    std::chrono::milliseconds(parsed.healthProbeTimeoutMs),
                                    parsed.config.grpcTlsCert);
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = rs::server::parseServerConfig(argc, argv);
  if (parsed.exitCode >= 0) return parsed.exitCode;
  if (parsed.healthProbe) return probe(parsed);
  if (!parsed.deriveJobSecret.empty()) {
    auto secret = rs::wire::deriveJobSecret(parsed.config.secret, parsed.deriveJobSecret);
    if (!secret) {
      fmt::print(stderr, "reduction-server: {}\n", secret.status().message());
      return 2;
    }
    fmt::print("{}\n", *secret);
    return 0;
  }
  if (rs::Status s = rs::configureLogging(parsed.config.logLevel, parsed.config.logFormat);
      !s.isOk()) {
    fmt::print(stderr, "reduction-server: {}\n", s.message());
    return 2;
  }
  rs::server::Server server(parsed.config);
  if (rs::Status s = server.start(); !s.isOk()) {
    rs::logger().critical("cannot start: {}", s.toString());
    return 1;
  }
  server.run();
  return 0;
}

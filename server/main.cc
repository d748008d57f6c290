// reduction-server: flags and environment -> ServerConfig -> Server::run.
#include <spdlog/spdlog.h>

#include "core/common/log.h"
#include "server/config.h"
#include "server/server.h"

int main(int argc, char** argv) {
  auto parsed = rs::server::parseServerConfig(argc, argv);
  if (parsed.exitCode >= 0) return parsed.exitCode;
  if (rs::Status s = rs::configureLogging(parsed.config.logLevel, parsed.config.logFormat);
      !s.isOk()) {
    fmt::print(stderr, "reduction-server: {}\n", s.message());
    return 2;
  }
  rs::server::Server server(parsed.config);
  if (rs::Status s = server.start(); !s.isOk()) {
    spdlog::critical("cannot start: {}", s.toString());
    return 1;
  }
  server.run();
  return 0;
}

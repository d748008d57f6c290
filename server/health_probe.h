// `reduction-server --health-probe`: asks a running daemon over grpc.health.v1 whether it
// serves, so that a container's HEALTHCHECK (or any supervisor) tests the daemon itself rather
// than an open port. The daemon turns its health NOT_SERVING when it starts to drain.
#pragma once

#include <chrono>
#include <string>

#include "core/common/status.h"
#include "server/config.h"

namespace rs::server {

// The gRPC address the daemon configured by `config` listens on, as a client reaches it from
// the same host: --grpc-listen, else the data port + 1, with a wildcard host (0.0.0.0, ::)
// replaced by loopback. An ephemeral port (0) cannot be known from outside: that is an error.
Result<std::string> healthProbeAddress(const ServerConfig& config);

// One Check (service "") against `address`, bounded by `timeout`. Prints one line saying what
// it found and returns the process exit code: 0 when SERVING, 1 otherwise (NOT_SERVING, no
// answer, unreachable). Docker reserves 2 in health checks, so nothing here returns it.
// With `tlsCert` (the daemon's own PEM certificate, --grpc-tls-cert) the check goes over TLS,
// trusting that certificate and expecting its name (first DNS subjectAltName, else its CN).
int runHealthProbe(const std::string& address, std::chrono::milliseconds timeout,
                   const std::string& tlsCert = {});

}  // namespace rs::server

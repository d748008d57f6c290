// Plain blocking TCP sockets for the floor benchmarks (tcp_pingpong, tcp_relay). Each
// connected socket is tuned by the transport's own configureSocket, so that a floor runs with
// the socket options of our data path (TCP_NODELAY, keep-alive, the buffer sizes given).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "core/common/endpoint.h"
#include "core/common/status.h"
#include "core/transport/options.h"

namespace rs::bench {

// A listening socket's descriptor. Where `portFile` is not empty, "<port> <pid>\n" is written
// there (whole, then renamed) once it listens, with the port it got (where.port may be 0): the
// cluster scripts wait for that file and stop the process by that pid.
Result<int> listenOn(const Endpoint& where, const std::string& portFile);

// Accepts one connection on `listener` and tunes it.
Result<int> acceptTuned(int listener, const transport::TcpOptions& options);

// Connects to `peer` and tunes the socket; retries a refused connection until `patience` has
// passed, since the other end may still be starting.
Result<int> connectTuned(const Endpoint& peer, const transport::TcpOptions& options,
                         std::chrono::milliseconds patience = std::chrono::seconds(10));

// Whole buffers on a blocking socket.
Status sendAll(int fd, const char* data, size_t bytes);
Status recvAll(int fd, char* data, size_t bytes);

}  // namespace rs::bench

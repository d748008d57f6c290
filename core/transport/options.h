// What a caller may tune in its transport, without naming the library that implements it (no
// Asio here): the client's public header and the server's config carry these.
#pragma once

namespace rs::transport {

// Socket options that every TCP data connection gets (TCP_NODELAY is always on).
struct TcpOptions {
  // 0 leaves the kernel's autotuning on, which on Linux usually beats a fixed size because a
  // fixed SO_RCVBUF is capped by net.core.rmem_max (often 208 KiB).
  int sendBufferBytes = 0;
  int recvBufferBytes = 0;
  // Keep-alive finds a peer that vanished without a FIN while no collective is in flight.
  bool keepAlive = true;
  int keepAliveIdleSeconds = 30;
  int keepAliveIntervalSeconds = 5;
  int keepAliveProbes = 4;
};

// Each transport reads its own part. TCP is the only one today.
struct Options {
  TcpOptions tcp;
};

}  // namespace rs::transport

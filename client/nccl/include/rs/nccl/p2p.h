// Point-to-point TCP transport for the NCCL net plugin (ncclNet): each connection stripes its
// messages over several sockets, as Google's Fast Socket does, so one NCCL connection can use
// more than one core's worth of TCP.
//
// NCCL's contract, which this API mirrors: listen() returns at once with a handle (at most
// 128 bytes) that NCCL carries to the peer; connect() and accept() never block: they return
// "not yet" until the connection is up and are called again; isend()/irecv() never block and
// may refuse ("busy", retried later) when NCCL_NET_MAX_REQUESTS (32) are in flight; test()
// never blocks. Messages are matched in posting order. A receive buffer may be larger than the
// message; test() reports the bytes that arrived.
//
// All I/O runs on the P2pEngine's io threads; the calls above only queue work and read
// atomics, so they are safe from NCCL's proxy threads. Every wait on a peer has a deadline;
// a peer that dies fails its pending requests with an error rather than hanging them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/common/status.h"
#include "core/transport/options.h"

namespace rs::nccl::p2p {

struct P2pOptions {
  uint32_t socketsPerConnection = 4;  // NCCL_RS_SOCKETS_PER_CONN
  uint64_t minStripeBytes = 64 << 10;  // smaller messages travel whole on one socket
  std::string listenAddress = "127.0.0.1";  // the interface address this device listens on
  std::chrono::milliseconds connectTimeout{120000};
  transport::Options transport;  // socket tuning
};

inline constexpr size_t kHandleBytes = 128;  // NCCL_NET_HANDLE_MAXSIZE
inline constexpr int kMaxRequestsInFlight = 32;  // NCCL_NET_MAX_REQUESTS

class P2pEngine;
class P2pRequest;
class P2pSendComm;
class P2pRecvComm;

// Process-wide io threads shared by every connection.
std::shared_ptr<P2pEngine> makeEngine(uint32_t threads);

class P2pListener {
 public:
  // Listens on options.listenAddress (an ephemeral port) and writes the handle the peer's
  // connect() needs into handle[0..kHandleBytes).
  static Result<std::unique_ptr<P2pListener>> listen(std::shared_ptr<P2pEngine> engine,
                                                     const P2pOptions& options, void* handle);
  ~P2pListener();

  // Non-blocking. A receiving connection once all sockets of one connecting peer have arrived
  // and introduced themselves; nullptr while not yet. Errors are final.
  Result<std::unique_ptr<P2pRecvComm>> tryAccept();

 private:
  class Impl;
  explicit P2pListener(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class P2pConnector {
 public:
  // Starts connecting to the listener that wrote `handle`. Non-blocking.
  static Result<std::unique_ptr<P2pConnector>> start(std::shared_ptr<P2pEngine> engine,
                                                     const P2pOptions& options,
                                                     const void* handle);
  ~P2pConnector();

  // Non-blocking: the sending connection once every socket is connected and introduced;
  // nullptr while not yet; an error when the peer cannot be reached by the deadline.
  Result<std::unique_ptr<P2pSendComm>> poll();

 private:
  class Impl;
  explicit P2pConnector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class P2pSendComm {
 public:
  ~P2pSendComm();  // closes the sockets; waits (bounded) for their I/O to stop
  // Queues a message. nullptr (and OK) when kMaxRequestsInFlight are in flight: retry later.
  // `data` must stay valid until the request is done.
  Result<P2pRequest*> isend(const void* data, size_t size, int tag);
  // The peer, for messages: "tcp://10.0.0.2:41000 (4 sockets)".
  const std::string& peerName() const;

  class Impl;
  explicit P2pSendComm(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

class P2pRecvComm {
 public:
  ~P2pRecvComm();
  // Posts a receive of at most `capacity` bytes; matched with the peer's sends in order.
  Result<P2pRequest*> irecv(void* data, size_t capacity, int tag);
  const std::string& peerName() const;

  class Impl;
  explicit P2pRecvComm(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// Polls a request from isend/irecv. Never blocks. When *done becomes true, *bytes holds the
// message size and the request is freed (it must not be used again). An error (peer gone,
// message larger than the receive buffer, protocol violation) also frees it.
Status testRequest(P2pRequest* request, bool* done, size_t* bytes);

}  // namespace rs::nccl::p2p

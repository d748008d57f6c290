// The accepting end of a transport: bound to an address, it yields one Stream per peer that
// connects. listen() picks the transport (transport.cc; TCP is the only one today), so callers
// never name it.
#pragma once

#include <asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "core/common/endpoint.h"
#include "core/common/status.h"
#include "core/transport/options.h"
#include "core/transport/stream.h"

namespace rs::transport {

// A connected stream (already tuned with the listener's options, on the listener's
// io_context), or the error that ended the accept: cancelled (stream_error.h) after close().
using AcceptHandler =
    std::function<void(const std::error_code& error, std::unique_ptr<Stream> stream)>;

class Listener {
 public:
  virtual ~Listener() = default;

  // Accepts the next connection. One accept at a time; the handler always runs, on the
  // listener's io_context. Passing hiccups (a peer that reset in the backlog, a moment short
  // of descriptors) are retried inside, so an error here is worth reporting.
  virtual void asyncAccept(AcceptHandler handler) = 0;
  // The bound port: the one the system picked when port 0 was asked for.
  virtual uint16_t port() const = 0;
  // The bound address, e.g. {"127.0.0.1", 41000}.
  virtual const Endpoint& localEndpoint() const = 0;
  // Passing accept errors retried so far (EMFILE, ENFILE, ...), for metrics; any thread.
  virtual uint64_t acceptErrors() const = 0;
  // Stops listening; a pending accept ends cancelled. Idempotent. On the listener's
  // io_context thread, or before it runs.
  virtual void close() = 0;
};

// Binds and listens on `endpoint` (a host name is resolved first). Port 0 (any free port) only
// with PortZero::kAllowed. The listener's handlers run on `io`.
Result<std::unique_ptr<Listener>> listen(asio::io_context& io, const Endpoint& endpoint,
                                         const Options& options,
                                         PortZero portZero = PortZero::kRefused);

}  // namespace rs::transport

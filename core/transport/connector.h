// The dialling end of a transport: connects to an Endpoint within a time limit, retrying while the
// peer is not up yet (reducers may start after their workers). makeConnector() picks the
// transport (transport.cc; TCP is the only one today), so callers never name it.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "core/common/endpoint.h"
#include "core/common/status.h"
#include "core/transport/options.h"
#include "core/transport/stream.h"

namespace rs::transport {

// The connected stream (tuned with the connector's options, on its io_context), or why not.
using ConnectHandler = std::function<void(Result<std::unique_ptr<Stream>> stream)>;

// The wait before the next attempt: `first`, doubling up to `max` (never past the time limit).
struct Backoff {
  std::chrono::milliseconds first{50};
  std::chrono::milliseconds max{1000};
};

class Connector {
 public:
  virtual ~Connector() = default;  // cancels the dial in progress

  // Dials `endpoint` for at most `timeout`. While the peer is not up yet (connection refused
  // or reset, host or network unreachable, a name that does not resolve yet) it tries again
  // after a backoff; any other error ends the dial at once (kUnavailable). When the time is
  // up, an attempt still in flight is abandoned and the dial ends with kTimeout, naming the
  // endpoint, the time and the last error. The handler runs exactly once, on the connector's
  // io_context, never inside connect() or cancel(). One dial at a time (a new connect() cancels
  // one still running); call on the io_context's thread.
  virtual void connect(const Endpoint& endpoint, std::chrono::milliseconds timeout,
                       ConnectHandler handler) = 0;
  // Ends the dial in progress: its handler runs with kAborted. Nothing when none is.
  virtual void cancel() = 0;
  // Attempts that failed so far, all dials together. Any thread (tests wait on it).
  virtual uint64_t failedAttempts() const = 0;
};

std::unique_ptr<Connector> makeConnector(asio::io_context& io, const Options& options,
                                         Backoff backoff = {});

}  // namespace rs::transport

#include "core/transport/listener.h"

#include "core/transport/tcp/tcp_listener.h"

namespace rs::transport {

// The one place that picks a transport for a listen address; RDMA will choose here.
Result<std::unique_ptr<Listener>> listen(asio::io_context& io, const Endpoint& endpoint,
                                         const Options& options, PortZero portZero) {
  auto listener = tcp::TcpListener::open(io, endpoint, options.tcp, portZero);
  if (!listener) return listener.status();
  return std::unique_ptr<Listener>(std::move(*listener));
}

}  // namespace rs::transport

// The one place that picks a transport: makeConnector() (connector.h) and listen()
// (listener.h) are declared beside the interfaces they return, and defined here, the only file
// outside tcp/ that names a TCP type (packed_host.cc borrows tcp/address.h's parser of numeric
// IP addresses, no TCP type). Everything above the transport holds a Stream, a Listener or a
// Connector and never learns which one is behind it.
//
// TCP is the only transport today. A second one (libfabric, issue 28) will be chosen here, from
// the Options (a part for it beside `tcp`, filled when a provider is asked for or found) and,
// for a connector, from what the peer offers, with TCP as the fallback: callers keep passing
// the same Options and Endpoints and never name a transport.
#include "core/transport/connector.h"
#include "core/transport/listener.h"
#include "core/transport/tcp/tcp_connector.h"
#include "core/transport/tcp/tcp_listener.h"

namespace rs::transport {

std::unique_ptr<Connector> makeConnector(asio::io_context& io, const Options& options,
                                         Backoff backoff) {
  return std::make_unique<tcp::TcpConnector>(io, options.tcp, backoff);
}

Result<std::unique_ptr<Listener>> listen(asio::io_context& io, const Endpoint& endpoint,
                                         const Options& options, PortZero portZero) {
  auto listener = tcp::TcpListener::open(io, endpoint, options.tcp, portZero);
  if (!listener) return listener.status();
  return std::unique_ptr<Listener>(std::move(*listener));
}

}  // namespace rs::transport

#include "core/transport/connector.h"

#include "core/transport/tcp/tcp_connector.h"

namespace rs::transport {

// The one place that picks a transport for dialling; RDMA will choose here.
std::unique_ptr<Connector> makeConnector(asio::io_context& io, const Options& options,
                                         Backoff backoff) {
  return std::make_unique<tcp::TcpConnector>(io, options.tcp, backoff);
}

}  // namespace rs::transport

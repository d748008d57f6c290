#include "core/transport/tcp/address.h"

#include <asio/io_context.hpp>

namespace rs::transport::tcp {

std::optional<asio::ip::address> numericAddress(const std::string& host) {
  std::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return address;
}

Result<asio::ip::tcp::endpoint> resolveNow(const Endpoint& endpoint) {
  if (auto address = numericAddress(endpoint.host))
    return asio::ip::tcp::endpoint(*address, endpoint.port);
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  std::error_code ec;
  auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
  if (ec || results.empty())
    return invalidArgument("cannot resolve '" + endpoint.host + "': " +
                           (ec ? ec.message() : std::string("no address")));
  return results.begin()->endpoint();
}

Endpoint toEndpoint(const asio::ip::tcp::endpoint& endpoint) {
  return {endpoint.address().to_string(), endpoint.port()};
}

Endpoint remoteEndpoint(const asio::ip::tcp::socket& socket) {
  std::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return {};
  return toEndpoint(ep);
}

std::string describePeer(const Endpoint& peer) {
  return peer.host.empty() ? "tcp://?" : "tcp://" + peer.toString();
}

}  // namespace rs::transport::tcp

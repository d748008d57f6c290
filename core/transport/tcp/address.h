// Between the transport-neutral Endpoint and Asio's TCP addresses: numeric parsing, name
// resolution, and printing a socket's peer.
#pragma once

#include <asio/ip/tcp.hpp>
#include <optional>
#include <string>

#include "core/common/endpoint.h"
#include "core/common/status.h"

namespace rs::transport::tcp {

// The host as an IP address when it is one ("10.0.0.7", "::1", "fe80::1%eth0"), else nullopt
// (a name, for the resolver).
std::optional<asio::ip::address> numericAddress(const std::string& host);

// The first address `endpoint` resolves to, numerically or by name. Blocks on DNS: for
// binding at startup, not for the data path.
Result<asio::ip::tcp::endpoint> resolveNow(const Endpoint& endpoint);

// {"10.0.0.7", 2222} or {"::1", 2222}: the address printed, no brackets.
Endpoint toEndpoint(const asio::ip::tcp::endpoint& endpoint);

// "tcp://host:port" of the remote end, or "tcp://?" when the socket has none.
std::string describePeer(const asio::ip::tcp::socket& socket);

}  // namespace rs::transport::tcp

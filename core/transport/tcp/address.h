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

// The remote end of `socket`, or an empty Endpoint (no host, port 0) when it has none.
Endpoint remoteEndpoint(const asio::ip::tcp::socket& socket);

// "tcp://host:port" of `peer`, or "tcp://?" for an empty one.
std::string describePeer(const Endpoint& peer);

}  // namespace rs::transport::tcp

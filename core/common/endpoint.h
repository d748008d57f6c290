// Where a peer or a listener is, as operators write it: "host:port" or "[v6]:port". Parsing
// and printing only; turning a name into an address is the transport's business (it is the
// one that dials or binds), so nothing here touches the network.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/status.h"

namespace rs {

// Port 0 means "any free port": only a listener may ask for it, and only where its caller
// says so (a peer's address with port 0 is a mistake).
enum class PortZero { kRefused, kAllowed };

struct Endpoint {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  uint16_t port = 0;

  Endpoint withPort(uint16_t newPort) const { return {host, newPort}; }
  // How this host reaches a listener bound here: a wildcard host (0.0.0.0, ::) becomes
  // loopback; any other host stays.
  Endpoint reachableLocally() const;
  // "host:port", with brackets around an IPv6 address.
  std::string toString() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// "host:port", "1.2.3.4:port" or "[v6]:port" (a zone, "[fe80::1%eth0]:80", is allowed); port
// 1..65535, or 0..65535 with PortZero::kAllowed. Host names follow RFC 1123 ('_' allowed too).
// `what` names the value in errors, e.g. "CLUSTER_SPEC cluster.workerpool2[1]", and the
// message says what is wrong with it.
Result<Endpoint> parseEndpoint(std::string_view text, std::string_view what = "endpoint",
                               PortZero portZero = PortZero::kRefused);

}  // namespace rs

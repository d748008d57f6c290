// A numeric host (an IP address) packed into fixed bytes, and back, for a handle that carries
// where to connect through some other channel: the NCCL p2p handle, which NCCL copies from the
// listening rank to the connecting one. The transport owns the parsing and printing of hosts
// (tcp/address.h), so the handle's owner names no socket library.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace rs::transport {

struct PackedHost {
  uint8_t family = 4;  // 4 or 6
  std::array<uint8_t, 16> address{};  // IPv4 in the first 4 bytes, the rest zero
  uint32_t scopeId = 0;  // IPv6 link-local scope (an interface index); 0 otherwise

  // 0.0.0.0 or ::, which binds every interface but names none to connect to.
  bool unspecified() const;
};

// `host` packed when it is a numeric address ("10.0.0.7", "::1", "fe80::1%eth0"), else
// nullopt (a name, or not an address at all).
std::optional<PackedHost> packHost(const std::string& host);

// The address printed as an Endpoint's host, without brackets ("10.0.0.7", "fe80::1%eth0");
// what packHost() read, for any address it packed. `packed.family` must be 4 or 6 (a decoder
// checks that before).
std::string unpackHost(const PackedHost& packed);

}  // namespace rs::transport

#include "core/transport/packed_host.h"

#include <algorithm>

#include "core/transport/tcp/address.h"

namespace rs::transport {

bool PackedHost::unspecified() const {
  return std::all_of(address.begin(), address.end(), [](uint8_t b) { return b == 0; });
}

std::optional<PackedHost> packHost(const std::string& host) {
  const std::optional<asio::ip::address> address = tcp::numericAddress(host);
  if (!address) return std::nullopt;
  PackedHost packed;
  if (address->is_v4()) {
    packed.family = 4;
    const auto bytes = address->to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), packed.address.begin());
  } else {
    packed.family = 6;
    const asio::ip::address_v6 v6 = address->to_v6();
    const auto bytes = v6.to_bytes();
    std::copy(bytes.begin(), bytes.end(), packed.address.begin());
    packed.scopeId = static_cast<uint32_t>(v6.scope_id());
  }
  return packed;
}

std::string unpackHost(const PackedHost& packed) {
  if (packed.family == 4) {
    asio::ip::address_v4::bytes_type bytes;
    std::copy(packed.address.begin(), packed.address.begin() + 4, bytes.begin());
    return asio::ip::address_v4(bytes).to_string();
  }
  asio::ip::address_v6::bytes_type bytes;
  std::copy(packed.address.begin(), packed.address.end(), bytes.begin());
  return asio::ip::address_v6(bytes, packed.scopeId).to_string();
}

}  // namespace rs::transport

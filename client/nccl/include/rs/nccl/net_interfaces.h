// Which network interfaces the NCCL plugin offers as devices, chosen the way NCCL's own socket
// transport chooses them (NCCL_SOCKET_IFNAME syntax), with their address, speed and PCI path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/common/status.h"

namespace rs::nccl {

struct NetInterface {
  std::string name;     // "eth0"
  std::string address;  // numeric, without brackets: "10.0.0.5" or "fd00::5"
  bool ipv6 = false;
  int speedMbps = 0;    // from /sys/class/net/<name>/speed; 0 when unknown
  std::string pciPath;  // realpath of /sys/class/net/<name>/device; empty for virtual devices
};

// `spec` follows NCCL_SOCKET_IFNAME: comma-separated name prefixes ("eth,ens"); a leading '^'
// excludes those prefixes instead; a leading '=' makes them exact names. Empty: every interface
// that is up, except loopback and docker bridges; loopback only when nothing else is up.
// IPv4 addresses are preferred over IPv6 for the same interface. At most `max` results.
Result<std::vector<NetInterface>> findInterfaces(std::string_view spec, size_t max = 4);

// True when `name` is selected by `spec` (exposed for tests).
bool interfaceMatches(std::string_view spec, std::string_view name);

}  // namespace rs::nccl

#include "rs/nccl/net_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>

#include "core/common/text.h"

namespace rs::nccl {
namespace {

int readSpeed(const std::string& name) {
  std::ifstream f("/sys/class/net/" + name + "/speed");
  int mbps = 0;
  if (!(f >> mbps) || mbps <= 0) return 0;  // virtual NICs report -1 or nothing
  return mbps;
}

std::string readPciPath(const std::string& name) {
  char resolved[PATH_MAX];
  const std::string link = "/sys/class/net/" + name + "/device";
  if (::realpath(link.c_str(), resolved) == nullptr) return {};
  return resolved;
}

}  // namespace

bool interfaceMatches(std::string_view spec, std::string_view name) {
  bool exclude = false, exact = false;
  if (!spec.empty() && spec.front() == '^') {
    exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    exact = true;
    spec.remove_prefix(1);
  }
  bool hit = false;
  for (std::string_view item : split(spec, ','))
    hit = hit || (!item.empty() && (exact ? name == item : name.substr(0, item.size()) == item));
  return exclude ? !hit : hit;
}

Result<std::vector<NetInterface>> findInterfaces(std::string_view spec, size_t max) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return ioError("getifaddrs failed");
  std::vector<NetInterface> found, loopback;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || !(a->ifa_flags & IFF_UP)) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const std::string name = a->ifa_name;
    const bool isLoopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    if (spec.empty()) {
      if (name.rfind("docker", 0) == 0) continue;
    } else if (!interfaceMatches(spec, name)) {
      continue;
    }
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = family == AF_INET
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    if (::inet_ntop(family, raw, text, sizeof text) == nullptr) continue;
    if (family == AF_INET6 && std::string_view(text).rfind("fe80", 0) == 0) continue;  // link-local
    auto& into = isLoopback && spec.empty() ? loopback : found;
    auto same = std::find_if(into.begin(), into.end(), [&](const NetInterface& i) { return i.name == name; });
    if (same != into.end()) {
      if (same->ipv6 && family == AF_INET) {  // prefer IPv4 on the same interface
        same->address = text;
        same->ipv6 = false;
      }
      continue;
    }
    into.push_back({name, text, family == AF_INET6, readSpeed(name), readPciPath(name)});
  }
  ::freeifaddrs(list);
  if (found.empty()) found = std::move(loopback);
  if (found.empty())
    return unavailableError(spec.empty()
                                ? std::string("no network interface is up")
                                : "no interface that is up matches '" + std::string(spec) + "'");
  if (found.size() > max) found.resize(max);
  return found;
}

}  // namespace rs::nccl

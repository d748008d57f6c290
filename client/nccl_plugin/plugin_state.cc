#include "client/nccl_plugin/plugin_state.h"

#include <cstdlib>
#include <mutex>

#include "client/nccl_plugin/plugin_log.h"
#include "core/common/build_info.h"
#include "core/reduce/reduce.h"

namespace rs::plugin {
namespace {

// NCCL_RS_<NAME>: a positive integer knob; bad values are logged and the default kept.
uint64_t knob(const char* name, uint64_t fallback, uint64_t max) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || n == 0 || n > max) {
    RS_PLUGIN_WARN("{}={} is not an integer in 1..{}; using {}", name, v, max, fallback);
    return fallback;
  }
  RS_PLUGIN_INFO(NCCL_ENV | NCCL_INIT, "{} set by environment to {}", name, n);
  return n;
}

PluginState* create() {
  auto* s = new PluginState();
  RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "{}",
                 versionLine("libnccl-net-reduction-server", reduce::activeTargetName()));
  const char* ifname = std::getenv("NCCL_RS_IFNAME");
  if (ifname == nullptr) ifname = std::getenv("NCCL_SOCKET_IFNAME");
  auto devices = client::findInterfaces(ifname ? ifname : "");
  if (!devices) {
    s->initStatus = devices.status();
    return s;
  }
  s->devices = std::move(*devices);
  s->p2p.socketsPerConnection =
      static_cast<uint32_t>(knob("NCCL_RS_SOCKETS_PER_CONN", s->p2p.socketsPerConnection, 64));
  s->engine = client::p2p::makeEngine(static_cast<uint32_t>(knob("NCCL_RS_P2P_THREADS", 2, 64)));
  s->rendezvousTimeout = std::chrono::milliseconds(
      knob("NCCL_RS_RENDEZVOUS_TIMEOUT_MS", static_cast<uint64_t>(s->rendezvousTimeout.count()),
           24ull * 3600 * 1000));
  for (const auto& d : s->devices)
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "device {}: {} {} speed {} Mbps{}", &d - s->devices.data(),
                   d.name, d.address, d.speedMbps, d.pciPath.empty() ? "" : " at " + d.pciPath);

  auto client = client::ClientOptions::fromEnvironment();
  if (client) {
    s->client = std::move(*client);
    s->collnetEnabled = true;
    std::string list;
    for (const auto& r : s->client.reducers) list += (list.empty() ? "" : ",") + r.toString();
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "CollNet through {} reducers ({}), {} streams each",
                   s->client.reducers.size(), list, s->client.streamsPerReducer);
  } else {
    s->collnetOffReason = client.status().message();
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "CollNet off: {}", s->collnetOffReason);
  }
  return s;
}

}  // namespace

PluginState& pluginState() {
  static PluginState* state = create();
  return *state;
}

}  // namespace rs::plugin

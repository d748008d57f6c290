#include "client/nccl_plugin/plugin_state.h"

#include <fmt/format.h>

#include <mutex>

#include "client/nccl_plugin/plugin_identity.h"
#include "client/nccl_plugin/plugin_log.h"
#include "core/common/build_info.h"
#include "core/common/env.h"
#include "core/reduce/convert.h"

namespace rs::plugin {
namespace {

// NCCL_RS_<NAME>: a positive integer knob; a bad value is logged and the default kept (NCCL's
// own knobs behave so: a typo must not take the network away from a training job).
uint64_t knob(const char* name, uint64_t fallback, uint64_t max) {
  auto n = envUnsigned(name, 1, max);
  if (!n) {
    RS_PLUGIN_WARN("{}; using {}", n.status().message(), fallback);
    return fallback;
  }
  if (!*n) return fallback;
  RS_PLUGIN_INFO(NCCL_ENV | NCCL_INIT, "{} set by environment to {}", name, **n);
  return **n;
}

// Point-to-point through the inner plugin NCCL_RS_INNER_NET names, or else our own transport
// on the interfaces NCCL_RS_IFNAME (or NCCL's NCCL_SOCKET_IFNAME) allows.
Status delegateOrOwnNet(PluginState* s) {
  const std::string innerSpec = envRaw(RS_PLUGIN_INNER_NET_VARIABLE).value_or("");
  if (!innerSpec.empty()) {
    auto inner = openInnerNet(innerSpec, RS_PLUGIN_NAME);
    if (!inner) return inner.status();
    s->inner = std::move(*inner);
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET,
                   "point-to-point through the inner net plugin {} (ncclNetPlugin_v{} of {}), "
                   "CollNet through the reducers",
                   s->inner->name, s->inner->version, s->inner->library);
    auto hostMemory = envUnsigned("NCCL_RS_COLLNET_HOST_MEMORY", 0, 1);
    if (!hostMemory) RS_PLUGIN_WARN("{}; using 0", hostMemory.status().message());
    s->collnetHostMemory = hostMemory.isOk() && hostMemory->value_or(0) == 1;
    return Status::ok();
  }
  // Set but empty still counts: NCCL_RS_IFNAME= takes any interface, whatever NCCL's own says.
  const std::string ifname =
      envRaw("NCCL_RS_IFNAME").value_or(envRaw("NCCL_SOCKET_IFNAME").value_or(""));
  auto devices = nccl::findInterfaces(ifname);
  if (!devices) return devices.status();
  s->devices = std::move(*devices);
  s->p2p.socketsPerConnection =
      static_cast<uint32_t>(knob("NCCL_RS_SOCKETS_PER_CONN", s->p2p.socketsPerConnection, 64));
  s->engine = nccl::p2p::makeEngine(static_cast<uint32_t>(knob("NCCL_RS_P2P_THREADS", 2, 64)));
  for (const auto& d : s->devices)
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "device {}: {} {} speed {} Mbps{}", &d - s->devices.data(),
                   d.name, d.address, d.speedMbps, d.pciPath.empty() ? "" : " at " + d.pciPath);
  return Status::ok();
}

PluginState* create() {
  auto* s = new PluginState();
  RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "{}",
                 versionLine(RS_PLUGIN_LIBRARY, reduce::conversionTargetName()));
  s->initStatus = delegateOrOwnNet(s);
  if (!s->initStatus.isOk()) return s;
  s->rendezvousTimeout = std::chrono::milliseconds(
      knob("NCCL_RS_RENDEZVOUS_TIMEOUT_MS", static_cast<uint64_t>(s->rendezvousTimeout.count()),
           24ull * 3600 * 1000));
  auto client = client::ClientOptions::fromEnvironment();
  if (client) {
    s->client = std::move(*client);
    s->collnetEnabled = true;
    std::vector<std::string> list;
    for (const auto& r : s->client.reducers) list.push_back(r.toString());
    // RS_WIRE_DTYPE=bf16 (ClientOptions::fromEnvironment) halves fp32 sum/avg bytes on the wire;
    // RS_FP32_ACCUMULATOR=fp64 has the reducers sum fp32 in fp64.
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET,
                   "CollNet through {} reducers ({}), {} streams each, fp32 sums on the wire "
                   "as {}, accumulated in {}{}",
                   s->client.reducers.size(), fmt::join(list, ","), s->client.effectiveStreams(),
                   dataTypeName(s->client.float32WireType),
                   s->client.float32WireType == DataType::kFloat32
                       ? fp32AccumulatorName(s->client.fp32Accumulator)
                       : "fp32",  // bf16 on the wire sums in fp32 whatever the setting
                   s->client.deterministic ? ", deterministic" : "");
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

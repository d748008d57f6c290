// Process-wide plugin state, set up once from the environment on the first init() of either
// table: the inner net plugin point-to-point is delegated to (NCCL_RS_INNER_NET), or else our
// own devices (network interfaces), p2p engine and options; and whether CollNet is on (it needs
// reducers: RS_REDUCERS, CLUSTER_SPEC or TF_CONFIG).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "client/nccl_plugin/collnet_mirror.h"
#include "client/nccl_plugin/inner_net.h"
#include "rs/client.h"
#include "rs/nccl/net_interfaces.h"
#include "rs/nccl/p2p.h"

namespace rs::plugin {

struct PluginState {
  Status initStatus;  // an error makes every init() fail, so NCCL falls back to its own net

  // Delegated point-to-point: every ncclNet call goes to it, and CollNet mirrors its devices
  // (`mirror`, filled at the first init, where NCCL's logger is at hand).
  std::unique_ptr<InnerNet> inner;
  CollNetMirror mirror;
  bool collnetHostMemory = false;  // NCCL_RS_COLLNET_HOST_MEMORY=1 (collnet_mirror.h)

  // Our own point-to-point, without an inner plugin.
  std::vector<nccl::NetInterface> devices;
  nccl::p2p::P2pOptions p2p;  // listenAddress is set per device
  std::shared_ptr<nccl::p2p::P2pEngine> engine;

  bool collnetEnabled = false;
  std::string collnetOffReason;  // why not, for the log
  client::ClientOptions client;
  std::chrono::milliseconds rendezvousTimeout{120000};
};

// The state, initialised on the first call (thread-safe). Never destroyed: NCCL's proxy
// threads may still call in while the process exits.
PluginState& pluginState();

}  // namespace rs::plugin

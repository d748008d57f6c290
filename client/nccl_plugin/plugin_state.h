// Process-wide plugin state, set up once from the environment on the first init() of either
// table: the devices (network interfaces), the p2p engine and options, and whether CollNet is
// on (it needs reducers: RS_REDUCERS, CLUSTER_SPEC or TF_CONFIG).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "rs/client.h"
#include "rs/nccl/net_interfaces.h"
#include "rs/nccl/p2p.h"

namespace rs::plugin {

struct PluginState {
  Status initStatus;  // an error makes every init() fail, so NCCL falls back to its own net
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

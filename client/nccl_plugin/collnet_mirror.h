// CollNet beside a delegated point-to-point plugin (inner_net.h). NCCL keys a NIC on its name
// and fills its topology node (speed, latency, port, guid, maximum connections, and whether
// GPUDirect RDMA is on) from the CollNet table first and the net table second, the first value
// winning (NCCL 2.28, src/graph/topo.cc: ncclTopoGetSystem, ncclTopoPopulateNics). So CollNet's
// device i mirrors the inner plugin's device i in all of these, and is offered only where its
// host-memory-only declaration would not switch GPUDirect RDMA off for point-to-point.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/nccl_plugin/inner_net.h"
#include "client/nccl_plugin/nccl_net_abi.h"
#include "core/common/status.h"

namespace rs::plugin {

// What NCCL's topology takes from a NIC's properties; strings copied out of the inner plugin.
struct MirroredDevice {
  std::string name, pciPath;
  uint64_t guid = 0;
  int ptrSupport = 0;
  int speed = 0;
  int port = 0;
  float latency = 0;
  int maxComms = 0;
};

struct CollNetMirror {
  std::vector<MirroredDevice> devices;  // the inner's physical devices, as NCCL first saw them
  std::string offReason;                // not empty: CollNet is not offered, and why
  std::string tradeNote;                // not empty: offered at the cost it names (log it)
};

// Decides from the inner plugin's devices. CollNet takes host memory only (GPU memory over the
// fabric is not built), so where the inner declares GPU memory (CUDA or dma-buf) CollNet is off
// unless `hostMemoryAccepted` (NCCL_RS_COLLNET_HOST_MEMORY=1) trades GPUDirect RDMA away; where
// a device takes no host memory at all it is off whatever the setting.
CollNetMirror decideCollNetMirror(std::vector<MirroredDevice> devices, std::string_view innerName,
                                  bool hostMemoryAccepted);

// Reads the inner's devices through a context of its own, opened and finalized here (NCCL has
// not created one when it first asks CollNet for its devices).
Result<std::vector<MirroredDevice>> innerDevices(const InnerNet& inner, ncclDebugLogger_t logger,
                                                 ncclProfilerCallback_t profiler);

// CollNet's properties for device `dev`: the inner's topology values, this plugin's limits.
void fillMirroredCollNetProperties(const MirroredDevice& d, int dev, ncclNetProperties_v11_t* p);

}  // namespace rs::plugin

// The cluster's own net plugin, loaded underneath this one (NCCL_RS_INNER_NET) to carry the
// point-to-point traffic while CollNet goes to the reducers. NCCL takes ncclNet and ncclCollNet
// from one library and cannot lend its internal InfiniBand transport to a plugin, so on an RDMA
// cluster delegation is how point-to-point keeps its transport (proto/FABRIC.md, "The plugin's
// point-to-point on RDMA clusters").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "client/nccl_plugin/nccl_net_abi.h"
#include "core/common/status.h"

namespace rs::plugin {

struct InnerNet {
  std::string library;  // the file the dynamic linker loaded
  std::string name;     // the table's own name ("IB", "AWS Libfabric", ...)
  int version = 0;      // of the newest table it exports, 11 to 8
  // Its calls with v11's argument lists. An older table is adapted as NCCL adapts it: init runs
  // once, v10's traffic class is kept in the context for connect, v8 counts bytes in int.
  // Optional calls the inner lacks are null, as in its own table.
  ncclNet_v11_t net{};
};

// Opens `spec` as NCCL opens NCCL_NET_PLUGIN (the name as given, then libnccl-net-<spec>.so) and
// takes its newest ncclNetPlugin_vN table. Fails, naming the library and why, when it cannot be
// loaded, exports no table of version 11 to 8, or is this plugin itself (`selfName`: delegating
// to ourselves would take point-to-point nowhere). The library is never unloaded; older tables'
// adapters hold process-wide state, so one InnerNet per process.
Result<std::unique_ptr<InnerNet>> openInnerNet(const std::string& spec, std::string_view selfName);

}  // namespace rs::plugin

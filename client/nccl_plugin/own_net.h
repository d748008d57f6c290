// The plugin's own point-to-point: ncclNet's calls over the rs_nccl p2p transport (several TCP
// streams per connection), for clusters whose point-to-point ran over NCCL's socket transport
// anyway. NCCL_RS_INNER_NET (inner_net.h) hands point-to-point to the cluster's plugin instead.
// Each call catches everything and logs its failure (call_guard.h).
#pragma once

#include <cstddef>

#include "client/nccl_plugin/nccl_net_abi.h"

namespace rs::plugin::own_net {

ncclResult_t devices(int* ndev);
bool hasDevice(int dev);
// Device `dev`'s properties (it exists); CollNet's device i is net device i, so `collnet`
// changes only the size limit.
void properties(int dev, ncclNetProperties_v11_t* p, bool collnet);
ncclResult_t listen(int dev, void* handle, void** listenComm);
ncclResult_t connect(int dev, void* handle, void** sendComm);
ncclResult_t accept(void* listenComm, void** recvComm);
// Host memory only; the handle is a note of the range. CollNet registers the same way.
ncclResult_t regMr(void* data, size_t size, int type, void** mhandle);
ncclResult_t deregMr(void* mhandle);
ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void** request);
ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** request);
ncclResult_t test(void* request, int* done, int* sizes);
ncclResult_t closeSend(void* sendComm);
ncclResult_t closeRecv(void* recvComm);
ncclResult_t closeListen(void* listenComm);

}  // namespace rs::plugin::own_net

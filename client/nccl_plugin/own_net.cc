#include "client/nccl_plugin/own_net.h"

#include <cstring>
#include <memory>
#include <string>

#include "client/nccl_plugin/call_guard.h"
#include "client/nccl_plugin/plugin_state.h"
#include "rs/nccl/p2p.h"

namespace rs::plugin::own_net {
namespace {

using nccl::p2p::P2pConnector;
using nccl::p2p::P2pListener;
using nccl::p2p::P2pRecvComm;
using nccl::p2p::P2pRequest;
using nccl::p2p::P2pSendComm;

struct MemHandle {
  void* base;
  size_t size;
};

struct ListenComm {
  std::unique_ptr<P2pListener> listener;
};
struct SendComm {
  std::unique_ptr<P2pSendComm> comm;
};
struct RecvComm {
  std::unique_ptr<P2pRecvComm> comm;
};

// NCCL calls connect() again with the same handle buffer until it returns a comm; the
// connection in progress is parked in the handle's last bytes, which listen() zeroed.
struct PendingConnect {
  static constexpr uint64_t kMagic = 0x544E4E4F43535221ull;  // "!RSCONNT"
  uint64_t magic;
  P2pConnector* connector;
};
constexpr size_t kPendingOffset = 96;
static_assert(kPendingOffset + sizeof(PendingConnect) <= NCCL_NET_HANDLE_MAXSIZE);

template <typename T>
ncclResult_t closeAs(void* comm, const char* call) {
  return guarded(call, [&] {
    delete static_cast<T*>(comm);
    return ncclSuccess;
  });
}

}  // namespace

ncclResult_t devices(int* ndev) {
  return guarded("devices", [&] {
    *ndev = static_cast<int>(pluginState().devices.size());
    return ncclSuccess;
  });
}

bool hasDevice(int dev) {
  return dev >= 0 && static_cast<size_t>(dev) < pluginState().devices.size();
}

void properties(int dev, ncclNetProperties_v11_t* p, bool collnet) {
  const nccl::NetInterface& nic = pluginState().devices[static_cast<size_t>(dev)];
  std::memset(p, 0, sizeof *p);
  // NCCL keys its topology on the name, so CollNet device i and net device i are one NIC.
  p->name = const_cast<char*>(nic.name.c_str());
  p->pciPath = nic.pciPath.empty() ? nullptr : const_cast<char*>(nic.pciPath.c_str());
  p->guid = std::hash<std::string>()(nic.name) ^ static_cast<uint64_t>(dev);
  p->ptrSupport = NCCL_PTR_HOST;  // TCP: NCCL stages through pinned host memory
  p->speed = nic.speedMbps > 0 ? nic.speedMbps : 10000;
  p->latency = 0;
  p->maxComms = 65536;
  p->maxRecvs = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  p->maxCollBytes = collnet ? (1ull << 30) : NCCL_MAX_NET_SIZE_BYTES;
  p->maxMultiRequestSize = 1;
}

ncclResult_t listen(int dev, void* handle, void** listenComm) {
  return guarded("listen", [&] {
    PluginState& s = pluginState();
    RS_REQUIRE(hasDevice(dev), "listen", "device {} does not exist", dev);
    std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
    nccl::p2p::P2pOptions o = s.p2p;
    o.listenAddress = s.devices[static_cast<size_t>(dev)].address;
    auto listener = P2pListener::listen(s.engine, o, handle);
    if (!listener) return toNccl(listener.status(), "listen", CallSide::kLocal);
    std::memset(static_cast<char*>(handle) + kPendingOffset, 0, sizeof(PendingConnect));
    *listenComm = new ListenComm{std::move(*listener)};
    return ncclSuccess;
  });
}

ncclResult_t connect(int dev, void* handle, void** sendComm) {
  return guarded("connect", [&] {
    *sendComm = nullptr;
    PluginState& s = pluginState();
    RS_REQUIRE(hasDevice(dev), "connect", "device {} does not exist", dev);
    PendingConnect pending;
    std::memcpy(&pending, static_cast<char*>(handle) + kPendingOffset, sizeof pending);
    if (pending.magic != PendingConnect::kMagic) {
      auto started = P2pConnector::start(s.engine, s.p2p, handle);
      if (!started) return toNccl(started.status(), "connect", CallSide::kPeers);
      pending = {PendingConnect::kMagic, started->release()};
      std::memcpy(static_cast<char*>(handle) + kPendingOffset, &pending, sizeof pending);
    }
    auto done = pending.connector->poll();
    if (done.isOk() && *done == nullptr) return ncclSuccess;  // not yet: NCCL calls again
    delete pending.connector;
    std::memset(static_cast<char*>(handle) + kPendingOffset, 0, sizeof pending);
    if (!done) return toNccl(done.status(), "connect", CallSide::kPeers);
    *sendComm = new SendComm{std::move(*done)};
    return ncclSuccess;
  });
}

ncclResult_t accept(void* listenComm, void** recvComm) {
  return guarded("accept", [&] {
    *recvComm = nullptr;
    auto accepted = static_cast<ListenComm*>(listenComm)->listener->tryAccept();
    if (!accepted) return toNccl(accepted.status(), "accept", CallSide::kPeers);
    if (*accepted != nullptr) *recvComm = new RecvComm{std::move(*accepted)};
    return ncclSuccess;
  });
}

ncclResult_t regMr(void* data, size_t size, int type, void** mhandle) {
  return guarded("regMr", [&] {
    RS_REQUIRE(type == NCCL_PTR_HOST, "regMr",
               "memory type {} is not host memory; this plugin declares NCCL_PTR_HOST only", type);
    *mhandle = new MemHandle{data, size};
    return ncclSuccess;
  });
}

ncclResult_t deregMr(void* mhandle) {
  delete static_cast<MemHandle*>(mhandle);
  return ncclSuccess;
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void** request) {
  return guarded("isend", [&] {
    auto r = static_cast<SendComm*>(sendComm)->comm->isend(data, size, tag);
    if (!r) return toNccl(r.status(), "isend", CallSide::kPeers);
    *request = *r;  // nullptr: busy, NCCL retries
    return ncclSuccess;
  });
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** request) {
  return guarded("irecv", [&] {
    RS_REQUIRE(n == 1, "irecv", "{} grouped receives asked for; maxRecvs is 1", n);
    auto r = static_cast<RecvComm*>(recvComm)->comm->irecv(data[0], sizes[0], tags[0]);
    if (!r) return toNccl(r.status(), "irecv", CallSide::kPeers);
    *request = *r;
    return ncclSuccess;
  });
}

ncclResult_t test(void* request, int* done, int* sizes) {
  return guarded("test", [&] {
    bool finished = false;
    size_t bytes = 0;
    Status s = nccl::p2p::testRequest(static_cast<P2pRequest*>(request), &finished, &bytes);
    if (!s.isOk()) return toNccl(s, "test", CallSide::kPeers);
    *done = finished ? 1 : 0;
    if (finished && sizes != nullptr) sizes[0] = static_cast<int>(bytes);
    return ncclSuccess;
  });
}

ncclResult_t closeSend(void* c) { return closeAs<SendComm>(c, "closeSend"); }
ncclResult_t closeRecv(void* c) { return closeAs<RecvComm>(c, "closeRecv"); }
ncclResult_t closeListen(void* c) { return closeAs<ListenComm>(c, "closeListen"); }

}  // namespace rs::plugin::own_net

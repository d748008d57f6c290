// The NCCL net and CollNet plugin: a thin C shell over rs_nccl and the client library.
//
// Every entry point catches everything and turns a Status into an ncclResult_t with a WARN
// line (nothing is thrown across the C ABI; nccl_result.h maps the codes). One implementation
// of each call serves every exported version; the per-version functions below only adapt
// argument lists (v8 counts in int, v9 has no phandle, v10 no per-communicator context, v11
// both contexts and finalize).
#include <cstring>
#include <exception>
#include <memory>

#include "client/nccl_plugin/nccl_net_abi.h"
#include "client/nccl_plugin/nccl_result.h"
#include "client/nccl_plugin/plugin_log.h"
#include "client/nccl_plugin/plugin_state.h"
#include "rs/nccl/collnet_group.h"
#include "rs/nccl/p2p.h"

namespace rs::plugin {
namespace {

using nccl::p2p::P2pConnector;
using nccl::p2p::P2pListener;
using nccl::p2p::P2pRecvComm;
using nccl::p2p::P2pRequest;
using nccl::p2p::P2pSendComm;

constexpr const char* kPluginName = "ReductionServer";

// --- error mapping ----------------------------------------------------------------------------

// A failed call's WARN line and its code (nccl_result.h says which code and why).
ncclResult_t toNccl(const Status& s, const char* call, CallSide side) {
  if (s.isOk()) return ncclSuccess;
  RS_PLUGIN_WARN("{} failed: {}", call, s.toString());
  return ncclResultFor(s.code(), side);
}

// Runs `body` (returning ncclResult_t), turning any exception into an internal error.
template <typename F>
ncclResult_t guarded(const char* call, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    RS_PLUGIN_WARN("{} failed: unexpected exception: {}", call, e.what());
  } catch (...) {
    RS_PLUGIN_WARN("{} failed: unexpected exception", call);
  }
  return ncclInternalError;
}

#define RS_REQUIRE(cond, call, ...)                         \
  do {                                                      \
    if (!(cond)) {                                          \
      RS_PLUGIN_WARN("{}: {}", call, fmt::format(__VA_ARGS__)); \
      return ncclInternalError;                             \
    }                                                       \
  } while (0)

// --- objects behind NCCL's opaque pointers ----------------------------------------------------

struct Context {  // v11: one per NCCL communicator
  uint64_t commId = 0;
  int trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
};

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

// A CollNet listen comm holds nothing (the handle NCCL exchanges is all connect needs), and NCCL
// drops rather than closes it when connect fails; so it is one static token, never allocated.
char gCollListenToken;
struct CollComm {
  std::unique_ptr<nccl::CollNetGroup> group;
};
struct CollRequest {
  std::shared_ptr<client::AllReduceRequest> request;
  size_t bytes;
};

// --- shared implementation --------------------------------------------------------------------

ncclResult_t initCommon(ncclDebugLogger_t logger) {
  setNcclLogger(logger);
  PluginState& s = pluginState();
  return toNccl(s.initStatus, "init", CallSide::kLocal);
}

ncclResult_t netDevices(int* ndev) {
  return guarded("devices", [&] {
    *ndev = static_cast<int>(pluginState().devices.size());
    return ncclSuccess;
  });
}

void fillProperties(int dev, ncclNetProperties_v11_t* p, bool collnet) {
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

ncclResult_t getPropertiesV11(int dev, ncclNetProperties_v11_t* props, bool collnet) {
  return guarded("getProperties", [&] {
    RS_REQUIRE(dev >= 0 && static_cast<size_t>(dev) < pluginState().devices.size(),
               "getProperties", "device {} does not exist", dev);
    fillProperties(dev, props, collnet);
    return ncclSuccess;
  });
}

ncclResult_t getPropertiesV10(int dev, ncclNetProperties_v10_t* props, bool collnet) {
  ncclNetProperties_v11_t full;
  ncclResult_t r = getPropertiesV11(dev, &full, collnet);
  if (r == ncclSuccess) std::memcpy(props, &full, sizeof *props);  // v10 is v11's prefix
  return r;
}

ncclResult_t getPropertiesV8(int dev, ncclNetProperties_v8_t* props, bool collnet) {
  ncclNetProperties_v11_t f;
  ncclResult_t r = getPropertiesV11(dev, &f, collnet);
  if (r == ncclSuccess)
    *props = {f.name,    f.pciPath, f.guid,     f.ptrSupport, f.regIsGlobal,   f.speed,
              f.port,    f.latency, f.maxComms, f.maxRecvs,   f.netDeviceType, f.netDeviceVersion};
  return r;
}

ncclResult_t netListen(int dev, void* handle, void** listenComm) {
  return guarded("listen", [&] {
    PluginState& s = pluginState();
    RS_REQUIRE(dev >= 0 && static_cast<size_t>(dev) < s.devices.size(), "listen",
               "device {} does not exist", dev);
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

ncclResult_t netConnect(int dev, void* handle, void** sendComm) {
  return guarded("connect", [&] {
    *sendComm = nullptr;
    PluginState& s = pluginState();
    RS_REQUIRE(dev >= 0 && static_cast<size_t>(dev) < s.devices.size(), "connect",
               "device {} does not exist", dev);
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

ncclResult_t netAccept(void* listenComm, void** recvComm) {
  return guarded("accept", [&] {
    *recvComm = nullptr;
    auto accepted = static_cast<ListenComm*>(listenComm)->listener->tryAccept();
    if (!accepted) return toNccl(accepted.status(), "accept", CallSide::kPeers);
    if (*accepted != nullptr) *recvComm = new RecvComm{std::move(*accepted)};
    return ncclSuccess;
  });
}

ncclResult_t regMr(void*, void* data, size_t size, int type, void** mhandle) {
  return guarded("regMr", [&] {
    RS_REQUIRE(type == NCCL_PTR_HOST, "regMr",
               "memory type {} is not host memory; this plugin declares NCCL_PTR_HOST only", type);
    *mhandle = new MemHandle{data, size};
    return ncclSuccess;
  });
}

ncclResult_t deregMr(void*, void* mhandle) {
  delete static_cast<MemHandle*>(mhandle);
  return ncclSuccess;
}

ncclResult_t netIsend(void* sendComm, void* data, size_t size, int tag, void** request) {
  return guarded("isend", [&] {
    auto r = static_cast<SendComm*>(sendComm)->comm->isend(data, size, tag);
    if (!r) return toNccl(r.status(), "isend", CallSide::kPeers);
    *request = *r;  // nullptr: busy, NCCL retries
    return ncclSuccess;
  });
}

ncclResult_t netIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                      void** request) {
  return guarded("irecv", [&] {
    RS_REQUIRE(n == 1, "irecv", "{} grouped receives asked for; maxRecvs is 1", n);
    auto r = static_cast<RecvComm*>(recvComm)->comm->irecv(data[0], sizes[0], tags[0]);
    if (!r) return toNccl(r.status(), "irecv", CallSide::kPeers);
    *request = *r;
    return ncclSuccess;
  });
}

ncclResult_t netIflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to flush (NCCL never asks without GDR)
  return ncclSuccess;
}

ncclResult_t netTest(void* request, int* done, int* sizes) {
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

template <typename T>
ncclResult_t closeAs(void* comm, const char* call) {
  return guarded(call, [&] {
    delete static_cast<T*>(comm);
    return ncclSuccess;
  });
}

// --- CollNet ----------------------------------------------------------------------------------

ncclResult_t collDevices(int* ndev) {
  return guarded("collnet devices", [&] {
    // No reducers configured: no CollNet devices, and NCCL keeps its own algorithms.
    PluginState& s = pluginState();
    *ndev = s.collnetEnabled ? static_cast<int>(s.devices.size()) : 0;
    return ncclSuccess;
  });
}

ncclResult_t collListen(int dev, void* handle, void** listenComm) {
  return guarded("collnet listen", [&] {
    RS_REQUIRE(dev >= 0 && static_cast<size_t>(dev) < pluginState().devices.size(),
               "collnet listen", "device {} does not exist", dev);
    const nccl::CollNetHandle fresh = nccl::CollNetHandle::fresh();
    std::memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
    std::memcpy(handle, &fresh, sizeof fresh);
    *listenComm = &gCollListenToken;
    return ncclSuccess;
  });
}

ncclResult_t collConnect(void* handles[], int nranks, int rank, void*, void** collComm) {
  return guarded("collnet connect", [&] {
    *collComm = nullptr;
    PluginState& s = pluginState();
    auto group = nccl::CollNetGroup::connect(s.client, handles, nranks, rank,
                                               s.rendezvousTimeout);
    if (!group) return toNccl(group.status(), "collnet connect", CallSide::kPeers);
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "CollNet group {} up: node {} of {}",
                   (*group)->id().toString().substr(0, 8), rank, nranks);
    *collComm = new CollComm{std::move(*group)};
    return ncclSuccess;
  });
}

// rs::DataType numbers its types as ncclDataType_t does (dtype.h), so iallreduce casts one to
// the other; NCCL 2.28's last types are the fp8 ones.
static_assert(static_cast<int>(DataType::kFloat8e4m3) == ncclFloat8e4m3 &&
              static_cast<int>(DataType::kFloat8e5m2) == ncclFloat8e5m2 &&
              static_cast<int>(DataType::kBfloat16) == ncclBfloat16 &&
              kNumDataTypes == ncclNumTypes);

ncclResult_t collReduceSupport(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported) {
  *supported = nccl::CollNetGroup::supports(dataType, redOp) ? 1 : 0;
  return ncclSuccess;
}

ncclResult_t collIallreduce(void* collComm, void* sendData, void* recvData, size_t count,
                            ncclDataType_t dataType, ncclRedOp_t redOp, void*, void*,
                            void** request) {
  return guarded("iallreduce", [&] {
    *request = nullptr;
    RS_REQUIRE(nccl::CollNetGroup::supports(dataType, redOp), "iallreduce",
               "type {} op {} is not supported (reduceSupport said so)", static_cast<int>(dataType),
               static_cast<int>(redOp));
    const auto type = static_cast<DataType>(dataType);
    auto r = static_cast<CollComm*>(collComm)->group->allReduceAsync(
        sendData, recvData, count, type, static_cast<ReduceOp>(redOp));
    if (!r) return toNccl(r.status(), "iallreduce", CallSide::kPeers);
    *request = new CollRequest{std::move(*r), count * dataTypeSize(type)};
    return ncclSuccess;
  });
}

ncclResult_t collIflush(void*, void*, int, void*, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

ncclResult_t collTest(void* request, int* done, int* size) {
  return guarded("collnet test", [&] {
    auto* r = static_cast<CollRequest*>(request);
    Status status;
    if (!r->request->test(&status)) {
      *done = 0;
      return ncclSuccess;
    }
    const size_t bytes = r->bytes;
    delete r;  // a finished request is dead to NCCL
    if (!status.isOk()) return toNccl(status, "collnet test", CallSide::kPeers);
    *done = 1;
    if (size != nullptr) *size = static_cast<int>(bytes);
    return ncclSuccess;
  });
}

// --- per-version entry points -----------------------------------------------------------------

ncclResult_t netInitV11(void** ctx, uint64_t commId, ncclNetCommConfig_t* config,
                        ncclDebugLogger_t log, ncclProfilerCallback_t) {
  return guarded("init", [&] {
    ncclResult_t r = initCommon(log);
    if (r != ncclSuccess) return r;
    *ctx = new Context{commId, config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return ncclSuccess;
  });
}
ncclResult_t netInitV10(ncclDebugLogger_t log, ncclProfilerCallback_t) {
  return guarded("init", [&] { return initCommon(log); });
}
ncclResult_t netInitV9(ncclDebugLogger_t log) {
  return guarded("init", [&] { return initCommon(log); });
}
ncclResult_t netGetPropertiesV11(int dev, ncclNetProperties_v11_t* p) {
  return getPropertiesV11(dev, p, false);
}
ncclResult_t netGetPropertiesV10(int dev, ncclNetProperties_v10_t* p) {
  return getPropertiesV10(dev, p, false);
}
ncclResult_t netListenV11(void*, int dev, void* handle, void** lc) {
  return netListen(dev, handle, lc);
}
ncclResult_t netConnectV11(void*, int dev, void* handle, void** sc, ncclNetDeviceHandle_t**) {
  return netConnect(dev, handle, sc);
}
ncclResult_t netConnectV10(int dev, ncclNetCommConfig_t*, void* handle, void** sc,
                           ncclNetDeviceHandle_t**) {
  return netConnect(dev, handle, sc);
}
ncclResult_t netConnectV9(int dev, void* handle, void** sc, ncclNetDeviceHandle_t**) {
  return netConnect(dev, handle, sc);
}
ncclResult_t netAcceptAll(void* lc, void** rc, ncclNetDeviceHandle_t**) {
  return netAccept(lc, rc);
}
ncclResult_t netIsendV10(void* sc, void* data, size_t size, int tag, void*, void*, void** req) {
  return netIsend(sc, data, size, tag, req);
}
ncclResult_t netIsendV9(void* sc, void* data, size_t size, int tag, void*, void** req) {
  return netIsend(sc, data, size, tag, req);
}
ncclResult_t netIrecvV10(void* rc, int n, void** data, size_t* sizes, int* tags, void**, void**,
                         void** req) {
  return netIrecv(rc, n, data, sizes, tags, req);
}
ncclResult_t netIrecvV9(void* rc, int n, void** data, size_t* sizes, int* tags, void**,
                        void** req) {
  return netIrecv(rc, n, data, sizes, tags, req);
}
// v8 counts bytes in int; NCCL never passes a negative one, but a mistake must not become 2^64.
ncclResult_t netIsendV8(void* sc, void* data, int size, int tag, void*, void** req) {
  RS_REQUIRE(size >= 0, "isend", "negative size {}", size);
  return netIsend(sc, data, static_cast<size_t>(size), tag, req);
}
ncclResult_t netIrecvV8(void* rc, int n, void** data, int* sizes, int* tags, void**,
                        void** req) {
  RS_REQUIRE(n == 1 && sizes[0] >= 0, "irecv", "{} receives of {} bytes asked for", n, sizes[0]);
  size_t size = static_cast<size_t>(sizes[0]);
  return netIrecv(rc, n, data, &size, tags, req);
}
ncclResult_t netGetPropertiesV8(int dev, ncclNetProperties_v8_t* p) {
  return getPropertiesV8(dev, p, false);
}
ncclResult_t netCloseSend(void* c) { return closeAs<SendComm>(c, "closeSend"); }
ncclResult_t netCloseRecv(void* c) { return closeAs<RecvComm>(c, "closeRecv"); }
ncclResult_t netCloseListen(void* c) { return closeAs<ListenComm>(c, "closeListen"); }
ncclResult_t netFinalize(void* ctx) { return closeAs<Context>(ctx, "finalize"); }

ncclResult_t collInitV11(void** ctx, uint64_t commId, ncclDebugLogger_t log) {
  return guarded("collnet init", [&] {
    ncclResult_t r = initCommon(log);
    if (r != ncclSuccess) return r;
    *ctx = new Context{commId, NCCL_NET_TRAFFIC_CLASS_UNDEF};
    return ncclSuccess;
  });
}
ncclResult_t collInitV10(ncclDebugLogger_t log) {
  return guarded("collnet init", [&] { return initCommon(log); });
}
ncclResult_t collGetPropertiesV11(int dev, ncclNetProperties_v11_t* p) {
  return getPropertiesV11(dev, p, true);
}
ncclResult_t collGetPropertiesV10(int dev, ncclNetProperties_v10_t* p) {
  return getPropertiesV10(dev, p, true);
}
ncclResult_t collListenV11(void*, int dev, void* handle, void** lc) {
  return collListen(dev, handle, lc);
}
ncclResult_t collGetPropertiesV8(int dev, ncclNetProperties_v8_t* p) {
  return getPropertiesV8(dev, p, true);
}
ncclResult_t collIallreduceV8(void* cc, void* send, void* recv, int count, ncclDataType_t type,
                              ncclRedOp_t op, void* smh, void* rmh, void** req) {
  *req = nullptr;
  RS_REQUIRE(count >= 0, "iallreduce", "negative count {}", count);
  return collIallreduce(cc, send, recv, static_cast<size_t>(count), type, op, smh, rmh, req);
}
ncclResult_t collCloseColl(void* c) { return closeAs<CollComm>(c, "closeColl"); }
ncclResult_t collCloseListen(void*) { return ncclSuccess; }

}  // namespace
}  // namespace rs::plugin

// --- the exported tables (the only symbols the library exports; see exports.map) -------------

using namespace rs::plugin;

extern "C" {

#define RS_EXPORT __attribute__((visibility("default")))

RS_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = kPluginName,
    .init = netInitV11,
    .devices = netDevices,
    .getProperties = netGetPropertiesV11,
    .listen = netListenV11,
    .connect = netConnectV11,
    .accept = netAcceptAll,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = netIsendV10,
    .irecv = netIrecvV10,
    .iflush = netIflush,
    .test = netTest,
    .closeSend = netCloseSend,
    .closeRecv = netCloseRecv,
    .closeListen = netCloseListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
    .finalize = netFinalize,
    .setNetAttr = nullptr,
};

RS_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = kPluginName,
    .init = netInitV10,
    .devices = netDevices,
    .getProperties = netGetPropertiesV10,
    .listen = netListen,
    .connect = netConnectV10,
    .accept = netAcceptAll,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = netIsendV10,
    .irecv = netIrecvV10,
    .iflush = netIflush,
    .test = netTest,
    .closeSend = netCloseSend,
    .closeRecv = netCloseRecv,
    .closeListen = netCloseListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};

RS_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = kPluginName,
    .init = netInitV9,
    .devices = netDevices,
    .getProperties = netGetPropertiesV10,
    .listen = netListen,
    .connect = netConnectV9,
    .accept = netAcceptAll,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = netIsendV9,
    .irecv = netIrecvV9,
    .iflush = netIflush,
    .test = netTest,
    .closeSend = netCloseSend,
    .closeRecv = netCloseRecv,
    .closeListen = netCloseListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
    .makeVDevice = nullptr,
};

RS_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = kPluginName,
    .init = netInitV9,
    .devices = netDevices,
    .getProperties = netGetPropertiesV8,
    .listen = netListen,
    .connect = netConnectV9,
    .accept = netAcceptAll,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .isend = netIsendV8,
    .irecv = netIrecvV8,
    .iflush = netIflush,
    .test = netTest,
    .closeSend = netCloseSend,
    .closeRecv = netCloseRecv,
    .closeListen = netCloseListen,
    .getDeviceMr = nullptr,
    .irecvConsumed = nullptr,
};

RS_EXPORT ncclCollNet_v11_t ncclCollNetPlugin_v11 = {
    .name = kPluginName,
    .init = collInitV11,
    .devices = collDevices,
    .getProperties = collGetPropertiesV11,
    .listen = collListenV11,
    .connect = collConnect,
    .reduceSupport = collReduceSupport,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .iallreduce = collIallreduce,
    .iallgather = nullptr,
    .ireducescatter = nullptr,
    .iflush = collIflush,
    .test = collTest,
    .closeColl = collCloseColl,
    .closeListen = collCloseListen,
    .makeVDevice = nullptr,
    .finalize = netFinalize,
};

// v10 and v9 share one CollNet layout.
#define RS_COLLNET_V10_TABLE                   \
  {                                            \
    .name = kPluginName,                       \
    .init = collInitV10,                       \
    .devices = collDevices,                    \
    .getProperties = collGetPropertiesV10,     \
    .listen = collListen,                      \
    .connect = collConnect,                    \
    .reduceSupport = collReduceSupport,        \
    .regMr = regMr,                            \
    .regMrDmaBuf = nullptr,                    \
    .deregMr = deregMr,                        \
    .iallreduce = collIallreduce,              \
    .iallgather = nullptr,                     \
    .ireducescatter = nullptr,                 \
    .iflush = collIflush,                      \
    .test = collTest,                          \
    .closeColl = collCloseColl,                \
    .closeListen = collCloseListen,            \
    .makeVDevice = nullptr,                    \
  }
RS_EXPORT ncclCollNet_v10_t ncclCollNetPlugin_v10 = RS_COLLNET_V10_TABLE;
RS_EXPORT ncclCollNet_v9_t ncclCollNetPlugin_v9 = RS_COLLNET_V10_TABLE;

RS_EXPORT ncclCollNet_v8_t ncclCollNetPlugin_v8 = {
    .name = kPluginName,
    .init = collInitV10,
    .devices = collDevices,
    .getProperties = collGetPropertiesV8,
    .listen = collListen,
    .connect = collConnect,
    .reduceSupport = collReduceSupport,
    .regMr = regMr,
    .regMrDmaBuf = nullptr,
    .deregMr = deregMr,
    .iallreduce = collIallreduceV8,
    .iallgather = nullptr,
    .ireducescatter = nullptr,
    .iflush = collIflush,
    .test = collTest,
    .closeColl = collCloseColl,
    .closeListen = collCloseListen,
};

}  // extern "C"

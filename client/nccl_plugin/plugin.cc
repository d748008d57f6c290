// The NCCL net and CollNet plugin: a thin C shell over rs_nccl and the client library.
//
// Point-to-point (ncclNet) goes to the plugin's own TCP transport (own_net.h), or, where
// NCCL_RS_INNER_NET names the cluster's own net plugin, to that plugin (inner_net.h), every call
// forwarded as it came; CollNet goes to the reducers either way, its devices mirroring the inner's
// (collnet_mirror.h). One implementation of each call serves every exported version: the
// per-version functions below only adapt argument lists (v8 counts in int, v9 has no phandle,
// v10 no per-communicator context, v11 both contexts and finalize). Nothing is thrown across the
// C ABI (call_guard.h).
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "client/nccl_plugin/call_guard.h"
#include "client/nccl_plugin/collnet_mirror.h"
#include "client/nccl_plugin/inner_net.h"
#include "client/nccl_plugin/nccl_net_abi.h"
#include "client/nccl_plugin/own_net.h"
#include "client/nccl_plugin/plugin_identity.h"
#include "client/nccl_plugin/plugin_state.h"
#include "rs/nccl/collnet_group.h"

namespace rs::plugin {
namespace {

constexpr const char* kPluginName = RS_PLUGIN_NAME;

// --- objects behind NCCL's opaque pointers ----------------------------------------------------

// A v11 communicator's context, or the process's one for the older tables (legacyContext()).
struct Context {
  uint64_t commId = 0;
  int trafficClass = NCCL_NET_TRAFFIC_CLASS_UNDEF;
  void* innerCtx = nullptr;  // the inner plugin's own, when point-to-point is delegated
};

// A CollNet listen comm holds nothing (the handle NCCL exchanges is all connect needs), and NCCL
// drops rather than closes it when connect fails; so it is one static token, never allocated.
char gCollListenToken;
struct CollComm {
  std::unique_ptr<nccl::CollNetGroup> group;
};
struct CollMemHandle {
  client::BufferRegistration registration;
};
struct CollRequest {
  std::shared_ptr<client::AllReduceRequest> request;
  size_t bytes;
};

// --- delegation -------------------------------------------------------------------------------

const InnerNet* inner() { return pluginState().inner.get(); }

void* innerContext(void* ctx) {
  return ctx != nullptr ? static_cast<Context*>(ctx)->innerCtx : nullptr;
}

void pointOptionalCallsAtInner(const InnerNet& in);  // below the tables it fills

// Once per process, at the first init of either table: the inner's devices, whether CollNet is
// offered beside them, and the inner's optional calls in our tables (NCCL reads those members
// after init: v11 from our table, older versions into its own copy).
Status mirrorInnerOnce(PluginState& s, ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  static std::mutex mutex;
  static bool mirrored = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (mirrored) return Status::ok();
  auto devices = innerDevices(*s.inner, logger, prof);
  if (!devices) return devices.status();
  s.mirror = decideCollNetMirror(std::move(*devices), s.inner->name, s.collnetHostMemory);
  if (s.collnetEnabled && !s.mirror.offReason.empty()) {
    s.collnetEnabled = false;
    s.collnetOffReason = s.mirror.offReason;
    RS_PLUGIN_WARN("CollNet off: {}", s.mirror.offReason);
  } else if (s.collnetEnabled && !s.mirror.tradeNote.empty()) {
    RS_PLUGIN_WARN("{}", s.mirror.tradeNote);
  }
  for (const auto& d : s.mirror.devices)
    RS_PLUGIN_INFO(NCCL_INIT | NCCL_NET, "inner device {}: {} speed {} Mbps ptrSupport {:#x}",
                   &d - s.mirror.devices.data(), d.name, d.speed, d.ptrSupport);
  pointOptionalCallsAtInner(*s.inner);
  mirrored = true;
  return Status::ok();
}

ncclResult_t initCommon(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  setNcclLogger(logger);
  PluginState& s = pluginState();
  if (!s.initStatus.isOk()) return toNccl(s.initStatus, "init", CallSide::kLocal);
  if (s.inner) return toNccl(mirrorInnerOnce(s, logger, prof), "init", CallSide::kLocal);
  return ncclSuccess;
}

// A new context; with an inner plugin, the inner's context for the same communicator in it.
ncclResult_t openContext(uint64_t commId, ncclNetCommConfig_t* config, ncclDebugLogger_t log,
                         ncclProfilerCallback_t prof, void** ctx) {
  auto c = std::make_unique<Context>();
  c->commId = commId;
  c->trafficClass = config != nullptr ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  if (const InnerNet* in = inner()) {
    // The older tables bring no config; a v11 inner gets the default, never a null pointer
    // (NCCL always passes one, so a plugin may read it unchecked).
    ncclNetCommConfig_t defaults{NCCL_NET_TRAFFIC_CLASS_UNDEF};
    const ncclResult_t r =
        in->net.init(&c->innerCtx, commId, config != nullptr ? config : &defaults, log, prof);
    if (r != ncclSuccess) {
      RS_PLUGIN_WARN("init failed: the inner net plugin {} returned {}", in->name, int{r});
      return r;
    }
  }
  *ctx = c.release();
  return ncclSuccess;
}

// The older tables have no contexts: one for the process, opened at their first init.
std::atomic<Context*> gLegacyContext{nullptr};

ncclResult_t initLegacy(ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  return guarded("init", [&] {
    ncclResult_t r = initCommon(log, prof);
    if (r != ncclSuccess) return r;
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    if (gLegacyContext.load() != nullptr) return ncclSuccess;
    void* ctx = nullptr;
    r = openContext(0, nullptr, log, prof, &ctx);
    if (r == ncclSuccess) gLegacyContext.store(static_cast<Context*>(ctx));
    return r;
  });
}
void* legacyContext() { return gLegacyContext.load(); }

// --- ncclNet: the inner plugin's, or our own --------------------------------------------------

ncclResult_t netDevices(int* ndev) {
  if (const InnerNet* in = inner()) return in->net.devices(ndev);
  return own_net::devices(ndev);
}

ncclResult_t netGetProperties(int dev, ncclNetProperties_v11_t* props) {
  if (const InnerNet* in = inner()) return in->net.getProperties(dev, props);
  return guarded("getProperties", [&] {
    RS_REQUIRE(own_net::hasDevice(dev), "getProperties", "device {} does not exist", dev);
    own_net::properties(dev, props, false);
    return ncclSuccess;
  });
}

ncclResult_t netListen(void* ctx, int dev, void* handle, void** listenComm) {
  if (const InnerNet* in = inner()) return in->net.listen(innerContext(ctx), dev, handle, listenComm);
  return own_net::listen(dev, handle, listenComm);
}

ncclResult_t netConnect(void* ctx, int dev, void* handle, void** sendComm,
                        ncclNetDeviceHandle_t** sendDevComm) {
  if (const InnerNet* in = inner())
    return in->net.connect(innerContext(ctx), dev, handle, sendComm, sendDevComm);
  return own_net::connect(dev, handle, sendComm);
}

ncclResult_t netAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm) {
  if (const InnerNet* in = inner()) return in->net.accept(listenComm, recvComm, recvDevComm);
  return own_net::accept(listenComm, recvComm);
}

ncclResult_t netRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (const InnerNet* in = inner()) return in->net.regMr(comm, data, size, type, mhandle);
  return own_net::regMr(data, size, type, mhandle);
}

ncclResult_t netDeregMr(void* comm, void* mhandle) {
  if (const InnerNet* in = inner()) return in->net.deregMr(comm, mhandle);
  return own_net::deregMr(mhandle);
}

ncclResult_t netIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                      void* phandle, void** request) {
  if (const InnerNet* in = inner())
    return in->net.isend(sendComm, data, size, tag, mhandle, phandle, request);
  return own_net::isend(sendComm, data, size, tag, request);
}

ncclResult_t netIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                      void** mhandles, void** phandles, void** request) {
  if (const InnerNet* in = inner())
    return in->net.irecv(recvComm, n, data, sizes, tags, mhandles, phandles, request);
  return own_net::irecv(recvComm, n, data, sizes, tags, request);
}

ncclResult_t netIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                       void** request) {
  if (const InnerNet* in = inner())
    return in->net.iflush(recvComm, n, data, sizes, mhandles, request);
  *request = nullptr;  // host memory: nothing to flush (NCCL never asks without GDR)
  return ncclSuccess;
}

ncclResult_t netTest(void* request, int* done, int* sizes) {
  if (const InnerNet* in = inner()) return in->net.test(request, done, sizes);
  return own_net::test(request, done, sizes);
}

ncclResult_t netCloseSend(void* c) {
  if (const InnerNet* in = inner()) return in->net.closeSend(c);
  return own_net::closeSend(c);
}
ncclResult_t netCloseRecv(void* c) {
  if (const InnerNet* in = inner()) return in->net.closeRecv(c);
  return own_net::closeRecv(c);
}
ncclResult_t netCloseListen(void* c) {
  if (const InnerNet* in = inner()) return in->net.closeListen(c);
  return own_net::closeListen(c);
}

ncclResult_t netFinalize(void* ctx) {
  return guarded("finalize", [&] {
    std::unique_ptr<Context> c(static_cast<Context*>(ctx));
    const InnerNet* in = inner();
    if (in != nullptr && in->net.finalize != nullptr && c != nullptr)
      return in->net.finalize(c->innerCtx);
    return ncclSuccess;
  });
}

// The optional calls, in our tables only where the inner has them (pointOptionalCallsAtInner).
ncclResult_t netRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                            void** mhandle) {
  return inner()->net.regMrDmaBuf(comm, data, size, type, offset, fd, mhandle);
}
ncclResult_t netGetDeviceMr(void* comm, void* mhandle, void** dptrMhandle) {
  return inner()->net.getDeviceMr(comm, mhandle, dptrMhandle);
}
ncclResult_t netIrecvConsumed(void* recvComm, int n, void* request) {
  return inner()->net.irecvConsumed(recvComm, n, request);
}
ncclResult_t netMakeVDevice(int* d, ncclNetVDeviceProps_t* props) {
  return inner()->net.makeVDevice(d, props);
}
ncclResult_t netSetNetAttr(void* ctx, ncclNetAttr_v11_t* attr) {
  return inner()->net.setNetAttr(innerContext(ctx), attr);
}

// --- CollNet ----------------------------------------------------------------------------------

int collDeviceCount() {
  const PluginState& s = pluginState();
  if (!s.collnetEnabled) return 0;  // no reducers: NCCL keeps its own algorithms
  if (s.inner) return static_cast<int>(s.mirror.devices.size());
  return static_cast<int>(s.devices.size());
}

ncclResult_t collDevices(int* ndev) {
  return guarded("collnet devices", [&] {
    *ndev = collDeviceCount();
    return ncclSuccess;
  });
}

ncclResult_t collGetProperties(int dev, ncclNetProperties_v11_t* props) {
  return guarded("collnet getProperties", [&] {
    RS_REQUIRE(dev >= 0 && dev < collDeviceCount(), "collnet getProperties",
               "device {} does not exist", dev);
    const PluginState& s = pluginState();
    if (s.inner)
      fillMirroredCollNetProperties(s.mirror.devices[static_cast<size_t>(dev)], dev, props);
    else
      own_net::properties(dev, props, true);
    return ncclSuccess;
  });
}

ncclResult_t collListen(int dev, void* handle, void** listenComm) {
  return guarded("collnet listen", [&] {
    RS_REQUIRE(dev >= 0 && dev < collDeviceCount(), "collnet listen", "device {} does not exist",
               dev);
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

// NCCL registers the buffers CollNet all-reduces from (its proxy's host buffers) once: on a
// fabric their chunks are then written to the reducers straight from them (zero-copy).
ncclResult_t collRegMr(void* collComm, void* data, size_t size, int type, void** mhandle) {
  return guarded("collnet regMr", [&] {
    *mhandle = nullptr;
    RS_REQUIRE(type == NCCL_PTR_HOST, "collnet regMr",
               "memory type {} is not host memory; this plugin declares NCCL_PTR_HOST only", type);
    auto* comm = static_cast<CollComm*>(collComm);
    auto r = comm->group->communicator().registerBuffer(data, size);
    if (!r) return toNccl(r.status(), "collnet regMr", CallSide::kLocal);
    *mhandle = new CollMemHandle{*r};
    return ncclSuccess;
  });
}

ncclResult_t collDeregMr(void* collComm, void* mhandle) {
  return guarded("collnet deregMr", [&] {
    std::unique_ptr<CollMemHandle> handle(static_cast<CollMemHandle*>(mhandle));
    if (!handle) return ncclSuccess;
    Status s = static_cast<CollComm*>(collComm)->group->communicator().deregisterBuffer(
        handle->registration);
    if (!s.isOk()) return toNccl(s, "collnet deregMr", CallSide::kLocal);
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

ncclResult_t collCloseColl(void* c) {
  return guarded("closeColl", [&] {
    delete static_cast<CollComm*>(c);
    return ncclSuccess;
  });
}
ncclResult_t collCloseListen(void*) { return ncclSuccess; }
ncclResult_t collFinalize(void* ctx) {
  delete static_cast<Context*>(ctx);
  return ncclSuccess;
}

// --- per-version entry points -----------------------------------------------------------------

ncclResult_t getPropertiesV10(ncclResult_t (*get)(int, ncclNetProperties_v11_t*), int dev,
                              ncclNetProperties_v10_t* props) {
  ncclNetProperties_v11_t full;
  const ncclResult_t r = get(dev, &full);
  if (r == ncclSuccess) std::memcpy(props, &full, sizeof *props);  // v10 is v11's prefix
  return r;
}

ncclResult_t getPropertiesV8(ncclResult_t (*get)(int, ncclNetProperties_v11_t*), int dev,
                             ncclNetProperties_v8_t* props) {
  ncclNetProperties_v11_t f;
  const ncclResult_t r = get(dev, &f);
  if (r == ncclSuccess)
    *props = {f.name,    f.pciPath, f.guid,     f.ptrSupport, f.regIsGlobal,   f.speed,
              f.port,    f.latency, f.maxComms, f.maxRecvs,   f.netDeviceType, f.netDeviceVersion};
  return r;
}

ncclResult_t netInitV11(void** ctx, uint64_t commId, ncclNetCommConfig_t* config,
                        ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  return guarded("init", [&] {
    const ncclResult_t r = initCommon(log, prof);
    if (r != ncclSuccess) return r;
    return openContext(commId, config, log, prof, ctx);
  });
}
ncclResult_t netInitV10(ncclDebugLogger_t log, ncclProfilerCallback_t prof) {
  return initLegacy(log, prof);
}
ncclResult_t netInitV9(ncclDebugLogger_t log) { return initLegacy(log, nullptr); }
ncclResult_t netGetPropertiesV10(int dev, ncclNetProperties_v10_t* p) {
  return getPropertiesV10(netGetProperties, dev, p);
}
ncclResult_t netGetPropertiesV8(int dev, ncclNetProperties_v8_t* p) {
  return getPropertiesV8(netGetProperties, dev, p);
}
ncclResult_t netListenLegacy(int dev, void* handle, void** lc) {
  return netListen(legacyContext(), dev, handle, lc);
}
// v10's per-connect traffic class: the inner plugin got the process's context, whose class is
// the default (an older NCCL with an inner plugin loses the class; NCCL 2.28 speaks v11).
ncclResult_t netConnectV10(int dev, ncclNetCommConfig_t*, void* handle, void** sc,
                           ncclNetDeviceHandle_t** dc) {
  return netConnect(legacyContext(), dev, handle, sc, dc);
}
ncclResult_t netConnectV9(int dev, void* handle, void** sc, ncclNetDeviceHandle_t** dc) {
  return netConnect(legacyContext(), dev, handle, sc, dc);
}
ncclResult_t netIsendV9(void* sc, void* data, size_t size, int tag, void* mh, void** req) {
  return netIsend(sc, data, size, tag, mh, nullptr, req);
}
ncclResult_t netIrecvV9(void* rc, int n, void** data, size_t* sizes, int* tags, void** mhs,
                        void** req) {
  return netIrecv(rc, n, data, sizes, tags, mhs, nullptr, req);
}
// v8 counts bytes in int; NCCL never passes a negative one, but a mistake must not become 2^64.
ncclResult_t netIsendV8(void* sc, void* data, int size, int tag, void* mh, void** req) {
  RS_REQUIRE(size >= 0, "isend", "negative size {}", size);
  return netIsend(sc, data, static_cast<size_t>(size), tag, mh, nullptr, req);
}
ncclResult_t netIrecvV8(void* rc, int n, void** data, int* sizes, int* tags, void** mhs,
                        void** req) {
  RS_REQUIRE(n >= 1 && n <= NCCL_NET_MAX_REQUESTS, "irecv", "{} receives asked for", n);
  size_t wide[NCCL_NET_MAX_REQUESTS];
  for (int i = 0; i < n; ++i) {
    RS_REQUIRE(sizes[i] >= 0, "irecv", "negative size {}", sizes[i]);
    wide[i] = static_cast<size_t>(sizes[i]);
  }
  return netIrecv(rc, n, data, wide, tags, mhs, nullptr, req);
}

ncclResult_t collInitV11(void** ctx, uint64_t commId, ncclDebugLogger_t log) {
  return guarded("collnet init", [&] {
    const ncclResult_t r = initCommon(log, nullptr);
    if (r != ncclSuccess) return r;
    *ctx = new Context{commId, NCCL_NET_TRAFFIC_CLASS_UNDEF, nullptr};
    return ncclSuccess;
  });
}
ncclResult_t collInitV10(ncclDebugLogger_t log) {
  return guarded("collnet init", [&] { return initCommon(log, nullptr); });
}
ncclResult_t collGetPropertiesV10(int dev, ncclNetProperties_v10_t* p) {
  return getPropertiesV10(collGetProperties, dev, p);
}
ncclResult_t collGetPropertiesV8(int dev, ncclNetProperties_v8_t* p) {
  return getPropertiesV8(collGetProperties, dev, p);
}
ncclResult_t collListenV11(void*, int dev, void* handle, void** lc) {
  return collListen(dev, handle, lc);
}
ncclResult_t collIallreduceV8(void* cc, void* send, void* recv, int count, ncclDataType_t type,
                              ncclRedOp_t op, void* smh, void* rmh, void** req) {
  *req = nullptr;
  RS_REQUIRE(count >= 0, "iallreduce", "negative count {}", count);
  return collIallreduce(cc, send, recv, static_cast<size_t>(count), type, op, smh, rmh, req);
}

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
    .getProperties = netGetProperties,
    .listen = netListen,
    .connect = netConnect,
    .accept = netAccept,
    .regMr = netRegMr,
    .regMrDmaBuf = nullptr,
    .deregMr = netDeregMr,
    .isend = netIsend,
    .irecv = netIrecv,
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
    .listen = netListenLegacy,
    .connect = netConnectV10,
    .accept = netAccept,
    .regMr = netRegMr,
    .regMrDmaBuf = nullptr,
    .deregMr = netDeregMr,
    .isend = netIsend,
    .irecv = netIrecv,
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
    .listen = netListenLegacy,
    .connect = netConnectV9,
    .accept = netAccept,
    .regMr = netRegMr,
    .regMrDmaBuf = nullptr,
    .deregMr = netDeregMr,
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
    .listen = netListenLegacy,
    .connect = netConnectV9,
    .accept = netAccept,
    .regMr = netRegMr,
    .regMrDmaBuf = nullptr,
    .deregMr = netDeregMr,
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
    .getProperties = collGetProperties,
    .listen = collListenV11,
    .connect = collConnect,
    .reduceSupport = collReduceSupport,
    .regMr = collRegMr,
    .regMrDmaBuf = nullptr,
    .deregMr = collDeregMr,
    .iallreduce = collIallreduce,
    .iallgather = nullptr,
    .ireducescatter = nullptr,
    .iflush = collIflush,
    .test = collTest,
    .closeColl = collCloseColl,
    .closeListen = collCloseListen,
    .makeVDevice = nullptr,
    .finalize = collFinalize,
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
    .regMr = collRegMr,                        \
    .regMrDmaBuf = nullptr,                    \
    .deregMr = collDeregMr,                    \
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
    .regMr = collRegMr,
    .regMrDmaBuf = nullptr,
    .deregMr = collDeregMr,
    .iallreduce = collIallreduceV8,
    .iallgather = nullptr,
    .ireducescatter = nullptr,
    .iflush = collIflush,
    .test = collTest,
    .closeColl = collCloseColl,
    .closeListen = collCloseListen,
};

}  // extern "C"

// --- the optional calls, pointed at the inner plugin's --------------------------------------

namespace rs::plugin {
namespace {

// Where the inner has them: dma-buf registration (GPUDirect RDMA), the device-side calls of
// NCCL's unpack transport (GPUDirect-TCPX), virtual NICs (NCCL_NET_MERGE_LEVEL) and v11's
// network attributes. Our own transport has none; CollNet's tables are never changed.
void pointOptionalCallsAtInner(const InnerNet& in) {
  const ncclNet_v11_t& n = in.net;
  auto pick = [](auto inner, auto ours) { return inner != nullptr ? ours : nullptr; };
  const auto dmaBuf = pick(n.regMrDmaBuf, netRegMrDmaBuf);
  const auto deviceMr = pick(n.getDeviceMr, netGetDeviceMr);
  const auto consumed = pick(n.irecvConsumed, netIrecvConsumed);
  const auto vDevice = pick(n.makeVDevice, netMakeVDevice);
  ncclNetPlugin_v11.regMrDmaBuf = ncclNetPlugin_v10.regMrDmaBuf = dmaBuf;
  ncclNetPlugin_v9.regMrDmaBuf = ncclNetPlugin_v8.regMrDmaBuf = dmaBuf;
  ncclNetPlugin_v11.getDeviceMr = ncclNetPlugin_v10.getDeviceMr = deviceMr;
  ncclNetPlugin_v9.getDeviceMr = ncclNetPlugin_v8.getDeviceMr = deviceMr;
  ncclNetPlugin_v11.irecvConsumed = ncclNetPlugin_v10.irecvConsumed = consumed;
  ncclNetPlugin_v9.irecvConsumed = ncclNetPlugin_v8.irecvConsumed = consumed;
  ncclNetPlugin_v11.makeVDevice = ncclNetPlugin_v10.makeVDevice = vDevice;
  ncclNetPlugin_v9.makeVDevice = vDevice;
  ncclNetPlugin_v11.setNetAttr = pick(n.setNetAttr, netSetNetAttr);
}

}  // namespace
}  // namespace rs::plugin

#include "client/nccl_plugin/inner_net.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "client/nccl_plugin/plugin_log.h"

namespace rs::plugin {
namespace {

// The inner plugin's table when it is older than v11 (one inner plugin per process).
ncclNet_v10_t* gV10 = nullptr;
ncclNet_v9_t* gV9 = nullptr;
ncclNet_v8_t* gV8 = nullptr;

// Before v11 a net plugin is initialised once per process; v11 calls init per communicator.
// NCCL's own adapters keep the older contract, and so does this one (a failed init is retried).
std::mutex gInitMutex;
bool gInitialised = false;

template <typename F>
ncclResult_t initOnce(F&& init) {
  std::lock_guard<std::mutex> lock(gInitMutex);
  if (gInitialised) return ncclSuccess;
  const ncclResult_t r = init();
  gInitialised = r == ncclSuccess;
  return r;
}

void fromV10(const ncclNetProperties_v10_t& in, ncclNetProperties_v11_t* out) {
  std::memset(out, 0, sizeof *out);
  std::memcpy(out, &in, sizeof in);  // v10 (and v9) is v11's prefix (nccl_net_abi.h)
  out->maxMultiRequestSize = 1;
}

void fromV8(int dev, const ncclNetProperties_v8_t& in, ncclNetProperties_v11_t* out) {
  std::memset(out, 0, sizeof *out);
  out->name = in.name;
  out->pciPath = in.pciPath;
  out->guid = in.guid;
  out->ptrSupport = in.ptrSupport;
  out->regIsGlobal = in.regIsGlobal;
  out->speed = in.speed;
  out->port = in.port;
  out->latency = in.latency;
  out->maxComms = in.maxComms;
  out->maxRecvs = in.maxRecvs;
  out->netDeviceType = in.netDeviceType;
  out->netDeviceVersion = in.netDeviceVersion;
  out->vProps.ndevs = 1;
  out->vProps.devs[0] = dev;
  out->maxP2pBytes = NCCL_V8_MAX_NET_SIZE;
  out->maxCollBytes = NCCL_V8_MAX_NET_SIZE;
  out->maxMultiRequestSize = 1;
}

// The calls an older table makes alike but for the table they call (`inner`: gV10, gV9, gV8).
template <auto& inner>
ncclResult_t listenOn(void*, int dev, void* handle, void** listenComm) {
  return inner->listen(dev, handle, listenComm);
}
// v9 and v8: init(logger), no contexts, no profiler handles; connect without a config.
template <auto& inner>
ncclResult_t initWithoutContext(void** ctx, uint64_t, ncclNetCommConfig_t*, ncclDebugLogger_t log,
                                ncclProfilerCallback_t) {
  *ctx = nullptr;
  return initOnce([&] { return inner->init(log); });
}
template <auto& inner>
ncclResult_t connectWithoutConfig(void*, int dev, void* handle, void** sendComm,
                                  ncclNetDeviceHandle_t** sendDevComm) {
  return inner->connect(dev, handle, sendComm, sendDevComm);
}

// v10: init(logger, profiler); the traffic class goes to connect, so the context carries it.
namespace v10 {
ncclResult_t init(void** ctx, uint64_t, ncclNetCommConfig_t* config, ncclDebugLogger_t log,
                  ncclProfilerCallback_t prof) {
  *ctx = nullptr;
  const ncclResult_t r = initOnce([&] { return gV10->init(log, prof); });
  if (r != ncclSuccess) return r;
  *ctx = new (std::nothrow)
      ncclNetCommConfig_t{config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF};
  return *ctx != nullptr ? ncclSuccess : ncclSystemError;
}
ncclResult_t finalize(void* ctx) {
  delete static_cast<ncclNetCommConfig_t*>(ctx);
  return ncclSuccess;
}
ncclResult_t getProperties(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v10_t p;
  const ncclResult_t r = gV10->getProperties(dev, &p);
  if (r == ncclSuccess) fromV10(p, props);
  return r;
}
ncclResult_t connect(void* ctx, int dev, void* handle, void** sendComm,
                     ncclNetDeviceHandle_t** sendDevComm) {
  return gV10->connect(dev, static_cast<ncclNetCommConfig_t*>(ctx), handle, sendComm,
                       sendDevComm);
}
}  // namespace v10

// v9: as v10 without contexts (initWithoutContext, connectWithoutConfig).
namespace v9 {
ncclResult_t getProperties(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v9_t p;
  const ncclResult_t r = gV9->getProperties(dev, &p);
  if (r == ncclSuccess) fromV10(p, props);
  return r;
}
ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void*,
                   void** request) {
  return gV9->isend(sendComm, data, size, tag, mhandle, request);
}
ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                   void**, void** request) {
  return gV9->irecv(recvComm, n, data, sizes, tags, mhandles, request);
}
}  // namespace v9

// v8: as v9 without virtual devices, and sizes in int (NCCL keeps them to 1 GiB).
namespace v8 {
ncclResult_t getProperties(int dev, ncclNetProperties_v11_t* props) {
  ncclNetProperties_v8_t p;
  const ncclResult_t r = gV8->getProperties(dev, &p);
  if (r == ncclSuccess) fromV8(dev, p, props);
  return r;
}
ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void*,
                   void** request) {
  if (size > NCCL_V8_MAX_NET_SIZE) {
    RS_PLUGIN_WARN("isend of {} bytes: the inner v8 net plugin takes at most {}", size,
                   NCCL_V8_MAX_NET_SIZE);
    return ncclInternalError;
  }
  return gV8->isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
}
ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                   void**, void** request) {
  if (n < 0 || n > NCCL_NET_MAX_REQUESTS) {
    RS_PLUGIN_WARN("irecv of {} buffers: at most {}", n, NCCL_NET_MAX_REQUESTS);
    return ncclInternalError;
  }
  int intSizes[NCCL_NET_MAX_REQUESTS];
  for (int i = 0; i < n; ++i) {
    if (sizes[i] > NCCL_V8_MAX_NET_SIZE) {
      RS_PLUGIN_WARN("irecv of {} bytes: the inner v8 net plugin takes at most {}", sizes[i],
                     NCCL_V8_MAX_NET_SIZE);
      return ncclInternalError;
    }
    intSizes[i] = static_cast<int>(sizes[i]);
  }
  // A v8 plugin does not know the hint that NCCL will not test this receive.
  if (*request == reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION)) *request = nullptr;
  return gV8->irecv(recvComm, n, data, intSizes, tags, mhandles, request);
}
}  // namespace v8

ncclResult_t noFinalize(void*) { return ncclSuccess; }

// The members every version shares, whatever their table's type.
template <typename Table>
void copyCommon(const Table& t, ncclNet_v11_t* n) {
  n->name = t.name;
  n->devices = t.devices;
  n->accept = t.accept;
  n->regMr = t.regMr;
  n->regMrDmaBuf = t.regMrDmaBuf;
  n->deregMr = t.deregMr;
  n->iflush = t.iflush;
  n->test = t.test;
  n->closeSend = t.closeSend;
  n->closeRecv = t.closeRecv;
  n->closeListen = t.closeListen;
  n->getDeviceMr = t.getDeviceMr;
  n->irecvConsumed = t.irecvConsumed;
}

// The calls whose argument lists differ between versions, adapted (or the table's own).
struct VersionCalls {
  decltype(ncclNet_v11_t::init) init;
  decltype(ncclNet_v11_t::getProperties) getProperties;
  decltype(ncclNet_v11_t::listen) listen;
  decltype(ncclNet_v11_t::connect) connect;
  decltype(ncclNet_v11_t::isend) isend;
  decltype(ncclNet_v11_t::irecv) irecv;
  decltype(ncclNet_v11_t::makeVDevice) makeVDevice;
  decltype(ncclNet_v11_t::finalize) finalize;
};

// An older table as v11: its version's calls and the members all versions share.
template <typename Table>
ncclNet_v11_t asV11(const Table& t, const VersionCalls& v) {
  ncclNet_v11_t n{};
  copyCommon(t, &n);
  n.init = v.init;
  n.getProperties = v.getProperties;
  n.listen = v.listen;
  n.connect = v.connect;
  n.isend = v.isend;
  n.irecv = v.irecv;
  n.makeVDevice = v.makeVDevice;
  n.finalize = v.finalize;
  return n;
}

ncclNet_v11_t adapt(ncclNet_v10_t* t) {
  gV10 = t;
  return asV11(*t, {v10::init, v10::getProperties, listenOn<gV10>, v10::connect, t->isend,
                    t->irecv, t->makeVDevice, v10::finalize});
}

ncclNet_v11_t adapt(ncclNet_v9_t* t) {
  gV9 = t;
  return asV11(*t, {initWithoutContext<gV9>, v9::getProperties, listenOn<gV9>,
                    connectWithoutConfig<gV9>, v9::isend, v9::irecv, t->makeVDevice, noFinalize});
}

ncclNet_v11_t adapt(ncclNet_v8_t* t) {  // v8 has no virtual devices
  gV8 = t;
  return asV11(*t, {initWithoutContext<gV8>, v8::getProperties, listenOn<gV8>,
                    connectWithoutConfig<gV8>, v8::isend, v8::irecv, nullptr, noFinalize});
}

// The calls NCCL makes unconditionally: a table without one is broken, and is refused rather
// than crashing the training process at its first communicator.
template <typename Table>
const char* missingRequiredCall(const Table& t) {
#define RS_REQUIRED(member) \
  if (t.member == nullptr) return #member;
  RS_REQUIRED(init) RS_REQUIRED(devices) RS_REQUIRED(getProperties) RS_REQUIRED(listen)
  RS_REQUIRED(connect) RS_REQUIRED(accept) RS_REQUIRED(regMr) RS_REQUIRED(deregMr)
  RS_REQUIRED(isend) RS_REQUIRED(irecv) RS_REQUIRED(iflush) RS_REQUIRED(test)
  RS_REQUIRED(closeSend) RS_REQUIRED(closeRecv) RS_REQUIRED(closeListen)
#undef RS_REQUIRED
  return nullptr;
}

bool isLibraryFileName(const std::string& s) {
  return s.rfind("lib", 0) == 0 && s.size() >= 3 && s.compare(s.size() - 3, 3, ".so") == 0;
}

std::string loadedPath(void* lib, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return fallback;
}

}  // namespace

Result<std::unique_ptr<InnerNet>> openInnerNet(const std::string& spec,
                                                std::string_view selfName) {
  if (spec.empty()) return invalidArgument("NCCL_RS_INNER_NET is set but empty");
  // NCCL's order for NCCL_NET_PLUGIN: the value as given, then libnccl-net-<value>.so unless it
  // is a path or already a library's file name.
  std::vector<std::string> names{spec};
  if (spec.find('/') == std::string::npos && !isLibraryFileName(spec))
    names.push_back("libnccl-net-" + spec + ".so");
  void* lib = nullptr;
  std::vector<std::string> errors;
  for (const auto& name : names) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    const char* e = dlerror();
    errors.push_back(e != nullptr ? e : name + ": unknown dlopen error");
  }
  if (lib == nullptr)
    return unavailableError(fmt::format("the inner net plugin NCCL_RS_INNER_NET={} did not load: {}",
                                        spec, fmt::join(errors, "; ")));

  auto inner = std::make_unique<InnerNet>();
  inner->library = loadedPath(lib, spec);
  const char* missing = nullptr;
  if (auto* t = static_cast<ncclNet_v11_t*>(dlsym(lib, "ncclNetPlugin_v11"))) {
    inner->version = 11;
    missing = missingRequiredCall(*t);
    inner->net = *t;
  } else if (auto* t10 = static_cast<ncclNet_v10_t*>(dlsym(lib, "ncclNetPlugin_v10"))) {
    inner->version = 10;
    missing = missingRequiredCall(*t10);
    if (missing == nullptr) inner->net = adapt(t10);
  } else if (auto* t9 = static_cast<ncclNet_v9_t*>(dlsym(lib, "ncclNetPlugin_v9"))) {
    inner->version = 9;
    missing = missingRequiredCall(*t9);
    if (missing == nullptr) inner->net = adapt(t9);
  } else if (auto* t8 = static_cast<ncclNet_v8_t*>(dlsym(lib, "ncclNetPlugin_v8"))) {
    inner->version = 8;
    missing = missingRequiredCall(*t8);
    if (missing == nullptr) inner->net = adapt(t8);
  } else {
    dlclose(lib);
    return unavailableError(fmt::format(
        "the inner net plugin {} exports no ncclNetPlugin_v11, _v10, _v9 or _v8 table: this "
        "plugin speaks those versions only",
        inner->library));
  }
  if (missing != nullptr)
    return unavailableError(fmt::format("the inner net plugin {}: its ncclNetPlugin_v{} has no {}",
                                        inner->library, inner->version, missing));
  inner->name = inner->net.name != nullptr ? inner->net.name : "";
  if (inner->name == selfName)
    return invalidArgument(fmt::format(
        "NCCL_RS_INNER_NET={} is this plugin itself ({}): name the cluster's own net plugin "
        "(the one NCCL_NET_PLUGIN named before, e.g. the InfiniBand or EFA plugin)",
        spec, inner->library));
  return inner;
}

}  // namespace rs::plugin

#include "tests/nccl_plugin/plugin_api.h"

#include <dlfcn.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace rs::harness {

namespace {
std::mutex gWarningsMu;
std::vector<std::string> gWarnings;
std::vector<std::string> gLines;
}  // namespace

void harnessLogger(ncclDebugLogLevel level, unsigned long, const char* file, int line,
                   const char* fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  {
    std::lock_guard lock(gWarningsMu);
    if (level == NCCL_LOG_WARN) gWarnings.emplace_back(buf);
    gLines.emplace_back(buf);
  }
  if (level > NCCL_LOG_WARN && std::getenv("RS_HARNESS_VERBOSE") == nullptr) return;
  std::fprintf(stderr, "[plugin %s %s:%d] %s\n", level == NCCL_LOG_WARN ? "WARN" : "INFO",
               file ? file : "?", line, buf);
}

std::vector<std::string> loggedWarnings() {
  std::lock_guard lock(gWarningsMu);
  return gWarnings;
}

std::vector<std::string> loggedLines() {
  std::lock_guard lock(gWarningsMu);
  return gLines;
}

namespace {

template <typename T>
T* lookup(void* lib, const char* name, std::string* error) {
  auto* p = static_cast<T*>(::dlsym(lib, name));
  if (p == nullptr) *error = std::string("symbol ") + name + " not exported";
  return p;
}

// The parts of the v9 and v10 tables that share v10's shapes.
template <typename Net>
void bindCommonNet(PluginApi* a, Net* n) {
  a->netName = n->name;
  a->netDevices = n->devices;
  a->netGetProperties = [n](int dev, ncclNetProperties_v11_t* p) {
    std::memset(p, 0, sizeof *p);
    return n->getProperties(dev, reinterpret_cast<ncclNetProperties_v10_t*>(p));
  };
  a->netListen = [n](void*, int dev, void* h, void** lc) { return n->listen(dev, h, lc); };
  a->netAccept = [n](void* lc, void** rc) { return n->accept(lc, rc, nullptr); };
  a->netRegMr = n->regMr;
  a->netDeregMr = n->deregMr;
  a->netTest = n->test;
  a->netCloseSend = n->closeSend;
  a->netCloseRecv = n->closeRecv;
  a->netCloseListen = n->closeListen;
  a->netFinalize = [](void*) { return ncclSuccess; };
}

template <typename Coll>
void bindColl(PluginApi* a, Coll* c) {
  a->collName = c->name;
  a->collDevices = c->devices;
  a->collConnect = c->connect;
  a->collReduceSupport = c->reduceSupport;
  a->collRegMr = c->regMr;
  a->collDeregMr = c->deregMr;
  a->collIallreduce = c->iallreduce;
  a->collTest = c->test;
  a->collCloseColl = c->closeColl;
  a->collCloseListen = c->closeListen;
}

// NCCL 2.28's search (spec 1.1): NCCL_NET_PLUGIN as given, then libnccl-net-<value>.so for a
// bare name; libnccl-net.so when it is unset.
void* openAsNccl(std::string* tried) {
  const char* env = std::getenv("NCCL_NET_PLUGIN");
  const std::string value = env != nullptr ? env : "";
  std::vector<std::string> names;
  if (value.empty()) {
    names.push_back("libnccl-net.so");
  } else {
    names.push_back(value);
    const bool libName = value.rfind("lib", 0) == 0 && value.size() > 3 &&
                         value.compare(value.size() - 3, 3, ".so") == 0;
    if (value.find('/') == std::string::npos && !libName)
      names.push_back("libnccl-net-" + value + ".so");
  }
  for (const auto& name : names) {
    if (void* library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    *tried += (tried->empty() ? "" : "; ") + std::string(::dlerror());
  }
  return nullptr;
}

// v8 (NCCL 2.20-2.23): its own properties layout (no forceFlush, vProps or size limits, for
// which NCCL assumes 1 GiB per p2p transfer and 512 MiB per collective call) and int counts.
void widen(const ncclNetProperties_v8_t& v8, ncclNetProperties_v11_t* p) {
  std::memset(p, 0, sizeof *p);
  p->name = v8.name;
  p->pciPath = v8.pciPath;
  p->guid = v8.guid;
  p->ptrSupport = v8.ptrSupport;
  p->regIsGlobal = v8.regIsGlobal;
  p->speed = v8.speed;
  p->port = v8.port;
  p->latency = v8.latency;
  p->maxComms = v8.maxComms;
  p->maxRecvs = v8.maxRecvs;
  p->netDeviceType = v8.netDeviceType;
  p->netDeviceVersion = v8.netDeviceVersion;
  p->maxP2pBytes = size_t{1} << 30;
  p->maxCollBytes = size_t{512} << 20;
}

bool bindV8(PluginApi* a, const std::string& netSym, const std::string& collSym,
            std::string* error) {
  auto* n = lookup<ncclNet_v8_t>(a->library, netSym.c_str(), error);
  auto* c = lookup<ncclCollNet_v8_t>(a->library, collSym.c_str(), error);
  if (!n || !c) return false;
  a->netName = n->name;
  a->netInit = [n](void** ctx, uint64_t) {
    *ctx = nullptr;
    return n->init(harnessLogger);
  };
  a->netDevices = n->devices;
  a->netGetProperties = [n](int dev, ncclNetProperties_v11_t* p) {
    ncclNetProperties_v8_t v8{};
    const ncclResult_t r = n->getProperties(dev, &v8);
    widen(v8, p);
    return r;
  };
  a->netListen = [n](void*, int dev, void* h, void** lc) { return n->listen(dev, h, lc); };
  a->netConnect = [n](void*, int dev, void* h, void** sc) { return n->connect(dev, h, sc, nullptr); };
  a->netAccept = [n](void* lc, void** rc) { return n->accept(lc, rc, nullptr); };
  a->netRegMr = n->regMr;
  a->netDeregMr = n->deregMr;
  a->netIsend = [n](void* sc, void* d, size_t s, int t, void* mh, void** r) {
    if (s > INT_MAX) return ncclInvalidArgument;  // NCCL 2.20-2.23 never sends more
    return n->isend(sc, d, static_cast<int>(s), t, mh, r);
  };
  a->netIrecv = [n](void* rc, void* d, size_t s, int t, void* mh, void** r) {
    if (s > INT_MAX) return ncclInvalidArgument;
    int sizes[1] = {static_cast<int>(s)};
    int tags[1] = {t};
    void* data[1] = {d};
    void* mhs[1] = {mh};
    return n->irecv(rc, 1, data, sizes, tags, mhs, r);
  };
  a->netTest = n->test;
  a->netCloseSend = n->closeSend;
  a->netCloseRecv = n->closeRecv;
  a->netCloseListen = n->closeListen;
  a->netFinalize = [](void*) { return ncclSuccess; };
  bindColl(a, c);
  a->collIallreduce = [c](void* cc, void* send, void* recv, size_t count, ncclDataType_t type,
                          ncclRedOp_t op, void* smh, void* rmh, void** req) {
    if (count > INT_MAX) return ncclInvalidArgument;
    return c->iallreduce(cc, send, recv, static_cast<int>(count), type, op, smh, rmh, req);
  };
  a->collInit = [c](void** ctx, uint64_t) {
    *ctx = nullptr;
    return c->init(harnessLogger);
  };
  a->collGetProperties = [c](int dev, ncclNetProperties_v11_t* p) {
    ncclNetProperties_v8_t v8{};
    const ncclResult_t r = c->getProperties(dev, &v8);
    widen(v8, p);
    return r;
  };
  a->collListen = [c](void*, int dev, void* h, void** lc) { return c->listen(dev, h, lc); };
  a->collFinalize = [](void*) { return ncclSuccess; };
  return true;
}

}  // namespace

bool loadPlugin(const std::string& path, int version, PluginApi* a, std::string* error) {
  a->version = version;
  std::string tried;
  a->library = path.empty() ? openAsNccl(&tried) : ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (a->library == nullptr) {
    *error = "dlopen: " + (path.empty() ? tried : std::string(::dlerror()));
    return false;
  }
  const std::string netSym = "ncclNetPlugin_v" + std::to_string(version);
  const std::string collSym = "ncclCollNetPlugin_v" + std::to_string(version);
  if (version == 11) {
    auto* n = lookup<ncclNet_v11_t>(a->library, netSym.c_str(), error);
    auto* c = lookup<ncclCollNet_v11_t>(a->library, collSym.c_str(), error);
    if (!n || !c) return false;
    a->netName = n->name;
    a->netInit = [n](void** ctx, uint64_t id) {
      ncclNetCommConfig_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return n->init(ctx, id, &config, harnessLogger, nullptr);
    };
    a->netDevices = n->devices;
    a->netGetProperties = n->getProperties;
    a->netListen = n->listen;
    a->netConnect = [n](void* ctx, int dev, void* h, void** sc) {
      return n->connect(ctx, dev, h, sc, nullptr);
    };
    a->netAccept = [n](void* lc, void** rc) { return n->accept(lc, rc, nullptr); };
    a->netRegMr = n->regMr;
    a->netDeregMr = n->deregMr;
    a->netIsend = [n](void* sc, void* d, size_t s, int t, void* mh, void** r) {
      return n->isend(sc, d, s, t, mh, nullptr, r);
    };
    a->netIrecv = [n](void* rc, void* d, size_t s, int t, void* mh, void** r) {
      size_t sizes[1] = {s};
      int tags[1] = {t};
      void* data[1] = {d};
      void* mhs[1] = {mh};
      return n->irecv(rc, 1, data, sizes, tags, mhs, nullptr, r);
    };
    a->netTest = n->test;
    a->netCloseSend = n->closeSend;
    a->netCloseRecv = n->closeRecv;
    a->netCloseListen = n->closeListen;
    a->netFinalize = n->finalize;
    bindColl(a, c);
    a->collInit = [c](void** ctx, uint64_t id) { return c->init(ctx, id, harnessLogger); };
    a->collGetProperties = c->getProperties;
    a->collListen = c->listen;
    a->collFinalize = c->finalize;
    return true;
  }
  if (version == 8) return bindV8(a, netSym, collSym, error);
  if (version != 10 && version != 9) {
    *error = "no such version " + std::to_string(version);
    return false;
  }
  auto* c = lookup<ncclCollNet_v10_t>(a->library, collSym.c_str(), error);
  if (!c) return false;
  bindColl(a, c);
  a->collInit = [c](void** ctx, uint64_t) {
    *ctx = nullptr;
    return c->init(harnessLogger);
  };
  a->collGetProperties = [c](int dev, ncclNetProperties_v11_t* p) {
    std::memset(p, 0, sizeof *p);
    return c->getProperties(dev, reinterpret_cast<ncclNetProperties_v10_t*>(p));
  };
  a->collListen = [c](void*, int dev, void* h, void** lc) { return c->listen(dev, h, lc); };
  a->collFinalize = [](void*) { return ncclSuccess; };
  auto irecvV10 = [](auto* n) {
    return [n](void* rc, void* d, size_t s, int t, void* mh, void** r) {
      size_t sizes[1] = {s};
      int tags[1] = {t};
      void* data[1] = {d};
      void* mhs[1] = {mh};
      if constexpr (std::is_same_v<std::remove_pointer_t<decltype(n)>, ncclNet_v10_t>)
        return n->irecv(rc, 1, data, sizes, tags, mhs, nullptr, r);
      else
        return n->irecv(rc, 1, data, sizes, tags, mhs, r);
    };
  };
  if (version == 10) {
    auto* n = lookup<ncclNet_v10_t>(a->library, netSym.c_str(), error);
    if (!n) return false;
    bindCommonNet(a, n);
    a->netInit = [n](void** ctx, uint64_t) {
      *ctx = nullptr;
      return n->init(harnessLogger, nullptr);
    };
    a->netConnect = [n](void*, int dev, void* h, void** sc) {
      ncclNetCommConfig_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return n->connect(dev, &config, h, sc, nullptr);
    };
    a->netIsend = [n](void* sc, void* d, size_t s, int t, void* mh, void** r) {
      return n->isend(sc, d, s, t, mh, nullptr, r);
    };
    a->netIrecv = irecvV10(n);
  } else {
    auto* n = lookup<ncclNet_v9_t>(a->library, netSym.c_str(), error);
    if (!n) return false;
    bindCommonNet(a, n);
    a->netInit = [n](void** ctx, uint64_t) {
      *ctx = nullptr;
      return n->init(harnessLogger);
    };
    a->netConnect = [n](void*, int dev, void* h, void** sc) {
      return n->connect(dev, h, sc, nullptr);
    };
    a->netIsend = [n](void* sc, void* d, size_t s, int t, void* mh, void** r) {
      return n->isend(sc, d, s, t, mh, r);
    };
    a->netIrecv = irecvV10(n);
  }
  return true;
}

void unloadPlugin(PluginApi* a) {
  // NCCL may dlclose the plugin; the plugin is linked -z nodelete so that this is harmless.
  if (a->library != nullptr) ::dlclose(a->library);
  *a = PluginApi{};
}
}  // namespace rs::harness

// The harness's view of the plugin: whichever exported version is under test, adapted to one
// set of std::function members with v11's argument lists. Built only from dlsym'd tables.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "client/nccl_plugin/nccl_net_abi.h"

namespace rs::harness {

struct PluginApi {
  int version = 0;
  void* library = nullptr;
  // ncclNet
  std::string netName;
  std::function<ncclResult_t(void** ctx, uint64_t commId)> netInit;
  std::function<ncclResult_t(int*)> netDevices;
  std::function<ncclResult_t(int, ncclNetProperties_v11_t*)> netGetProperties;
  std::function<ncclResult_t(void* ctx, int dev, void* handle, void** lc)> netListen;
  std::function<ncclResult_t(void* ctx, int dev, void* handle, void** sc)> netConnect;
  std::function<ncclResult_t(void* lc, void** rc)> netAccept;
  std::function<ncclResult_t(void* comm, void* data, size_t size, int type, void** mh)> netRegMr;
  std::function<ncclResult_t(void* comm, void* mh)> netDeregMr;
  std::function<ncclResult_t(void* sc, void* data, size_t size, int tag, void* mh, void** req)> netIsend;
  std::function<ncclResult_t(void* rc, void* data, size_t size, int tag, void* mh, void** req)> netIrecv;
  std::function<ncclResult_t(void* req, int* done, int* size)> netTest;
  std::function<ncclResult_t(void*)> netCloseSend, netCloseRecv, netCloseListen;
  std::function<ncclResult_t(void* ctx)> netFinalize;  // a no-op before v11
  // ncclCollNet
  std::string collName;
  std::function<ncclResult_t(void** ctx, uint64_t commId)> collInit;
  std::function<ncclResult_t(int*)> collDevices;
  std::function<ncclResult_t(int, ncclNetProperties_v11_t*)> collGetProperties;
  std::function<ncclResult_t(void* ctx, int dev, void* handle, void** lc)> collListen;
  std::function<ncclResult_t(void** handles, int nranks, int rank, void* lc, void** cc)> collConnect;
  std::function<ncclResult_t(ncclDataType_t, ncclRedOp_t, int*)> collReduceSupport;
  std::function<ncclResult_t(void* cc, void* data, size_t size, int type, void** mh)> collRegMr;
  std::function<ncclResult_t(void* cc, void* mh)> collDeregMr;
  std::function<ncclResult_t(void* cc, void* send, void* recv, size_t count, ncclDataType_t,
                             ncclRedOp_t, void* smh, void* rmh, void** req)> collIallreduce;
  std::function<ncclResult_t(void* req, int* done, int* size)> collTest;
  std::function<ncclResult_t(void*)> collCloseColl, collCloseListen;
  std::function<ncclResult_t(void* ctx)> collFinalize;
};

// dlopen(path, RTLD_NOW | RTLD_LOCAL) and dlsym the tables of `version` (8 to 11), as NCCL
// does. An error names the missing symbol.
// An empty path finds the plugin as NCCL does, through NCCL_NET_PLUGIN.
bool loadPlugin(const std::string& path, int version, PluginApi* api, std::string* error);
void unloadPlugin(PluginApi* api);

// NCCL's logger, printing to stderr when RS_HARNESS_VERBOSE is set.
void harnessLogger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                   const char* fmt, ...);
// Every WARN line the plugin logged so far, as NCCL would print it.
std::vector<std::string> loggedWarnings();
// Every line the plugin logged so far, INFO included.
std::vector<std::string> loggedLines();

}  // namespace rs::harness

// NCCL's net and CollNet plugin ABI, as NCCL 2.20 .. 2.28 load it (versions v8 to v11).
//
// NCCL does not install its plugin headers, so this is a copy of the declarations, checked
// against NCCL's source tree at tag v2.28.9-1: the tables and property structs of
// src/include/plugin/net/net_v8.h, net_v9.h, net_v10.h and net_v11.h (each declares ncclNet_vN_t and
// ncclCollNet_vN_t; ext-net/example/nccl/ holds the same for plugin authors), the shared types of
// src/include/plugin/nccl_net.h, and ncclResult_t, ncclDataType_t and ncclRedOp_t of NCCL's public
// nccl.h (installed with NCCL, e.g. by libnccl-dev). ext-net/README.md explains how
// NCCL finds a plugin (NCCL_NET_PLUGIN, the ncclNetPlugin_vN / ncclCollNetPlugin_vN symbols).
// Only what a host-memory TCP plugin needs is declared; member order and types are the ABI and
// must not change. Offsets in comments are for x86-64.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
} ncclResult_t;

typedef enum {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12,
} ncclDataType_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5,
} ncclDebugLogLevel;

enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_NET = 0x10,
  NCCL_ENV = 0x80,
};

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);
typedef ncclResult_t (*ncclProfilerCallback_t)(void** eHandle, int type, void* pHandle,
                                               int64_t pluginId, void* extData);

#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_NET_MAX_REQUESTS 32
#define NCCL_NET_MAX_DEVS_PER_NIC 4
#define NCCL_MAX_NET_SIZE_BYTES (1ull << 40)
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)
// irecv's *request on entry, v9 on: NCCL will not test() this receive (a v8 plugin never sees it).
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
// What NCCL assumes of a v8 plugin, which declares no size limits.
#define NCCL_V8_MAX_NET_SIZE (1ull << 30)

typedef enum { NCCL_NET_DEVICE_HOST = 0, NCCL_NET_DEVICE_UNPACK = 1 } ncclNetDeviceType;

typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_t;  // the same in v9, v10 and v11 (20 bytes)

typedef struct {
  int trafficClass;
} ncclNetCommConfig_t;  // v10 and v11

typedef struct {
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  void* handle;
  size_t size;
  int needsProxyProgress;
} ncclNetDeviceHandle_t;  // only pointers to it cross the ABI

typedef struct {
  void* mhandle;
  void* address;
  size_t size;
} ncclNetSGE_t;  // v9, v10, v11

typedef struct {
  int32_t maxConcurrentPeers, minConcurrentPeers, maxFlowsPerPeer, minFlowsPerPeer;
} ncclNetSideAttr_t;

typedef struct {
  ncclNetSideAttr_t send, recv;
  uint32_t op, algo, proto;
} ncclNetAttr_v11_t;

// v9 and v10: 104 bytes. v11 adds maxMultiRequestSize (112 bytes).
typedef struct {
  char* name;                   // 0: device name, also the topology key
  char* pciPath;                // 8
  uint64_t guid;                // 16
  int ptrSupport;               // 24
  int regIsGlobal;              // 28
  int forceFlush;               // 32
  int speed;                    // 36: Mbps
  int port;                     // 40
  float latency;                // 44: microseconds
  int maxComms;                 // 48
  int maxRecvs;                 // 52
  ncclNetDeviceType netDeviceType;  // 56
  int netDeviceVersion;         // 60
  ncclNetVDeviceProps_t vProps;  // 64
  size_t maxP2pBytes;           // 88
  size_t maxCollBytes;          // 96
} ncclNetProperties_v10_t;
typedef ncclNetProperties_v10_t ncclNetProperties_v9_t;

// v8 (NCCL 2.20-2.23): no forceFlush, vProps or size limits (NCCL assumes 1 GiB per p2p
// transfer and 512 MiB per collective call).
typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int regIsGlobal;
  int forceFlush;
  int speed;
  int port;
  float latency;
  int maxComms;
  int maxRecvs;
  ncclNetDeviceType netDeviceType;
  int netDeviceVersion;
  ncclNetVDeviceProps_t vProps;
  size_t maxP2pBytes;
  size_t maxCollBytes;
  int maxMultiRequestSize;  // 104
} ncclNetProperties_v11_t;

// --- ncclNet (point to point) -----------------------------------------------------------------

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclNetCommConfig_t* config,
                       ncclDebugLogger_t log, ncclProfilerCallback_t prof);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_t* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*setNetAttr)(void* ctx, ncclNetAttr_v11_t* attr);
} ncclNet_v11_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t log, ncclProfilerCallback_t prof);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, ncclNetCommConfig_t* config, void* handle, void** sendComm,
                          ncclNetDeviceHandle_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_t* props);
} ncclNet_v10_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t log);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_t* props);
} ncclNet_v9_t;

// v8: as v9 without makeVDevice; isend and irecv count bytes in int.
typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t log);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm,
                          ncclNetDeviceHandle_t** sendDevComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_t** recvDevComm);
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);
} ncclNet_v8_t;

// --- ncclCollNet ------------------------------------------------------------------------------

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, ncclDebugLogger_t log);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, size_t count,
                             ncclDataType_t dataType, ncclRedOp_t redOp, void* sendMhandle,
                             void* recvMhandle, void** request);
  ncclResult_t (*iallgather)(void* collComm, void* sendData, int nRecvParts,
                             ncclNetSGE_t* recvParts, size_t bytesPerRank, size_t windowOffset,
                             size_t windowBytes, void* sendMhandle, void** request);
  ncclResult_t (*ireducescatter)(void* collComm, int nSendParts, ncclNetSGE_t* sendParts,
                                 void* recvData, size_t bytesPerRank, size_t windowOffset,
                                 size_t windowBytes, ncclDataType_t dataType, ncclRedOp_t redOp,
                                 void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_t* props);
  ncclResult_t (*finalize)(void* ctx);
} ncclCollNet_v11_t;

// v10 and v9 CollNet: init(logger), listen without ctx, no finalize.
typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t log);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, size_t count,
                             ncclDataType_t dataType, ncclRedOp_t redOp, void* sendMhandle,
                             void* recvMhandle, void** request);
  ncclResult_t (*iallgather)(void* collComm, void* sendData, int nRecvParts,
                             ncclNetSGE_t* recvParts, size_t bytesPerRank, size_t windowOffset,
                             size_t windowBytes, void* sendMhandle, void** request);
  ncclResult_t (*ireducescatter)(void* collComm, int nSendParts, ncclNetSGE_t* sendParts,
                                 void* recvData, size_t bytesPerRank, size_t windowOffset,
                                 size_t windowBytes, ncclDataType_t dataType, ncclRedOp_t redOp,
                                 void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_t* props);
} ncclCollNet_v10_t;
typedef ncclCollNet_v10_t ncclCollNet_v9_t;

typedef struct {
  void* mhandle;
  void* address;
  uint32_t size;
} ncclNetSGE_v8_t;

// v8: as v9 without makeVDevice; iallreduce counts elements in int, SGE sizes are 32-bit.
typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t log);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm,
                          void** collComm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset,
                              int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, int count,
                             ncclDataType_t dataType, ncclRedOp_t redOp, void* sendMhandle,
                             void* recvMhandle, void** request);
  ncclResult_t (*iallgather)(void* collComm, void* sendData, int nRecvParts,
                             ncclNetSGE_v8_t* recvParts, size_t bytesPerRank, size_t windowOffset,
                             size_t windowBytes, void* sendMhandle, void** request);
  ncclResult_t (*ireducescatter)(void* collComm, int nSendParts, ncclNetSGE_v8_t* sendParts,
                                 void* recvData, size_t bytesPerRank, size_t windowOffset,
                                 size_t windowBytes, ncclDataType_t dataType, ncclRedOp_t redOp,
                                 void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
} ncclCollNet_v8_t;

}  // extern "C"

static_assert(sizeof(ncclNetProperties_v8_t) == 64, "v8 properties layout");
static_assert(offsetof(ncclNetProperties_v8_t, speed) == 32, "v8 speed offset");
static_assert(sizeof(ncclNetProperties_v10_t) == 104, "v10 properties layout");
static_assert(sizeof(ncclNetProperties_v11_t) == 112, "v11 properties layout");
static_assert(offsetof(ncclNetProperties_v11_t, vProps) == 64, "vProps offset");
static_assert(offsetof(ncclNetProperties_v11_t, maxP2pBytes) == 88, "maxP2pBytes offset");
static_assert(sizeof(ncclNet_v11_t) == 22 * sizeof(void*), "ncclNet v11 has 22 members");
static_assert(sizeof(ncclNet_v10_t) == 20 * sizeof(void*), "ncclNet v10 has 20 members");
static_assert(sizeof(ncclNet_v9_t) == 20 * sizeof(void*), "ncclNet v9 has 20 members");
static_assert(sizeof(ncclNet_v8_t) == 19 * sizeof(void*), "ncclNet v8 has 19 members");
static_assert(sizeof(ncclCollNet_v11_t) == 19 * sizeof(void*), "ncclCollNet v11 has 19 members");
static_assert(sizeof(ncclCollNet_v10_t) == 18 * sizeof(void*), "ncclCollNet v10 has 18 members");
static_assert(sizeof(ncclCollNet_v8_t) == 17 * sizeof(void*), "ncclCollNet v8 has 17 members");

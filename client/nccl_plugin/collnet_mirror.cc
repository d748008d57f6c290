#include "client/nccl_plugin/collnet_mirror.h"

#include <fmt/format.h>

#include <cstring>

namespace rs::plugin {
namespace {

constexpr int kGpuMemory = NCCL_PTR_CUDA | NCCL_PTR_DMABUF;

}  // namespace

CollNetMirror decideCollNetMirror(std::vector<MirroredDevice> devices, std::string_view innerName,
                                  bool hostMemoryAccepted) {
  CollNetMirror m;
  m.devices = std::move(devices);
  if (m.devices.empty()) {
    m.offReason = fmt::format("the inner net plugin {} has no devices", innerName);
    return m;
  }
  std::vector<std::string> gpuDirect;
  for (const auto& d : m.devices) {
    if ((d.ptrSupport & NCCL_PTR_HOST) == 0) {
      m.offReason = fmt::format(
          "the inner net plugin {} takes no host memory on {}, and CollNet here takes host "
          "memory only: NCCL would hand the inner's point-to-point host buffers there",
          innerName, d.name);
      return m;
    }
    if ((d.ptrSupport & kGpuMemory) != 0) gpuDirect.push_back(d.name);
  }
  if (gpuDirect.empty()) return m;
  const std::string nics = fmt::format("{}", fmt::join(gpuDirect, ", "));
  if (!hostMemoryAccepted) {
    m.offReason = fmt::format(
        "the inner net plugin {} offers GPUDirect RDMA on {}; CollNet here takes host memory "
        "only (GPU memory over the fabric is not built yet), and NCCL takes a NIC's GPUDirect "
        "flag from CollNet first, so offering CollNet would turn GPUDirect RDMA off for "
        "point-to-point too (NCCL_RS_COLLNET_HOST_MEMORY=1 makes that trade)",
        innerName, nics);
    return m;
  }
  m.tradeNote = fmt::format(
      "CollNet on in host memory (NCCL_RS_COLLNET_HOST_MEMORY=1): point-to-point through {} "
      "runs without GPUDirect RDMA on {}",
      innerName, nics);
  return m;
}

Result<std::vector<MirroredDevice>> innerDevices(const InnerNet& inner, ncclDebugLogger_t logger,
                                                 ncclProfilerCallback_t profiler) {
  const auto failed = [&](const char* call, ncclResult_t r) {
    return unavailableError(
        fmt::format("the inner net plugin {}: {} returned {}", inner.name, call, int{r}));
  };
  void* ctx = nullptr;
  ncclNetCommConfig_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
  ncclResult_t r = inner.net.init(&ctx, 0, &config, logger, profiler);
  if (r != ncclSuccess) return failed("init", r);
  int count = 0;
  r = inner.net.devices(&count);
  std::vector<MirroredDevice> devices;
  for (int i = 0; r == ncclSuccess && i < count; ++i) {
    ncclNetProperties_v11_t p{};
    r = inner.net.getProperties(i, &p);
    if (r != ncclSuccess) break;
    devices.push_back({p.name != nullptr ? p.name : fmt::format("device{}", i),
                       p.pciPath != nullptr ? p.pciPath : "", p.guid, p.ptrSupport, p.speed,
                       p.port, p.latency, p.maxComms});
  }
  const ncclResult_t finalized = inner.net.finalize ? inner.net.finalize(ctx) : ncclSuccess;
  if (r != ncclSuccess) return failed("devices or getProperties", r);
  if (finalized != ncclSuccess) return failed("finalize", finalized);
  return devices;
}

void fillMirroredCollNetProperties(const MirroredDevice& d, int dev, ncclNetProperties_v11_t* p) {
  std::memset(p, 0, sizeof *p);
  p->name = const_cast<char*>(d.name.c_str());
  p->pciPath = d.pciPath.empty() ? nullptr : const_cast<char*>(d.pciPath.c_str());
  p->guid = d.guid;
  p->ptrSupport = NCCL_PTR_HOST;  // decideCollNetMirror offered CollNet only where that is safe
  p->speed = d.speed;
  p->port = d.port;
  p->latency = d.latency;
  p->maxComms = d.maxComms;
  p->maxRecvs = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  p->maxCollBytes = 1ull << 30;
  p->maxMultiRequestSize = 1;
}

}  // namespace rs::plugin

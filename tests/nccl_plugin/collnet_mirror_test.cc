// CollNet beside a delegated point-to-point plugin: which inner devices it may be offered on,
// and that its properties carry the inner's topology values (client/nccl_plugin/collnet_mirror.h).
#include "client/nccl_plugin/collnet_mirror.h"

#include <catch2/catch.hpp>

namespace rs::plugin {
namespace {

MirroredDevice nic(const char* name, int ptrSupport) {
  return {name, "/sys/devices/pci0000:00/0000:00:04.0", 0xabc, ptrSupport, 200000, 1, 1.5F, 1024};
}

TEST_CASE("CollNet is offered beside an inner plugin that takes host memory only", "[collnet]") {
  const auto m = decideCollNetMirror({nic("mlx5_0", NCCL_PTR_HOST), nic("mlx5_1", NCCL_PTR_HOST)},
                                     "IB", false);
  CHECK(m.offReason.empty());
  CHECK(m.tradeNote.empty());
  CHECK(m.devices.size() == 2);
}

TEST_CASE("CollNet is off where the inner offers GPUDirect RDMA, unless the trade is asked for",
          "[collnet]") {
  for (int gpu : {NCCL_PTR_CUDA, NCCL_PTR_DMABUF}) {
    const std::vector<MirroredDevice> devices{nic("mlx5_0", NCCL_PTR_HOST),
                                              nic("mlx5_1", NCCL_PTR_HOST | gpu)};
    const auto off = decideCollNetMirror(devices, "IB", false);
    CHECK_THAT(off.offReason, Catch::Contains("GPUDirect RDMA on mlx5_1") &&
                                  Catch::Contains("NCCL_RS_COLLNET_HOST_MEMORY=1"));
    const auto traded = decideCollNetMirror(devices, "IB", true);
    CHECK(traded.offReason.empty());
    CHECK_THAT(traded.tradeNote, Catch::Contains("without GPUDirect RDMA on mlx5_1"));
  }
}

TEST_CASE("CollNet is off where the inner takes no host memory, whatever the setting",
          "[collnet]") {
  for (bool accepted : {false, true}) {
    const auto m = decideCollNetMirror({nic("eth1", NCCL_PTR_CUDA)}, "GPUDirectTCPX", accepted);
    CHECK_THAT(m.offReason, Catch::Contains("takes no host memory on eth1"));
  }
  CHECK_THAT(decideCollNetMirror({}, "IB", true).offReason, Catch::Contains("has no devices"));
}

TEST_CASE("CollNet's properties carry the inner's topology values and declare host memory",
          "[collnet]") {
  const MirroredDevice d = nic("mlx5_0", NCCL_PTR_HOST | NCCL_PTR_CUDA);
  ncclNetProperties_v11_t p;
  fillMirroredCollNetProperties(d, 3, &p);
  CHECK(std::string(p.name) == "mlx5_0");
  CHECK(std::string(p.pciPath) == d.pciPath);
  CHECK(p.guid == d.guid);
  CHECK(p.speed == d.speed);
  CHECK(p.port == d.port);
  CHECK(p.latency == d.latency);
  CHECK(p.maxComms == d.maxComms);
  CHECK(p.ptrSupport == NCCL_PTR_HOST);
  CHECK(p.vProps.ndevs == 1);
  CHECK(p.vProps.devs[0] == 3);
}

}  // namespace
}  // namespace rs::plugin

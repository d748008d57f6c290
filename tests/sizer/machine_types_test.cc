// The built-in machine table: every row sourced and self-consistent, and the figures the sizing
// examples and the facts rest on.
#include <catch2/catch.hpp>

#include <set>

#include "sizer/machine_types.h"

using namespace rs::sizer;
using Catch::Contains;

TEST_CASE("machine table: names are unique and every row has its source and figures") {
  std::set<std::string> names;
  int cpu = 0, gpu = 0;
  for (const MachineType& t : machineTypes()) {
    INFO(t.name);
    CHECK(names.insert(t.name).second);
    CHECK(!t.source.empty());
    CHECK(t.vcpus > 0);
    CHECK(t.defaultGbps > 0);
    if (t.tier1Gbps > 0) {
      CHECK(t.seriesOffersTier1);
      CHECK(t.vcpus >= 30);  // Tier_1 needs at least 30 vCPUs
      CHECK(t.tier1Gbps > t.defaultGbps);
    }
    if (t.isGpu()) {
      ++gpu;
      CHECK(t.acceleratorType.rfind("NVIDIA_", 0) == 0);
      CHECK(t.tier1Gbps == 0);
    } else {
      ++cpu;
      CHECK(t.acceleratorType.empty());
      CHECK(t.gpuNicGbps == 0);
      CHECK(t.vcpus >= 4);
    }
  }
  CHECK(cpu > 100);
  CHECK(gpu == 21);
}

TEST_CASE("machine table: every series has highcpu and standard shapes from 4 to 96 vCPUs") {
  for (std::string_view series : {"n1", "n2", "n2d", "c2d", "c4", "c4d"}) {
    for (std::string_view cls : {"highcpu", "standard"}) {
      for (int v : {4, 8, 16, 32, 96}) {
        if (series == "c2d" && v == 96) continue;  // c2d goes 56, 112
        const std::string name = std::string(series) + "-" + std::string(cls) + "-" + std::to_string(v);
        INFO(name);
        CHECK(findMachineType(name) != nullptr);
      }
    }
  }
  CHECK(findMachineType("c2-highcpu-16") == nullptr);  // C2 is standard only
  CHECK(findMachineType("c2-standard-60") != nullptr);
  CHECK(findMachineType("c3-highcpu-176") != nullptr);
  CHECK(findMachineType("c3d-highcpu-360") != nullptr);
  CHECK(findMachineType("n4-highcpu-80") != nullptr);
}

TEST_CASE("machine table: the figures the worked examples and the facts rest on") {
  const MachineType* n1 = findMachineType("n1-highcpu-16");
  REQUIRE(n1 != nullptr);
  CHECK(n1->vcpus == 16);
  CHECK(n1->defaultGbps == 32);
  CHECK(n1->tier1Gbps == 0);
  CHECK(n1->vertexTraining == VertexTraining::kDocumented);

  const MachineType* mega = findMachineType("a2-megagpu-16g");
  REQUIRE(mega != nullptr);
  CHECK(mega->defaultGbps == 100);
  CHECK(mega->acceleratorType == "NVIDIA_TESLA_A100");
  CHECK(mega->acceleratorCount == 16);

  CHECK(findMachineType("a2-ultragpu-8g")->acceleratorType == "NVIDIA_A100_80GB");
  CHECK(findMachineType("g2-standard-48")->acceleratorType == "NVIDIA_L4");
  CHECK(findMachineType("g2-standard-48")->acceleratorCount == 4);
  CHECK(findMachineType("a3-highgpu-8g")->acceleratorType == "NVIDIA_H100_80GB");
  CHECK(findMachineType("a3-megagpu-8g")->acceleratorType == "NVIDIA_H100_MEGA_80GB");
  CHECK(findMachineType("a3-ultragpu-8g")->acceleratorType == "NVIDIA_H200_141GB");
  CHECK(findMachineType("a4-highgpu-8g")->acceleratorType == "NVIDIA_B200");

  // A CPU reducer reaches A3/A4 workers only over their general-purpose gVNICs.
  const MachineType* ultra = findMachineType("a3-ultragpu-8g");
  CHECK(ultra->defaultGbps == 400);
  CHECK(ultra->gpuNicGbps == 3200);
  CHECK_THAT(std::string(ultra->note), Contains("no CPU VM can join"));
  CHECK(findMachineType("a3-highgpu-8g")->defaultGbps == 200);
  CHECK(findMachineType("a3-megagpu-8g")->gpuNicGbps == 1600);

  CHECK(findMachineType("c3-highcpu-88")->defaultGbps == 62);
  CHECK(findMachineType("c3-highcpu-88")->tier1Gbps == 100);
  CHECK(findMachineType("c4d-standard-384")->tier1Gbps == 200);
  CHECK(findMachineType("n2-standard-128")->tier1Gbps == 100);
  CHECK(findMachineType("n2-highcpu-128") == nullptr);  // N2 highcpu stops at 96
  CHECK(findMachineType("n2d-highcpu-32")->tier1Gbps == 0);
}

TEST_CASE("machine table: nearest names for typos") {
  auto near = nearestMachineTypes("n1-highcpu16");
  REQUIRE(near.size() == 3);
  CHECK(near[0] == "n1-highcpu-16");
  CHECK(nearestMachineTypes("a3-ultragpu")[0] == "a3-ultragpu-8g");
}

TEST_CASE("machine table: why a type has no Tier_1") {
  CHECK(tier1Unavailable(*findMachineType("c2-standard-60")).empty());
  CHECK_THAT(tier1Unavailable(*findMachineType("n1-highcpu-96")), Contains("n1 series offers no Tier_1"));
  CHECK_THAT(tier1Unavailable(*findMachineType("c3-highcpu-22")), Contains("at least 30 vCPUs"));
  CHECK_THAT(tier1Unavailable(*findMachineType("a2-highgpu-8g")), Contains("GPU machine type"));
  CHECK_THAT(std::string(tableOmissions()), Contains("--worker-gbps"));
}

#include "sizer/machine_types.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace rs::sizer {

namespace {

// CPU shapes are written per series, as the sources write them: one egress figure per vCPU
// count, shared by that series' -highcpu and -standard types. Which shapes exist, and their
// vCPUs, comes from the pricing dataset (kShapeList), which lists every predefined type.
enum ShapeClass : unsigned { kHighcpu = 1, kStandard = 2, kBoth = kHighcpu | kStandard };

struct Shape {
  int vcpus;
  double defaultGbps;
  double tier1Gbps;  // 0: none
  unsigned classes;
  double highcpuGb;   // memory of the -highcpu type (0 where it does not exist)
  double standardGb;  // memory of the -standard type (0 where it does not exist)
};

struct Series {
  std::string_view name;
  bool offersTier1;
  VertexTraining vertex;
  std::string_view docs;  // the machine family page (and, for N1, the Vertex AI page)
  std::vector<Shape> shapes;
};

constexpr std::string_view kDataset =
    "github.com/Cyclenerd/google-cloud-compute-machine-types @6df0dc7";
constexpr std::string_view kTier1Rules =
    "; Tier_1 rules: cloud.google.com/compute/docs/networking/configure-vm-with-high-bandwidth-"
    "configuration";
constexpr std::string_view kShapeList =
    "; shapes and vCPUs: github.com/Cyclenerd/google-cloud-pricing-cost-calculator "
    "build/gcp.yml @08440e7, memory: the same file @dac3128";

// Egress figures: the machine family pages, as copied per type into the community dataset
// github.com/Cyclenerd/google-cloud-compute-machine-types (instances/series/<series>.sql, read at
// its commit 6df0dc7).
std::vector<Series> cpuSeries() {
  const VertexTraining nv = VertexTraining::kNotVerified;
  return {
      {"n1", false, VertexTraining::kDocumented,
       "cloud.google.com/compute/docs/general-purpose-machines#n1_machines; Vertex AI: "
       "cloud.google.com/vertex-ai/docs/training/distributed-training (n1-highcpu-16 reducers "
       "in its Reduction Server sizing)",
       {{4, 10, 0, kBoth, 3.6, 15}, {8, 16, 0, kBoth, 7.2, 30}, {16, 32, 0, kBoth, 14.4, 60},
        {32, 32, 0, kBoth, 28.8, 120}, {64, 32, 0, kBoth, 57.6, 240},
        {96, 32, 0, kBoth, 86.4, 360}}},
      {"n2", true, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#n2_machines",
       {{4, 10, 0, kBoth, 4, 16}, {8, 16, 0, kBoth, 8, 32}, {16, 32, 0, kBoth, 16, 64},
        {32, 32, 50, kBoth, 32, 128}, {48, 32, 50, kBoth, 48, 192}, {64, 32, 75, kBoth, 64, 256},
        {80, 32, 100, kBoth, 80, 320}, {96, 32, 100, kBoth, 96, 384},
        {128, 32, 100, kStandard, 0, 512}}},
      {"n2d", true, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#n2d_machines",
       {{4, 10, 0, kBoth, 4, 16}, {8, 16, 0, kBoth, 8, 32}, {16, 32, 0, kBoth, 16, 64},
        {32, 32, 0, kBoth, 32, 128}, {48, 32, 50, kBoth, 48, 192}, {64, 32, 50, kBoth, 64, 256},
        {80, 32, 50, kBoth, 80, 320}, {96, 32, 100, kBoth, 96, 384},
        {128, 32, 100, kBoth, 128, 512}, {224, 32, 100, kBoth, 224, 896}}},
      {"n4", false, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#n4_series",
       {{4, 10, 0, kBoth, 8, 16}, {8, 16, 0, kBoth, 16, 32}, {16, 32, 0, kBoth, 32, 64},
        {32, 32, 0, kBoth, 64, 128}, {48, 32, 0, kBoth, 96, 192}, {64, 45, 0, kBoth, 128, 256},
        {80, 50, 0, kBoth, 160, 320}}},
      {"c2", true, nv,
       "cloud.google.com/compute/docs/compute-optimized-machines#c2_machine_types",
       {{4, 10, 0, kStandard, 0, 16}, {8, 16, 0, kStandard, 0, 32},
        {16, 32, 0, kStandard, 0, 64}, {30, 32, 50, kStandard, 0, 120},
        {60, 32, 100, kStandard, 0, 240}}},
      {"c2d", true, nv,
       "cloud.google.com/compute/docs/compute-optimized-machines#c2d_machine_types",
       {{4, 10, 0, kBoth, 8, 16}, {8, 16, 0, kBoth, 16, 32}, {16, 32, 0, kBoth, 32, 64},
        {32, 32, 50, kBoth, 64, 128}, {56, 32, 50, kBoth, 112, 224},
        {112, 32, 100, kBoth, 224, 448}}},
      {"c3", true, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#c3_series",
       {{4, 23, 0, kBoth, 8, 16}, {8, 23, 0, kBoth, 16, 32}, {22, 23, 0, kBoth, 44, 88},
        {44, 32, 50, kBoth, 88, 176}, {88, 62, 100, kBoth, 176, 352},
        {176, 100, 200, kBoth, 352, 704}}},
      {"c3d", true, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#c3d_series",
       {{4, 20, 0, kBoth, 8, 16}, {8, 20, 0, kBoth, 16, 32}, {16, 20, 0, kBoth, 32, 64},
        {30, 20, 50, kBoth, 59, 120}, {60, 40, 75, kBoth, 118, 240},
        {90, 60, 100, kBoth, 177, 360}, {180, 100, 150, kBoth, 354, 720},
        {360, 100, 200, kBoth, 708, 1440}}},
      {"c4", true, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#c4_series",
       {{4, 10, 0, kBoth, 8, 15}, {8, 23, 0, kBoth, 16, 30}, {16, 23, 0, kBoth, 32, 60},
        {24, 23, 0, kBoth, 48, 90}, {32, 23, 0, kBoth, 64, 120}, {48, 34, 50, kBoth, 96, 180},
        {96, 67, 100, kBoth, 192, 360}, {144, 100, 150, kBoth, 288, 540},
        {192, 100, 200, kBoth, 384, 720}, {288, 100, 200, kBoth, 576, 1080}}},
      {"c4d", true, nv,
       "cloud.google.com/compute/docs/general-purpose-machines#c4d_series",
       {{4, 20, 0, kBoth, 7, 15}, {8, 20, 0, kBoth, 15, 31}, {16, 20, 0, kBoth, 30, 62},
        {32, 23, 0, kBoth, 60, 124}, {48, 34, 50, kBoth, 90, 186}, {64, 45, 75, kBoth, 120, 248},
        {96, 67, 100, kBoth, 180, 372}, {192, 100, 150, kBoth, 360, 744},
        {384, 100, 200, kBoth, 720, 1488}}},
  };
}

constexpr std::string_view kA2Source =
    "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A2: up to 100 Gbps by type); "
    "github.com/Cyclenerd/google-cloud-compute-machine-types @6df0dc7 instances/series/a2.sql "
    "(24/32/50/100 by GPU count, all A2 types); vCPUs: "
    "github.com/Cyclenerd/google-cloud-pricing-cost-calculator build/gcp.yml @08440e7";
constexpr std::string_view kG2Source =
    "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth; github.com/Cyclenerd/google-cloud-"
    "compute-machine-types @6df0dc7 instances/series/g2.sql; "
    "vCPUs and GPUs: github.com/Cyclenerd/google-cloud-pricing-cost-calculator build/gcp.yml "
    "@08440e7";
constexpr std::string_view kA3Source =
    "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (A3 High 1,000 Gbps, A3 Mega "
    "1,800 Gbps in all); cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-"
    "tcpx (up to 200 Gbps on the primary NIC; secondary NICs, four on A3 High and eight on A3 "
    "Mega, up to 200 Gbps each for GPU data); vCPUs: github.com/Cyclenerd/google-cloud-"
    "pricing-cost-calculator build/gcp.yml @08440e7";
constexpr std::string_view kA3Note =
    "egress used is the 200 Gbps primary gVNIC: the GPU NICs carry GPUDirect-TCPX/TCPXO "
    "traffic between GPU VMs, which a CPU reducer cannot join";
constexpr std::string_view kRdmaSource =
    "cloud.google.com/compute/docs/gpus/gpu-network-bandwidth (eight ConnectX-7 NICs, 3,200 "
    "Gbps, for GPU-to-GPU traffic only; two gVNICs with 400 Gbps for general-purpose "
    "networking; 3,600 Gbps in all); vCPUs: github.com/skypilot-org/skypilot-catalog "
    "catalogs/v8/gcp/vms.csv @006059e";
constexpr std::string_view kRdmaNote =
    "egress used is the 400 Gbps of the two gVNICs: the ConnectX-7 NICs join only an RDMA "
    "network of GPU VMs, which no CPU VM can join";

struct GpuRow {
  std::string_view name;
  std::string_view series;
  int vcpus;
  double gbps;
  std::string_view accelerator;
  int count;
  double gpuNicGbps;
  std::string_view source;
  std::string_view note;
};

constexpr GpuRow kGpuRows[] = {
    {"a2-highgpu-1g", "a2", 12, 24, "NVIDIA_TESLA_A100", 1, 0, kA2Source, ""},
    {"a2-highgpu-2g", "a2", 24, 32, "NVIDIA_TESLA_A100", 2, 0, kA2Source, ""},
    {"a2-highgpu-4g", "a2", 48, 50, "NVIDIA_TESLA_A100", 4, 0, kA2Source, ""},
    {"a2-highgpu-8g", "a2", 96, 100, "NVIDIA_TESLA_A100", 8, 0, kA2Source, ""},
    {"a2-megagpu-16g", "a2", 96, 100, "NVIDIA_TESLA_A100", 16, 0, kA2Source, ""},
    {"a2-ultragpu-1g", "a2", 12, 24, "NVIDIA_A100_80GB", 1, 0, kA2Source, ""},
    {"a2-ultragpu-2g", "a2", 24, 32, "NVIDIA_A100_80GB", 2, 0, kA2Source, ""},
    {"a2-ultragpu-4g", "a2", 48, 50, "NVIDIA_A100_80GB", 4, 0, kA2Source, ""},
    {"a2-ultragpu-8g", "a2", 96, 100, "NVIDIA_A100_80GB", 8, 0, kA2Source, ""},
    {"g2-standard-4", "g2", 4, 10, "NVIDIA_L4", 1, 0, kG2Source, ""},
    {"g2-standard-8", "g2", 8, 16, "NVIDIA_L4", 1, 0, kG2Source, ""},
    {"g2-standard-12", "g2", 12, 16, "NVIDIA_L4", 1, 0, kG2Source, ""},
    {"g2-standard-16", "g2", 16, 32, "NVIDIA_L4", 1, 0, kG2Source, ""},
    {"g2-standard-24", "g2", 24, 32, "NVIDIA_L4", 2, 0, kG2Source, ""},
    {"g2-standard-32", "g2", 32, 32, "NVIDIA_L4", 1, 0, kG2Source, ""},
    {"g2-standard-48", "g2", 48, 50, "NVIDIA_L4", 4, 0, kG2Source, ""},
    {"g2-standard-96", "g2", 96, 100, "NVIDIA_L4", 8, 0, kG2Source, ""},
    {"a3-highgpu-8g", "a3", 208, 200, "NVIDIA_H100_80GB", 8, 800, kA3Source, kA3Note},
    {"a3-megagpu-8g", "a3", 208, 200, "NVIDIA_H100_MEGA_80GB", 8, 1600, kA3Source, kA3Note},
    {"a3-ultragpu-8g", "a3", 224, 400, "NVIDIA_H200_141GB", 8, 3200, kRdmaSource, kRdmaNote},
    {"a4-highgpu-8g", "a4", 224, 400, "NVIDIA_B200", 8, 3200, kRdmaSource, kRdmaNote},
};

std::vector<MachineType> buildTable() {
  std::vector<MachineType> rows;
  for (const Series& s : cpuSeries()) {
    const std::string source =
        fmt::format("{}; {} instances/series/{}.sql{}{}", s.docs, kDataset, s.name, kShapeList,
                    s.offersTier1 ? kTier1Rules : std::string_view{});
    for (unsigned cls : {unsigned{kHighcpu}, unsigned{kStandard}}) {
      for (const Shape& shape : s.shapes) {
        if ((shape.classes & cls) == 0) continue;
        MachineType t;
        t.name = fmt::format("{}-{}-{}", s.name, cls == kHighcpu ? "highcpu" : "standard",
                             shape.vcpus);
        t.series = s.name;
        t.vcpus = shape.vcpus;
        t.memoryGb = cls == kHighcpu ? shape.highcpuGb : shape.standardGb;
        t.defaultGbps = shape.defaultGbps;
        t.tier1Gbps = shape.tier1Gbps;
        t.seriesOffersTier1 = s.offersTier1;
        t.vertexTraining = s.vertex;
        t.source = source;
        rows.push_back(std::move(t));
      }
    }
  }
  for (const GpuRow& g : kGpuRows) {
    MachineType t;
    t.name = std::string(g.name);
    t.series = g.series;
    t.vcpus = g.vcpus;
    t.defaultGbps = g.gbps;
    t.acceleratorType = g.accelerator;
    t.acceleratorCount = g.count;
    t.gpuNicGbps = g.gpuNicGbps;
    t.source = std::string(g.source);
    t.note = g.note;
    rows.push_back(std::move(t));
  }
  return rows;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::span<const MachineType> machineTypes() {
  static const std::vector<MachineType> table = buildTable();
  return table;
}

const MachineType* findMachineType(std::string_view name) {
  for (const MachineType& t : machineTypes())
    if (t.name == name) return &t;
  return nullptr;
}

std::vector<std::string> nearestMachineTypes(std::string_view name, size_t count) {
  std::vector<std::pair<size_t, const MachineType*>> scored;
  for (const MachineType& t : machineTypes()) scored.emplace_back(editDistance(name, t.name), &t);
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second->name);
  return out;
}

std::string tier1Unavailable(const MachineType& type) {
  if (type.tier1Gbps > 0) return {};
  if (type.isGpu())
    return fmt::format("{} is a GPU machine type; Tier_1 networking is set on CPU machine types",
                       type.name);
  if (!type.seriesOffersTier1)
    return fmt::format("{}: the {} series offers no Tier_1 networking", type.name, type.series);
  if (type.vcpus < 30)
    return fmt::format("{}: Tier_1 networking needs at least 30 vCPUs, this type has {}",
                       type.name, type.vcpus);
  return fmt::format("{}: the per-type figures give no Tier_1 egress for {} vCPUs", type.name,
                     type.vcpus);
}

std::string_view tableOmissions() {
  return "Left out, because no source at hand gives a figure: N1 with T4/V100 GPUs (\"up to 100 "
         "Gbps based on the combination of GPU and vCPU count\", per-count table not found) and "
         "with P100/P4 (32 Gbps); a3-highgpu-1g/2g/4g (one NIC, figure not confirmed); A3 Edge, "
         "A4X and G4. Give such workers with --worker-gbps. n2d-*-32 has no Tier_1 figure in "
         "the per-type data although the Tier_1 rule (at least 30 vCPUs) would allow it; the "
         "table says none. Whether Vertex AI training accepts a reducer type is documented for "
         "N1 only; for the other series it is not verified.";
}

}  // namespace rs::sizer

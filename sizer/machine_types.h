// The built-in table of GCP machine types the calculator knows: CPU shapes that can serve as
// reducers and GPU shapes that run the workers, each with the egress a CPU reducer can exchange
// with it, its Tier_1 egress where the type offers one, and where the figures were read.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rs::sizer {

// The day the figures below were read from their sources.
inline constexpr std::string_view kTableReadOn = "2026-11-23";

// Whether Vertex AI training is documented to accept the type for a worker pool.
enum class VertexTraining {
  kDocumented,   // a Vertex AI page uses or lists it for training
  kNotVerified,  // no Vertex AI page at hand says either way
};

struct MachineType {
  std::string name;         // "n1-highcpu-16"
  std::string_view series;  // "n1"
  int vcpus = 0;
  // Memory in GB as GCP lists it (14.4 for n1-highcpu-16), for the reducer pods' limits in the
  // Kubernetes specs; known for the CPU shapes only (0 for GPU types, which nothing here sizes).
  double memoryGb = 0;
  // Egress in Gbit/s that another VM (a CPU reducer) can exchange with this one by default.
  // For A3/A4 GPU types this is the general-purpose (gVNIC) share only; see gpuNicGbps.
  double defaultGbps = 0;
  double tier1Gbps = 0;  // with per-VM Tier_1 networking; 0 where the type has none
  bool seriesOffersTier1 = false;
  std::string_view acceleratorType;  // Vertex AI AcceleratorType enum; empty for CPU types
  int acceleratorCount = 0;
  // Bandwidth of GPU-to-GPU NICs (GPUDirect-TCPX/TCPXO, RDMA) that no CPU VM can reach: a
  // reducer never sees it, but NCCL's own ring between such workers does.
  double gpuNicGbps = 0;
  VertexTraining vertexTraining = VertexTraining::kNotVerified;
  std::string source;       // public pages and dataset files the row comes from
  std::string_view note;    // what the row's figures mean where that is not obvious

  bool isGpu() const { return acceleratorCount > 0; }
};

// Every row, CPU shapes first (series order), then GPU shapes.
std::span<const MachineType> machineTypes();

// The row named `name`, or nullptr.
const MachineType* findMachineType(std::string_view name);

// Up to `count` known names closest to `name` (edit distance), for "did you mean" messages.
std::vector<std::string> nearestMachineTypes(std::string_view name, size_t count = 3);

// Why `type` cannot run with Tier_1 networking ("N1 offers no Tier_1 networking", "Tier_1 needs
// at least 30 vCPUs; ..."); empty when it can.
std::string tier1Unavailable(const MachineType& type);

// What the table leaves out and why, for --help and --list-types.
std::string_view tableOmissions();

}  // namespace rs::sizer

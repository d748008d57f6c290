// The training job as the user describes it (machine types or rates, platform, Tier_1), and the
// same job resolved against the machine table into the rates the sizing model works with. All
// input checks live here, so every bad input is refused with a message that names it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/common/status.h"
#include "sizer/machine_types.h"
#include "sizer/sizing.h"

namespace rs::sizer {

enum class Platform { kVertex, kGke, kGce };

std::string_view platformName(Platform platform);  // "vertex", "gke", "gce"
Result<Platform> parsePlatform(std::string_view text);

inline constexpr std::string_view kDefaultReducerType = "n1-highcpu-16";

// What the reducers' VMs are bought as (--reducer-capacity): on-demand, or Spot (GKE Spot node
// pools, GCE Spot VMs), which the platform may take back at any time.
enum class ReducerCapacity { kStandard, kSpot };

std::string_view capacityName(ReducerCapacity capacity);  // "standard", "spot"
Result<ReducerCapacity> parseCapacity(std::string_view text);

// How the workers reach the reducers (--transport): kernel TCP, or RDMA (verbs for InfiniBand
// and RoCE, EFA) through libfabric (proto/FABRIC.md). The bandwidth bound is the same for both.
// The CPU cost f is measured for TCP only: with RDMA it stays TCP's unless the job gives a
// measured figure (--vcpu-per-10gbps), never a guessed lower one.
enum class Transport { kTcp, kRdma };

std::string_view transportName(Transport transport);  // "tcp", "rdma"
Result<Transport> parseTransport(std::string_view text);

// As given on the command line; unset optionals are flags that were not given.
struct JobSpec {
  std::optional<int64_t> workers;
  std::string workerType;               // --worker-type, or empty
  std::optional<double> workerGbps;     // --worker-gbps
  std::string reducerType;              // --reducer-type, or empty for the default
  std::optional<double> reducerGbps;    // --reducer-gbps
  std::optional<int64_t> reducerVcpus;  // --reducer-vcpus
  bool tier1 = false;
  Platform platform = Platform::kVertex;
  std::optional<double> vcpuPer10Gbps;  // --vcpu-per-10gbps; unset: kDefaultVcpuPer10Gbps
  std::optional<uint64_t> gradientBytes;
  std::optional<int64_t> spares;        // --spare: reducers beyond the bounds
  ReducerCapacity reducerCapacity = ReducerCapacity::kStandard;
  Transport transport = Transport::kTcp;
};

struct Job {
  JobSpec spec;
  const MachineType* workerType = nullptr;   // null when given as --worker-gbps
  const MachineType* reducerType = nullptr;  // null when given as --reducer-gbps/--reducer-vcpus
  Rates rates;
  std::string workerEgressBasis;   // where rates.workerGbps came from, for the report
  std::string reducerEgressBasis;  // likewise rates.reducerGbps
  bool defaultVcpuCost = true;     // false when --vcpu-per-10gbps was given
  // Whether f was measured for the job's transport: TCP's default, or a figure the job gave.
  // False for RDMA at TCP's default: the CPU bound is then TCP's, not relaxed (see Transport).
  bool vcpuCostMeasuredForTransport() const {
    return !defaultVcpuCost || spec.transport == Transport::kTcp;
  }
  int64_t spares = 0;              // --spare, 0 when not given
};

// Checks every input and looks the types up. Errors name the flag and the value.
Result<Job> resolveJob(const JobSpec& spec);

}  // namespace rs::sizer

// The deployment plan a sized job turns into: what the spec emitters (Vertex AI CustomJob,
// gcloud, Kubernetes) need and nothing else. A plain struct, so emitters depend on this header
// and not on how the numbers were reached.
#pragma once

#include <cstdint>
#include <string>

#include "sizer/job.h"
#include "sizer/sizing.h"

namespace rs::sizer {

struct DeploymentPlan {
  // The workers' machine type; empty when the job gave --worker-gbps instead of a type.
  std::string workerMachineType;
  // Vertex AI AcceleratorType enum name ("NVIDIA_A100_80GB") and the GPUs per worker; empty and
  // 0 for a CPU worker type or an unknown one (--worker-gbps).
  std::string acceleratorType;
  int acceleratorCount = 0;
  // Every GPU VM of the job. On Vertex AI the first is the primary replica (workerPoolSpecs[0],
  // one replica) and the rest are pool 1, so pool 1 has workerCount - 1 replicas.
  int64_t workerCount = 0;
  // The reducers' machine type; empty when the job gave --reducer-gbps/--reducer-vcpus.
  std::string reducerMachineType;
  int64_t reducerCount = 0;
  Platform platform = Platform::kVertex;
  bool tier1 = false;  // the reducers (and CPU workers that offer it) run with Tier_1 networking
};

DeploymentPlan makePlan(const Job& job, const Sizing& sizing);

}  // namespace rs::sizer

#include "sizer/plan.h"

#include <fmt/format.h>

namespace rs::sizer {

EmitPlan makePlan(const Job& job, const Sizing& sizing, EmitPlan names) {
  EmitPlan plan = std::move(names);
  plan.workers = static_cast<int>(job.rates.workers);
  if (job.workerType != nullptr) {
    plan.workerMachineType = job.workerType->name;
    plan.acceleratorType = std::string(job.workerType->acceleratorType);
    plan.acceleratorCount = job.workerType->acceleratorCount;
  }
  plan.reducers = static_cast<int>(sizing.pool);
  plan.spareReducers = static_cast<int>(sizing.spares);
  plan.spotReducers = job.spec.reducerCapacity == ReducerCapacity::kSpot;
  if (job.reducerType != nullptr) {
    plan.reducerMachineType = job.reducerType->name;
    plan.reducerMemoryGb = job.reducerType->memoryGb;
  }
  plan.reducerVcpus = static_cast<int>(job.rates.reducerVcpus);
  // The pacing rates are the egress the sizing itself used: the table's figure for each type
  // (Tier_1's with --tier1), or the rate given instead of a type.
  plan.workerLinkGbps = job.rates.workerGbps;
  plan.reducerLinkGbps = job.rates.reducerGbps;
  return plan;
}

Status checkEmittable(const Job& job, const EmitPlan& names) {
  // The launch files name machine types; a rate has no machine to launch.
  if (job.workerType == nullptr)
    return invalidArgument("--emit needs --worker-type: the launch files name the workers' "
                           "machine type, which --worker-gbps does not give");
  if (job.reducerType == nullptr)
    return invalidArgument("--emit needs --reducer-type: the launch files name the reducers' "
                           "machine type, which --reducer-gbps/--reducer-vcpus do not give");
  if (names.workerImage.empty())
    return invalidArgument("--emit needs --worker-image: your training image with the plugin "
                           "layer (docker/worker.Dockerfile), as pushed to your registry");
  if (names.reducerImage.empty())
    return invalidArgument("--emit needs --reducer-image: the reducer image (docker/), as pushed "
                           "to your registry");
  return Status::ok();
}

}  // namespace rs::sizer

#include "sizer/plan.h"

namespace rs::sizer {

DeploymentPlan makePlan(const Job& job, const Sizing& sizing) {
  DeploymentPlan plan;
  if (job.workerType != nullptr) {
    plan.workerMachineType = job.workerType->name;
    plan.acceleratorType = std::string(job.workerType->acceleratorType);
    plan.acceleratorCount = job.workerType->acceleratorCount;
  }
  plan.workerCount = job.rates.workers;
  if (job.reducerType != nullptr) plan.reducerMachineType = job.reducerType->name;
  plan.reducerCount = sizing.reducers;
  plan.platform = job.spec.platform;
  plan.tier1 = job.spec.tier1;
  return plan;
}

}  // namespace rs::sizer

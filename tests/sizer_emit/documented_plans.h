// The two worked examples of Vertex AI's Reduction Server documentation, sized by the calculator
// itself (resolveJob, sizePool, makePlan) with the images and names deploy/'s files use.
// deploy/ holds the emitters' output for these plans.
#pragma once

#include <catch2/catch.hpp>

#include "sizer/plan.h"

namespace rs::sizer::testing {

inline constexpr const char* kReducerImage = "us-docker.pkg.dev/my-project/reduction-server/reduction-server:0.1.0";
inline constexpr const char* kWorkerImage = "us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest";

// The job of `spec` as rs-sizer sizes and plans it, with deploy/'s images.
inline EmitPlan sizedPlan(const JobSpec& spec, const char* jobName) {
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  auto sizing = sizePool(job->rates, job->spares);
  REQUIRE(sizing.isOk());
  EmitPlan names;
  names.jobName = jobName;
  names.workerImage = kWorkerImage;
  names.reducerImage = kReducerImage;
  return makePlan(*job, *sizing, names);
}

// `workers` of `workerType` with the default reducers (n1-highcpu-16).
inline EmitPlan sizedPlan(int64_t workers, const char* workerType, const char* jobName) {
  JobSpec spec;
  spec.workers = workers;
  spec.workerType = workerType;
  return sizedPlan(spec, jobName);
}

// 8 x a2-megagpu-16g (100 Gbps each) need 25 x n1-highcpu-16 (32 Gbps each): 800 <= 25 x 32.
inline EmitPlan a2MegaPlan() { return sizedPlan(8, "a2-megagpu-16g", "rs-train"); }

// 5 workers of 100 Gbps (a2-highgpu-8g) need 16 x n1-highcpu-16: 500 <= 16 x 32. deploy/'s
// standing pool is sized for this one.
inline EmitPlan a2HighPoolPlan() { return sizedPlan(5, "a2-highgpu-8g", "reduction-server"); }

}  // namespace rs::sizer::testing

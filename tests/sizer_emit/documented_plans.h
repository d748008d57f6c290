// The two worked examples of Vertex AI's Reduction Server documentation, as emitter plans, with
// the images and names deploy/'s files use. deploy/ holds the emitters' output for these plans.
#pragma once

#include "sizer/emit/emit.h"

namespace rs::sizer::testing {

inline constexpr const char* kReducerImage = "us-docker.pkg.dev/my-project/reduction-server/reduction-server:0.1.0";
inline constexpr const char* kWorkerImage = "us-docker.pkg.dev/my-project/reduction-server/trainer-rs:latest";

// 8 x a2-megagpu-16g (100 Gbps each) need 25 x n1-highcpu-16 (32 Gbps each): 800 <= 25 x 32.
inline EmitPlan a2MegaPlan() {
  EmitPlan p;
  p.jobName = "rs-train";
  p.region = "us-central1";
  p.workers = 8;
  p.workerMachineType = "a2-megagpu-16g";
  p.acceleratorType = "NVIDIA_TESLA_A100";
  p.acceleratorCount = 16;
  p.workerImage = kWorkerImage;
  p.reducers = 25;
  p.reducerMachineType = "n1-highcpu-16";
  p.reducerVcpus = 16;
  p.reducerMemoryGb = 14.4;
  p.reducerImage = kReducerImage;
  return p;
}

// 5 workers of 100 Gbps (a2-highgpu-8g) need 16 x n1-highcpu-16: 500 <= 16 x 32. deploy/'s
// standing pool is sized for this one.
inline EmitPlan a2HighPoolPlan() {
  EmitPlan p = a2MegaPlan();
  p.jobName = "reduction-server";
  p.workers = 5;
  p.workerMachineType = "a2-highgpu-8g";
  p.acceleratorCount = 8;
  p.reducers = 16;
  return p;
}

}  // namespace rs::sizer::testing

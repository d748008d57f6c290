// The deployment plan a sized job turns into: the emitters' EmitPlan (sizer/emit/emit.h) with
// its counts and machine types taken from the job and the sizing, so that what `--emit` writes
// is always the pool the calculator just sized.
#pragma once

#include "sizer/emit/emit.h"
#include "sizer/job.h"
#include "sizer/sizing.h"

namespace rs::sizer {

// `names` gives what the sizing does not know (job name, region, images, training script); the
// workers, their type and GPUs, and the reducers (the pool with its spares), their type, vCPUs,
// memory and capacity come from the job and the sizing, and each side's link rate is the egress
// the sizing used for it. A type the job
// gave as a rate (--worker-gbps, --reducer-gbps) stays empty.
EmitPlan makePlan(const Job& job, const Sizing& sizing, EmitPlan names = {});

// Why `--emit` cannot write this job's files, naming the flag to add; OK when it can.
Status checkEmittable(const Job& job, const EmitPlan& names);

}  // namespace rs::sizer

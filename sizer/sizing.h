// The sizing model, pure arithmetic: how many reducers a job needs (the larger of a bandwidth
// bound and a CPU bound), and how long an all-reduce takes through a pool of a given size
// against a ring. No I/O and no machine table: callers pass rates.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/common/status.h"

namespace rs::sizer {

// vCPUs a reducer spends per 10 Gbit/s of worker traffic it receives (and sends back: the
// measurement moved the same bytes out as in). This is the figure counted as a host counts it,
// the reducer process plus its host's own packet-receive work, because a reducer VM on GCP
// pays its own interrupts and TCP receive as well; the process alone was 1.3-1.4, which would
// size a pool that runs out of CPU first. Of that measurement's range (1.9 at MTU 9000, 2.2 at
// 1500) the 1500 figure is taken: GCP's default VPC MTU is 1460, and an undersized pool costs
// more (idle GPUs) than an oversized one (idle CPU VMs).
inline constexpr double kDefaultVcpuPer10Gbps = 2.2;
inline constexpr std::string_view kVcpuCostSource =
    "bench/RESULTS.md, section \"The reducer's CPU cost\", part \"Counting each host's own "
    "kernel work\": 2.20 vCPU per 10 Gbit/s of reducer ingress (64 MiB all-reduces, MTU 1500, "
    "reducer process plus its host's receive threads; run.sh --host-napi threaded, build "
    "bcd3bd7, recorded in commit 41bdc62)";

struct Rates {
  int64_t workers = 0;
  double workerGbps = 0;    // each worker's egress, Gbit/s
  double reducerGbps = 0;   // each reducer's egress, Gbit/s
  int64_t reducerVcpus = 0;
  double vcpuPer10Gbps = kDefaultVcpuPer10Gbps;
};

enum class Bound { kBandwidth, kCpu };
std::string_view boundName(Bound bound);  // "bandwidth", "cpu"

struct Sizing {
  double totalWorkerGbps = 0;  // W * B_w
  // Reducers needed so that their egress carries the workers' total: ceil(W*B_w / B_r).
  int64_t bandwidthBound = 0;
  // Reducers needed so that their vCPUs carry the traffic: ceil(W*B_w*f / (10*V_r)).
  int64_t cpuBound = 0;
  int64_t reducers = 0;  // max of the two
  Bound binding = Bound::kBandwidth;  // kCpu only when the CPU bound is strictly larger
  // What one reducer can carry: min(B_r, 10*V_r/f).
  double effectiveReducerGbps = 0;
};

// Fails when an input is not positive, or when the pool would exceed a billion reducers.
Result<Sizing> sizePool(const Rates& rates);

// Per-reducer traffic and vCPUs in use at `reducers`, for the report.
double perReducerGbps(const Rates& rates, int64_t reducers);
double perReducerVcpusUsed(const Rates& rates, int64_t reducers);

struct Prediction {
  std::string_view label;  // "R", "R/2", "R/4"
  int64_t reducers = 0;
  double poolSeconds = 0;  // S/B_w * max(1, W*B_w / (R*B_r_eff))
  double ringSeconds = 0;  // 2(W-1)/W * S/B_w
  double speedup = 0;      // ring / pool; 0 for one worker (a ring moves nothing)
};

// One all-reduce of `bytes` per worker through `reducers`, ceil(reducers/2) and
// ceil(reducers/4) reducers (at least 1), beside a ring over the same worker egress.
std::vector<Prediction> predictAllReduce(const Rates& rates, int64_t reducers, uint64_t bytes);

// A ring's time when it runs at `gbps` per worker (the GPU NICs of A3/A4 workers).
double ringSeconds(int64_t workers, double gbps, uint64_t bytes);

}  // namespace rs::sizer

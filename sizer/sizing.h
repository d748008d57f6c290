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
// measurement moved the same bytes out as in), counted as a host counts it: the reducer process
// plus its host's own packet-receive work, because a reducer VM on GCP pays its own interrupts
// and TCP receive as well (the process alone was 0.7-0.8). Measured beside a relay that moves
// the same bytes on the same streams and does nothing else (bench/tcp_relay), so the figure is
// kernel TCP's cost plus ours: 1.28-1.65 against the relay's 1.10-1.50 in eight runs (the
// relay's own cost moves with the machine's state as much as ours); the highest, rounded up,
// is taken, because an undersized pool costs more (idle GPUs) than an oversized one (idle CPU
// VMs). MTU 1500 as GCP's default VPC (1460).
inline constexpr double kDefaultVcpuPer10Gbps = 1.7;
inline constexpr std::string_view kVcpuCostSource =
    "bench/RESULTS.md, section \"Latency and CPU floors (Step 8)\", part \"CPU, counted as a "
    "host counts it\": 1.28-1.65 vCPU per 10 Gbit/s in and out for the reducer process plus its "
    "host's receive threads, against 1.10-1.50 for a relay of the same bytes in the same runs "
    "(W=4, 1 Gbit/s, 64 MiB, MTU 1500, run.sh --peers relay --host-napi threaded, eight runs at "
    "commits 0536842-d374664 and 5e23433)";

// Why --transport rdma does not relax the CPU bound by itself.
inline constexpr std::string_view kRdmaCpuUnmeasured =
    "the reducer's CPU cost over RDMA is not measured by this project (no RDMA hardware has run "
    "it), so the CPU bound is not relaxed";

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
  // Reducers launched beyond the bounds (--spare), and the pool launched: reducers + spares.
  // Every reducer of the pool works (the members spread their chunks over all of them), so
  // spares are headroom, not standbys: the pool still carries the workers' egress after
  // `spares` losses, once failover moves a lost reducer's share to the survivors.
  int64_t spares = 0;
  int64_t pool = 0;
};

// Fails when an input is not positive and finite, when the workers' total overflows, when
// `spares` is negative, or when the pool would exceed a billion reducers (never sizes a
// non-finite total as one reducer).
Result<Sizing> sizePool(const Rates& rates, int64_t spares = 0);

// What a pool carries with `lost` of its reducers gone (for the rest of the run: a restarted
// reducer is not taken back yet): the survivors take the lost reducers' share
// (proto/FAILOVER.md) at what each can carry.
struct LossImpact {
  int64_t lost = 0;
  int64_t live = 0;                 // pool - lost
  double poolEgressFraction = 0;    // live / pool: what is left of the pool's bandwidth
  double carriedGbps = 0;           // min(W*B_w, live * B_r_eff)
  double carriedFraction = 0;       // carriedGbps / (W*B_w): the job's all-reduce throughput
  // How many times as long an all-reduce takes as with the whole pool:
  // max(1, W*B_w / (live * B_r_eff)) / max(1, W*B_w / (pool * B_r_eff)).
  double slowdown = 0;
};
// `lost` must be below `sizing.pool` (a pool with no reducer left carries nothing: the job
// fails, as it does today on any loss).
LossImpact lossImpact(const Sizing& sizing, int64_t lost);

// The losses a report shows for a pool: none, one, as many as its spares, and one more, each
// once and only while a reducer is left.
std::vector<LossImpact> lossTable(const Sizing& sizing);

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

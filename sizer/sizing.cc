#include "sizer/sizing.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace rs::sizer {

namespace {

constexpr double kMostReducers = 1e9;

// ceil() that ignores the last few bits of rounding error: 800 * 2.2 / 160 is
// 11.000000000000002 in binary floating point, and must size 11 reducers, not 12.
double ceilCount(double x) { return std::ceil(x - std::abs(x) * 1e-12); }

double seconds(uint64_t bytes, double gbps) { return static_cast<double>(bytes) * 8.0 / (gbps * 1e9); }

}  // namespace

std::string_view boundName(Bound bound) { return bound == Bound::kCpu ? "cpu" : "bandwidth"; }

Result<Sizing> sizePool(const Rates& r, int64_t spares) {
  const auto positive = [](double x) { return x > 0 && std::isfinite(x); };
  if (r.workers < 1 || !positive(r.workerGbps) || !positive(r.reducerGbps) ||
      r.reducerVcpus < 1 || !positive(r.vcpuPer10Gbps))
    return invalidArgument(fmt::format(
        "sizing needs positive, finite inputs (workers {}, worker {} Gbit/s, reducer {} Gbit/s "
        "and {} vCPUs, {} vCPU per 10 Gbit/s)",
        r.workers, r.workerGbps, r.reducerGbps, r.reducerVcpus, r.vcpuPer10Gbps));
  Sizing s;
  s.totalWorkerGbps = static_cast<double>(r.workers) * r.workerGbps;
  if (!std::isfinite(s.totalWorkerGbps))
    return invalidArgument(fmt::format(
        "the workers' total egress ({} x {} Gbit/s) is not finite; check the rates", r.workers,
        r.workerGbps));
  const double bw = ceilCount(s.totalWorkerGbps / r.reducerGbps);
  const double cpu =
      ceilCount(s.totalWorkerGbps * r.vcpuPer10Gbps / (10.0 * static_cast<double>(r.reducerVcpus)));
  // Written so that NaN (inf - inf in ceilCount) is refused too, never cast to a count.
  if (!(bw <= kMostReducers) || !(cpu <= kMostReducers))
    return invalidArgument(fmt::format(
        "{:.0f} Gbit/s of worker egress would need {:.3g} reducers of {} Gbit/s and {} vCPUs; "
        "check the rates",
        s.totalWorkerGbps, std::max(bw, cpu), r.reducerGbps, r.reducerVcpus));
  s.bandwidthBound = std::max<int64_t>(1, static_cast<int64_t>(bw));
  s.cpuBound = std::max<int64_t>(1, static_cast<int64_t>(cpu));
  s.reducers = std::max(s.bandwidthBound, s.cpuBound);
  s.binding = s.cpuBound > s.bandwidthBound ? Bound::kCpu : Bound::kBandwidth;
  s.effectiveReducerGbps =
      std::min(r.reducerGbps, 10.0 * static_cast<double>(r.reducerVcpus) / r.vcpuPer10Gbps);
  if (spares < 0 || !(static_cast<double>(s.reducers) + static_cast<double>(spares) <= kMostReducers))
    return invalidArgument(fmt::format(
        "{} spare reducers beside the {} the bounds call for: spares must be 0 or more, and the "
        "pool at most {:.0f}",
        spares, s.reducers, kMostReducers));
  s.spares = spares;
  s.pool = s.reducers + spares;
  return s;
}

LossImpact lossImpact(const Sizing& s, int64_t lost) {
  LossImpact l;
  l.lost = lost;
  l.live = s.pool - lost;
  const double live = static_cast<double>(l.live);
  const double demand = s.totalWorkerGbps;
  l.poolEgressFraction = live / static_cast<double>(s.pool);
  l.carriedGbps = std::min(demand, live * s.effectiveReducerGbps);
  l.carriedFraction = l.carriedGbps / demand;
  const auto load = [&](double reducers) {
    return std::max(1.0, demand / (reducers * s.effectiveReducerGbps));
  };
  l.slowdown = load(live) / load(static_cast<double>(s.pool));
  return l;
}

std::vector<LossImpact> lossTable(const Sizing& s) {
  std::vector<LossImpact> rows;
  for (int64_t lost : {int64_t{0}, int64_t{1}, s.spares, s.spares + 1}) {
    const bool shown = !rows.empty() && rows.back().lost >= lost;
    if (lost < s.pool && !shown) rows.push_back(lossImpact(s, lost));
  }
  return rows;
}

double perReducerGbps(const Rates& r, int64_t reducers) {
  return static_cast<double>(r.workers) * r.workerGbps / static_cast<double>(reducers);
}

double perReducerVcpusUsed(const Rates& r, int64_t reducers) {
  return perReducerGbps(r, reducers) / 10.0 * r.vcpuPer10Gbps;
}

double ringSeconds(int64_t workers, double gbps, uint64_t bytes) {
  const double w = static_cast<double>(workers);
  return 2.0 * (w - 1.0) / w * seconds(bytes, gbps);
}

std::vector<Prediction> predictAllReduce(const Rates& r, int64_t reducers, uint64_t bytes) {
  const double effective =
      std::min(r.reducerGbps, 10.0 * static_cast<double>(r.reducerVcpus) / r.vcpuPer10Gbps);
  const double ring = ringSeconds(r.workers, r.workerGbps, bytes);
  const struct {
    std::string_view label;
    int64_t divisor;
  } sizes[] = {{"R", 1}, {"R/2", 2}, {"R/4", 4}};
  std::vector<Prediction> out;
  for (const auto& size : sizes) {
    Prediction p;
    p.label = size.label;
    p.reducers = std::max<int64_t>(1, (reducers + size.divisor - 1) / size.divisor);
    const double load = static_cast<double>(r.workers) * r.workerGbps /
                        (static_cast<double>(p.reducers) * effective);
    p.poolSeconds = seconds(bytes, r.workerGbps) * std::max(1.0, load);
    p.ringSeconds = ring;
    p.speedup = ring > 0 ? ring / p.poolSeconds : 0;
    out.push_back(p);
  }
  return out;
}

}  // namespace rs::sizer

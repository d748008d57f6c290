#include "sizer/job.h"

#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sizer/emit/emit.h"

namespace rs::sizer {

namespace {

constexpr int64_t kMostWorkers = 1'000'000;
// A host's rate, Gbit/s: from 1 Mbit/s, slower than any data-center NIC, to 10 Tbit/s, beyond
// any host's (GCP's largest VM egress is a few Tbit/s). Outside it the figure is a typo, and
// the totals and times computed from it stop being finite numbers.
constexpr double kLeastHostGbps = 0.001;
constexpr double kMostHostGbps = 10'000;
// A reducer's vCPUs, beyond any VM; the pool's vCPUs (reducers x vCPUs) stay well within int64.
constexpr int64_t kMostReducerVcpus = 100'000;
// vCPUs per 10 Gbit/s: this project measured 1.3-1.7; a thousand is no reducer's.
constexpr double kMostVcpuPer10Gbps = 1000;
// Spares beyond the bounds (--spare): the pool keeps its bandwidth through as many losses.
// Losses come one or a few at a time, each until its reducer is back: a thousand is more than
// any pool needs, and a larger number is a typo.
constexpr int64_t kMostSpares = 1000;

Status unknownType(std::string_view flag, std::string_view name) {
  return invalidArgument(fmt::format("{}: unknown machine type '{}' (nearest known: {}; "
                                     "rs-sizer --list-types shows them all)",
                                     flag, name, fmt::join(nearestMachineTypes(name), ", ")));
}

Status hostRate(std::string_view flag, double value) {
  if (!(value > 0))  // NaN too
    return invalidArgument(
        fmt::format("{} must be a positive number of Gbit/s, got {}", flag, value));
  if (value < kLeastHostGbps || !(value <= kMostHostGbps))
    return invalidArgument(fmt::format(
        "{} must be {:g}..{:g} Gbit/s (1 Mbit/s to 10 Tbit/s a host), got {}", flag,
        kLeastHostGbps, kMostHostGbps, value));
  return Status::ok();
}

// Egress of `type` as a job with `tier1` gets it. Workers fall back to default egress where
// their type has no Tier_1 (GPU types); reducers must have it, or the request is refused.
// `reducerFlag` names the reducer input in errors; empty for workers.
Result<double> egressOf(const MachineType& type, bool tier1, std::string_view reducerFlag,
                        std::string* basis) {
  if (tier1 && type.tier1Gbps > 0) {
    *basis = fmt::format("{} with Tier_1 networking", type.name);
    return type.tier1Gbps;
  }
  if (tier1 && !reducerFlag.empty())
    return invalidArgument(fmt::format("--tier1 with {}: {}", reducerFlag, tier1Unavailable(type)));
  *basis = type.isGpu() && type.gpuNicGbps > 0
               ? fmt::format("{} general-purpose gVNIC egress; its {:g} Gbit/s of GPU NICs "
                             "cannot reach a CPU VM",
                             type.name, type.gpuNicGbps)
               : fmt::format("{} default egress", type.name);
  return type.defaultGbps;
}

}  // namespace

std::string_view platformName(Platform platform) {
  switch (platform) {
    case Platform::kVertex: return "vertex";
    case Platform::kGke: return "gke";
    case Platform::kGce: return "gce";
  }
  return "?";
}

Result<Platform> parsePlatform(std::string_view text) {
  for (Platform p : {Platform::kVertex, Platform::kGke, Platform::kGce})
    if (text == platformName(p)) return p;
  return invalidArgument(
      fmt::format("--platform: '{}' is not one of vertex, gke, gce", text));
}

std::string_view capacityName(ReducerCapacity capacity) {
  return capacity == ReducerCapacity::kSpot ? "spot" : "standard";
}

Result<ReducerCapacity> parseCapacity(std::string_view text) {
  for (ReducerCapacity c : {ReducerCapacity::kStandard, ReducerCapacity::kSpot})
    if (text == capacityName(c)) return c;
  return invalidArgument(
      fmt::format("--reducer-capacity: '{}' is not one of standard, spot", text));
}

std::string_view transportName(Transport transport) {
  return transport == Transport::kRdma ? "rdma" : "tcp";
}

Result<Transport> parseTransport(std::string_view text) {
  for (Transport t : {Transport::kTcp, Transport::kRdma})
    if (text == transportName(t)) return t;
  return invalidArgument(fmt::format("--transport: '{}' is not one of tcp, rdma", text));
}

Result<Job> resolveJob(const JobSpec& spec) {
  Job job;
  job.spec = spec;

  if (!spec.workers) return invalidArgument("--workers is required (the number of GPU worker VMs)");
  if (*spec.workers < 1 || *spec.workers > kMostWorkers)
    return invalidArgument(
        fmt::format("--workers must be 1..{}, got {}", kMostWorkers, *spec.workers));
  job.rates.workers = *spec.workers;

  if (spec.tier1 && spec.platform == Platform::kVertex)
    return invalidArgument(
        "--tier1 with --platform vertex: Vertex AI's MachineSpec has only machineType, "
        "acceleratorType, acceleratorCount, tpuTopology and reservationAffinity, no "
        "network-performance setting, so a Vertex job's reducers get their type's default "
        "egress. Drop --tier1, or size for --platform gke or gce, where VMs and node pools can "
        "ask for Tier_1");

  if (spec.reducerCapacity == ReducerCapacity::kSpot && spec.platform == Platform::kVertex)
    return invalidArgument(fmt::format(
        "--reducer-capacity spot with --platform vertex: {}. Drop it (every pool on standard "
        "VMs), or size for --platform gke (a Spot node pool for the reducers) or gce",
        kVertexSpotIsJobWide));
  if (spec.spares) {
    if (*spec.spares < 0 || *spec.spares > kMostSpares)
      return invalidArgument(fmt::format(
          "--spare must be 0..{} (reducers launched beyond what the bounds call for), got {}",
          kMostSpares, *spec.spares));
    job.spares = *spec.spares;
  }

  // Workers: a machine type or a rate, not both.
  if (!spec.workerType.empty() && spec.workerGbps)
    return invalidArgument("--worker-type and --worker-gbps exclude each other: give one");
  if (spec.workerType.empty() && !spec.workerGbps)
    return invalidArgument("give the workers' egress: --worker-type TYPE or --worker-gbps G");
  if (spec.workerGbps) {
    RS_RETURN_IF_ERROR(hostRate("--worker-gbps", *spec.workerGbps));
    job.rates.workerGbps = *spec.workerGbps;
    job.workerEgressBasis = "--worker-gbps";
  } else {
    job.workerType = findMachineType(spec.workerType);
    if (job.workerType == nullptr) return unknownType("--worker-type", spec.workerType);
    auto egress = egressOf(*job.workerType, spec.tier1, {}, &job.workerEgressBasis);
    if (!egress) return egress.status();
    job.rates.workerGbps = *egress;
  }

  // Reducers: a machine type (default n1-highcpu-16) or a rate with its vCPUs.
  if (!spec.reducerType.empty() && (spec.reducerGbps || spec.reducerVcpus))
    return invalidArgument(
        "--reducer-type excludes --reducer-gbps/--reducer-vcpus: give a type, or a rate and "
        "its vCPUs");
  if (spec.reducerGbps.has_value() != spec.reducerVcpus.has_value())
    return invalidArgument(spec.reducerGbps ? "--reducer-gbps needs --reducer-vcpus (the CPU "
                                              "bound needs each reducer's vCPUs)"
                                            : "--reducer-vcpus needs --reducer-gbps");
  if (spec.reducerGbps) {
    RS_RETURN_IF_ERROR(hostRate("--reducer-gbps", *spec.reducerGbps));
    if (*spec.reducerVcpus < 1)
      return invalidArgument(
          fmt::format("--reducer-vcpus must be at least 1, got {}", *spec.reducerVcpus));
    if (*spec.reducerVcpus > kMostReducerVcpus)
      return invalidArgument(fmt::format("--reducer-vcpus must be 1..{}, got {}: more than any VM",
                                         kMostReducerVcpus, *spec.reducerVcpus));
    job.rates.reducerGbps = *spec.reducerGbps;
    job.rates.reducerVcpus = *spec.reducerVcpus;
    job.reducerEgressBasis = "--reducer-gbps";
  } else {
    const std::string name =
        spec.reducerType.empty() ? std::string(kDefaultReducerType) : spec.reducerType;
    job.reducerType = findMachineType(name);
    if (job.reducerType == nullptr) return unknownType("--reducer-type", name);
    if (job.reducerType->isGpu())
      return invalidArgument(fmt::format(
          "--reducer-type: {} is a GPU machine type; reducers are CPU VMs (n1-highcpu-16, "
          "c3-highcpu-44, ...)",
          name));
    const std::string flag = spec.reducerType.empty()
                                 ? fmt::format("the default --reducer-type {}", name)
                                 : std::string("--reducer-type");
    auto egress = egressOf(*job.reducerType, spec.tier1, flag, &job.reducerEgressBasis);
    if (!egress) return egress.status();
    job.rates.reducerGbps = *egress;
    job.rates.reducerVcpus = job.reducerType->vcpus;
  }

  if (spec.vcpuPer10Gbps) {
    if (!(*spec.vcpuPer10Gbps > 0))
      return invalidArgument(
          fmt::format("--vcpu-per-10gbps must be a positive number, got {}", *spec.vcpuPer10Gbps));
    if (!(*spec.vcpuPer10Gbps <= kMostVcpuPer10Gbps))
      return invalidArgument(fmt::format(
          "--vcpu-per-10gbps must be at most {:g} (this project measured 1.3-1.7), got {}",
          kMostVcpuPer10Gbps, *spec.vcpuPer10Gbps));
    job.rates.vcpuPer10Gbps = *spec.vcpuPer10Gbps;
    job.defaultVcpuCost = false;
  }
  if (spec.gradientBytes && *spec.gradientBytes == 0)
    return invalidArgument("--gradient-bytes must be more than 0");
  return job;
}

}  // namespace rs::sizer

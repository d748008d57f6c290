// Resolving the user's job against the machine table: the documented examples by type, and every
// bad input refused with a message that names it.
#include <catch2/catch.hpp>

#include <limits>
#include <fmt/format.h>

#include "sizer/job.h"

using namespace rs::sizer;
using Catch::Contains;

namespace {

JobSpec gbpsJob(int64_t workers, double gbps) {
  JobSpec spec;
  spec.workers = workers;
  spec.workerGbps = gbps;
  return spec;
}

std::string errorOf(const JobSpec& spec) {
  auto job = resolveJob(spec);
  REQUIRE(!job.isOk());
  return job.status().message();
}

}  // namespace

TEST_CASE("job: the default reducer is n1-highcpu-16 on Vertex, default egress") {
  auto job = resolveJob(gbpsJob(5, 100));
  REQUIRE(job.isOk());
  REQUIRE(job->reducerType != nullptr);
  CHECK(job->reducerType->name == "n1-highcpu-16");
  CHECK(job->rates.reducerGbps == 32);
  CHECK(job->rates.reducerVcpus == 16);
  CHECK(job->rates.workerGbps == 100);
  CHECK(job->rates.vcpuPer10Gbps == kDefaultVcpuPer10Gbps);
  CHECK(job->defaultVcpuCost);
  CHECK(job->workerType == nullptr);
  auto sizing = sizePool(job->rates);
  REQUIRE(sizing.isOk());
  CHECK(sizing->reducers == 16);
}

TEST_CASE("job: 8 a2-megagpu-16g workers, by type, need 25 reducers") {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-megagpu-16g";
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  CHECK(job->rates.workerGbps == 100);
  CHECK(job->workerType->acceleratorType == "NVIDIA_TESLA_A100");
  CHECK(job->workerType->acceleratorCount == 16);
  CHECK(sizePool(job->rates)->reducers == 25);
}

TEST_CASE("job: A3 and A4 workers are sized at their general-purpose gVNIC egress") {
  for (auto [type, gbps] : {std::pair{"a3-highgpu-8g", 200.0}, std::pair{"a3-megagpu-8g", 200.0},
                            std::pair{"a3-ultragpu-8g", 400.0}, std::pair{"a4-highgpu-8g", 400.0}}) {
    JobSpec spec;
    spec.workers = 4;
    spec.workerType = type;
    auto job = resolveJob(spec);
    REQUIRE(job.isOk());
    CHECK(job->rates.workerGbps == gbps);
    CHECK_THAT(job->workerEgressBasis, Contains("GPU NICs cannot reach a CPU VM"));
  }
}

TEST_CASE("job: Tier_1 on GKE/GCE uses the reducer type's Tier_1 egress") {
  JobSpec spec = gbpsJob(8, 100);
  spec.platform = Platform::kGke;
  spec.tier1 = true;
  spec.reducerType = "c3-highcpu-88";
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  CHECK(job->rates.reducerGbps == 100);  // 62 by default
  CHECK_THAT(job->reducerEgressBasis, Contains("Tier_1"));
  spec.tier1 = false;
  CHECK(resolveJob(spec)->rates.reducerGbps == 62);
}

TEST_CASE("job: --tier1 on Vertex is refused, and says why") {
  JobSpec spec = gbpsJob(5, 100);
  spec.tier1 = true;
  spec.reducerType = "n2-highcpu-80";
  const std::string msg = errorOf(spec);
  CHECK_THAT(msg, Contains("--tier1"));
  CHECK_THAT(msg, Contains("MachineSpec"));
  CHECK_THAT(msg, Contains("no network-performance setting"));
}

TEST_CASE("job: --tier1 with a reducer type that has none is refused, with the reason") {
  JobSpec spec = gbpsJob(5, 100);
  spec.platform = Platform::kGce;
  spec.tier1 = true;
  CHECK_THAT(errorOf(spec), Contains("default --reducer-type n1-highcpu-16"));
  CHECK_THAT(errorOf(spec), Contains("n1 series offers no Tier_1"));
  spec.reducerType = "n2-highcpu-16";
  CHECK_THAT(errorOf(spec), Contains("at least 30 vCPUs, this type has 16"));
  spec.reducerType = "n2d-highcpu-32";
  CHECK_THAT(errorOf(spec), Contains("no Tier_1 egress for 32 vCPUs"));
  spec.reducerType = "n4-standard-80";
  CHECK_THAT(errorOf(spec), Contains("n4 series offers no Tier_1"));
}

TEST_CASE("job: unknown machine types are named, with the nearest known names") {
  JobSpec spec = gbpsJob(5, 100);
  spec.reducerType = "n1-highcpu16";
  std::string msg = errorOf(spec);
  CHECK_THAT(msg, Contains("--reducer-type: unknown machine type 'n1-highcpu16'"));
  CHECK_THAT(msg, Contains("n1-highcpu-16"));
  JobSpec w;
  w.workers = 2;
  w.workerType = "a2-megagpu-16";
  msg = errorOf(w);
  CHECK_THAT(msg, Contains("--worker-type: unknown machine type 'a2-megagpu-16'"));
  CHECK_THAT(msg, Contains("a2-megagpu-16g"));
}

TEST_CASE("job: impossible inputs are refused with the flag and the value") {
  CHECK_THAT(errorOf(gbpsJob(0, 100)), Contains("--workers must be 1.."));
  CHECK_THAT(errorOf(gbpsJob(-3, 100)), Contains("got -3"));
  CHECK_THAT(errorOf(gbpsJob(5, 0)), Contains("--worker-gbps must be a positive number"));
  CHECK_THAT(errorOf(gbpsJob(5, -100)), Contains("got -100"));
  JobSpec noWorkers;
  noWorkers.workerGbps = 100;
  CHECK_THAT(errorOf(noWorkers), Contains("--workers is required"));

  JobSpec r = gbpsJob(5, 100);
  r.reducerGbps = 0;
  r.reducerVcpus = 16;
  CHECK_THAT(errorOf(r), Contains("--reducer-gbps must be a positive number"));
  r.reducerGbps = 32;
  r.reducerVcpus = 0;
  CHECK_THAT(errorOf(r), Contains("--reducer-vcpus must be at least 1, got 0"));
  r.reducerVcpus = 16;
  r.vcpuPer10Gbps = -1;
  CHECK_THAT(errorOf(r), Contains("--vcpu-per-10gbps must be a positive number, got -1"));
  r.vcpuPer10Gbps.reset();
  r.gradientBytes = 0;
  CHECK_THAT(errorOf(r), Contains("--gradient-bytes"));
}

TEST_CASE("job: rates beyond any host's NIC, or not finite, are refused with the flag") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // The case: 8 x 1e308 overflowed the total to infinity and sized one reducer.
  CHECK_THAT(errorOf(gbpsJob(8, 1e308)),
             Contains("--worker-gbps must be 0.001..10000 Gbit/s (1 Mbit/s to 10 Tbit/s a host), "
                      "got 1e+308"));
  CHECK_THAT(errorOf(gbpsJob(8, 10001)), Contains("--worker-gbps must be 0.001..10000"));
  CHECK_THAT(errorOf(gbpsJob(8, 1e-300)), Contains("got 1e-300"));
  CHECK_THAT(errorOf(gbpsJob(8, inf)), Contains("--worker-gbps must be 0.001..10000"));
  CHECK_THAT(errorOf(gbpsJob(8, nan)), Contains("--worker-gbps must be a positive number"));
  CHECK(resolveJob(gbpsJob(8, 10000)).isOk());  // the bounds themselves are rates
  CHECK(resolveJob(gbpsJob(8, 0.001)).isOk());

  JobSpec r = gbpsJob(8, 100);
  r.reducerVcpus = 16;
  for (double bad : {1e308, inf, 1e-300, 10000.5}) {
    r.reducerGbps = bad;
    CHECK_THAT(errorOf(r), Contains("--reducer-gbps must be 0.001..10000 Gbit/s"));
  }
  r.reducerGbps = 32;
  r.reducerVcpus = int64_t{1} << 62;  // the pool's vCPUs (R x V) would overflow
  CHECK_THAT(errorOf(r), Contains("--reducer-vcpus must be 1..100000, got 4611686018427387904"));
  r.reducerVcpus = 16;
  for (double bad : {1e308, inf, 1000.5}) {
    r.vcpuPer10Gbps = bad;
    CHECK_THAT(errorOf(r), Contains("--vcpu-per-10gbps must be at most 1000"));
  }
  r.vcpuPer10Gbps = nan;
  CHECK_THAT(errorOf(r), Contains("--vcpu-per-10gbps must be a positive number"));
}

TEST_CASE("job: conflicting and incomplete flags are refused") {
  JobSpec both = gbpsJob(5, 100);
  both.workerType = "a2-highgpu-8g";
  CHECK_THAT(errorOf(both), Contains("--worker-type and --worker-gbps exclude each other"));
  JobSpec neither;
  neither.workers = 5;
  CHECK_THAT(errorOf(neither), Contains("--worker-type TYPE or --worker-gbps G"));
  JobSpec gbpsOnly = gbpsJob(5, 100);
  gbpsOnly.reducerGbps = 32;
  CHECK_THAT(errorOf(gbpsOnly), Contains("--reducer-gbps needs --reducer-vcpus"));
  JobSpec vcpusOnly = gbpsJob(5, 100);
  vcpusOnly.reducerVcpus = 16;
  CHECK_THAT(errorOf(vcpusOnly), Contains("--reducer-vcpus needs --reducer-gbps"));
  JobSpec typeAndRate = gbpsJob(5, 100);
  typeAndRate.reducerType = "n1-highcpu-16";
  typeAndRate.reducerGbps = 32;
  typeAndRate.reducerVcpus = 16;
  CHECK_THAT(errorOf(typeAndRate), Contains("--reducer-type excludes --reducer-gbps"));
  JobSpec gpuReducer = gbpsJob(5, 100);
  gpuReducer.reducerType = "a2-highgpu-1g";
  CHECK_THAT(errorOf(gpuReducer), Contains("is a GPU machine type; reducers are CPU VMs"));
}

TEST_CASE("job: custom reducer rates and CPU cost") {
  JobSpec spec = gbpsJob(10, 50);
  spec.reducerGbps = 100;
  spec.reducerVcpus = 8;
  spec.vcpuPer10Gbps = 1.0;
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  CHECK(job->reducerType == nullptr);
  CHECK(!job->defaultVcpuCost);
  auto s = sizePool(job->rates);
  CHECK(s->bandwidthBound == 5);  // 500 / 100
  CHECK(s->cpuBound == 7);        // ceil(500 * 1 / 80)
  CHECK(s->binding == Bound::kCpu);
}

TEST_CASE("job: platforms parse by name only") {
  CHECK(*parsePlatform("vertex") == Platform::kVertex);
  CHECK(*parsePlatform("gke") == Platform::kGke);
  CHECK(*parsePlatform("gce") == Platform::kGce);
  auto bad = parsePlatform("aws");
  REQUIRE(!bad.isOk());
  CHECK_THAT(bad.status().message(), Contains("--platform: 'aws'"));
}

TEST_CASE("job: --spare is 0..1000, refused by name outside it") {
  JobSpec spec = gbpsJob(8, 100);
  auto none = resolveJob(spec);
  REQUIRE(none.isOk());
  CHECK(none->spares == 0);
  spec.spares = 2;
  auto two = resolveJob(spec);
  REQUIRE(two.isOk());
  CHECK(two->spares == 2);
  CHECK(sizePool(two->rates, two->spares)->pool == 27);
  spec.spares = 1000;
  CHECK(resolveJob(spec).isOk());
  for (int64_t bad : {int64_t{-1}, int64_t{1001}, int64_t{1} << 62}) {
    spec.spares = bad;
    CHECK_THAT(errorOf(spec), Contains(fmt::format(
                                  "--spare must be 0..1000 (reducers launched beyond what the "
                                  "bounds call for), got {}",
                                  bad)));
  }
}

TEST_CASE("job: Spot reducers on GKE and GCE, refused on Vertex AI, saying Spot is job-wide") {
  JobSpec spec = gbpsJob(8, 100);
  spec.reducerCapacity = ReducerCapacity::kSpot;
  const std::string msg = errorOf(spec);  // --platform vertex, the default
  CHECK_THAT(msg, Contains("--reducer-capacity spot with --platform vertex"));
  CHECK_THAT(msg, Contains("scheduling.strategy SPOT"));
  CHECK_THAT(msg, Contains("the reducers cannot be Spot while the GPU workers are standard"));
  for (Platform p : {Platform::kGke, Platform::kGce}) {
    spec.platform = p;
    auto job = resolveJob(spec);
    REQUIRE(job.isOk());
    CHECK(job->spec.reducerCapacity == ReducerCapacity::kSpot);
  }
  spec.platform = Platform::kVertex;
  spec.reducerCapacity = ReducerCapacity::kStandard;
  CHECK(resolveJob(spec).isOk());
}

TEST_CASE("job: capacities parse by name only") {
  CHECK(*parseCapacity("standard") == ReducerCapacity::kStandard);
  CHECK(*parseCapacity("spot") == ReducerCapacity::kSpot);
  CHECK(capacityName(ReducerCapacity::kSpot) == "spot");
  auto bad = parseCapacity("preemptible");
  REQUIRE(!bad.isOk());
  CHECK_THAT(bad.status().message(),
             Contains("--reducer-capacity: 'preemptible' is not one of standard, spot"));
}

TEST_CASE("job: transports parse by name only, and RDMA's CPU cost is measured only when given") {
  CHECK(*parseTransport("tcp") == Transport::kTcp);
  CHECK(*parseTransport("rdma") == Transport::kRdma);
  CHECK(transportName(Transport::kRdma) == "rdma");
  auto bad = parseTransport("ib");
  REQUIRE(!bad.isOk());
  CHECK_THAT(bad.status().message(), Contains("--transport: 'ib' is not one of tcp, rdma"));

  JobSpec spec = gbpsJob(8, 100);
  CHECK(resolveJob(spec)->vcpuCostMeasuredForTransport());  // TCP at TCP's measured default
  spec.transport = Transport::kRdma;
  auto rdma = resolveJob(spec);
  REQUIRE(rdma.isOk());
  CHECK(!rdma->vcpuCostMeasuredForTransport());
  CHECK(rdma->rates.vcpuPer10Gbps == kDefaultVcpuPer10Gbps);  // not relaxed
  spec.vcpuPer10Gbps = 0.5;
  CHECK(resolveJob(spec)->vcpuCostMeasuredForTransport());
}

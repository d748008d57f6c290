// What rs-sizer prints: the JSON fields scripts rely on, the plan for the spec emitters, and the
// text answer line.
#include <catch2/catch.hpp>

#include "sizer/plan.h"
#include "sizer/report.h"

using namespace rs::sizer;
using Catch::Contains;

namespace {

struct Sized {
  Job job;
  Sizing sizing;
};

Sized size(JobSpec spec) {
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  auto sizing = sizePool(job->rates, job->spares);
  REQUIRE(sizing.isOk());
  return {*job, *sizing};
}

}  // namespace

TEST_CASE("report: JSON carries the answer, both bounds and every input used") {
  JobSpec spec;
  spec.workers = 5;
  spec.workerGbps = 100;
  spec.gradientBytes = 1ull << 30;
  Sized s = size(spec);
  Report rep;
  rep.job = &s.job;
  rep.sizing = s.sizing;
  rep.predictions = predictAllReduce(s.job.rates, s.sizing.reducers, *spec.gradientBytes);
  const auto j = toJson(rep);
  CHECK(j["reducers"] == 16);
  CHECK(j["reducer_type"] == "n1-highcpu-16");
  CHECK(j["binding_bound"] == "bandwidth");
  CHECK(j["bandwidth_bound"] == 16);
  CHECK(j["cpu_bound"] == 6);
  CHECK(j["workers"] == 5);
  CHECK(j["worker_type"].is_null());
  CHECK(j["worker_gbps"] == 100.0);
  CHECK(j["worker_egress_gbps"] == 100.0);
  CHECK(j["reducer_gbps"] == 32.0);
  CHECK(j["reducer_vcpus"] == 16);
  CHECK(j["tier1"] == false);
  CHECK(j["platform"] == "vertex");
  CHECK(j["vcpu_per_10gbps"] == 1.7);
  CHECK_THAT(j["vcpu_per_10gbps_source"].get<std::string>(), Contains("bench/RESULTS.md"));
  CHECK(j["gradient_bytes"] == (1ull << 30));
  REQUIRE(j["predictions"].size() == 3);
  CHECK(j["predictions"][1]["size"] == "R/2");
  CHECK(j["predictions"][1]["reducers"] == 8);
  CHECK(j["plan"]["reducer_count"] == 16);
  CHECK(j["plan"]["worker_machine_type"].is_null());
  CHECK(j["plan"]["worker_link_gbps"] == 100.0);  // a rate given for the type is the one paced to
  CHECK(j["plan"]["reducer_link_gbps"] == 32.0);
  CHECK(!j.contains("recommendations"));

  const std::string text = formatText(rep);
  CHECK_THAT(text, Contains("Answer: 16 x n1-highcpu-16 (the bandwidth bound binds)"));
  CHECK_THAT(text, Contains("ceil(500 / 32) = 16 reducers"));
  CHECK_THAT(text, Contains("ceil(500 x 1.7 / (10 x 16)) = 6 reducers"));
  CHECK_THAT(text, Contains("R/4"));
}

TEST_CASE("report: the plan the spec emitters read") {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-ultragpu-8g";
  spec.reducerType = "n2-highcpu-32";
  spec.platform = Platform::kGke;
  spec.tier1 = true;
  Sized s = size(spec);
  EmitPlan names;
  names.jobName = "my-job";
  names.workerImage = "registry/trainer:1";
  const EmitPlan plan = makePlan(s.job, s.sizing, names);
  CHECK(plan.workerMachineType == "a2-ultragpu-8g");
  CHECK(plan.acceleratorType == "NVIDIA_A100_80GB");
  CHECK(plan.acceleratorCount == 8);
  CHECK(plan.workers == 8);
  CHECK(plan.reducerMachineType == "n2-highcpu-32");
  CHECK(plan.reducers == 16);  // 800 / 50 (Tier_1)
  CHECK(plan.reducerVcpus == 32);
  CHECK(plan.reducerMemoryGb == 32);  // n2-highcpu: 1 GB per vCPU
  // The pacing rates are the egress the sizing used: Tier_1's for the reducers; the workers' type
  // has no Tier_1 and keeps its default.
  CHECK(plan.reducerLinkGbps == findMachineType("n2-highcpu-32")->tier1Gbps);
  CHECK(plan.reducerLinkGbps == s.job.rates.reducerGbps);
  CHECK(plan.workerLinkGbps == findMachineType("a2-ultragpu-8g")->defaultGbps);
  CHECK(plan.workerLinkGbps == s.job.rates.workerGbps);
  // What the sizing does not know is kept from the names given.
  CHECK(plan.jobName == "my-job");
  CHECK(plan.workerImage == "registry/trainer:1");
  CHECK(plan.reducerImage.empty());
  CHECK_THAT(checkEmittable(s.job, plan).message(), Contains("--reducer-image"));
}

TEST_CASE("report: recommendations and prices in JSON and text") {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-megagpu-16g";
  Sized s = size(spec);
  PriceList prices;
  prices.source = "p.csv";
  prices.dollarsPerHour = {{"n1-highcpu-16", 0.57}};
  auto recs = recommend(s.job, &prices);
  REQUIRE(recs.isOk());
  Report rep;
  rep.job = &s.job;
  rep.sizing = s.sizing;
  rep.recommendations = &*recs;
  rep.prices = &prices;
  const auto j = toJson(rep);
  CHECK(j["prices_file"] == "p.csv");
  CHECK(j["cost_per_hour"] == Approx(14.25));
  REQUIRE(j["recommendations"]["by_cost_per_hour"].size() == 1);
  CHECK(j["recommendations"]["by_cost_per_hour"][0]["reducer_type"] == "n1-highcpu-16");
  CHECK(j["recommendations"]["by_cost_per_hour"][0]["cost_per_hour"] == Approx(25 * 0.57));
  CHECK(j["recommendations"]["by_total_vcpus"].size() == recs->byTotalVcpus.size());
  const std::string text = formatText(rep);
  CHECK_THAT(text, Contains("cost: 14.25 $/hour (25 x 0.57)"));
  CHECK_THAT(text, Contains("By cost per hour (prices from p.csv"));
}

TEST_CASE("report: the machine table lists every row with its source") {
  const std::string text = formatTypeTable();
  CHECK_THAT(text, Contains("n1-highcpu-16"));
  CHECK_THAT(text, Contains("a4-highgpu-8g"));
  CHECK_THAT(text, Contains("github.com/Cyclenerd/google-cloud-compute-machine-types"));
  const auto j = typeTableJson();
  CHECK(j["machine_types"].size() == machineTypes().size());
}

TEST_CASE("report: spares in the answer, the totals, the losses and the plan") {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-megagpu-16g";
  spec.platform = Platform::kGke;
  spec.reducerCapacity = ReducerCapacity::kSpot;
  spec.spares = 2;
  Sized s = size(spec);
  PriceList prices;
  prices.source = "p.csv";
  prices.dollarsPerHour = {{"n1-highcpu-16", 0.5}};
  Report rep;
  rep.job = &s.job;
  rep.sizing = s.sizing;
  rep.prices = &prices;
  const auto j = toJson(rep);
  CHECK(j["reducers"] == 25);  // what the bounds call for
  CHECK(j["spares"] == 2);
  CHECK(j["pool_reducers"] == 27);
  CHECK(j["reducer_capacity"] == "spot");
  // The pool launched is what works and what is paid for.
  CHECK(j["total_reducer_vcpus"] == 27 * 16);
  CHECK(j["total_reducer_egress_gbps"] == Approx(27 * 32));
  CHECK(j["per_reducer_gbps"] == Approx(800.0 / 27));
  CHECK(j["cost_per_hour"] == Approx(13.5));
  REQUIRE(j["losses"].size() == 4);
  CHECK(j["losses"][2]["lost"] == 2);
  CHECK(j["losses"][2]["live"] == 25);
  CHECK(j["losses"][2]["carried_fraction"] == Approx(1.0));
  CHECK(j["losses"][3]["carried_gbps"] == Approx(768));
  CHECK(j["losses"][3]["slowdown"] == Approx(800.0 / 768));
  CHECK(j["losses"][3]["pool_egress_fraction"] == Approx(24.0 / 27));
  CHECK(j["plan"]["reducer_count"] == 27);
  CHECK(j["plan"]["spare_reducers"] == 2);
  CHECK(j["plan"]["spot_reducers"] == true);

  const std::string text = formatText(rep);
  CHECK_THAT(text, Contains("Answer: 27 x n1-highcpu-16 (25 for the bandwidth bound, which binds, and 2 spares)"));
  CHECK_THAT(text, Contains("the pool: 432 vCPUs, 864 Gbit/s of egress"));
  CHECK_THAT(text, Contains("cost: 13.50 $/hour (27 x 0.5)"));
  CHECK_THAT(text, Contains("Capacity:  Spot VMs: a GKE Spot node pool"));
  CHECK_THAT(text, Contains("Failover moves a lost\nreducer's share to the survivors and the collectives in flight complete"));
  CHECK_THAT(text, Contains("     2    25          93%              800 (100%)            1.00x"));
  CHECK_THAT(text, Contains("     3    24          89%               768 (96%)            1.04x"));
  CHECK_THAT(text, Contains("The 2 spares keep the pool at its bound through 2 losses: the 25 reducers left carry all 800 Gbit/s."));
  CHECK_THAT(text, !Contains("Spot with no spares"));

  const EmitPlan plan = makePlan(s.job, s.sizing);
  CHECK(plan.reducers == 27);
  CHECK(plan.spareReducers == 2);
  CHECK(plan.spotReducers);
}

TEST_CASE("report: with no spares, what one loss costs, and where Spot is possible and where not") {
  JobSpec spec;
  spec.workers = 5;
  spec.workerGbps = 100;
  Sized vertex = size(spec);
  Report rep;
  rep.job = &vertex.job;
  rep.sizing = vertex.sizing;
  std::string text = formatText(rep);
  CHECK_THAT(text, Contains("Answer: 16 x n1-highcpu-16 (the bandwidth bound binds)"));
  CHECK_THAT(text, Contains("Capacity:  standard VMs: Vertex AI sets Spot for a whole CustomJob (its "
                            "CustomJobSpec's\n           scheduling.strategy SPOT"));
  CHECK_THAT(text, Contains("     1    15          94%               480 (96%)            1.04x"));
  CHECK_THAT(text, Contains("No spares: one loss leaves 96% of the workers' 500 Gbit/s until the job restarts;\n  --spare N keeps all of it"));
  CHECK(toJson(rep)["reducer_capacity"] == "standard");
  CHECK(toJson(rep)["spares"] == 0);
  CHECK(toJson(rep)["pool_reducers"] == 16);

  spec.platform = Platform::kGke;
  spec.reducerCapacity = ReducerCapacity::kSpot;
  Sized spot = size(spec);
  rep.job = &spot.job;
  rep.sizing = spot.sizing;
  text = formatText(rep);
  CHECK_THAT(text, Contains("Spot with no spares: every preemption takes the pool below its bound"));
  spec.platform = Platform::kGce;
  Sized gce = size(spec);
  rep.job = &gce.job;
  rep.sizing = gce.sizing;
  CHECK_THAT(formatText(rep), Contains("Capacity:  Spot VMs (gcloud compute instances create --provisioning-model=SPOT)"));
  spec.reducerCapacity = ReducerCapacity::kStandard;
  Sized gceStandard = size(spec);
  rep.job = &gceStandard.job;
  rep.sizing = gceStandard.sizing;
  CHECK_THAT(formatText(rep), Contains("Capacity:  standard VMs (--reducer-capacity spot: Spot VMs)"));

  // One reducer has no survivor to move its share to.
  JobSpec tiny;
  tiny.workers = 2;
  tiny.workerGbps = 1;
  Sized one = size(tiny);
  rep.job = &one.job;
  rep.sizing = one.sizing;
  CHECK_THAT(formatText(rep), Contains("One reducer: losing it leaves none"));
  CHECK(toJson(rep)["losses"].size() == 1);
}

TEST_CASE("report: --transport rdma keeps both bounds at TCP's cost unless a measured one is given") {
  JobSpec spec;
  spec.workers = 8;
  spec.workerGbps = 200;
  spec.reducerGbps = 200;
  spec.reducerVcpus = 16;
  Sized tcp = size(spec);
  Report rep;
  rep.job = &tcp.job;
  rep.sizing = tcp.sizing;
  CHECK(toJson(rep)["transport"] == "tcp");
  CHECK(toJson(rep)["vcpu_per_10gbps_measured_for_transport"] == true);
  CHECK_THAT(formatText(rep), !Contains("Transport:"));
  const auto tcpCpuBound = tcp.sizing.cpuBound;
  REQUIRE(tcp.sizing.binding == Bound::kCpu);  // 1600 x 1.7 / 160 = 17 > 8: where RDMA would matter

  spec.transport = Transport::kRdma;
  Sized rdma = size(spec);
  rep.job = &rdma.job;
  rep.sizing = rdma.sizing;
  CHECK(rdma.sizing.cpuBound == tcpCpuBound);
  CHECK(rdma.sizing.bandwidthBound == tcp.sizing.bandwidthBound);
  CHECK(rdma.sizing.reducers == tcp.sizing.reducers);
  auto j = toJson(rep);
  CHECK(j["transport"] == "rdma");
  CHECK(j["vcpu_per_10gbps_measured_for_transport"] == false);
  CHECK(j["vcpu_per_10gbps"] == kDefaultVcpuPer10Gbps);
  CHECK_THAT(j["vcpu_per_10gbps_source"].get<std::string>(),
             Contains("not measured by this project (no RDMA hardware has run it)"));
  std::string text = formatText(rep);
  CHECK_THAT(text, Contains("CPU cost:  1.7 vCPU per 10 Gbit/s a reducer receives and sends (TCP's measured default"));
  CHECK_THAT(text, Contains("Transport: rdma (verbs, EFA): the bandwidth bound is the same as over TCP. The CPU bound still uses\n"));
  CHECK_THAT(text, Contains("so the CPU bound is not relaxed"));
  CHECK_THAT(text, !Contains("gVNIC"));  // rates given, not GCP types

  // A measured figure (the user's) is what relaxes it.
  spec.vcpuPer10Gbps = 0.4;
  Sized measured = size(spec);
  rep.job = &measured.job;
  rep.sizing = measured.sizing;
  CHECK(measured.sizing.cpuBound < tcpCpuBound);
  j = toJson(rep);
  CHECK(j["vcpu_per_10gbps_measured_for_transport"] == true);
  CHECK(j["vcpu_per_10gbps_source"] == "--vcpu-per-10gbps");
  CHECK_THAT(formatText(rep), Contains("the CPU bound uses the\n           --vcpu-per-10gbps given"));

  // GCP machine types: their egress is gVNIC's, not an RDMA NIC's.
  JobSpec typed;
  typed.workers = 8;
  typed.workerType = "a2-megagpu-16g";
  typed.transport = Transport::kRdma;
  Sized gcp = size(typed);
  rep.job = &gcp.job;
  rep.sizing = gcp.sizing;
  CHECK_THAT(formatText(rep), Contains("The machine table's egress is each GCP type's gVNIC rate"));
}

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
  auto sizing = sizePool(job->rates);
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

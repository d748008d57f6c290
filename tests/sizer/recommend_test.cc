// --recommend: every reducer type sized for the same job and ranked by total vCPUs, or by cost.
#include <catch2/catch.hpp>

#include "sizer/recommend.h"

using namespace rs::sizer;

namespace {

Job eightMegagpus(Platform platform = Platform::kVertex, bool tier1 = false) {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-megagpu-16g";
  spec.platform = platform;
  spec.tier1 = tier1;
  if (tier1) spec.reducerType = "c3-highcpu-88";
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  return *job;
}

const Candidate* find(const std::vector<Candidate>& list, std::string_view name) {
  for (const Candidate& c : list)
    if (c.type->name == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("recommend: every CPU type, ranked by total vCPUs, each with its own bounds") {
  auto recs = recommend(eightMegagpus(), nullptr);
  REQUIRE(recs.isOk());
  const auto& list = recs->byTotalVcpus;
  size_t cpuTypes = 0;
  for (const MachineType& t : machineTypes()) cpuTypes += t.isGpu() ? 0 : 1;
  CHECK(list.size() == cpuTypes);
  CHECK(recs->byCost.empty());
  for (size_t i = 1; i < list.size(); ++i) {
    INFO(list[i].type->name);
    CHECK(list[i - 1].totalVcpus <= list[i].totalVcpus);
    CHECK(list[i].totalVcpus == list[i].sizing.reducers * list[i].type->vcpus);
  }
  // 800 Gbit/s over n1-highcpu-16: 25 reducers, 400 vCPUs, bandwidth-bound (the example).
  const Candidate* n1 = find(list, "n1-highcpu-16");
  REQUIRE(n1 != nullptr);
  CHECK(n1->sizing.reducers == 25);
  CHECK(n1->totalVcpus == 400);
  // c3-highcpu-4: 23 Gbit/s on 4 vCPUs, which carry 40/1.7 = 23.5: ceil(800/23) = 35
  // reducers, bandwidth-bound, 140 vCPUs.
  const Candidate* c3 = find(list, "c3-highcpu-4");
  REQUIRE(c3 != nullptr);
  CHECK(c3->sizing.reducers == 35);
  CHECK(c3->sizing.binding == Bound::kBandwidth);
  CHECK(c3->totalVcpus == 140);
  // No pool goes below the CPU floor, 800 * 1.7 / 10 = 136 vCPUs; c3-highcpu-4 has the most
  // egress per vCPU of the table (5.75 Gbit/s) and comes first; ties go to fewer reducers.
  CHECK(list.front().totalVcpus >= 136);
  CHECK(list.front().totalVcpus == 140);
  CHECK(list.front().sizing.reducers <= c3->sizing.reducers);
}

TEST_CASE("recommend: with Tier_1, only types that offer it, at their Tier_1 egress") {
  auto recs = recommend(eightMegagpus(Platform::kGke, true), nullptr);
  REQUIRE(recs.isOk());
  for (const Candidate& c : recs->byTotalVcpus) {
    INFO(c.type->name);
    CHECK(c.type->tier1Gbps > 0);
    CHECK(c.egressGbps == c.type->tier1Gbps);
  }
  CHECK(find(recs->byTotalVcpus, "n1-highcpu-16") == nullptr);
  const Candidate* c3 = find(recs->byTotalVcpus, "c3-highcpu-176");
  REQUIRE(c3 != nullptr);
  CHECK(c3->sizing.reducers == 4);  // 800 / 200
}

TEST_CASE("recommend: with prices, the priced types ranked by cost per hour") {
  PriceList prices;
  prices.source = "test";
  prices.dollarsPerHour = {{"n1-highcpu-16", 0.57}, {"c3-highcpu-4", 0.17}, {"n2-highcpu-32", 1.15}};
  auto recs = recommend(eightMegagpus(), &prices);
  REQUIRE(recs.isOk());
  REQUIRE(recs->byCost.size() == 3);
  // n1-highcpu-16: 25 x 0.57 = 14.25; c3-highcpu-4: 35 x 0.17 = 5.95; n2-highcpu-32: 25 x 1.15.
  CHECK(recs->byCost[0].type->name == "c3-highcpu-4");
  CHECK(recs->byCost[0].costPerHour == Approx(35 * 0.17));
  CHECK(recs->byCost[1].type->name == "n1-highcpu-16");
  CHECK(recs->byCost[1].costPerHour == Approx(25 * 0.57));
  CHECK(recs->byCost[2].type->name == "n2-highcpu-32");
  CHECK(find(recs->byTotalVcpus, "c4-highcpu-8")->costPerHour < 0);  // unpriced
}

TEST_CASE("recommend: the job's spares join every candidate's pool, vCPUs and cost") {
  JobSpec spec;
  spec.workers = 8;
  spec.workerType = "a2-megagpu-16g";
  spec.spares = 3;
  auto job = resolveJob(spec);
  REQUIRE(job.isOk());
  PriceList prices;
  prices.source = "p.csv";
  prices.dollarsPerHour = {{"n1-highcpu-16", 0.5}, {"c3-highcpu-4", 0.2}};
  auto recs = recommend(*job, &prices);
  REQUIRE(recs.isOk());
  const Candidate* n1 = find(recs->byTotalVcpus, "n1-highcpu-16");
  REQUIRE(n1 != nullptr);
  CHECK(n1->sizing.reducers == 25);
  CHECK(n1->sizing.pool == 28);
  CHECK(n1->totalVcpus == 28 * 16);
  CHECK(n1->costPerHour == Approx(14.0));
  const Candidate* c3 = find(recs->byTotalVcpus, "c3-highcpu-4");
  REQUIRE(c3 != nullptr);
  CHECK(c3->sizing.pool == c3->sizing.reducers + 3);
  CHECK(c3->totalVcpus == c3->sizing.pool * 4);
  for (const Candidate& c : recs->byTotalVcpus) CHECK(c.sizing.spares == 3);
}

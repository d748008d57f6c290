// The sizing model's arithmetic against Vertex AI's worked examples and hand-computed values.
#include <catch2/catch.hpp>

#include <limits>

#include "sizer/sizing.h"

using namespace rs::sizer;

namespace {

// n1-highcpu-16 as the table has it: 32 Gbit/s default egress, 16 vCPUs.
Rates n1Highcpu16(int64_t workers, double workerGbps) {
  return Rates{workers, workerGbps, 32, 16, kDefaultVcpuPer10Gbps};
}

}  // namespace

TEST_CASE("sizing: Vertex's example, 5 workers at 100 Gbit/s need 16 n1-highcpu-16") {
  auto s = sizePool(n1Highcpu16(5, 100));
  REQUIRE(s.isOk());
  CHECK(s->totalWorkerGbps == 500);
  CHECK(s->bandwidthBound == 16);  // ceil(500 / 32) = ceil(15.625)
  CHECK(s->cpuBound == 6);         // ceil(500 * 1.7 / 160) = ceil(5.3125)
  CHECK(s->reducers == 16);
  CHECK(s->binding == Bound::kBandwidth);
  CHECK(boundName(s->binding) == "bandwidth");
}

TEST_CASE("sizing: Vertex's example, 8 workers at 100 Gbit/s (a2-megagpu-16g) need 25") {
  auto s = sizePool(n1Highcpu16(8, 100));
  REQUIRE(s.isOk());
  CHECK(s->bandwidthBound == 25);  // 800 / 32 exactly
  CHECK(s->cpuBound == 9);         // ceil(800 * 1.7 / 160) = ceil(8.5)
  CHECK(s->reducers == 25);
  // 800 * 2.2 / 160 is 11.000000000000002 in floating point: still 11 reducers.
  auto earlier = sizePool(Rates{8, 100, 32, 16, 2.2});
  REQUIRE(earlier.isOk());
  CHECK(earlier->cpuBound == 11);
}

TEST_CASE("sizing: the CPU bound binds on a shape with much egress per vCPU") {
  // c3-highcpu-4: 23 Gbit/s on 4 vCPUs, which carry only 40 / 2.2 = 18.2 Gbit/s.
  auto s = sizePool(Rates{5, 100, 23, 4, 2.2});
  REQUIRE(s.isOk());
  CHECK(s->bandwidthBound == 22);  // ceil(500 / 23) = ceil(21.7)
  CHECK(s->cpuBound == 28);        // ceil(500 * 2.2 / 40) = ceil(27.5)
  CHECK(s->reducers == 28);
  CHECK(s->binding == Bound::kCpu);
  CHECK(boundName(s->binding) == "cpu");
  CHECK(s->effectiveReducerGbps == Approx(40.0 / 2.2));
}

TEST_CASE("sizing: the CPU cost is a parameter: doubling it doubles the CPU bound") {
  auto s = sizePool(Rates{8, 100, 32, 16, 4.4});
  REQUIRE(s.isOk());
  CHECK(s->cpuBound == 22);
  CHECK(s->reducers == 25);
  auto heavy = sizePool(Rates{8, 100, 32, 16, 8.8});
  REQUIRE(heavy.isOk());
  CHECK(heavy->cpuBound == 44);
  CHECK(heavy->binding == Bound::kCpu);
}

TEST_CASE("sizing: equal bounds report bandwidth, one slow worker still needs one reducer") {
  auto equal = sizePool(Rates{1, 32, 32, 16, 160.0 / 32});  // both bounds exactly 1
  REQUIRE(equal.isOk());
  CHECK(equal->bandwidthBound == 1);
  CHECK(equal->cpuBound == 1);
  CHECK(equal->binding == Bound::kBandwidth);
  auto tiny = sizePool(Rates{1, 0.5, 32, 16, 2.2});
  REQUIRE(tiny.isOk());
  CHECK(tiny->reducers == 1);
}

TEST_CASE("sizing: inputs that are not positive, or absurd pools, are refused") {
  CHECK(!sizePool(Rates{0, 100, 32, 16, 2.2}).isOk());
  CHECK(!sizePool(Rates{5, 0, 32, 16, 2.2}).isOk());
  CHECK(!sizePool(Rates{5, 100, -32, 16, 2.2}).isOk());
  CHECK(!sizePool(Rates{5, 100, 32, 0, 2.2}).isOk());
  CHECK(!sizePool(Rates{5, 100, 32, 16, 0}).isOk());
  auto absurd = sizePool(Rates{1000000, 1000, 1e-6, 16, 2.2});
  REQUIRE(!absurd.isOk());
  CHECK_THAT(absurd.status().message(), Catch::Contains("check the rates"));
}

TEST_CASE("sizing: totals that overflow are refused, never sized as one reducer") {
  // 8 x 1e308 Gbit/s is infinite: its ceil(inf / 32) must not turn into 1 reducer.
  auto total = sizePool(Rates{8, 1e308, 32, 16, 1.7});
  REQUIRE(!total.isOk());
  CHECK_THAT(total.status().message(),
             Catch::Contains("the workers' total egress (8 x 1e+308 Gbit/s) is not finite"));
  // The CPU bound's product overflows on its own.
  auto cpu = sizePool(Rates{8, 100, 32, 16, 1e308});
  REQUIRE(!cpu.isOk());
  CHECK_THAT(cpu.status().message(), Catch::Contains("check the rates"));
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(!sizePool(Rates{8, inf, 32, 16, 1.7}).isOk());
  CHECK(!sizePool(Rates{8, 100, inf, 16, 1.7}).isOk());
  CHECK(!sizePool(Rates{8, 100, 32, 16, inf}).isOk());
}

TEST_CASE("sizing: per-reducer load at the sized pool") {
  const Rates r = n1Highcpu16(5, 100);
  CHECK(perReducerGbps(r, 16) == Approx(31.25));
  CHECK(perReducerVcpusUsed(r, 16) == Approx(31.25 / 10 * 1.7));
}

TEST_CASE("predictions: R, R/2 and R/4 against a ring, hand-computed") {
  // W=4 at 100 Gbit/s, n1-highcpu-16: R = ceil(400/32) = 13. S = 1 GB: S/B_w = 8e9/1e11 s.
  const Rates r = n1Highcpu16(4, 100);
  auto s = sizePool(r);
  REQUIRE(s.isOk());
  REQUIRE(s->reducers == 13);
  const auto p = predictAllReduce(r, s->reducers, 1'000'000'000);
  REQUIRE(p.size() == 3);
  CHECK(p[0].label == "R");
  CHECK(p[0].reducers == 13);
  CHECK(p[0].poolSeconds == Approx(0.08));  // 400 / (13*32) < 1: link-limited
  CHECK(p[0].ringSeconds == Approx(0.12));  // 2*3/4 * 0.08
  CHECK(p[0].speedup == Approx(1.5));
  CHECK(p[1].label == "R/2");
  CHECK(p[1].reducers == 7);                                // ceil(13/2)
  CHECK(p[1].poolSeconds == Approx(0.08 * 400 / (7 * 32)));  // 0.142857 s
  CHECK(p[1].speedup == Approx(0.12 / (0.08 * 400 / 224)));
  CHECK(p[2].label == "R/4");
  CHECK(p[2].reducers == 4);                                 // ceil(13/4)
  CHECK(p[2].poolSeconds == Approx(0.25));                   // 0.08 * 400/128
  CHECK(p[2].speedup == Approx(0.48));
}

TEST_CASE("predictions: a CPU-limited reducer carries less than its egress") {
  // c3-highcpu-4 at 2.2 vCPU per 10 Gbit/s: 18.18 Gbit/s usable of 23.
  const Rates r{5, 100, 23, 4, 2.2};
  const auto p = predictAllReduce(r, 28, 1'000'000'000);
  CHECK(p[0].poolSeconds == Approx(0.08));  // 500 / (28 * 18.18) = 0.98: link-limited
  CHECK(p[1].reducers == 14);
  CHECK(p[1].poolSeconds == Approx(0.08 * 500 * 2.2 / (14 * 40)));  // load 1.964
  CHECK(p[2].reducers == 7);
  CHECK(p[2].poolSeconds == Approx(0.08 * 500 * 2.2 / (7 * 40)));
}

TEST_CASE("predictions: one reducer stays one, one worker has no ring to beat") {
  const auto p = predictAllReduce(n1Highcpu16(1, 10), 1, 1'000'000);
  REQUIRE(p.size() == 3);
  for (const auto& row : p) {
    CHECK(row.reducers == 1);
    CHECK(row.ringSeconds == 0);
    CHECK(row.speedup == 0);
    CHECK(row.poolSeconds == Approx(8e6 / 1e10));
  }
}

TEST_CASE("predictions: a ring over GPU NICs") {
  CHECK(ringSeconds(4, 3200, 4'000'000'000) == Approx(1.5 * 32e9 / 3.2e12));
}

TEST_CASE("spares: they add to the pool launched, never to the bounds") {
  auto s = sizePool(n1Highcpu16(8, 100), 2);
  REQUIRE(s.isOk());
  CHECK(s->bandwidthBound == 25);
  CHECK(s->reducers == 25);
  CHECK(s->spares == 2);
  CHECK(s->pool == 27);
  auto none = sizePool(n1Highcpu16(8, 100));
  REQUIRE(none.isOk());
  CHECK(none->spares == 0);
  CHECK(none->pool == 25);
  auto negative = sizePool(n1Highcpu16(8, 100), -1);
  REQUIRE(!negative.isOk());
  CHECK_THAT(negative.status().message(),
             Catch::Contains("-1 spare reducers beside the 25 the bounds call for"));
  CHECK(!sizePool(n1Highcpu16(8, 100), 1'000'000'000).isOk());  // a pool above a billion
}

TEST_CASE("losses: 8 x 100 Gbit/s on n1-highcpu-16, 2 spares keep the bound through 2 losses") {
  // 800 Gbit/s over 27 reducers of 32 (the CPU carries 160 / 1.7 = 94 each: the link limits).
  auto s = sizePool(n1Highcpu16(8, 100), 2);
  REQUIRE(s.isOk());
  const auto rows = lossTable(*s);
  REQUIRE(rows.size() == 4);
  const int64_t lost[] = {0, 1, 2, 3};
  const int64_t live[] = {27, 26, 25, 24};
  const double carried[] = {800, 800, 800, 768};
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(rows[i].lost == lost[i]);
    CHECK(rows[i].live == live[i]);
    CHECK(rows[i].poolEgressFraction == Approx(live[i] / 27.0));
    CHECK(rows[i].carriedGbps == Approx(carried[i]));
    CHECK(rows[i].carriedFraction == Approx(carried[i] / 800));
  }
  CHECK(rows[2].slowdown == Approx(1.0));         // the 25 left are the bandwidth bound
  CHECK(rows[3].slowdown == Approx(800.0 / 768));  // one loss beyond the spares: 24 x 32
}

TEST_CASE("losses: with no spares one loss costs about 1/R of the pool until it comes back") {
  // 5 x 100 Gbit/s on 16 reducers: 512 of egress for 500, so one loss leaves 480.
  auto s = sizePool(n1Highcpu16(5, 100));
  REQUIRE(s.isOk());
  const auto rows = lossTable(*s);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].lost == 0);
  CHECK(rows[0].carriedFraction == Approx(1.0));
  CHECK(rows[0].slowdown == Approx(1.0));
  CHECK(rows[1].lost == 1);
  CHECK(rows[1].live == 15);
  CHECK(rows[1].poolEgressFraction == Approx(15.0 / 16));  // (R-1)/R
  CHECK(rows[1].carriedGbps == Approx(480));
  CHECK(rows[1].carriedFraction == Approx(0.96));
  CHECK(rows[1].slowdown == Approx(500.0 / 480));
  // The same loss through lossImpact, and deeper: 4 of 16 lost leave 384 Gbit/s.
  CHECK(lossImpact(*s, 4).slowdown == Approx(500.0 / 384));
}

TEST_CASE("losses: a CPU-limited reducer's share moves at what the survivors' CPUs carry") {
  // c3-highcpu-4 at 2.2: 40 / 2.2 = 18.18 Gbit/s each, not its 23 of egress.
  auto s = sizePool(Rates{5, 100, 23, 4, 2.2}, 1);
  REQUIRE(s.isOk());
  REQUIRE(s->pool == 29);
  const LossImpact two = lossImpact(*s, 2);  // 27 left: 490.9 Gbit/s of 500
  CHECK(two.carriedGbps == Approx(27 * 40 / 2.2));
  CHECK(two.slowdown == Approx(500 / (27 * 40 / 2.2)));
  CHECK(two.poolEgressFraction == Approx(27.0 / 29));
}

TEST_CASE("losses: one reducer has no loss to show, a spare shows each row once") {
  auto one = sizePool(Rates{1, 0.5, 32, 16, 2.2});
  REQUIRE(one.isOk());
  REQUIRE(one->pool == 1);
  REQUIRE(lossTable(*one).size() == 1);
  auto spare = sizePool(Rates{1, 0.5, 32, 16, 2.2}, 1);  // 2 reducers: none lost, one lost
  REQUIRE(spare.isOk());
  const auto rows = lossTable(*spare);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].lost == 1);
  CHECK(rows[1].slowdown == Approx(1.0));
}

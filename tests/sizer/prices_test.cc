// The --prices file: good lines, comments and blanks; every bad line named with file:line.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "sizer/prices.h"

using namespace rs::sizer;
using Catch::Contains;

TEST_CASE("prices: types and dollars per hour, with comments, blanks and CRLF") {
  auto p = parsePrices(
      "# us-central1 on-demand, read by hand\n"
      "n1-highcpu-16,0.5672\n"
      "\n"
      "  c3-highcpu-44 , 1.9  # with a trailing comment\r\n"
      "c4d-highcpu-4,1e-1\n",
      "p.csv");
  REQUIRE(p.isOk());
  CHECK(p->source == "p.csv");
  CHECK(p->dollarsPerHour.size() == 3);
  CHECK(p->priceOf("n1-highcpu-16") == Approx(0.5672));
  CHECK(p->priceOf("c3-highcpu-44") == Approx(1.9));
  CHECK(p->priceOf("c4d-highcpu-4") == Approx(0.1));
  CHECK(p->priceOf("n2-highcpu-16") < 0);
  CHECK(p->poolCost("c3-highcpu-44", 3) == Approx(5.7));
  CHECK(p->poolCost("n2-highcpu-16", 3) < 0);
}

TEST_CASE("prices: a pool's cost is rounded to the micro-dollar") {
  auto p = parsePrices("n1-highcpu-16,0.57\n", "p.csv");
  REQUIRE(p.isOk());
  CHECK(p->poolCost("n1-highcpu-16", 25) == 14.25);  // 25 * 0.57 is 14.249999999999998
}

TEST_CASE("prices: each bad line is rejected with file:line and what was wrong") {
  auto p = parsePrices(
      "n1-highcpu-16,0.57\n"      // 1 ok
      "n1-highcpu-16\n"           // 2 no comma
      "n1-highcpu-32,abc\n"       // 3 not a number
      "n1-highcpu-64,-1\n"        // 4 negative
      "n1-highcpu-96,0\n"         // 5 zero
      "n1-highcpu16,0.5\n"        // 6 unknown type
      "n1-highcpu-16,0.6\n"       // 7 duplicate
      ",0.5\n"                    // 8 no type
      "n2-highcpu-16,0.5,usd\n"   // 9 two commas
      "n2-highcpu-32,inf\n"       // 10 not finite
      "n2-highcpu-48,1e300\n",    // 11 beyond any machine (a pool's cost would overflow)
      "prices.csv");
  REQUIRE(!p.isOk());
  const std::string msg = p.status().message();
  CHECK_THAT(msg, Contains("prices.csv:2: expected 'type,dollars_per_hour', got 'n1-highcpu-16'"));
  CHECK_THAT(msg, Contains("prices.csv:3: price: 'abc' is not a number"));
  CHECK_THAT(msg, Contains("prices.csv:4: price must be more than 0 dollars per hour, got -1"));
  CHECK_THAT(msg, Contains("prices.csv:5: price must be more than 0"));
  CHECK_THAT(msg, Contains("prices.csv:6: unknown machine type 'n1-highcpu16' (nearest known: n1-highcpu-16"));
  CHECK_THAT(msg, Contains("prices.csv:7: n1-highcpu-16 is priced twice (first at line 1)"));
  CHECK_THAT(msg, Contains("prices.csv:8: no machine type before the comma"));
  CHECK_THAT(msg, Contains("prices.csv:9: expected 'type,dollars_per_hour'"));
  CHECK_THAT(msg, Contains("prices.csv:10: price: 'inf' is not a number"));
  CHECK_THAT(msg, Contains("prices.csv:11: price must be at most 100000 dollars per hour, got "
                           "1e300"));
  CHECK_THAT(msg, !Contains("prices.csv:1:"));
}

TEST_CASE("prices: a file with no prices, and a file that cannot be read") {
  auto empty = parsePrices("# nothing yet\n\n", "empty.csv");
  REQUIRE(!empty.isOk());
  CHECK_THAT(empty.status().message(), Contains("empty.csv: no prices"));
  auto missing = loadPrices("/nonexistent/prices.csv");
  REQUIRE(!missing.isOk());
  CHECK_THAT(missing.status().message(), Contains("cannot read '/nonexistent/prices.csv'"));
}

TEST_CASE("prices: loaded from a real file") {
  char path[] = "/tmp/rs_sizer_prices_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  {
    std::ofstream out(path);
    out << "n1-highcpu-16,0.57\n";
  }
  auto p = loadPrices(path);
  std::remove(path);
  REQUIRE(p.isOk());
  CHECK(p->priceOf("n1-highcpu-16") == Approx(0.57));
}

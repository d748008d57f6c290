#include "bench/peers/peer_bench.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

#include "core/common/byte_size.h"
#include "tests/support/verify_pattern.h"

namespace rs::bench {

void SweepOptions::addTo(CLI::App& app) {
  app.add_option("-b,--min-bytes", minBytes, "Smallest size")->capture_default_str();
  app.add_option("-e,--max-bytes", maxBytes, "Largest size")->capture_default_str();
  app.add_option("-f,--factor", factor, "Size multiplier between rows")->capture_default_str();
  app.add_option("-n,--iters", iters, "Timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup", warmup, "Warm-up iterations per size")->capture_default_str();
  app.add_option("-c,--check", check, "Check every result (0/1)")->capture_default_str();
}

std::vector<uint64_t> SweepOptions::sizes() const {
  auto lo = parseByteSize(minBytes), hi = parseByteSize(maxBytes);
  if (!lo || !hi || factor < 2 || iters < 1 || warmup < 0) {
    fmt::print(stderr, "bad sweep: -b {} -e {} -f {} -n {} -w {} (need sizes, -f >= 2, -n >= 1)\n",
               minBytes, maxBytes, factor, iters, warmup);
    return {};
  }
  std::vector<uint64_t> out;
  for (uint64_t bytes = std::max<uint64_t>(*lo, 4); bytes <= *hi;
       bytes *= static_cast<uint64_t>(factor))
    out.push_back(bytes / 4 * 4);
  return out;
}

void fillInput(float* data, uint64_t count, int rank) {
  for (uint64_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(test::exactInput(rank, i, ReduceOp::kSum));
}

uint64_t countWrong(const float* result, uint64_t count, int world) {
  // The pattern repeats every 11 elements; checking 256 MiB element by element through
  // expectedResult() would cost seconds per size on a 2-core machine. Use a table when the
  // period holds, and fall back to the direct formula if verify_pattern ever changes.
  constexpr uint64_t kPeriod = 11;
  bool periodic = true;
  for (uint64_t i = 0; i < 4 * kPeriod && periodic; ++i)
    for (int r = 0; r < world && periodic; ++r)
      periodic = test::exactInput(r, i, ReduceOp::kSum) ==
                 test::exactInput(r, i + kPeriod, ReduceOp::kSum);
  float table[kPeriod];
  for (uint64_t i = 0; i < kPeriod; ++i)
    table[i] = static_cast<float>(test::expectedResult(DataType::kFloat32, ReduceOp::kSum, world, i));
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const float want = periodic ? table[i % kPeriod]
                                : static_cast<float>(test::expectedResult(
                                      DataType::kFloat32, ReduceOp::kSum, world, i));
    wrong += result[i] != want;
  }
  return wrong;
}

void ResultTable::header(const std::string& description) const {
  fmt::print("# {}: {} ranks, fp32 sum, {}\n", impl_, world_, description);
  fmt::print("#\n# {:>10}  {:>12}  {:>6}  {:>5}  {:>10}  {:>7}  {:>7}  {:>6}\n", "size", "count",
             "type", "redop", "time", "algbw", "busbw", "#wrong");
  fmt::print("# {:>10}  {:>12}  {:>6}  {:>5}  {:>10}  {:>7}  {:>7}  {:>6}\n", "(B)", "(elements)",
             "", "", "(us)", "(GB/s)", "(GB/s)", "");
  std::fflush(stdout);
}

void ResultTable::row(uint64_t bytes, double seconds, uint64_t wrong) {
  const uint64_t count = bytes / 4;
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  const double busbw = algbw * 2.0 * (world_ - 1) / world_;
  busSum_ += busbw;
  ++rows_;
  wrong_ += wrong;
  fmt::print("  {:>10}  {:>12}  {:>6}  {:>5}  {:>10.1f}  {:>7.3f}  {:>7.3f}  {:>6}\n", bytes, count,
             "fp32", "sum", seconds * 1e6, algbw, busbw, wrong);
  fmt::print("csv,{},{},{},fp32,sum,{:.1f},{:.4f},{:.4f},{}\n", impl_, bytes, count, seconds * 1e6,
             algbw, busbw, wrong);
  // Flushed per row: the cluster runner timestamps each row as it arrives to attribute CPU use.
  std::fflush(stdout);
}

int ResultTable::footer() const {
  fmt::print("# Out of bounds values : {} {}\n", wrong_, wrong_ ? "FAILED" : "OK");
  fmt::print("# Avg bus bandwidth    : {:.3f}\n#\n", rows_ ? busSum_ / rows_ : 0.0);
  std::fflush(stdout);
  return wrong_ == 0 ? 0 : 3;
}

}  // namespace rs::bench

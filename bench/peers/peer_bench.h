// What the ring all-reduce peers (gloo_allreduce, mpi_allreduce) share with allreduce_perf: the
// size sweep, the checked fp32 input pattern (tests/support/verify_pattern.h, so every program
// checks the same sums), and the output: allreduce_perf's nccl-tests table, so one parser reads
// all of them, plus one machine-readable CSV line per size.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace rs::bench {

struct SweepOptions {
  std::string minBytes = "8K", maxBytes = "256M";
  int factor = 2;
  int iters = 20, warmup = 5;
  bool check = true;

  void addTo(CLI::App& app);
  // Byte sizes of the sweep (each a multiple of 4 bytes, at least one fp32); empty and a message
  // on stderr when the options are bad.
  std::vector<uint64_t> sizes() const;
};

// Member `rank`'s fp32 input, and the number of elements of `result` that differ from the exact
// sum over `world` members.
void fillInput(float* data, uint64_t count, int rank);
uint64_t countWrong(const float* result, uint64_t count, int world);

// The table (on rank 0 only; the caller decides) and the CSV lines:
//   csv,<impl>,<size>,<count>,fp32,sum,<time_us>,<algbw GB/s>,<busbw GB/s>,<#wrong>
class ResultTable {
 public:
  ResultTable(std::string impl, int world) : impl_(std::move(impl)), world_(world) {}
  void header(const std::string& description) const;
  void row(uint64_t bytes, double seconds, uint64_t wrong);
  // Prints the totals; returns the process exit code (3 when any element was wrong).
  int footer() const;

 private:
  std::string impl_;
  int world_;
  double busSum_ = 0;
  int rows_ = 0;
  uint64_t wrong_ = 0;
};

}  // namespace rs::bench

// Slot benchmark: the reducer's per-chunk path without sockets (Slot::fold of every member's
// pieces, releaseReady after each fold as the shard does, the slot opened from and returned to
// its pool), in the normal mode and in deterministic mode (RS_DETERMINISTIC: every member but
// rank 0 staged, the common prefix folded in rank order at release), on the same inputs in the
// same run. Prints GB/s of contributions folded (W x chunk bytes per chunk) for both, the ratio
// deterministic / normal, and the slot memory one chunk takes from the pool in each mode.
//
//   slot_bench [--worlds 4,8,16] [--sizes 64K,256K,1M] [--types fp32,bf16] [--piece 64K]
//              [--seconds 0.1] [--trials 5] [--fp32-accumulator fp32|fp64]
//
// Each row runs the two modes alternately, --trials times each for --seconds, and keeps each
// mode's best rate: on a shared machine the best is the run least disturbed by others. Time is
// the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), so that time the scheduler gives to other
// processes does not count; caches and memory bandwidth they share still do.
// Members arrive interleaved: in each round every member hands one piece, in an order shuffled
// per round (a reducer's sockets deliver in no fixed order). Single-threaded, as one io thread
// owns a slot.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/common/aligned_buffer.h"
#include "core/common/byte_size.h"
#include "core/common/text.h"
#include "server/slot.h"
#include "server/slot_pool.h"

namespace rs::bench {
namespace {

// Seconds of CPU this thread has used.
double threadSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Row {
  double gbps = 0;
  size_t memoryBytes = 0;
};

// Folds one chunk of `world` contributions of `count` elements through a fresh slot, `reps`
// times; returns the rate over all of them and the slot's pool memory.
Row measure(DataType type, Fp32Accumulator fp32, uint32_t world, uint32_t count,
            size_t pieceBytes, bool deterministic, double seconds,
            const std::vector<AlignedBuffer>& inputs) {
  auto pool = std::make_shared<server::SlotPool>(uint64_t{1} << 40);
  const size_t elemSize = dataTypeSize(type);
  const size_t bytes = size_t{count} * elemSize;
  pieceBytes = std::max(elemSize, pieceBytes / elemSize * elemSize);
  wire::FrameHeader h;
  h.type = wire::FrameType::kReduce;
  h.group = GroupId{1, 2};
  h.elemCount = count;
  h.dtype = type;
  h.op = ReduceOp::kSum;
  h.payloadLength = static_cast<uint32_t>(bytes);
  server::Slot::Setup setup;
  setup.worldSize = world;
  setup.timeout = std::chrono::milliseconds(60000);
  setup.minPartBytes = 32 << 10;  // the shard's part size
  setup.deterministic = deterministic;
  setup.fp32Accumulator = fp32;
  std::mt19937 rng(7);
  std::vector<uint32_t> order(world);
  std::iota(order.begin(), order.end(), 0u);
  std::vector<size_t> sent(world);

  Row row;
  uint64_t chunks = 0;
  const double start = threadSeconds();
  double elapsed = 0;
  uint64_t releasedElems = 0;  // every element must leave exactly once
  while (elapsed < seconds || chunks < 3) {
    auto buffer =
        pool->tryAcquire(server::Slot::bufferBytes(count, type, world, deterministic, fp32));
    server::Slot slot(pool, std::move(*buffer), h, setup);
    row.memoryBytes = slot.memoryBytes();
    for (uint32_t r = 0; r < world; ++r) slot.startReceiving(r);
    std::fill(sent.begin(), sent.end(), 0);
    while (!slot.complete()) {
      std::shuffle(order.begin(), order.end(), rng);
      for (uint32_t r : order) {
        const size_t n = std::min(pieceBytes, bytes - sent[r]);
        if (n == 0) continue;
        sent[r] += slot.fold(r, inputs[r].data() + sent[r], n);
        while (auto part = slot.releaseReady()) releasedElems += part->to - part->from;
      }
    }
    ++chunks;
    elapsed = threadSeconds() - start;
  }
  if (releasedElems != chunks * count) {
    fmt::print(stderr, "slot_bench: {} elements released, expected {}\n", releasedElems,
               chunks * count);
    std::abort();
  }
  row.gbps = static_cast<double>(chunks) * world * bytes / elapsed / 1e9;
  return row;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  using namespace rs;
  std::string worlds = "4,8,16", sizes = "64K,256K,1M", types = "fp32,bf16", piece = "64K";
  double seconds = 0.1;
  int trials = 5;
  std::string fp32Accumulator = "fp32";
  CLI::App app{"slot_bench: the slot's fold and release path, normal vs deterministic mode"};
  app.add_option("--worlds", worlds, "Members per chunk")->capture_default_str();
  app.add_option("--sizes", sizes, "Chunk sizes (wire bytes)")->capture_default_str();
  app.add_option("--types", types, "Element types")->capture_default_str();
  app.add_option("--piece", piece, "Bytes a member hands over per fold (the server's read)")
      ->capture_default_str();
  app.add_option("--seconds", seconds, "Time per trial")->capture_default_str();
  app.add_option("--trials", trials, "Alternating trials per row and mode (the best counts)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  app.add_option("--fp32-accumulator", fp32Accumulator,
                 "The group's accumulator for fp32 sums (RS_FP32_ACCUMULATOR)")
      ->check(CLI::IsMember({"fp32", "fp64"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const Fp32Accumulator fp32 = *parseFp32Accumulator(fp32Accumulator);  // checked by the CLI
  std::vector<uint32_t> ws;
  for (auto w : split(worlds, ',')) {
    auto n = parseUnsigned(w);
    if (!n || *n < 1 || *n > 1024) return fmt::print(stderr, "bad --worlds\n"), 2;
    ws.push_back(static_cast<uint32_t>(*n));
  }
  std::vector<uint64_t> ss;
  for (auto s : split(sizes, ',')) {
    auto n = parseByteSize(s);
    if (!n || *n < 64 || *n > (uint64_t{1} << 30)) return fmt::print(stderr, "bad --sizes\n"), 2;
    ss.push_back(*n);
  }
  std::vector<DataType> ts;
  for (auto t : split(types, ',')) {
    auto d = parseDataType(t);
    if (!d || !isFloatingPoint(*d)) return fmt::print(stderr, "bad --types\n"), 2;
    ts.push_back(*d);
  }
  auto pieceBytes = parseByteSize(piece);
  if (!pieceBytes || *pieceBytes < 1) return fmt::print(stderr, "bad --piece\n"), 2;

  fmt::print("slot_bench: fold + release of one chunk, pieces of {}, best of {} alternating "
             "trials of {:.2f} CPU s per mode, fp32 accumulator {}\n",
             formatByteSize(*pieceBytes), trials, seconds, fp32AccumulatorName(fp32));
  fmt::print("{:>5} {:>3} {:>8} {:>11} {:>11} {:>7} {:>12} {:>12} {:>7}\n", "type", "W", "chunk",
             "normal GB/s", "determ GB/s", "ratio", "normal mem", "determ mem", "x mem");
  for (DataType t : ts) {
    for (uint32_t w : ws) {
      for (uint64_t size : ss) {
        const uint32_t count = static_cast<uint32_t>(size / dataTypeSize(t));
        std::vector<AlignedBuffer> inputs;
        for (uint32_t r = 0; r < w; ++r) {
          inputs.emplace_back(size_t{count} * dataTypeSize(t));
          std::fill_n(inputs.back().data(), inputs.back().size(), std::byte{0x3c});
        }
        bench::Row normal, det;
        for (int trial = 0; trial < trials; ++trial) {
          const auto n = bench::measure(t, fp32, w, count, *pieceBytes, false, seconds, inputs);
          const auto d = bench::measure(t, fp32, w, count, *pieceBytes, true, seconds, inputs);
          if (n.gbps > normal.gbps) normal = n;
          if (d.gbps > det.gbps) det = d;
        }
        fmt::print("{:>5} {:>3} {:>8} {:>11.2f} {:>11.2f} {:>7.2f} {:>12} {:>12} {:>7.2f}\n",
                   dataTypeName(t), w, formatByteSize(size), normal.gbps, det.gbps,
                   det.gbps / normal.gbps, formatByteSize(normal.memoryBytes),
                   formatByteSize(det.memoryBytes),
                   static_cast<double>(det.memoryBytes) / static_cast<double>(normal.memoryBytes));
      }
    }
  }
  return 0;
}

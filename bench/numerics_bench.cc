// Numerics benchmark: the error of all-reduce sums against an fp64 reference, for fp16, bf16,
// fp32 and fp8 (E4M3, E5M2) at W = 2..64 workers, for two ways of summing the same inputs:
//
//  ours  the reducer's arithmetic, through the kernels server/slot.cc calls: the first
//        contribution to arrive is widened into the accumulator (accumulateFirst), later ones
//        are folded in as they arrive (accumulate, fp32 accumulator for fp16/bf16/fp8, the type
//        itself for fp32), and finalize() rounds once. Arrival order is either rank order or a
//        fresh random permutation for every part of kPartElems elements (sockets deliver
//        contributions in any order, part by part); the table gives the worse of the two.
//  ring  NCCL's ring all-reduce, rounding to the data type at every hop. Read in NVIDIA/nccl
//        src/device/all_reduce.h (runRing): the data is cut into nranks chunks; at step 0 the
//        rank at ring position r sends chunk r-1, at steps j = 2..nranks-1 it receives chunk
//        r-j, adds its own contribution and sends it on (recvReduceSend), and at the last
//        reduce step it adds its own to chunk r, which completes it (directRecvReduceCopySend);
//        the all-gather after that only copies. So chunk c's partial sum starts with rank c+1's
//        value and collects ranks c+2, ..., c+W-1, c in that order (mod W). Every hop stores
//        the partial sum in the buffer type; src/device/reduce_kernel.h adds fp16 with __hadd
//        (and bf16 likewise on sm_80+), i.e. a correctly rounded sum in the type, which is
//        what roundToType(a + b) computes here (a + b is exact, or rounds innocuously, in
//        fp64). fp8 it widens to fp16, adds with __hadd and converts back saturating (sm_90+;
//        before, the same in fp32): for two fp8 values that is the correctly rounded sum,
//        saturated at the largest finite, again roundToType(a + b) (tests/cuda/float8_test.cc
//        checks every pair against CUDA's own conversions). We model one channel (more only cut each chunk finer) on two rings: rank order
//        (0 -> 1 -> ... -> W-1 -> 0) and a random permutation of the ranks (NCCL orders its
//        rings by topology); the table gives the worse of the two, as for ours, so that neither
//        side gets the extra draw of a heavy-tailed statistic.
//
// Error: the ULP distance in the output type between the result and the fp64 reference (a
// compensated sum of the inputs as the workers hold them) rounded once to that type, so 0 is a
// correctly rounded sum; and the relative error |result - ref| / |ref| (elements with ref = 0
// skipped). Max and mean over all elements.
//
//   numerics_bench [--elements 65536] [--seed 1] [--workers 2,4,8,16,32,64]
//
// A last table, "fp32 with bf16 on the wire" (RS_WIRE_DTYPE=bf16, the client's wire
// compression): each worker's fp32 values are narrowed to bf16 with the client's kernel
// (reduce::narrowFloat32), summed as ours sums bf16 (fp32 accumulator, one rounding to bf16),
// and widened back to fp32; its error is given in fp32 ULPs and relative terms against the
// fp64 reference of the fp32 inputs, and against ours on plain fp32.
//
// --elements is per worker. Inputs are drawn in fp64 and rounded to each type, seeded by
// (seed, distribution, W), so a run is reproducible from the seed it prints.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/numerics/reference_sum.h"
#include "bench/numerics/ulp.h"
#include "core/common/text.h"
#include "core/reduce/convert.h"
#include "core/reduce/dtype.h"
#include "core/reduce/reduce.h"

namespace rs::bench {
namespace {

using numerics::ReferenceSum;
using numerics::roundToType;
using numerics::toDouble;
using numerics::ulpDistance;

constexpr size_t kPartElems = 4096;
constexpr DataType kTypes[] = {DataType::kFloat16, DataType::kBfloat16, DataType::kFloat32,
                               DataType::kFloat8e4m3, DataType::kFloat8e5m2};

struct Options {
  size_t elements = 65536;
  uint64_t seed = 1;
  std::vector<size_t> workers = {2, 4, 8, 16, 32, 64};
};

void usage() {
  std::fprintf(stderr,
               "usage: numerics_bench [--elements 65536] [--seed 1] [--workers 2,4,8,16,32,64]\n");
}

std::optional<Options> parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h" || i + 1 >= argc) return std::nullopt;
    const std::string_view value = argv[++i];
    if (flag == "--elements" || flag == "--seed") {
      const auto n = parseUnsigned(value);
      if (!n || (flag == "--elements" && *n == 0)) return std::nullopt;
      if (flag == "--seed") {
        o.seed = *n;
      } else {
        o.elements = static_cast<size_t>(*n);
      }
    } else if (flag == "--workers") {
      o.workers.clear();
      for (std::string_view part : split(value, ',')) {
        const auto n = parseUnsigned(part);
        if (!n || *n < 2 || *n > 1024) return std::nullopt;
        o.workers.push_back(*n);
      }
    } else {
      return std::nullopt;
    }
  }
  return o;
}

// ---- Inputs: x[w * n + i] is worker w's value of element i, in fp64 before rounding to a type.
struct Distribution {
  const char* name;
  const char* what;
  void (*draw)(std::mt19937_64& rng, size_t workers, size_t n, std::vector<double>& x);
};

const Distribution kDistributions[] = {
    {"normal", "normal(0, 1) x 0.01, gradient-like",
     [](std::mt19937_64& rng, size_t, size_t, std::vector<double>& x) {
       std::normal_distribution<double> g(0.0, 0.01);
       for (double& v : x) v = g(rng);
     }},
    {"mixed", "random sign, magnitude 10^U(-3, 1): four decades in one sum",
     [](std::mt19937_64& rng, size_t, size_t, std::vector<double>& x) {
       std::uniform_real_distribution<double> decade(-3.0, 1.0);
       std::bernoulli_distribution negative(0.5);
       for (double& v : x) v = (negative(rng) ? -1.0 : 1.0) * std::pow(10.0, decade(rng));
     }},
    {"cancel", "normal(0, 1) minus its mean over workers, plus normal(0, 0.001): |sum| << terms",
     [](std::mt19937_64& rng, size_t workers, size_t n, std::vector<double>& x) {
       std::normal_distribution<double> g(0.0, 1.0), small(0.0, 0.001);
       for (double& v : x) v = g(rng);
       for (size_t i = 0; i < n; ++i) {
         double mean = 0;
         for (size_t w = 0; w < workers; ++w) mean += x[w * n + i];
         mean /= static_cast<double>(workers);
         for (size_t w = 0; w < workers; ++w) x[w * n + i] += small(rng) - mean;
       }
     }},
    {"positive", "uniform(0, 1): the sum grows with W, every term the same sign",
     [](std::mt19937_64& rng, size_t, size_t, std::vector<double>& x) {
       std::uniform_real_distribution<double> u(0.0, 1.0);
       for (double& v : x) v = u(rng);
     }},
};

// Every worker's contribution in one type: wire-format buffers, and their bit patterns.
struct Contributions {
  DataType type;
  size_t workers, n;
  std::vector<std::vector<std::byte>> wire;  // [w][i * size]
  uint32_t bits(size_t w, size_t i) const {
    uint32_t b = 0;
    std::memcpy(&b, wire[w].data() + i * dataTypeSize(type), dataTypeSize(type));
    return b;
  }
};

Contributions quantize(DataType t, size_t workers, size_t n, const std::vector<double>& x) {
  Contributions c{t, workers, n, std::vector<std::vector<std::byte>>(workers)};
  const size_t size = dataTypeSize(t);
  for (size_t w = 0; w < workers; ++w) {
    c.wire[w].resize(n * size);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t b = roundToType(t, x[w * n + i]);
      std::memcpy(c.wire[w].data() + i * size, &b, size);
    }
  }
  return c;
}

// ---- The two summations. Each returns the result's bit patterns.

enum class Arrival { kRankOrder, kShuffledPerPart };

// `fp32`: the group's accumulator for fp32 (RS_FP32_ACCUMULATOR); other types ignore it.
std::vector<uint32_t> oursSum(const Contributions& c, Arrival arrival, std::mt19937_64& rng,
                              Fp32Accumulator fp32 = Fp32Accumulator::kFp32) {
  const DataType t = c.type;
  const size_t wire = dataTypeSize(t), acc_size = accumulatorSize(t, fp32);
  std::vector<std::byte> acc(c.n * acc_size), out(c.n * wire);
  std::vector<size_t> order(c.workers);
  for (size_t b = 0; b < c.n; b += kPartElems) {
    const size_t m = std::min(kPartElems, c.n - b);
    std::iota(order.begin(), order.end(), 0);
    if (arrival == Arrival::kShuffledPerPart) std::shuffle(order.begin(), order.end(), rng);
    std::byte* a = acc.data() + b * acc_size;
    reduce::accumulateFirst(t, c.wire[order[0]].data() + b * wire, a, m, fp32);
    for (size_t k = 1; k < c.workers; ++k)
      reduce::accumulate(t, ReduceOp::kSum, c.wire[order[k]].data() + b * wire, a, m, fp32);
  }
  reduce::finalize(t, ReduceOp::kSum, acc.data(), out.data(), c.n,
                   static_cast<uint32_t>(c.workers), fp32);
  std::vector<uint32_t> bits(c.n, 0);
  for (size_t i = 0; i < c.n; ++i) std::memcpy(&bits[i], out.data() + i * wire, wire);
  return bits;
}

// ring[p] is the rank at ring position p; chunk c is the one completed at position c.
std::vector<uint32_t> ringSum(const Contributions& c, const std::vector<size_t>& ring) {
  const size_t w = c.workers, chunk = (c.n + w - 1) / w;
  std::vector<uint32_t> bits(c.n);
  for (size_t ch = 0; ch < w; ++ch) {
    for (size_t i = ch * chunk; i < std::min(c.n, (ch + 1) * chunk); ++i) {
      uint32_t s = c.bits(ring[(ch + 1) % w], i);
      for (size_t j = 2; j <= w; ++j) {
        const double next = toDouble(c.type, c.bits(ring[(ch + j) % w], i));
        s = roundToType(c.type, toDouble(c.type, s) + next);
      }
      bits[i] = s;
    }
  }
  return bits;
}

// ---- Error statistics.
// The reference of each element: the sum, and the sum of the terms' magnitudes.
struct Reference {
  std::vector<double> sum, magnitude;
};

Reference referenceSums(const Contributions& c) {
  Reference r{std::vector<double>(c.n), std::vector<double>(c.n)};
  for (size_t i = 0; i < c.n; ++i) {
    ReferenceSum s, m;
    for (size_t w = 0; w < c.workers; ++w) {
      const double x = toDouble(c.type, c.bits(w, i));
      s.add(x);
      m.add(std::fabs(x));
    }
    r.sum[i] = s.value();
    r.magnitude[i] = m.value();
  }
  return r;
}

// Unit roundoff: half the distance from 1 to the next value of the type.
double unitRoundoff(DataType t) {
  switch (t) {
    case DataType::kFloat16: return 0x1p-11;
    case DataType::kBfloat16: return 0x1p-8;
    case DataType::kFloat8e4m3: return 0x1p-4;
    case DataType::kFloat8e5m2: return 0x1p-3;
    default: return 0x1p-24;
  }
}

// ULPs of the result blow up where the sum nears zero (an ULP there is tiny), so their mean is
// ruled by the few elements that cancel most. `norm`, the mean of |result - ref| / (u * sum of
// |terms|), is the scale of a summation error bound ((W-1) u sum|x| for W-1 roundings): it
// stays stable when two methods do the same number of roundings.
struct Error {
  uint64_t max_ulp = 0;
  double mean_ulp = 0, max_rel = 0, mean_rel = 0, norm = 0, max_norm = 0;

  // The worse of two, statistic by statistic.
  static Error worst(const Error& a, const Error& b) {
    return {std::max(a.max_ulp, b.max_ulp), std::max(a.mean_ulp, b.mean_ulp),
            std::max(a.max_rel, b.max_rel), std::max(a.mean_rel, b.mean_rel),
            std::max(a.norm, b.norm),       std::max(a.max_norm, b.max_norm)};
  }
};

Error measure(DataType t, const std::vector<uint32_t>& result, const Reference& ref) {
  Error e;
  double ulp_sum = 0, rel_sum = 0, norm_sum = 0;
  size_t rel_count = 0, norm_count = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    const double sum = ref.sum[i];
    const uint64_t ulp = ulpDistance(t, result[i], roundToType(t, sum));
    e.max_ulp = std::max(e.max_ulp, ulp);
    ulp_sum += static_cast<double>(ulp);
    const double error = std::fabs(toDouble(t, result[i]) - sum);
    if (sum != 0) {
      const double rel = error / std::fabs(sum);
      e.max_rel = std::max(e.max_rel, rel);
      rel_sum += rel;
      ++rel_count;
    }
    if (ref.magnitude[i] != 0) {
      const double norm = error / (unitRoundoff(t) * ref.magnitude[i]);
      norm_sum += norm;
      e.max_norm = std::max(e.max_norm, norm);
      ++norm_count;
    }
  }
  e.mean_ulp = ulp_sum / static_cast<double>(result.size());
  e.mean_rel = rel_count != 0 ? rel_sum / static_cast<double>(rel_count) : 0;
  e.norm = norm_count != 0 ? norm_sum / static_cast<double>(norm_count) : 0;
  return e;
}

struct Row {
  const Distribution* dist;
  size_t workers;
  Error ours, ring;
};

// fp32 with bf16 on the wire: against the fp64 reference, plain fp32 (ours) against the same,
// and the wire result against plain fp32.
struct WireRow {
  const Distribution* dist;
  size_t workers;
  Error wire, plain, wire_vs_plain;
};

// Every worker's fp32 contribution narrowed to bf16, as the client sends it.
Contributions narrowToBfloat16(const Contributions& f32) {
  Contributions c{DataType::kBfloat16, f32.workers, f32.n,
                  std::vector<std::vector<std::byte>>(f32.workers)};
  for (size_t w = 0; w < f32.workers; ++w) {
    c.wire[w].resize(f32.n * 2);
    reduce::narrowFloat32(DataType::kBfloat16, reinterpret_cast<const float*>(f32.wire[w].data()),
                          c.wire[w].data(), f32.n);
  }
  return c;
}

// bf16 results widened to fp32, as the client writes them into the caller's buffer.
std::vector<uint32_t> widenBits(const std::vector<uint32_t>& bf16) {
  std::vector<uint32_t> out(bf16.size());
  for (size_t i = 0; i < bf16.size(); ++i) out[i] = bf16[i] << 16;
  return out;
}

void printWireTable(const std::vector<WireRow>& rows) {
  std::printf("\nfp32 with bf16 on the wire (RS_WIRE_DTYPE=bf16: inputs rounded to bf16, fp32 "
              "accumulator, result rounded to bf16, widened to fp32); ULPs of fp32\n");
  std::printf("ULPs and Rel blow up where a sum cancels to near zero; normBF, |result - ref| / "
              "(2^-8 * sum |terms|) in bf16's unit roundoff, is the stable scale: rounding every "
              "input and the sum once bounds it by about 2\n");
  std::printf("%-8s %2s | %-55s | %-37s | %-19s\n", "", "", "wire bf16 vs fp64 reference",
              "plain fp32 (ours) vs fp64 reference", "wire vs plain fp32");
  std::printf("%-8s %2s | %10s %9s %8s %8s %8s %8s | %10s %9s %8s %8s | %8s %8s\n", "inputs",
              "W", "maxULP", "meanULP", "maxRel", "meanRel", "maxNrmBF", "normBF", "maxULP",
              "meanULP", "maxRel", "meanRel", "maxRel", "meanRel");
  // The wire's norm is measured in fp32's unit roundoff: scale it to bf16's (2^-24 -> 2^-8).
  constexpr double kToBf16 = 0x1p-16;
  for (const WireRow& r : rows)
    std::printf("%-8s %2zu | %10llu %9.1f %8.1e %8.1e %8.3f %8.3f | %10llu %9.3f %8.1e %8.1e | "
                "%8.1e %8.1e\n",
                r.dist->name, r.workers, static_cast<unsigned long long>(r.wire.max_ulp),
                r.wire.mean_ulp, r.wire.max_rel, r.wire.mean_rel, r.wire.max_norm * kToBf16,
                r.wire.norm * kToBf16, static_cast<unsigned long long>(r.plain.max_ulp),
                r.plain.mean_ulp, r.plain.max_rel, r.plain.mean_rel, r.wire_vs_plain.max_rel,
                r.wire_vs_plain.mean_rel);
}

std::string ratio(double ours, double ring) {
  if (ring == 0) return ours == 0 ? "1.00" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", ours / ring);
  return buf;
}

void printTable(DataType t, Fp32Accumulator fp32, const std::vector<Row>& rows) {
  const std::string name = std::string(dataTypeName(t)) +
                           (accumulatesInFloat64(t, fp32) ? " in an fp64 accumulator" : "");
  std::printf("\n%s (%s)\n", name.c_str(),
              accumulatesInFloat32(t) ? "ours: fp32 accumulator, one rounding; ring: a rounding "
                                        "to the type at each of W-1 hops"
              : accumulatesInFloat64(t, fp32)
                  ? "RS_FP32_ACCUMULATOR=fp64; ours: fp64 accumulator, one rounding; ring: a "
                    "rounding to fp32 at each of W-1 hops"
                  : "ours and ring both round to fp32 at each of W-1 adds");
  std::printf("%-8s %2s | %-46s | %-46s | ours/ring ULP\n", "", "",
              "ours (worst of 2 arrival orders)", "ring (NCCL order, worst of 2 rings)");
  std::printf("%-8s %2s | %10s %9s %8s %8s %6s | %10s %9s %8s %8s %6s | %5s %5s\n", "inputs", "W",
              "maxULP", "meanULP", "maxRel", "meanRel", "norm", "maxULP", "meanULP", "maxRel",
              "meanRel", "norm", "max", "mean");
  for (const Row& r : rows) {
    std::printf(
        "%-8s %2zu | %10llu %9.3f %8.1e %8.1e %6.3f | %10llu %9.3f %8.1e %8.1e %6.3f | %5s %5s\n",
        r.dist->name, r.workers, static_cast<unsigned long long>(r.ours.max_ulp), r.ours.mean_ulp,
        r.ours.max_rel, r.ours.mean_rel, r.ours.norm,
        static_cast<unsigned long long>(r.ring.max_ulp), r.ring.mean_ulp, r.ring.max_rel,
        r.ring.mean_rel, r.ring.norm,
                ratio(static_cast<double>(r.ours.max_ulp), static_cast<double>(r.ring.max_ulp))
                    .c_str(),
                ratio(r.ours.mean_ulp, r.ring.mean_ulp).c_str());
  }
  // The target: ours at most the ring's, in max and in mean ULP, at every W and input.
  std::string misses;
  for (const Row& r : rows) {
    if (r.ours.max_ulp <= r.ring.max_ulp && r.ours.mean_ulp <= r.ring.mean_ulp) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%s W=%zu (max %llu vs %llu, mean %.4f vs %.4f)",
                  misses.empty() ? "" : "; ", r.dist->name, r.workers,
                  static_cast<unsigned long long>(r.ours.max_ulp),
                  static_cast<unsigned long long>(r.ring.max_ulp), r.ours.mean_ulp,
                  r.ring.mean_ulp);
    misses += buf;
  }
  std::printf("%s: ours <= ring in max and mean ULP at every W and input: %s%s\n", name.c_str(),
              misses.empty() ? "yes" : "NO: ", misses.c_str());
  // The stable statistic beside it: how far apart the two are in units of their error bound.
  double lo = INFINITY, hi = 0;
  for (const Row& r : rows) {
    if (r.workers < 3 || r.ring.norm == 0) continue;  // W=2: one rounding each, identical
    lo = std::min(lo, r.ours.norm / r.ring.norm);
    hi = std::max(hi, r.ours.norm / r.ring.norm);
  }
  if (hi > 0) {
    std::printf("%s: ours/ring norm over the rows with W > 2: %.3f .. %.3f\n", name.c_str(), lo,
                hi);
  }
}

int run(const Options& o) {
  const auto start = std::chrono::steady_clock::now();
  std::printf("numerics_bench: sum error against an fp64 reference, seed %llu, %zu elements per "
              "worker, kernels on %s\n",
              static_cast<unsigned long long>(o.seed), o.elements,
              reduce::activeTargetName().c_str());
  std::printf("ULP: distance in the output type to the fp64 reference rounded once to it (0 = "
              "correctly rounded); Rel: |result - ref| / |ref|\n");
  std::printf("ours: rank order and a random arrival order per %zu-element part; ring: NCCL's "
              "reduce-scatter order (chunk c from ring position c+1 round to c) on a ring in rank "
              "order and on a random ring; each the worse of its two\n",
              kPartElems);
  std::printf("norm: mean |result - ref| / (u * sum |terms|), u the type's unit roundoff\n");
  for (const Distribution& d : kDistributions) std::printf("  %-8s %s\n", d.name, d.what);

  std::vector<Row> rows[std::size(kTypes)];
  std::vector<WireRow> wire_rows;
  std::vector<Row> fp64_rows;  // fp32 with RS_FP32_ACCUMULATOR=fp64, against the same rings
  for (size_t di = 0; di < std::size(kDistributions); ++di) {
    const Distribution& d = kDistributions[di];
    for (size_t workers : o.workers) {
      std::seed_seq seq{o.seed, static_cast<uint64_t>(di), static_cast<uint64_t>(workers)};
      std::mt19937_64 rng(seq);
      std::vector<double> x(workers * o.elements);
      d.draw(rng, workers, o.elements, x);
      for (size_t ti = 0; ti < std::size(kTypes); ++ti) {
        const Contributions c = quantize(kTypes[ti], workers, o.elements, x);
        const Reference ref = referenceSums(c);
        const Error ours = Error::worst(
            measure(c.type, oursSum(c, Arrival::kRankOrder, rng), ref),
            measure(c.type, oursSum(c, Arrival::kShuffledPerPart, rng), ref));
        std::vector<size_t> ring(workers);
        std::iota(ring.begin(), ring.end(), 0);
        Error worst_ring = measure(c.type, ringSum(c, ring), ref);
        std::shuffle(ring.begin(), ring.end(), rng);
        worst_ring = Error::worst(worst_ring, measure(c.type, ringSum(c, ring), ref));
        rows[ti].push_back({&d, workers, ours, worst_ring});
        if (c.type != DataType::kFloat32) continue;
        // Wire compression of the same fp32 inputs; each the worse of the two arrival orders.
        const Contributions narrow = narrowToBfloat16(c);
        const auto plain = oursSum(c, Arrival::kRankOrder, rng);
        Reference vs_plain{std::vector<double>(c.n), ref.magnitude};
        for (size_t i = 0; i < c.n; ++i) vs_plain.sum[i] = toDouble(c.type, plain[i]);
        const auto wire_rank = widenBits(oursSum(narrow, Arrival::kRankOrder, rng));
        const auto wire_shuffled = widenBits(oursSum(narrow, Arrival::kShuffledPerPart, rng));
        wire_rows.push_back(
            {&d, workers,
             Error::worst(measure(c.type, wire_rank, ref), measure(c.type, wire_shuffled, ref)),
             ours,
             Error::worst(measure(c.type, wire_rank, vs_plain),
                          measure(c.type, wire_shuffled, vs_plain))});
        // Last, so that the draws above stay those of the tables before this one.
        constexpr auto kWide = Fp32Accumulator::kFp64;
        fp64_rows.push_back(
            {&d, workers,
             Error::worst(measure(c.type, oursSum(c, Arrival::kRankOrder, rng, kWide), ref),
                          measure(c.type, oursSum(c, Arrival::kShuffledPerPart, rng, kWide), ref)),
             worst_ring});
      }
    }
  }
  for (size_t ti = 0; ti < std::size(kTypes); ++ti)
    printTable(kTypes[ti], Fp32Accumulator::kFp32, rows[ti]);
  printTable(DataType::kFloat32, Fp32Accumulator::kFp64, fp64_rows);
  printWireTable(wire_rows);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("\n%.1f s\n", seconds);
  return 0;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  const auto options = rs::bench::parseOptions(argc, argv);
  if (!options) {
    rs::bench::usage();
    return 2;
  }
  return rs::bench::run(*options);
}

// Kernel benchmark: GB/s of the fused sum (reduceInputs) of 2..16 inputs for fp32, bf16 and
// fp16 (fp8e4m3 and fp8e5m2 on request), beside a STREAM triad (a = b + s*c, fp32) measured in the same run on the same
// buffers, threads and store kind (ordinary stores in both), and the ratio kernel / triad.
// Bytes counted: (inputs + 1) x size per kernel call, 3 x size per triad; size is per input.
//
//   kernel_bench [--min-size 64K] [--max-size 256M] [--reps 10] [--types fp32,bf16,fp16]
//                [--inputs 2,4,8,16] [--threads 1] [--target AVX2] [--stagger 0]
//
// Buffers are page-aligned (as the server's are); --stagger B starts buffer k at k * B bytes
// (mod 4 KiB) past the page boundary instead, to see how much 4 KiB aliasing costs.
//
// The triad is vectorised with the same Highway dispatch as the kernels, so it is a memory
// probe rather than a measure of how well the compiler vectorised a C loop.

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/common/byte_size.h"
#include "core/common/text.h"
#include "core/reduce/reduce.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/kernel_bench.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace rs::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// a[i] = b[i] + s * c[i], unrolled like the kernels. count is a multiple of 4 vectors except
// for tiny runs, whose rest is done a lane at a time (the buffers are aligned).
void triad(float* a, const float* b, const float* c, float s, size_t count) {
  const hn::ScalableTag<float> d;
  const size_t n = hn::Lanes(d);
  const auto vs = hn::Set(d, s);
  size_t i = 0;
  if (count >= 4 * n) {
    for (; i <= count - 4 * n; i += 4 * n) {
      const auto r0 = hn::MulAdd(vs, hn::LoadU(d, c + i), hn::LoadU(d, b + i));
      const auto r1 = hn::MulAdd(vs, hn::LoadU(d, c + i + n), hn::LoadU(d, b + i + n));
      const auto r2 = hn::MulAdd(vs, hn::LoadU(d, c + i + 2 * n), hn::LoadU(d, b + i + 2 * n));
      const auto r3 = hn::MulAdd(vs, hn::LoadU(d, c + i + 3 * n), hn::LoadU(d, b + i + 3 * n));
      hn::StoreU(r0, d, a + i);
      hn::StoreU(r1, d, a + i + n);
      hn::StoreU(r2, d, a + i + 2 * n);
      hn::StoreU(r3, d, a + i + 3 * n);
    }
  }
  const hn::CappedTag<float, 1> d1;
  for (; i < count; ++i) {
    hn::StoreU(hn::MulAdd(hn::Set(d1, s), hn::LoadU(d1, c + i), hn::LoadU(d1, b + i)), d1, a + i);
  }
}

}  // namespace rs::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rs::bench {
namespace {

HWY_EXPORT(triad);

using Clock = std::chrono::steady_clock;

struct Options {
  size_t min_size = size_t{64} << 10;
  size_t max_size = size_t{256} << 20;
  int reps = 10;
  std::vector<DataType> types = {DataType::kFloat32, DataType::kBfloat16, DataType::kFloat16};
  std::vector<size_t> inputs = {2, 4, 8, 16};
  int threads = 1;
  std::string target;  // empty: the default dispatch
  size_t stagger = 0;
};

void usage() {
  std::fprintf(stderr,
               "usage: kernel_bench [--min-size 64K] [--max-size 256M] [--reps 10]\n"
               "                    [--types fp32,bf16,fp16 (or fp8e4m3, fp8e5m2)]\n"
               "                    [--inputs 2,4,8,16] [--threads 1] [--target NAME]\n"
               "                    [--stagger BYTES (a multiple of 64)]\n");
}

std::optional<Options> parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h" || i + 1 >= argc) return std::nullopt;
    const std::string_view value = argv[++i];
    if (flag == "--min-size" || flag == "--max-size") {
      const auto size = rs::parseByteSize(value);
      if (!size || *size < 1024) return std::nullopt;
      (flag == "--min-size" ? o.min_size : o.max_size) = *size;
    } else if (flag == "--reps" || flag == "--threads") {
      const auto n = rs::parseUnsigned(value);
      if (!n || *n < 1 || *n > 1000) return std::nullopt;
      (flag == "--reps" ? o.reps : o.threads) = static_cast<int>(*n);
    } else if (flag == "--types") {
      o.types.clear();
      for (auto name : rs::split(value, ',')) {
        const auto t = parseDataType(name);
        if (!t || !rs::isFloatingPoint(*t) || *t == DataType::kFloat64) return std::nullopt;
        o.types.push_back(*t);
      }
    } else if (flag == "--inputs") {
      o.inputs.clear();
      for (auto part : rs::split(value, ',')) {
        const auto n = rs::parseUnsigned(part);
        if (!n || *n < 1 || *n > 64) return std::nullopt;
        o.inputs.push_back(*n);
      }
    } else if (flag == "--stagger") {
      const auto n = rs::parseByteSize(value);
      if (!n || *n % 64 != 0) return std::nullopt;
      o.stagger = *n;
    } else if (flag == "--target") {
      o.target = value;
    } else {
      return std::nullopt;
    }
  }
  if (o.min_size > o.max_size || o.types.empty() || o.inputs.empty()) return std::nullopt;
  return o;
}

// Runs fn(thread, threads) on every thread of a fixed pool and waits for all; the calling
// thread is thread 0, so one thread means no synchronisation at all.
class Pool {
 public:
  explicit Pool(int threads) : start_(threads), done_(threads) {
    for (int t = 1; t < threads; ++t) {
      workers_.emplace_back([this, t, threads] {
        for (;;) {
          start_.arrive_and_wait();
          if (stop_) return;
          job_(t, threads);
          done_.arrive_and_wait();
        }
      });
    }
  }
  ~Pool() {
    stop_ = true;
    if (!workers_.empty()) start_.arrive_and_wait();
    for (auto& w : workers_) w.join();
  }
  void run(const std::function<void(int, int)>& job) {
    const int threads = static_cast<int>(workers_.size()) + 1;
    if (threads == 1) return job(0, 1);
    job_ = job;
    start_.arrive_and_wait();
    job_(0, threads);
    done_.arrive_and_wait();
  }

 private:
  std::barrier<> start_, done_;
  std::function<void(int, int)> job_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// [begin, end) of `count` elements for thread t of `threads`, cut on 64-element boundaries.
std::pair<size_t, size_t> slice(size_t count, int t, int threads) {
  const size_t per = (count / threads + 63) / 64 * 64;
  const size_t begin = std::min(count, per * t);
  return {begin, t + 1 == threads ? count : std::min(count, begin + per)};
}

// A page-aligned allocation whose data starts `offset` bytes in.
class Region {
 public:
  Region(size_t bytes, size_t offset)
      : base_(
            static_cast<uint8_t*>(std::aligned_alloc(4096, (bytes + offset + 4095) / 4096 * 4096))),
        data_(base_ ? base_ + offset : nullptr) {}
  ~Region() { std::free(base_); }
  Region(Region&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)), data_(std::exchange(o.data_, nullptr)) {}
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  Region& operator=(Region&&) = delete;
  uint8_t* get() const { return data_; }

 private:
  uint8_t* base_;
  uint8_t* data_;
};

struct Buffers {
  std::vector<Region> inputs;
  Region out;
  bool ok() const {
    return out.get() && std::all_of(inputs.begin(), inputs.end(), [](auto& r) { return r.get(); });
  }
};

// Every 16-bit half of the data is 0x3C00 plus a small step: a normal number read as fp16
// (1 to 1.25), bf16 (about 0.008) and, in pairs, fp32, so no kernel meets subnormals. Read as
// fp8 the bytes take every value, which costs the same: its kernels have no branches.
Buffers allocate(size_t ninputs, size_t bytes, size_t stagger, Pool& pool) {
  std::vector<Region> inputs;
  for (size_t k = 0; k < ninputs; ++k) inputs.emplace_back(bytes, (k * stagger) % 4096);
  Buffers b{std::move(inputs), Region(bytes, (ninputs * stagger) % 4096)};
  if (!b.ok()) return b;
  const size_t halves = bytes / 2;
  pool.run([&](int t, int threads) {  // first touch by the thread that later works there
    const auto [begin, end] = slice(halves, t, threads);
    for (size_t k = 0; k <= ninputs; ++k) {
      auto* p = k < ninputs ? b.inputs[k].get() : b.out.get();
      for (size_t i = begin; i < end; ++i) {
        const auto v = static_cast<uint16_t>(0x3C00 + ((i + k) & 0xFF));
        std::memcpy(p + 2 * i, &v, 2);
      }
    }
  });
  return b;
}

// GB/s of one timed repetition: enough calls to last a few milliseconds.
double gbps(size_t bytes_per_call, const std::function<void()>& call) {
  const size_t calls = std::max<size_t>(1, (size_t{64} << 20) / bytes_per_call);
  const auto t0 = Clock::now();
  for (size_t c = 0; c < calls; ++c) call();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(bytes_per_call * calls) / s / 1e9;
}

std::string sizeName(size_t bytes) {
  if (bytes >= (size_t{1} << 30) && bytes % (size_t{1} << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

int run(const Options& o) {
  if (!o.target.empty()) {
    bool found = false;
    for (int64_t t : reduce::runnableTargets()) {
      if (reduce::targetName(t) == o.target) {
        reduce::forceTargetForTesting(t);  // Highway-wide, so the triad follows too
        found = true;
      }
    }
    if (!found) {
      std::fprintf(stderr, "kernel_bench: target %s is not runnable here\n", o.target.c_str());
      return 2;
    }
  }
  const size_t max_inputs =
      std::max<size_t>(2, *std::max_element(o.inputs.begin(), o.inputs.end()));
  const double gib = static_cast<double>((max_inputs + 1) * o.max_size) / (1 << 30);
  if (gib > 8.5) {
    std::fprintf(stderr, "kernel_bench: %.1f GiB of buffers is over the 8 GiB limit\n", gib);
    return 2;
  }
  Pool pool(o.threads);
  Buffers buf = allocate(max_inputs, o.max_size, o.stagger, pool);
  if (!buf.ok()) {
    std::fprintf(stderr, "kernel_bench: could not allocate %.1f GiB\n", gib);
    return 1;
  }

  std::printf("kernel_bench: fused sum (reduceInputs) vs STREAM triad, target %s, %d thread%s\n",
              reduce::activeTargetName().c_str(), o.threads, o.threads == 1 ? "" : "s");
  std::printf(
      "GB/s counted as (inputs+1) x size for kernels, 3 x size for triad; "
      "best of %d reps; ordinary stores in both\n\n",
      o.reps);
  std::printf("%-5s %9s %8s", "type", "size/in", "triad");
  for (size_t n : o.inputs) std::printf(" | %2zu in GB/s ratio", n);
  std::printf("\n");

  // The triad runs interleaved with each kernel's repetitions, so both see the same machine
  // state; a row's ratios are against the best triad of that whole row (never flattering).
  for (DataType type : o.types) {
    const size_t esize = dataTypeSize(type);
    for (size_t size = o.min_size; size <= o.max_size; size *= 4) {
      const size_t count = size / esize;
      const size_t triad_count = size / sizeof(float);
      const auto triad = [&] {
        pool.run([&](int t, int threads) {
          const auto [begin, end] = slice(triad_count, t, threads);
          auto* a = reinterpret_cast<float*>(buf.out.get());
          const auto* b = reinterpret_cast<const float*>(buf.inputs[0].get());
          const auto* c = reinterpret_cast<const float*>(buf.inputs[1].get());
          HWY_DYNAMIC_DISPATCH(triad)(a + begin, b + begin, c + begin, 0.5f, end - begin);
        });
      };
      double best_triad = 0;
      std::vector<double> best(o.inputs.size(), 0.0);
      for (size_t j = 0; j < o.inputs.size(); ++j) {
        const size_t n = o.inputs[j];
        const auto kernel = [&] {
          pool.run([&](int t, int threads) {
            const auto [begin, end] = slice(count, t, threads);
            const void* in[64];
            for (size_t k = 0; k < n; ++k) in[k] = buf.inputs[k].get() + begin * esize;
            reduce::reduceInputs(type, ReduceOp::kSum, in, n, buf.out.get() + begin * esize,
                                 end - begin);
          });
        };
        triad();  // warm-up: page tables, caches, dispatch
        kernel();
        for (int r = 0; r < o.reps; ++r) {
          best_triad = std::max(best_triad, gbps(3 * size, triad));
          best[j] = std::max(best[j], gbps((n + 1) * size, kernel));
        }
      }
      std::printf("%-5s %9s %8.1f", std::string(dataTypeName(type)).c_str(), sizeName(size).c_str(),
                  best_triad);
      for (double g : best) std::printf(" | %10.1f %5.2f", g, g / best_triad);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
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
#endif  // HWY_ONCE

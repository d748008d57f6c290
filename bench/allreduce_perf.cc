// allreduce_perf: an nccl-tests-style all-reduce benchmark through the reducers.
//
// Worker mode (one process per member; how multi-host runs use it):
//   allreduce_perf --reducers h:p,h:p --world 4 --rank 0 --group <32 hex> [-b 8K -e 256M ...]
// Local pool mode (the README's main job): starts R reduction-server processes and W worker
// processes of this binary on loopback, measures raw loopback TCP in the same run, and prints
// rank 0's table:
//   allreduce_perf --local-pool 4 --workers 4 [-b 8K -e 256M ...]
// Every size is checked: each member fills its buffer with inputs whose reduction is exact in
// the chosen type and counts the elements of its own result that differ (#wrong: rank 0's).
// The verdict never goes through the reducers under test, which could forge it: each member
// exits 3 if it saw a wrong element, and the local pool's launcher sums the members' counts
// from files they write (--wrong-file), not from an all-reduce.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bench/process_pool.h"
#include "bench/tcp_probe.h"
#include "core/cluster/cluster_spec.h"
#include "core/common/aligned_buffer.h"
#include "core/common/byte_size.h"
#include "core/common/log.h"
#include "core/wire/frame.h"
#include "rs/client.h"
#include "tests/support/verify_pattern.h"

namespace rs::bench {
namespace {

struct Options {
  // worker mode
  std::string reducers;
  int world = 1;
  int rank = 0;
  std::string group;
  std::string wrongFile;  // set by the launcher: where this member writes its wrong-value count
  // local pool mode
  int localPool = 0;
  int workers = 0;
  int serverIoThreads = 1;
  std::string serverBin;
  // both
  std::string minBytes = "8K", maxBytes = "64M";
  int factor = 4;
  int iters = 20, warmup = 5, depth = 1;
  std::string type = "fp32", op = "sum";
  bool check = true;
  bool iterationTimes = false;  // rank 0 prints every timed iteration (depth 1: each latency)
  bool iterationLog = false;  // every rank prints and checks each timed iteration as it ends
  bool registerBuffers = false;  // Communicator::registerBuffer on send and recv (zero-copy)
  uint32_t streams = 0;  // 0: the client's automatic count
  uint32_t clientIoThreads = 1;
  std::string progress = "caller";
  std::string minChunk = "16K", maxChunk = "1M";
  std::string wireDtype = "fp32";  // RS_WIRE_DTYPE: bf16 halves an fp32 sum's bytes
  int deterministic = 0;  // RS_DETERMINISTIC's flag: rank-order sums on the reducers
  std::string fp32Accumulator = "fp32";  // RS_FP32_ACCUMULATOR: fp64 rounds fp32 sums once
  double tcpProbeGbps = 0;  // set by the launcher for the ratio column
  std::string logLevel = "warn";
  std::set<std::string> given;  // the client-knob flags given on the command line
};

// The client knobs that the library also reads from the environment (RS_STREAMS, ...).
const std::vector<std::string> kClientKnobFlags = {"--streams", "--client-io-threads",
                                                   "--progress", "--min-chunk", "--max-chunk",
                                                   "--wire-dtype", "--deterministic",
                                                   "--fp32-accumulator"};

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Wall-clock microseconds since the epoch: what a script beside the run (bash's EPOCHREALTIME)
// can place an event against, such as the moment it killed a reducer.
int64_t epochMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The elements of `result` that differ from the exact all-reduce; with `expected` (its bytes),
// one memcmp first, and element by element only where they differ.
uint64_t countWrong(DataType type, ReduceOp op, int world, uint64_t count, const void* result,
                    const void* expected = nullptr) {
  if (expected && std::memcmp(result, expected, count * dataTypeSize(type)) == 0) return 0;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i)
    if (test::loadAs(type, result, i) != test::expectedResult(type, op, world, i)) ++wrong;
  return wrong;
}

// One member's run over all sizes. Returns the process exit code.
int runWorker(const Options& o) {
  auto reducers = o.reducers.empty() ? cluster::reducersFromEnvironment()
                                     : cluster::parseReducerList(o.reducers);
  if (!reducers) {
    fmt::print(stderr, "allreduce_perf: {}\n", reducers.status().message());
    return 2;
  }
  auto type = parseDataType(o.type);
  auto op = parseReduceOp(o.op);
  auto gid = GroupId::parse(o.group);
  auto minBytes = parseByteSize(o.minBytes), maxBytes = parseByteSize(o.maxBytes);
  auto minChunk = parseByteSize(o.minChunk), maxChunk = parseByteSize(o.maxChunk);
  if (!type || !op || !gid || !minBytes || !maxBytes || !minChunk || !maxChunk) {
    fmt::print(stderr, "allreduce_perf: bad --type/--op/--group/size option\n");
    return 2;
  }
  // The bench's defaults, then the library's environment (RS_TIMEOUT_MS, RS_STREAMS, ...),
  // then the flags given: a silent partner fails the run within RS_TIMEOUT_MS, as in any job.
  client::ClientOptions co;
  auto applyFlags = [&](bool onlyGiven) {
    auto use = [&](const char* flag) { return !onlyGiven || o.given.count(flag) > 0; };
    if (use("--streams")) co.streamsPerReducer = o.streams;
    if (use("--client-io-threads")) co.ioThreads = o.clientIoThreads;
    if (use("--progress"))
      co.progress = *client::ClientOptions::parseProgress(o.progress);  // checked by the CLI
    if (use("--min-chunk")) co.minChunkBytes = *minChunk;
    if (use("--max-chunk")) co.maxChunkBytes = *maxChunk;
    if (use("--wire-dtype"))
      co.float32WireType = *client::ClientOptions::parseWireType(o.wireDtype);  // checked by CLI
    if (use("--deterministic")) co.deterministic = o.deterministic != 0;
    if (use("--fp32-accumulator"))  // checked by the CLI
      co.fp32Accumulator = *client::ClientOptions::parseFp32Accumulator(o.fp32Accumulator);
  };
  applyFlags(/*onlyGiven=*/false);
  co.reducers = *reducers;
  if (Status s = co.applyEnvironment(); !s.isOk()) {
    fmt::print(stderr, "allreduce_perf: {}\n", s.message());
    return 2;
  }
  applyFlags(/*onlyGiven=*/true);
  auto comm = client::Communicator::connect(
      co, {*gid, static_cast<uint32_t>(o.world), static_cast<uint32_t>(o.rank)});
  if (!comm) {
    fmt::print(stderr, "rank {}: {}\n", o.rank, comm.status().toString());
    return 1;
  }
  const size_t elemSize = dataTypeSize(*type);
  const uint64_t maxCount = std::max<uint64_t>(1, *maxBytes / elemSize);
  AlignedBuffer send(maxCount * elemSize);
  std::vector<AlignedBuffer> recv;
  for (int d = 0; d < std::max(1, o.depth); ++d) recv.emplace_back(maxCount * elemSize);
  const bool checkEach = o.iterationLog && o.check;
  // As NCCL's CollNet regMr does: on a fabric, chunks leave from the send buffer without a copy
  // (results land in the worker's ring and are copied into recv whatever is registered).
  if (o.registerBuffers) {
    if (auto reg = (*comm)->registerBuffer(send.data(), send.size()); !reg) {
      fmt::print(stderr, "rank {}: {}\n", o.rank, reg.status().toString());
      return 1;
    }
  }
  AlignedBuffer expected(checkEach ? maxCount * elemSize : 0);

  const bool printer = o.rank == 0;
  const double bound = o.tcpProbeGbps > 0 ? o.tcpProbeGbps / 8 / (2.0 * o.world) : 0;  // GB/s
  if (printer) {
    fmt::print("# allreduce_perf: {} workers, {} reducers x {} streams, {} {}, iters {} warmup {} "
               "depth {}, chunks {}..{}, {} progress, fp32 sums on the wire as {}, fp32 "
               "accumulator {}{}\n",
               o.world, reducers->size(), co.effectiveStreams(), o.type, o.op, o.iters, o.warmup,
               o.depth, formatByteSize(co.minChunkBytes), formatByteSize(co.maxChunkBytes),
               co.progress == client::ClientOptions::Progress::kCaller ? "caller" : "threads",
               dataTypeName(co.float32WireType), fp32AccumulatorName(co.fp32Accumulator),
               co.deterministic ? ", deterministic" : "");
    if (bound > 0)
      fmt::print("# raw loopback TCP in this run: {:.2f} Gbit/s over {} streams; each member moves "
                 "S in and S out, so at that rate algbw would be {:.3f} GB/s (vs TCP = 1). A "
                 "reference, not a hard bound: collectives whose buffers stay in cache can beat "
                 "the streaming probe\n",
                 o.tcpProbeGbps, 2 * o.world, bound);
    fmt::print("# #wrong: elements of this member's results that differ from the exact ones; each "
               "member checks its own and exits 3 on any\n");
    fmt::print("#\n# {:>10}  {:>12}  {:>6}  {:>5}  {:>10}  {:>7}  {:>7}  {:>6}{}\n", "size",
               "count", "type", "redop", "time", "algbw", "busbw", "#wrong",
               bound > 0 ? "  vs TCP" : "");
    fmt::print("# {:>10}  {:>12}  {:>6}  {:>5}  {:>10}  {:>7}  {:>7}  {:>6}{}\n", "(B)",
               "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", bound > 0 ? "   ratio" : "");
  }
  double busSum = 0;
  int rows = 0;
  uint64_t totalWrong = 0;
  for (uint64_t bytes = *minBytes; bytes <= *maxBytes; bytes *= static_cast<uint64_t>(o.factor)) {
    const uint64_t count = std::max<uint64_t>(1, bytes / elemSize);
    for (uint64_t i = 0; i < count; ++i)
      test::storeAs(*type, send.data(), i, test::exactInput(o.rank, i, *op));
    if (checkEach)
      for (uint64_t i = 0; i < count; ++i)
        test::storeAs(*type, expected.data(), i, test::expectedResult(*type, *op, o.world, i));
    std::vector<double> iterationSeconds;
    uint64_t wrong = 0;
    // logged: the timed iterations, each printed as it ends (--iteration-log).
    auto runIters = [&](int n, bool logged) -> Status {
      struct InFlight {
        std::shared_ptr<client::AllReduceRequest> request;
        const void* result;
        int64_t submittedUs;
      };
      std::vector<InFlight> window;
      double last = nowSeconds();
      int done = 0;
      auto complete = [&](const InFlight& f) -> Status {
        RS_RETURN_IF_ERROR(f.request->wait());
        const int64_t endUs = epochMicros();
        const double now = nowSeconds();
        iterationSeconds.push_back(now - last);
        ++done;
        if (logged && o.iterationLog) {
          // Checked outside the all-reduce's own time; the row's mean includes the checks.
          const uint64_t w =
              checkEach ? countWrong(*type, *op, o.world, count, f.result, expected.data()) : 0;
          wrong += w;
          fmt::print("# iteration {} {} {} {} {}\n", done, f.submittedUs, endUs,
                     endUs - f.submittedUs, w);
          std::fflush(stdout);
        }
        last = nowSeconds();
        return Status::ok();
      };
      for (int it = 0; it < n; ++it) {
        if (static_cast<int>(window.size()) >= std::max(1, o.depth)) {
          RS_RETURN_IF_ERROR(complete(window.front()));
          window.erase(window.begin());
        }
        void* result = recv[static_cast<size_t>(it) % recv.size()].data();
        const int64_t submittedUs = epochMicros();
        auto r = (*comm)->allReduceAsync(send.data(), result, count, *type, *op);
        if (!r) return r.status();
        window.push_back({*r, result, submittedUs});
      }
      for (const InFlight& f : window) RS_RETURN_IF_ERROR(complete(f));
      return Status::ok();
    };
    Status s = runIters(o.warmup, false);
    iterationSeconds.clear();
    const double t0 = nowSeconds();
    if (s.isOk()) s = runIters(o.iters, true);
    double seconds = (nowSeconds() - t0) / std::max(1, o.iters);
    if (s.isOk() && o.check) {
      s = (*comm)->allReduce(send.data(), recv[0].data(), count, *type, *op);
      if (s.isOk()) wrong += countWrong(*type, *op, o.world, count, recv[0].data());
    }
    // The slowest member's time, through the service itself (a figure, not the verdict).
    if (s.isOk()) s = (*comm)->allReduce(&seconds, &seconds, 1, DataType::kFloat64, ReduceOp::kMax);
    if (!s.isOk()) {
      fmt::print(stderr, "rank {}: {} bytes: {}\n", o.rank, bytes, s.toString());
      return 1;
    }
    totalWrong += wrong;
    const double algbw = static_cast<double>(count * elemSize) / seconds / 1e9;
    const double busbw = algbw * 2.0 * (o.world - 1) / o.world;
    busSum += busbw;
    ++rows;
    if (printer) {
      std::string ratio = bound > 0 ? fmt::format("  {:>6.2f}", algbw / bound) : "";
      fmt::print("  {:>10}  {:>12}  {:>6}  {:>5}  {:>10.1f}  {:>7.3f}  {:>7.3f}  {:>6}{}\n",
                 count * elemSize, count, o.type, o.op, seconds * 1e6, algbw, busbw, wrong, ratio);
      if (o.iterationTimes) {
        // Completions after the first `depth`, in us: a spread here is what a mean hides.
        std::string times;
        for (double t : iterationSeconds) times += fmt::format(" {:.0f}", t * 1e6);
        fmt::print("# iterations (us):{}\n", times);
      }
      std::fflush(stdout);
    }
    if (bytes > *maxBytes / static_cast<uint64_t>(o.factor)) break;
  }
  // This member's own count: the launcher's verdict sums them, else this line is its verdict.
  if (!o.wrongFile.empty()) {
    std::ofstream f(o.wrongFile);
    f << totalWrong << "\n";
    if (!f.flush()) {
      fmt::print(stderr, "rank {}: cannot write --wrong-file {}\n", o.rank, o.wrongFile);
      return 1;
    }
  } else {
    fmt::print("# Out of bounds values : {} {}\n", totalWrong, totalWrong ? "FAILED" : "OK");
  }
  if (printer) {
    fmt::print("# Avg bus bandwidth    : {:.3f}\n", rows ? busSum / rows : 0.0);
    if (const client::FabricStats f = (*comm)->fabric(); !f.provider.empty())
      fmt::print("# Fabric (rank {}): {} payload bytes sent from registered buffers (zero-copy), "
                 "{} through the send rings\n",
                 o.rank, f.bytesFromRegistered, f.bytesCopied);
    // What keeping uncommitted results cost this member (proto/FAILOVER.md).
    const client::RetentionStats r = (*comm)->retention();
    const double chunks = static_cast<double>(std::max<uint64_t>(1, r.chunks));
    fmt::print("# Retention (rank {}): {} of {} chunks copied ({} bytes; {} into reused buffers), "
               "peak {} of {} bytes, {} collectives waited; RECEIVED {:.2f} and COMMIT {:.2f} "
               "frames a chunk ({} B each)\n#\n",
               o.rank, r.keptChunks, r.chunks, r.keptBytes, r.reusedChunks, r.peakBytes,
               r.capacityBytes, r.waits,
               static_cast<double>(r.receivedFrames) / chunks,
               static_cast<double>(r.commitFrames) / chunks, wire::kHeaderSize);
  }
  return totalWrong == 0 ? 0 : 3;
}

// Starts the pool and the workers, returns rank 0's exit code (or the first failure).
int runLocalPool(Options o, const std::vector<std::string>& passThrough) {
  ProcessPool procs;
  const std::string serverBin =
      o.serverBin.empty() ? executableDir() + "/../server/reduction-server" : o.serverBin;
  if (::access(serverBin.c_str(), X_OK) != 0) {
    fmt::print(stderr, "allreduce_perf: no reducer binary at {} (use --server-bin)\n", serverBin);
    return 2;
  }
  const int workers = o.workers > 0 ? o.workers : 4;
  // Raw TCP first, on an idle machine: one stream per direction per worker.
  const TcpProbeResult tcp = probeLoopbackTcp(2 * workers, std::chrono::milliseconds(1500));
  const double tcpGbps = tcp.bytesPerSecond * 8 / 1e9;

  char dirTemplate[] = "/tmp/rs-local-pool-XXXXXX";
  const std::string dir = ::mkdtemp(dirTemplate) ? dirTemplate : "/tmp";
  std::vector<std::string> endpoints;
  for (int i = 0; i < o.localPool; ++i) {
    const std::string portFile = fmt::format("{}/reducer-{}.port", dir, i);
    procs.spawn({serverBin, "--data-listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0",
                 "--io-threads", std::to_string(o.serverIoThreads), "--port-file", portFile,
                 "--log-level", o.logLevel, "--stats-interval", "0"});
  }
  for (int i = 0; i < o.localPool; ++i) {
    const std::string portFile = fmt::format("{}/reducer-{}.port", dir, i);
    const std::string ports = waitForFile(portFile, std::chrono::seconds(20));
    endpoints.push_back("127.0.0.1:" + ports.substr(0, ports.find(' ')));
    std::remove(portFile.c_str());
  }
  const std::string reducerList = fmt::format("{}", fmt::join(endpoints, ","));
  fmt::print("# local pool: {} reducer processes ({}), {} worker processes\n", o.localPool,
             reducerList, workers);
  std::fflush(stdout);  // before the workers write to the same terminal

  const std::string self = executableDir() + "/allreduce_perf";
  const std::string group = GroupId::random().toString();
  auto wrongFile = [&](int r) { return fmt::format("{}/worker-{}-{}.wrong", dir, group, r); };
  std::vector<pid_t> pids;
  for (int r = 0; r < workers; ++r) {
    std::vector<std::string> argv = {self, "--reducers", reducerList, "--world",
                                     std::to_string(workers), "--rank", std::to_string(r),
                                     "--group", group, "--tcp-probe-gbps",
                                     fmt::format("{}", tcpGbps), "--wrong-file", wrongFile(r)};
    argv.insert(argv.end(), passThrough.begin(), passThrough.end());
    pids.push_back(procs.spawn(argv, /*quietStdout=*/r != 0));
  }
  int result = 0;
  for (size_t r = 0; r < pids.size(); ++r) {
    const int code = procs.wait(pids[r], std::chrono::hours(1));
    if (code != 0 && result == 0) {
      fmt::print(stderr, "allreduce_perf: worker {} exited with {}\n", r, code);
      result = code < 0 ? 1 : code;
    }
  }
  procs.terminateAll();
  // The verdict from every member's own count, read here: nothing the reducers say enters it.
  uint64_t wrong = 0;
  int unreported = 0;
  for (int r = 0; r < workers; ++r) {
    std::ifstream f(wrongFile(r));
    uint64_t count = 0;
    if (f >> count) wrong += count;
    else ++unreported;
    std::remove(wrongFile(r).c_str());
  }
  ::rmdir(dir.c_str());
  const bool ok = wrong == 0 && unreported == 0;
  fmt::print("# Out of bounds values : {} {}{}\n", wrong, ok ? "OK" : "FAILED",
             unreported ? fmt::format(" ({} of {} workers reported no count)", unreported, workers)
                        : "");
  if (result == 0 && !ok) result = 3;
  return result;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  using rs::bench::Options;
  Options o;
  CLI::App app{"allreduce_perf: nccl-tests-style all-reduce benchmark through the reducers"};
  app.add_option("--reducers", o.reducers, "host:port,... (default: RS_REDUCERS / CLUSTER_SPEC)");
  app.add_option("--world", o.world, "Members in the group");
  app.add_option("--rank", o.rank, "This member's rank");
  app.add_option("--group", o.group, "Group id, 32 hex digits, the same on every member");
  app.add_option("--wrong-file", o.wrongFile,
                 "Write this member's wrong-value count here instead of printing its verdict "
                 "(set by --local-pool, whose launcher sums them)");
  app.add_option("--local-pool", o.localPool, "Start this many reducer processes on loopback");
  app.add_option("--workers", o.workers, "Worker processes to start with --local-pool");
  app.add_option("--server-io-threads", o.serverIoThreads, "io threads of each local reducer");
  app.add_option("--server-bin", o.serverBin, "reduction-server binary for --local-pool");
  std::vector<std::pair<std::string, std::string*>> passStrings = {
      {"-b,--min-bytes", &o.minBytes}, {"-e,--max-bytes", &o.maxBytes}, {"-d,--type", &o.type},
      {"-o,--op", &o.op}, {"--min-chunk", &o.minChunk}, {"--max-chunk", &o.maxChunk},
      {"--log-level", &o.logLevel}};
  for (auto& [name, ptr] : passStrings) app.add_option(name, *ptr)->capture_default_str();
  std::string typeNames;
  for (int t = 0; t < rs::kNumDataTypes; ++t)
    typeNames += (t == 0 ? "" : ", ") + std::string(rs::dataTypeName(static_cast<rs::DataType>(t)));
  app.get_option("--type")->description("Element type: " + typeNames);
  app.add_option("-f,--factor", o.factor, "Size multiplier between rows")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "Timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup", o.warmup, "Warm-up iterations per size")->capture_default_str();
  app.add_flag("--iteration-times", o.iterationTimes,
               "Print rank 0's time between completions for every timed iteration");
  app.add_flag("--iteration-log", o.iterationLog,
               "Every rank prints each timed iteration as it ends, '# iteration <k> <submitted> "
               "<completed> <us> <wrong>' (wall-clock epoch us), and with -c 1 checks its result "
               "(outside its time; the row's mean then includes the checks)");
  app.add_option("--depth", o.depth, "All-reduces kept in flight")->capture_default_str();
  app.add_flag("--register", o.registerBuffers,
               "Register the send buffer (Communicator::registerBuffer): on a fabric its chunks "
               "leave from it without a copy");
  app.add_option("-c,--check", o.check, "Check every result (0/1)")->capture_default_str();
  app.add_option("--streams", o.streams, "TCP streams per reducer (0: automatic, RS_STREAMS)")->capture_default_str();
  app.add_option("--client-io-threads", o.clientIoThreads, "Client io threads")->capture_default_str();
  app.add_option("--progress", o.progress,
                 "Who does the client's I/O: io threads, or the caller while it waits")
      ->check([](const std::string& v) {
        auto p = rs::client::ClientOptions::parseProgress(v);
        return p ? std::string() : p.status().message();
      })
      ->capture_default_str();
  app.add_option("--wire-dtype", o.wireDtype,
                 "Wire type of fp32 sum/avg all-reduces: fp32, or bf16 (RS_WIRE_DTYPE)")
      ->check([](const std::string& v) {
        auto t = rs::client::ClientOptions::parseWireType(v);
        return t ? std::string() : t.status().message();
      })
      ->capture_default_str();
  app.add_option("--deterministic", o.deterministic,
                 "Rank-order sums on the reducers, bit-identical run to run (0/1; RS_DETERMINISTIC)")
      ->check(CLI::Range(0, 1))
      ->capture_default_str();
  app.add_option("--fp32-accumulator", o.fp32Accumulator,
                 "The reducers' accumulator for fp32 sums: fp32, or fp64 to round once "
                 "(RS_FP32_ACCUMULATOR)")
      ->check([](const std::string& v) {
        auto a = rs::client::ClientOptions::parseFp32Accumulator(v);
        return a ? std::string() : a.status().message();
      })
      ->capture_default_str();
  app.add_option("--tcp-probe-gbps", o.tcpProbeGbps, "(set by --local-pool)");
  CLI11_PARSE(app, argc, argv);
  for (const std::string& flag : rs::bench::kClientKnobFlags)
    if (app.count(flag) > 0) o.given.insert(flag);
  if (rs::Status s = rs::configureLogging(o.logLevel, "text"); !s.isOk()) {
    fmt::print(stderr, "allreduce_perf: {}\n", s.message());
    return 2;
  }
  if (o.factor < 2 || o.iters < 1 || o.warmup < 0 || o.depth < 1) {
    fmt::print(stderr, "allreduce_perf: need --factor >= 2, --iters >= 1, --depth >= 1\n");
    return 2;
  }
  if (o.localPool > 0) {
    // Everything but the launcher's own options goes to the workers.
    std::vector<std::string> pass = {"-b", o.minBytes, "-e", o.maxBytes, "-d", o.type,
                                     "-o", o.op, "-f", std::to_string(o.factor),
                                     "-n", std::to_string(o.iters), "-w", std::to_string(o.warmup),
                                     "--depth", std::to_string(o.depth),
                                     "-c", o.check ? "1" : "0", "--log-level", o.logLevel};
    // Client knobs only as given, so that the workers' environment applies to the others.
    const std::map<std::string, std::string> knobs = {
        {"--streams", std::to_string(o.streams)},
        {"--client-io-threads", std::to_string(o.clientIoThreads)},
        {"--progress", o.progress}, {"--min-chunk", o.minChunk}, {"--max-chunk", o.maxChunk},
        {"--wire-dtype", o.wireDtype},
        {"--deterministic", std::to_string(o.deterministic)},
        {"--fp32-accumulator", o.fp32Accumulator}};
    for (const auto& [flag, value] : knobs)
      if (o.given.count(flag) > 0) pass.insert(pass.end(), {flag, value});
    if (o.iterationTimes) pass.push_back("--iteration-times");
    if (o.iterationLog) pass.push_back("--iteration-log");
    if (o.registerBuffers) pass.push_back("--register");
    return rs::bench::runLocalPool(o, pass);
  }
  return rs::bench::runWorker(o);
}

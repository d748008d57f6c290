// A restarted reducer rejoins and takes its share back (issue 27, proto/FAILOVER.md "A reducer
// comes back"), with real processes: three reduction-server processes and three worker
// processes (fault_worker, each checking every element of every all-reduce: exact sums of
// exact inputs, so the same bits on every worker). One reducer is killed with SIGKILL in the
// middle of the run; once the survivors took its share, a new reduction-server process is
// started on its port (as Kubernetes or Vertex AI restart a replica under its address). The
// workers redial it (RS_REJOIN_MS) and take it back, and it reduces chunks again. Every state is
// waited for (the workers' lines, the reducers' counters), never a time. The throughput before
// the loss, while degraded and after the rejoin, and the time from the restart to JOIN_AT, are
// printed, not asserted.
//
//   rejoin --server <reduction-server> --worker <fault_worker> [--rejoin-ms N]
// (--rejoin-ms 0: the workers never redial; the run then fails waiting for the rejoin, which
// shows that it waits for the feature and not for a time.)
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/fault/processes.h"

namespace rs::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kWorkers = 3;
constexpr int kReducers = 3;
constexpr int kVictim = 1;
constexpr uint64_t kCount = 256 << 10;  // fp32 per worker and collective: 1 MiB
constexpr int kMeasured = 40;           // collectives per phase measured
constexpr milliseconds kStateDeadline{60000};  // a hang guard, not a speed

struct Driver {
  std::string serverBin, workerBin, dir;
  std::string rejoinMs = "200";
  std::mt19937_64 rng{std::random_device{}()};
  std::vector<Reducer> reducers;
  std::vector<Child> workers;

  std::vector<std::string> reducerFlags() const {
    return {"--io-threads", "2", "--secret-file", dir + "/secret", "--log-level", "info"};
  }
  double counter(int i, const std::string& series) {
    return metric(scrapeOrFail(reducers, i), series);
  }
  std::string describe() { return describeRun({&workers}, reducers, 600); }
  void await(const std::string& what, const std::function<bool()>& condition) {
    awaitOrFail(what, condition, kStateDeadline, [&] {
          pollRun({&workers}, reducers);
          for (auto& w : workers)
            if (w.exited)
              failRun(fmt::format("{} exited {} while waiting for {}\n{}", w.name, w.exitCode,
                                  what, describe()));
        },
        [&] { return describe(); });
  }
  // Every worker has finished at least `n` collectives (each exact, or it would have exited).
  int slowest() {
    int n = INT32_MAX;
    for (auto& w : workers) n = std::min(n, doneCount(w));
    return n;
  }
  // Collectives per second over the next kMeasured on every worker, and MiB/s per worker.
  std::pair<double, double> measure(const std::string& phase) {
    const int from = slowest();
    const auto t0 = Clock::now();
    await(phase + ": " + std::to_string(kMeasured) + " more collectives",
          [&] { return slowest() >= from + kMeasured; });
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double perSecond = kMeasured / seconds;
    return {perSecond, perSecond * kCount * 4 / (1 << 20)};
  }
};

int run(int argc, char** argv) {
  Driver d;
  const DriverArgs args = parseDriverArgs(argc, argv,
                                          "rejoin --server BIN --worker BIN [--rejoin-ms N]",
                                          {{"--rejoin-ms", &d.rejoinMs}});
  d.serverBin = args.serverBin;
  d.workerBin = args.workerBin;
  d.dir = makeRunDir("rs-rejoin", d.rng(), d.rng());
  for (int i = 0; i < kReducers; ++i) {
    auto r = startReducer(d.serverBin, d.dir, i, d.reducerFlags());
    if (!r) failRun(r.status().message());
    d.reducers.push_back(std::move(*r));
  }
  const std::vector<std::string> env =
      workerEnv(d.reducers, d.dir, 60000,
                {"RS_STREAMS=2", "RS_MAX_CHUNK=128KiB", "RS_REJOIN_MS=" + d.rejoinMs});
  d.workers = spawnWorkers(d.workerBin, d.dir, "worker", randomGroupId(d.rng), kWorkers, env,
                           [](int) -> std::vector<std::string> {
                             return {"--count", std::to_string(kCount), "--iters", "1000000"};
                           });
  fmt::print("rejoin: {} workers, {} reducers, {} MiB fp32 sums, RS_REJOIN_MS {}\n", kWorkers,
             kReducers, kCount * 4 >> 20, d.rejoinMs);
  d.await("every worker's first collective", [&] { return d.slowest() >= 1; });
  const auto [beforeRate, beforeMiB] = d.measure("before the loss");

  killChild(d.reducers[kVictim].proc);
  const auto lostAt = Clock::now();
  d.await("the survivors taking the lost reducer's share", [&] {
    return d.counter(0, "rs_failovers_total") + d.counter(2, "rs_failovers_total") >= 1;
  });
  const int atLoss = d.slowest();
  d.await("a collective done by every worker after the loss", [&] { return d.slowest() > atLoss; });
  const auto [degradedRate, degradedMiB] = d.measure("degraded");

  const uint16_t port = d.reducers[kVictim].dataPort;
  auto restarted = startReducer(d.serverBin, d.dir, kVictim, d.reducerFlags(), port);
  if (!restarted) failRun("restarting reducer 1 on its port: " + restarted.status().message());
  d.reducers[kVictim] = std::move(*restarted);
  const auto restartedAt = Clock::now();  // its port file is written: it listens
  d.await("the restarted reducer's JOIN_AT (rs_rejoins_total)",
          [&] { return d.counter(kVictim, "rs_rejoins_total") >= 1; });
  const auto joinedAt = Clock::now();
  const std::string reduced = "rs_chunks_reduced_total{dtype=\"fp32\",op=\"sum\"}";
  d.await("the restarted reducer reducing chunks", [&] { return d.counter(kVictim, reduced) > 0; });
  const auto [afterRate, afterMiB] = d.measure("after the rejoin");
  const double reducedAfter = d.counter(kVictim, reduced);
  const double cancelled = d.counter(kVictim, "rs_rejoins_cancelled_total");

  for (auto& w : d.workers) killChild(w);
  for (auto& r : d.reducers) killChild(r.proc);
  const auto ms = [](Clock::duration t) {
    return std::chrono::duration_cast<milliseconds>(t).count();
  };
  fmt::print("  before the loss:  {:7.1f} collectives/s  {:7.1f} MiB/s per worker\n", beforeRate,
             beforeMiB);
  fmt::print("  degraded (2 of 3): {:6.1f} collectives/s  {:7.1f} MiB/s per worker\n",
             degradedRate, degradedMiB);
  fmt::print("  after the rejoin: {:7.1f} collectives/s  {:7.1f} MiB/s per worker\n", afterRate,
             afterMiB);
  fmt::print("  restart to JOIN_AT: {} ms (the reducer lost {} ms before its restart); the "
             "restarted reducer reduced {} chunks in the {} collectives measured after; {} "
             "rejoins cancelled\n",
             ms(joinedAt - restartedAt), ms(restartedAt - lostAt), reducedAfter, kMeasured,
             cancelled);
  fmt::print("rejoin: reducer {} killed and restarted on its port was taken back; every "
             "collective exact on every worker\n",
             kVictim);
  std::system(("rm -rf " + d.dir).c_str());
  return 0;
}

}  // namespace
}  // namespace rs::test

int main(int argc, char** argv) { return rs::test::run(argc, argv); }

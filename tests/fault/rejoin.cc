// A restarted reducer rejoins and takes its share back (issue 27, proto/FAILOVER.md "A reducer
// comes back"), with real processes: reduction-server processes and three worker processes
// (fault_worker, each checking every element of every all-reduce: exact sums of exact inputs,
// so the same bits on every worker). Reducers are killed with SIGKILL in the middle of the run;
// once the survivors took their share, a new reduction-server process is started on each port
// in turn (as Kubernetes or Vertex AI restart a replica under its address). The workers redial
// it (RS_REJOIN_MS) and take it back, and it reduces chunks again. Every state is waited for
// (the workers' lines, the reducers' counters), never a time. The throughput before the loss,
// while degraded and after each rejoin, and the time from each restart to JOIN_AT, are printed,
// not asserted.
//
//   rejoin --server <reduction-server> --worker <fault_worker> [--rejoin-ms N] [--lose 1|2]
// --lose 1 (the default): reducer 1 of 3 killed and restarted. --lose 2: reducers 1 and 3 of 4
// killed in turn, then 3 restarted and taken back while 1 is still lost (the dead set shrinks
// from {1,3} to {1}), then 1.
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
constexpr uint64_t kCount = 256 << 10;  // fp32 per worker and collective: 1 MiB
constexpr int kMeasured = 40;           // collectives per phase measured
constexpr milliseconds kStateDeadline{60000};  // a hang guard, not a speed

struct Driver {
  std::string serverBin, workerBin, dir;
  std::string rejoinMs = "200";
  std::string lose = "1";
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
  const DriverArgs args = parseDriverArgs(
      argc, argv, "rejoin --server BIN --worker BIN [--rejoin-ms N] [--lose 1|2]",
      {{"--rejoin-ms", &d.rejoinMs}, {"--lose", &d.lose}});
  d.serverBin = args.serverBin;
  d.workerBin = args.workerBin;
  if (d.lose != "1" && d.lose != "2") failRun("rejoin: --lose is 1 or 2, not " + d.lose);
  // Killed in this order, restarted in the other; reducer 0 survives throughout.
  const std::vector<int> victims = d.lose == "1" ? std::vector<int>{1} : std::vector<int>{1, 3};
  const int reducerCount = d.lose == "1" ? 3 : 4;
  d.dir = makeRunDir("rs-rejoin", d.rng(), d.rng());
  for (int i = 0; i < reducerCount; ++i) {
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
  fmt::print("rejoin: {} workers, {} reducers ({} killed, then restarted), {} MiB fp32 sums, "
             "RS_REJOIN_MS {}\n",
             kWorkers, reducerCount, victims.size(), kCount * 4 >> 20, d.rejoinMs);
  d.await("every worker's first collective", [&] { return d.slowest() >= 1; });
  const auto [beforeRate, beforeMiB] = d.measure("before the loss");

  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "  before the loss:    {:7.1f} collectives/s  {:7.1f} MiB/s per worker", beforeRate,
      beforeMiB));
  const auto ms = [](Clock::duration t) {
    return std::chrono::duration_cast<milliseconds>(t).count();
  };
  Clock::time_point lostAt;
  for (size_t i = 0; i < victims.size(); ++i) {
    killChild(d.reducers[static_cast<size_t>(victims[i])].proc);
    lostAt = Clock::now();
    // Reducer 0 learns each loss (rs_failovers_total counts the dead set growing).
    d.await(fmt::format("the survivors taking reducer {}'s share", victims[i]), [&] {
      return d.counter(0, "rs_failovers_total") >= static_cast<double>(i + 1);
    });
    const int atLoss = d.slowest();
    d.await("a collective done by every worker after the loss",
            [&] { return d.slowest() > atLoss; });
  }
  const auto [degradedRate, degradedMiB] = d.measure("degraded");
  lines.push_back(fmt::format(
      "  degraded ({} of {}):   {:6.1f} collectives/s  {:7.1f} MiB/s per worker",
      reducerCount - static_cast<int>(victims.size()), reducerCount, degradedRate, degradedMiB));

  const std::string reduced = "rs_chunks_reduced_total{dtype=\"fp32\",op=\"sum\"}";
  for (auto it = victims.rbegin(); it != victims.rend(); ++it) {
    const int victim = *it;
    const auto v = static_cast<size_t>(victim);
    const uint16_t port = d.reducers[v].dataPort;
    auto restarted = startReducer(d.serverBin, d.dir, victim, d.reducerFlags(), port);
    if (!restarted)
      failRun(fmt::format("restarting reducer {} on its port: {}", victim,
                       restarted.status().message()));
    d.reducers[v] = std::move(*restarted);
    const auto restartedAt = Clock::now();  // its port file is written: it listens
    d.await(fmt::format("reducer {}'s JOIN_AT (rs_rejoins_total), {} still lost", victim,
                        std::distance(it, victims.rend()) - 1),
            [&] { return d.counter(victim, "rs_rejoins_total") >= 1; });
    const auto joinedAt = Clock::now();
    d.await(fmt::format("reducer {} reducing chunks", victim),
            [&] { return d.counter(victim, reduced) > 0; });
    const auto [afterRate, afterMiB] = d.measure(fmt::format("after reducer {}'s rejoin", victim));
    lines.push_back(fmt::format(
        "  after reducer {}'s rejoin: {:5.1f} collectives/s  {:7.1f} MiB/s per worker; restart to "
        "JOIN_AT {} ms ({} ms after the last loss); it had reduced {} chunks by the end of "
        "that measure; {} rejoins cancelled",
        victim, afterRate, afterMiB, ms(joinedAt - restartedAt), ms(restartedAt - lostAt),
        d.counter(victim, reduced), d.counter(victim, "rs_rejoins_cancelled_total")));
  }

  for (auto& w : d.workers) killChild(w);
  for (auto& r : d.reducers) killChild(r.proc);
  for (const std::string& line : lines) fmt::print("{}\n", line);
  std::string names;
  for (int v : victims) names += (names.empty() ? "" : " and ") + std::to_string(v);
  fmt::print("rejoin: reducer(s) {} killed and restarted on their ports were taken back; every "
             "collective exact on every worker\n",
             names);
  std::system(("rm -rf " + d.dir).c_str());
  return 0;
}

}  // namespace
}  // namespace rs::test

int main(int argc, char** argv) { return rs::test::run(argc, argv); }

// A peer that stops without a word (issue 27: "a silent reducer", "a member lost"): real
// reduction-server processes and real worker processes (fault_worker), one of them stopped
// with SIGSTOP in the middle of a collective, its kernel still answering TCP. The loss bound
// (RS_LOSS_DETECT_MS, under the reducers' --loss-detect-ms) must find it, not the collective
// timeout (set far above it):
//   - a reducer stopped mid-collective: losing a reducer is not an error (proto/FAILOVER.md):
//     a member finds it silent, the other reducer takes over its chunks and tells the other
//     members (or they find it themselves), and every member finishes every collective exact,
//     within the bound plus the resend (the stall is printed); the other reducer counts the
//     failover and lets go of the group at the end;
//   - a member stopped inside its collective: its group fails on the reducer, which counts it
//     in rs_members_lost_total (reason "silent": nothing came from it for the bound, or
//     "unresponsive": it read nothing of its results for the bound, TCP_USER_TIMEOUT; a stopped
//     process does both, and its kernel may go on sending what it had buffered for a while),
//     and the other members get that reason, while a healthy second group on the same reducer
//     keeps completing exact collectives. Its second collective (16 MiB) is larger than what
//     its kernel can buffer, so the reducer still waits on it when it stops (a member whose
//     kernel took a whole collective before it stopped looks, to the reducer, like a member
//     that finished it: the next collective's straggler, which the collective timeout bounds).
// The moments are states (fault_loop's way): the workers stop themselves before their second
// collective; one is let go alone and held inside its chunk by --max-lead until the others
// come; the driver stops a process once the reducers' byte counters show the collective under
// way. The time from the stop to each error is printed, and asserted only against the bound
// plus a wide margin, which the collective timeout is far above.
//
//   silent_peer --server <reduction-server> --worker <fault_worker>
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
// The group under test asks for this loss bound (RS_LOSS_DETECT_MS); the reducers' flag, the
// bound of the healthy group, is kept long, so that a loaded machine's stall loses no one there.
constexpr int kLossMs = 1000;
constexpr int kReducerLossMs = 30000;  // --loss-detect-ms
constexpr int kTimeoutMs = 60000;        // --collective-timeout-ms, RS_TIMEOUT_MS: far above
constexpr milliseconds kMargin{5000};    // beyond the bound: a hang guard, not a speed
constexpr milliseconds kStateDeadline{30000};
// Per member and collective: 1 MiB in chunks of 512 KiB (larger than --max-lead's 64 KiB, so
// a lone sender is held inside its chunks); the stopped member's collective 16 MiB, four times
// the most a socket's send buffer holds here (net.ipv4.tcp_wmem's 4 MiB).
constexpr uint64_t kCount = 256 << 10;
constexpr uint64_t kLargeCount = 4 << 20;

struct Driver {
  std::string serverBin, workerBin, dir;
  std::mt19937_64 rng{std::random_device{}()};
  std::vector<Reducer> reducers;
  std::vector<Child> workers;  // the group under test
  std::vector<Child> healthy;  // a second group, where one runs beside it

  void startReducers(int n) {
    reducers.clear();
    for (int i = 0; i < n; ++i) {
      auto r = startReducer(serverBin, dir, i,
                            {"--io-threads", "2", "--secret-file", dir + "/secret",
                             "--loss-detect-ms", std::to_string(kReducerLossMs),
                             "--collective-timeout-ms", std::to_string(kTimeoutMs), "--piece",
                             "64KiB", "--max-lead", "64KiB", "--log-level", "warn"});
      if (!r) failRun(r.status().message());
      reducers.push_back(std::move(*r));
    }
  }
  void stopReducers() {
    for (auto& r : reducers) killChild(r.proc);
  }
  double counter(int i, const std::string& series) {
    return metric(scrapeOrFail(reducers, i), series);
  }

  // `world` workers of a fresh group: `iters` collectives of `counts` ("a,b": the first a, the
  // rest b), each stopping itself before collective `stopBefore` (-1: never), asking for the
  // loss bound `lossMs` (0: the reducers').
  std::vector<Child> spawnGroup(const std::string& name, int world, int iters,
                                const std::string& counts, int stopBefore, int lossMs) {
    const std::vector<std::string> env =
        workerEnv(reducers, dir, kTimeoutMs,
                  {"RS_STREAMS=1", "RS_MAX_CHUNK=512KiB", fmt::format("RS_LOSS_DETECT_MS={}", lossMs)});
    return spawnWorkers(workerBin, dir, name, randomGroupId(rng), world, env, [&](int) {
      std::vector<std::string> args = {"--counts", counts, "--iters", std::to_string(iters)};
      for (std::string& a : stopBeforeArgs(stopBefore)) args.push_back(std::move(a));
      return args;
    });
  }

  void pollAll() { pollRun({&workers, &healthy}, reducers); }
  std::string describe() { return describeRun({&workers, &healthy}, reducers); }
  void await(const std::string& what, const std::function<bool()>& condition) {
    awaitOrFail(what, condition, kStateDeadline, [&] { pollAll(); }, [&] { return describe(); });
  }
  // Every worker of the group ran its first collective exactly and stopped before the second.
  void awaitFirstDoneAndStopped() {
    await("the group's first all-reduce and every member stopped", [&] {
      for (auto& w : workers) {
        if (w.exited) failRun(fmt::format("{} exited {} before the fault\n{}", w.name, w.exitCode, describe()));
        if (!w.stopped || lineStartingWith(w, "done 0").empty()) return false;
      }
      return true;
    });
  }
  double received(int reducer) { return counter(reducer, "rs_received_bytes_total"); }

  // Every worker but `skip` must exit with an error that contains each of `parts`, within the
  // bound plus the margin of `from` (`fromWhat`); prints how long each took.
  void checkErrors(const std::string& scenario, int skip, Clock::time_point from,
                   const std::string& fromWhat, const std::vector<std::string>& parts) {
    for (int w = 0; w < kWorkers; ++w) {
      if (w == skip) continue;
      Child& c = workers[static_cast<size_t>(w)];
      const milliseconds limit = milliseconds(kLossMs) + kMargin;
      if (!waitFor([&] { return c.exited; }, limit + milliseconds(kTimeoutMs),
                   [&] { pollAll(); }))
        failRun(fmt::format("{}: {} hung\n{}", scenario, c.name, describe()));
      const auto took = std::chrono::duration_cast<milliseconds>(c.exitedAt - from);
      const std::string error = lineStartingWith(c, "error ");
      fmt::print("  {}: {} failed {} ms after {}: {}\n", scenario, c.name, took.count(), fromWhat,
                 error);
      if (c.exitCode != 3 || error.empty())
        failRun(fmt::format("{}: {} exited {} without an error\n{}", scenario, c.name, c.exitCode,
                         describe()));
      for (const std::string& part : parts)
        if (error.find(part) == std::string::npos)
          failRun(fmt::format("{}: {}'s error does not name '{}'\n{}", scenario, c.name, part,
                           describe()));
      if (took > limit)
        failRun(fmt::format("{}: {} took {} ms, beyond the bound ({} ms) and the margin", scenario,
                         c.name, took.count(), kLossMs));
    }
  }
};

// A reducer stopped while a collective is in flight on it.
void silentReducer(Driver& d) {
  d.startReducers(2);
  d.workers = d.spawnGroup("worker", kWorkers, 3, std::to_string(kCount), 1, kLossMs);
  d.awaitFirstDoneAndStopped();
  const int victim = 0, sender = 0;
  const double base = d.received(victim);
  continueChild(d.workers[sender]);
  d.await("the sender's first bytes on the reducer", [&] { return d.received(victim) > base; });
  stopChild(d.reducers[victim].proc);
  d.await("the reducer to stop", [&] { return d.reducers[victim].proc.stopped; });
  const auto stoppedAt = Clock::now();
  for (int w = 1; w < kWorkers; ++w) continueChild(d.workers[static_cast<size_t>(w)]);
  // Every worker finishes every collective exact, the stopped reducer's chunks on the other.
  for (int w = 0; w < kWorkers; ++w) {
    Child& c = d.workers[static_cast<size_t>(w)];
    const milliseconds limit = milliseconds(kLossMs) + kMargin;
    if (!waitFor([&] { return c.exited; }, limit + milliseconds(kTimeoutMs), [&] { d.pollAll(); }))
      failRun(fmt::format("silent reducer: {} hung\n{}", c.name, d.describe()));
    const auto took = std::chrono::duration_cast<milliseconds>(c.exitedAt - stoppedAt);
    fmt::print("  silent reducer: {} finished {} ms after the stop\n", c.name, took.count());
    if (c.exitCode != 0 || lineStartingWith(c, "finished").empty())
      failRun(fmt::format("silent reducer: {} exited {}: losing a reducer is not an error\n{}",
                       c.name, c.exitCode, d.describe()));
    if (took > limit)
      failRun(fmt::format("silent reducer: {} took {} ms, beyond the bound ({} ms) and the margin",
                       c.name, took.count(), kLossMs));
  }
  if (d.counter(1, "rs_failovers_total") < 1)
    failRun("silent reducer: reducer 1 counted no failover\n" + d.describe());
  // The other reducer lives and lets go of the group.
  d.await("reducer 1 to hold no groups", [&] {
    return d.counter(1, "rs_groups") == 0 && d.counter(1, "rs_slot_memory_in_use_bytes") == 0;
  });
  if (d.reducers[1].proc.exited) failRun("reducer 1 died\n" + d.describe());
  d.stopReducers();  // SIGKILL ends the stopped one too
}

// A member stopped inside its chunk, beside a healthy group.
void silentMember(Driver& d) {
  d.startReducers(1);
  d.workers =
      d.spawnGroup("worker", kWorkers, 3, fmt::format("{},{}", kCount, kLargeCount), 1, kLossMs);
  d.awaitFirstDoneAndStopped();
  const int victim = 0;
  const double base = d.received(0);
  continueChild(d.workers[victim]);
  d.await("the victim's first bytes", [&] { return d.received(0) > base; });
  stopChild(d.workers[victim]);
  d.await("the victim to stop", [&] { return d.workers[victim].stopped; });
  // The healthy group runs through what follows, until it is stopped at the end (1e9
  // collectives): each collective is checked exact by the worker itself, which would print
  // "wrong" and exit.
  d.healthy = d.spawnGroup("healthy", 2, 1000000000, std::to_string(16 << 10), -1, 0);
  d.await("the healthy group's first collective", [&] {
    return !lineStartingWith(d.healthy[0], "done 0").empty() &&
           !lineStartingWith(d.healthy[1], "done 0").empty();
  });
  // The reducer waits on the victim once the others catch up with it (until then it holds the
  // victim back itself): the clock starts there.
  const auto othersGoOn = Clock::now();
  for (int w = 1; w < kWorkers; ++w) continueChild(d.workers[static_cast<size_t>(w)]);
  d.checkErrors("silent member", victim, othersGoOn, "the others went on",
                {"aborted the group: rank 0 stream 0: ", "member lost"});
  const double silent = d.counter(0, "rs_members_lost_total{reason=\"silent\"}");
  const double unresponsive = d.counter(0, "rs_members_lost_total{reason=\"unresponsive\"}");
  fmt::print("  silent member: rs_members_lost_total silent {} unresponsive {}\n", silent,
             unresponsive);
  if (silent + unresponsive != 1) failRun("rs_members_lost_total is not 1\n" + d.describe());
  // The healthy group went on through it, exact: 20 more collectives after the failure.
  const int before = doneCount(d.healthy[0]);
  d.await("the healthy group's 20 collectives after the failure", [&] {
    for (auto& h : d.healthy)
      if (h.exited) failRun(fmt::format("{} exited {}\n{}", h.name, h.exitCode, d.describe()));
    return doneCount(d.healthy[0]) >= before + 20 && doneCount(d.healthy[1]) >= before + 20;
  });
  for (auto& h : d.healthy)
    if (!lineStartingWith(h, "wrong").empty() || !lineStartingWith(h, "error").empty())
      failRun(fmt::format("{} was not exact\n{}", h.name, d.describe()));
  fmt::print("  silent member: the healthy group completed {} exact collectives, {} of them "
             "after the failure\n",
             doneCount(d.healthy[0]), doneCount(d.healthy[0]) - before);
  for (auto& h : d.healthy) killChild(h);
  killChild(d.workers[victim]);
  d.stopReducers();
}

int run(int argc, char** argv) {
  Driver d;
  const DriverArgs args = parseDriverArgs(argc, argv, "silent_peer --server BIN --worker BIN");
  d.serverBin = args.serverBin;
  d.workerBin = args.workerBin;
  d.dir = makeRunDir("rs-silent-peer", d.rng(), d.rng());
  fmt::print("silent_peer: RS_LOSS_DETECT_MS {} (--loss-detect-ms {}), collective timeout {} ms, "
             "{} workers\n",
             kLossMs, kReducerLossMs, kTimeoutMs, kWorkers);
  silentReducer(d);
  silentMember(d);
  fmt::print("silent_peer: a stopped reducer was found within the bound and its chunks moved, "
             "every collective exact; a stopped member was found within the bound; the healthy "
             "group stayed exact\n");
  std::system(("rm -rf " + d.dir).c_str());
  return 0;
}

}  // namespace
}  // namespace rs::test

int main(int argc, char** argv) { return rs::test::run(argc, argv); }

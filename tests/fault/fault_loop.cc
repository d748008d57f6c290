// The fault loop (issue 15, item 4; issue 27, item 5): real reducer processes and real worker
// processes (fault_worker), and in every round one random kill -9 of a worker or a reducer at
// one of four moments of a collective: before it sends, mid-chunk, after it sent, while results
// are in flight. A worker killed: every surviving worker exits with a clear error within the
// configured timeout (plus a margin: a bound on a hang, not a speed). A reducer killed: losing a
// reducer is not an error (proto/FAILOVER.md): every worker finishes every collective exact,
// and the stall (from the kill to the fault collective's end on its slowest worker) is printed.
// Either way no process hangs, no reducer but the victim dies (a killed reducer is restarted),
// and the next round's fresh group starts with an exact all-reduce. A last fresh group must run
// clean. Each round's group sums fp32 or bf16, with or without deterministic mode
// (RS_DETERMINISTIC=1): every (kind, moment, type, mode) in turn, in a seeded random order.
//
// The moments are states, never sleeps: every worker stops itself (SIGSTOP) before its second
// collective; the driver then lets chosen workers go on and reads the reducers' byte counters
// (rs_received_bytes_total, rs_sent_bytes_total) to know how far a collective got. A lone sender
// is held mid-chunk by the reducers' --max-lead (it may not run more than that ahead of the
// slowest member), so "mid-chunk" is a stable state, not a race.
//
//   fault_loop --server <reduction-server> --worker <fault_worker>
// RS_FAULT_SEED replays a run (the seed is printed); RS_FAULT_ROUNDS sets the round count.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <optional>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/reduce/dtype.h"
#include "tests/fault/processes.h"

namespace rs::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kWorkers = 3;
constexpr int kReducers = 2;
// The first collective of a round (checked exact) and the mid-chunk fault collective move
// 1 MiB per member in chunks of 512 KiB, larger than the reducers' --max-lead of 64 KiB, so a
// lone sender is held inside its chunks. The other fault collectives move 64 KiB per member in
// chunks below the lead limit, so members can finish sending while one member holds back.
constexpr uint64_t kCount = 256 << 10;
constexpr uint64_t kSmallCount = 16 << 10;
// RS_TIMEOUT_MS and --collective-timeout-ms. Every fault here ends its group at once (a member
// or a reducer gone); the timeout only bounds what would otherwise hang, and is long enough
// that a fresh group's members, started on a loaded machine, never time out waiting for each
// other.
constexpr int kTimeoutMs = 5000;
constexpr milliseconds kMargin{5000};        // beyond the timeout: only a hang guard
constexpr milliseconds kStateDeadline{30000};  // for a state to be reached (a hang guard)

enum Kind { kWorker, kReducer };
// A round's element type and mode: bf16 is summed in an fp32 accumulator and sent back
// narrowed, deterministic mode stages every member's contribution and sums in rank order.
struct Variant {
  DataType type;
  bool deterministic;
};
constexpr std::array<Variant, 4> kVariants = {Variant{DataType::kFloat32, false},
                                              Variant{DataType::kFloat32, true},
                                              Variant{DataType::kBfloat16, false},
                                              Variant{DataType::kBfloat16, true}};
enum Moment { kBeforeSend, kMidChunk, kAfterSent, kResultsInFlight };
constexpr std::array<const char*, 2> kKindNames = {"worker", "reducer"};
constexpr std::array<const char*, 4> kMomentNames = {"before-send", "mid-chunk", "after-sent",
                                                     "results-in-flight"};

struct Driver {
  std::string serverBin, workerBin, dir;
  std::mt19937_64 rng;
  std::vector<Reducer> reducers;
  std::vector<Child> workers;
  std::vector<Clock::time_point> clockFrom;  // per worker: when its error may start to be due

  std::vector<std::string> reducerFlags() const {
    return {"--io-threads", "2", "--secret-file", dir + "/secret", "--collective-timeout-ms",
            std::to_string(kTimeoutMs), "--piece", "64KiB", "--max-lead", "64KiB",
            "--log-level", "warn"};
  }

  void startReducer(int i) {
    auto r = rs::test::startReducer(serverBin, dir, i, reducerFlags());
    if (!r) failRun(r.status().message());
    reducers[static_cast<size_t>(i)] = std::move(*r);
  }

  Metrics scrape(int i) { return scrapeOrFail(reducers, i); }
  double counter(int i, const char* name) { return metric(scrape(i), name); }
  double received() {
    double s = 0;
    for (int i = 0; i < kReducers; ++i) s += counter(i, "rs_received_bytes_total");
    return s;
  }

  void pollAll() { pollRun({&workers}, reducers); }
  std::string describe() { return describeRun({&workers}, reducers); }
  void await(const std::string& what, const std::function<bool()>& condition) {
    awaitOrFail(what, condition, kStateDeadline, [&] { pollAll(); }, [&] { return describe(); });
  }

  void spawnWorkers(const std::string& group, int iters, int stopBefore, uint64_t faultCount,
                    Variant variant) {
    const std::vector<std::string> env = workerEnv(
        reducers, dir, kTimeoutMs,
        {"RS_STREAMS=1", "RS_MAX_CHUNK=512KiB",
         fmt::format("RS_DETERMINISTIC={}", variant.deterministic ? 1 : 0)});
    workers = rs::test::spawnWorkers(workerBin, dir, "worker", group, kWorkers, env, [&](int) {
      std::vector<std::string> args = {"--counts", fmt::format("{},{}", kCount, faultCount),
                                       "--iters", std::to_string(iters), "--type",
                                       std::string(dataTypeName(variant.type))};
      for (std::string& a : stopBeforeArgs(stopBefore)) args.push_back(std::move(a));
      return args;
    });
    clockFrom.assign(kWorkers, Clock::now());
  }

  void resume(int w) {
    continueChild(workers[static_cast<size_t>(w)]);
    clockFrom[static_cast<size_t>(w)] = Clock::now();
  }
  void resumeAllBut(int skip) {
    for (int w = 0; w < kWorkers; ++w)
      if (w != skip && !workers[static_cast<size_t>(w)].exited) resume(w);
  }
  bool hasLine(int w, const std::string& prefix) {
    return !lineStartingWith(workers[static_cast<size_t>(w)], prefix).empty();
  }
  void stopAndWait(int w) {
    stopChild(workers[static_cast<size_t>(w)]);
    await(fmt::format("worker {} to stop", w), [&] { return workers[static_cast<size_t>(w)].stopped; });
  }
  void killWorker(int w) {
    if (!killChild(workers[static_cast<size_t>(w)])) failRun("a killed worker was not reaped");
  }
  void killReducer(int k) {
    if (!killChild(reducers[static_cast<size_t>(k)].proc)) failRun("a killed reducer was not reaped");
  }
  void markKilled(Clock::time_point at) {
    for (auto& c : clockFrom) c = std::max(c, at);
  }
  // Waits until `baseline` + bytes arrived over all reducers.
  void awaitReceived(double baseline, double bytes, const std::string& what) {
    await(what, [&] { return received() - baseline >= bytes; });
  }
};

// A reducer killed: every worker must finish every collective exact, within the timeout +
// margin of its clock (a hang guard). Returns the slowest worker's time from its clock to the
// fault collective's end: the stall of the failover.
milliseconds checkFinished(Driver& d, const std::string& round) {
  // When each worker's fault collective ended, as first seen by polling them all together.
  std::vector<std::optional<Clock::time_point>> doneAt(kWorkers);
  const bool allDone = waitFor(
      [&] {
        bool all = true;
        for (int w = 0; w < kWorkers; ++w) {
          auto& c = d.workers[static_cast<size_t>(w)];
          if (!doneAt[w] && (d.hasLine(w, "done 1") || c.exited)) doneAt[w] = Clock::now();
          all = all && doneAt[w].has_value();
        }
        return all;
      },
      milliseconds(kTimeoutMs) + kMargin, [&] { d.pollAll(); });
  if (!allDone)
    failRun(fmt::format("{}: the fault collective did not end on every worker within {} ms + {} ms "
                     "of the fault\n{}",
                     round, kTimeoutMs, kMargin.count(), d.describe()));
  milliseconds slowest{0};
  for (int w = 0; w < kWorkers; ++w) {
    auto& c = d.workers[static_cast<size_t>(w)];
    const auto due = d.clockFrom[static_cast<size_t>(w)] + milliseconds(kTimeoutMs) + kMargin;
    const bool ended = waitFor([&] { return c.exited; },
                               std::chrono::duration_cast<milliseconds>(due - Clock::now()),
                               [&] { d.pollAll(); });
    if (!ended) {
      const std::string what = d.describe();
      killChild(c);
      failRun(fmt::format("{}: worker {} hung: not finished within {} ms + {} ms of the fault\n{}",
                       round, w, kTimeoutMs, kMargin.count(), what));
    }
    if (c.exitCode != 0 || !d.hasLine(w, "finished"))
      failRun(fmt::format("{}: worker {} exited {} after a reducer was lost: losing a reducer is not "
                       "an error\n{}",
                       round, w, c.exitCode, d.describe()));
    slowest = std::max(slowest, std::chrono::duration_cast<milliseconds>(
                                    *doneAt[w] - d.clockFrom[static_cast<size_t>(w)]));
  }
  return slowest;
}

// Every survivor must exit with a clear error within the timeout + margin of its clock.
// Returns the slowest survivor's time to its error.
milliseconds checkSurvivors(Driver& d, int victimWorker, const std::string& round,
                            std::string* sample) {
  milliseconds slowest{0};
  for (int w = 0; w < kWorkers; ++w) {
    if (w == victimWorker) continue;
    auto& c = d.workers[static_cast<size_t>(w)];
    const auto due = d.clockFrom[static_cast<size_t>(w)] + milliseconds(kTimeoutMs) + kMargin;
    const bool ended = waitFor([&] { return c.exited; }, std::chrono::duration_cast<milliseconds>(due - Clock::now()),
                               [&] { d.pollAll(); });
    if (!ended) {
      const std::string what = d.describe();
      killChild(c);
      failRun(fmt::format("{}: worker {} hung: no exit within {} ms + {} ms of the fault\n{}", round,
                       w, kTimeoutMs, kMargin.count(), what));
    }
    const std::string error = lineStartingWith(c, "error ");
    if (c.exitCode != 3 || error.size() < 12)
      failRun(fmt::format("{}: worker {} exited {} without a clear error\n{}", round, w, c.exitCode,
                       d.describe()));
    if (sample->empty()) *sample = error.substr(error.find(' ', 6) + 1);
    slowest = std::max(slowest, std::chrono::duration_cast<milliseconds>(
                                    c.exitedAt - d.clockFrom[static_cast<size_t>(w)]));
  }
  return slowest;
}

int run(int argc, char** argv) {
  Driver d;
  const DriverArgs args = parseDriverArgs(argc, argv, "fault_loop --server BIN --worker BIN");
  d.serverBin = args.serverBin;
  d.workerBin = args.workerBin;
  const uint64_t seed = std::getenv("RS_FAULT_SEED") ? std::strtoull(std::getenv("RS_FAULT_SEED"), nullptr, 10)
                                                    : std::random_device{}();
  const int rounds = std::getenv("RS_FAULT_ROUNDS") ? std::atoi(std::getenv("RS_FAULT_ROUNDS")) : 104;
  fmt::print("fault_loop: seed {} (RS_FAULT_SEED={} replays it), {} rounds, {} workers, {} reducers, "
             "{} KiB per member in fp32, timeout {} ms\n",
             seed, seed, rounds, kWorkers, kReducers, kCount * 4 >> 10, kTimeoutMs);
  std::fflush(stdout);
  d.rng.seed(seed);

  d.dir = makeRunDir("rs-fault-loop", d.rng(), d.rng());
  d.reducers.resize(kReducers);
  for (int i = 0; i < kReducers; ++i) d.startReducer(i);

  std::array<std::array<int, 4>, 2> count{};
  std::array<int, kVariants.size()> variantRounds{};
  std::array<std::array<long, 4>, 2> slowest{};
  std::array<std::array<std::string, 4>, 2> sample;  // one survivor's error of each kind
  std::vector<int> order;
  const auto t0 = Clock::now();
  for (int round = 0; round < rounds; ++round) {
    if (order.empty()) {  // every (kind, moment, variant) once per 32 rounds, in a random order
      for (int s = 0; s < 8 * static_cast<int>(kVariants.size()); ++s) order.push_back(s);
      std::shuffle(order.begin(), order.end(), d.rng);
    }
    const int scenario = order.back() % 8;
    const int variantIndex = order.back() / 8;
    order.pop_back();
    const Variant variant = kVariants[static_cast<size_t>(variantIndex)];
    variantRounds[static_cast<size_t>(variantIndex)]++;
    const Kind kind = static_cast<Kind>(scenario / 4);
    const Moment moment = static_cast<Moment>(scenario % 4);
    const int victim = static_cast<int>(d.rng() % (kind == kWorker ? kWorkers : kReducers));
    // A worker that is not the victim: the one held back, or the sender.
    int other = static_cast<int>(d.rng() % (kind == kWorker ? kWorkers - 1 : kWorkers));
    if (kind == kWorker && other >= victim) ++other;
    const std::string name = fmt::format("round {} ({} {} {}, {}{})", round, kKindNames[kind],
                                         victim, kMomentNames[moment], dataTypeName(variant.type),
                                         variant.deterministic ? ", deterministic" : "");

    // A fresh group: its first all-reduce must be exact; then every member stops before the second.
    const uint64_t faultCount = moment == kMidChunk ? kCount : kSmallCount;
    const double kBytes = static_cast<double>(faultCount * dataTypeSize(variant.type));
    d.spawnWorkers(randomGroupId(d.rng), 3, 1, faultCount, variant);
    d.await(name + ": the fresh group's first all-reduce and every member stopped", [&] {
      for (int w = 0; w < kWorkers; ++w) {
        auto& c = d.workers[static_cast<size_t>(w)];
        if (c.exited) failRun(fmt::format("{}: worker {} exited {} before the fault\n{}", name, w, c.exitCode, d.describe()));
        if (!c.stopped || !d.hasLine(w, "done 0")) return false;
      }
      return true;
    });
    const double base = d.received();
    const double sentBase = kind == kReducer ? d.counter(victim, "rs_sent_bytes_total") : 0;
    const double victimBase = kind == kReducer ? d.counter(victim, "rs_received_bytes_total") : 0;

    const int victimWorker = kind == kWorker ? victim : -1;
    if (kind == kWorker) {
      switch (moment) {
        case kBeforeSend:  // the others have sent everything; the victim never starts
          d.resumeAllBut(victim);
          d.awaitReceived(base, (kWorkers - 1) * kBytes, name + ": the others' contributions");
          d.killWorker(victim);
          d.markKilled(Clock::now());
          break;
        case kMidChunk:  // the victim alone sends; the lead limit holds it inside its chunks
          d.resume(victim);
          d.awaitReceived(base, 1, name + ": the victim's first bytes");
          if (d.received() - base >= kBytes) failRun(name + ": the victim was not held mid-chunk");
          d.killWorker(victim);
          d.markKilled(Clock::now());
          d.resumeAllBut(victim);
          break;
        case kAfterSent:  // the victim sent all of it; `other` has not sent yet
          d.resumeAllBut(other);
          d.awaitReceived(base, (kWorkers - 1) * kBytes, name + ": all but one contributions");
          d.killWorker(victim);
          d.markKilled(Clock::now());
          d.resume(other);
          break;
        case kResultsInFlight:  // the victim sent all and stops; the others get their results
          d.resumeAllBut(other);
          d.awaitReceived(base, (kWorkers - 1) * kBytes, name + ": all but one contributions");
          d.stopAndWait(victim);
          d.resume(other);
          d.await(name + ": the others' results", [&] {
            for (int w = 0; w < kWorkers; ++w)
              if (w != victim && !d.hasLine(w, "done 1") && !d.hasLine(w, "error ")) return false;
            return true;
          });
          d.killWorker(victim);
          d.markKilled(Clock::now());
          break;
      }
    } else {
      const int sender = other;
      switch (moment) {
        case kBeforeSend:  // every member is stopped before the collective
          d.killReducer(victim);
          d.markKilled(Clock::now());
          d.resumeAllBut(-1);
          break;
        case kMidChunk:  // one member sends, held inside its chunk on the victim
          d.resume(sender);
          d.await(name + ": the sender's first bytes on the victim",
                  [&] { return d.counter(victim, "rs_received_bytes_total") > victimBase; });
          d.killReducer(victim);
          d.markKilled(Clock::now());
          d.resumeAllBut(sender);
          break;
        case kAfterSent:  // all but one member sent everything
          d.resumeAllBut(other);
          d.awaitReceived(base, (kWorkers - 1) * kBytes, name + ": all but one contributions");
          d.killReducer(victim);
          d.markKilled(Clock::now());
          d.resume(other);
          break;
        case kResultsInFlight: {  // results leaving the victim while one member does not read
          const int reader = (other + 1) % kWorkers;  // stopped after it sent, not reading
          d.resumeAllBut(other);
          d.awaitReceived(base, (kWorkers - 1) * kBytes, name + ": all but one contributions");
          d.stopAndWait(reader);
          d.resume(other);
          d.await(name + ": results leaving the victim", [&] {
            return d.counter(victim, "rs_sent_bytes_total") > sentBase;
          });
          d.killReducer(victim);
          d.markKilled(Clock::now());
          d.resume(reader);
          break;
        }
      }
    }
    const milliseconds took = kind == kReducer
                                  ? checkFinished(d, name)
                                  : checkSurvivors(d, victimWorker, name, &sample[kind][moment]);
    count[kind][moment]++;
    slowest[kind][moment] = std::max(slowest[kind][moment], static_cast<long>(took.count()));
    // No reducer but the victim died; the victim comes back.
    for (int i = 0; i < kReducers; ++i) {
      pollChild(d.reducers[static_cast<size_t>(i)].proc);
      if (kind == kReducer && i == victim) continue;
      if (d.reducers[static_cast<size_t>(i)].proc.exited)
        failRun(fmt::format("{}: reducer {} died (exit {})\n{}", name, i,
                         d.reducers[static_cast<size_t>(i)].proc.exitCode, d.describe()));
    }
    // The reducers that lived let go of the failed group: no group, no slot memory held.
    for (int i = 0; i < kReducers; ++i) {
      if (kind == kReducer && i == victim) continue;
      d.await(fmt::format("{}: reducer {} to hold no groups and no slot memory", name, i), [&] {
        const Metrics m = d.scrape(i);
        return metric(m, "rs_groups") == 0 && metric(m, "rs_slot_memory_in_use_bytes") == 0;
      });
    }
    if (kind == kReducer) d.startReducer(victim);
  }

  // A last fresh group, untouched: exact results on every member.
  d.spawnWorkers(randomGroupId(d.rng), 5, -1, kCount, kVariants[0]);
  d.await("the last fresh group", [&] {
    for (auto& w : d.workers)
      if (!w.exited) return false;
    return true;
  });
  for (int w = 0; w < kWorkers; ++w)
    if (d.workers[static_cast<size_t>(w)].exitCode != 0 || !d.hasLine(w, "finished"))
      failRun("the last fresh group did not finish exactly\n" + d.describe());
  // The reducers hold nothing of the groups that were killed.
  for (int i = 0; i < kReducers; ++i)
    d.await(fmt::format("reducer {} to hold no groups and no slot memory", i), [&] {
      const Metrics m = d.scrape(i);
      return metric(m, "rs_groups") == 0 && metric(m, "rs_slot_memory_in_use_bytes") == 0;
    });

  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  int total = 0;
  fmt::print("fault_loop: kills by kind and moment (a worker killed: the slowest survivor's "
             "error after the fault; a reducer killed: the slowest worker's stall, from the kill "
             "to the end of the collective it was in, every collective exact; ms; bound {} + {} "
             "ms)\n", kTimeoutMs, kMargin.count());
  for (int k = 0; k < 2; ++k)
    for (int m = 0; m < 4; ++m) {
      fmt::print("  {:8} {:18} {:4} kills  slowest {:5} ms\n", kKindNames[static_cast<size_t>(k)],
                 kMomentNames[static_cast<size_t>(m)], count[k][m], slowest[k][m]);
      total += count[k][m];
    }
  fmt::print("fault_loop: rounds by type and mode:");
  for (size_t v = 0; v < kVariants.size(); ++v)
    fmt::print("{} {}{} {}", v == 0 ? "" : ",", dataTypeName(kVariants[v].type),
               kVariants[v].deterministic ? " deterministic" : "", variantRounds[v]);
  fmt::print("\n");
  fmt::print("fault_loop: one survivor's error of each moment a worker was killed:\n");
  for (int m = 0; m < 4; ++m)
    fmt::print("  worker {}: {}\n", kMomentNames[static_cast<size_t>(m)], sample[kWorker][m]);
  fmt::print("fault_loop: {} kills in {:.1f} s; a worker killed: every survivor got an error; a "
             "reducer killed: every worker finished exact; no hang, no other reducer died, fresh "
             "groups exact (seed {})\n", total, seconds, seed);
  for (auto& r : d.reducers) killChild(r.proc);
  std::system(("rm -rf " + d.dir).c_str());
  return 0;
}

}  // namespace
}  // namespace rs::test

int main(int argc, char** argv) { return rs::test::run(argc, argv); }

// The soak (issue 15, item 6): thousands of small checked all-reduces over many groups of real
// worker processes (fault_worker) on a pool of real reducers, with groups joining all the time,
// members leaving early (clean exit mid-job) and members killed (kill -9 after a random
// collective). Every group's outcome is checked: a clean group finishes exact; when a member
// leaves or dies, every other member fails with an error. The reducers' open descriptors
// (/proc/<pid>/fd), resident memory (VmRSS, VmHWM) and slot memory in use
// (rs_slot_memory_in_use_bytes) are printed before, during (peaks) and after; once every
// worker is gone, descriptors and slot memory must return to their starting level (a bounded
// wait for that state) and RSS must stay within a fixed margin of its start.
//
//   soak --server <reduction-server> --worker <fault_worker>
// RS_SOAK_SEED replays a run (the seed is printed); RS_SOAK_GROUPS sets the number of groups.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <list>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/fault/processes.h"

namespace rs::test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kReducers = 2;
constexpr int kConcurrentGroups = 4;
constexpr uint64_t kMaxCount = 4096;  // fp32 elements: each collective moves 4 B .. 16 KiB
constexpr int kTimeoutMs = 5000;  // a hang guard: members of a group wait for each other
// RSS may end above its start by what the allocator keeps for reuse: glibc keeps freed memory
// in each thread's arena (the reducer has io, gRPC and metrics threads) and trims it lazily.
// 24 MiB is several times the most this run ever holds at once (the groups' slot memory and
// the connections' buffers, a few MiB at the peak), so a leak proportional to the thousands of
// collectives or hundreds of connections would cross it, and allocator caching would not.
constexpr long kRssMarginKb = 24 << 10;

enum Fate { kClean, kLeave, kKill };
constexpr const char* kFateNames[] = {"clean", "leave", "kill"};

struct Group {
  int index = 0;
  Fate fate = kClean;
  int world = 0;
  int iters = 0;
  int leaver = -1;      // kLeave: runs `leaveAfter` collectives, then exits cleanly
  int leaveAfter = 0;
  int victim = -1;      // kKill: killed once it stopped itself after collective `killAfter`
  int killAfter = 0;
  bool killed = false;
  Clock::time_point startedAt = Clock::now();
  std::vector<Child> members;
};

struct Sample {
  long fds = 0, rssKb = 0, hwmKb = 0;
  double slotBytes = 0, groups = 0;
};

struct Soak {
  std::string serverBin, workerBin, dir;
  std::mt19937_64 rng;
  std::vector<Reducer> reducers;

  Sample sample(int i) {
    Reducer& r = reducers[static_cast<size_t>(i)];
    pollChild(r.proc);
    if (r.proc.exited) failRun(fmt::format("reducer {} died (exit {})\n{}", i, r.proc.exitCode, tail(r.log)));
    auto m = scrapeMetrics(r.metricsPort);
    if (!m) failRun(m.status().message());
    Sample s;
    s.fds = openFds(r.proc.pid);
    s.rssKb = statusKb(r.proc.pid, "VmRSS");
    s.hwmKb = statusKb(r.proc.pid, "VmHWM");
    s.slotBytes = metric(*m, "rs_slot_memory_in_use_bytes");
    s.groups = metric(*m, "rs_groups");
    return s;
  }

  Group start(int index) {
    Group g;
    g.index = index;
    const uint64_t roll = rng() % 10;
    g.fate = roll < 6 ? kClean : roll < 8 ? kLeave : kKill;
    g.world = 2 + static_cast<int>(rng() % 3);
    g.iters = 20 + static_cast<int>(rng() % 41);
    if (g.fate == kLeave) {
      g.leaver = static_cast<int>(rng() % static_cast<uint64_t>(g.world));
      g.leaveAfter = 1 + static_cast<int>(rng() % static_cast<uint64_t>(g.iters - 1));
    } else if (g.fate == kKill) {
      g.victim = static_cast<int>(rng() % static_cast<uint64_t>(g.world));
      g.killAfter = static_cast<int>(rng() % static_cast<uint64_t>(g.iters - 1));
    }
    const std::string group = randomGroupId(rng);
    const uint64_t countSeed = 1 + rng() % 1000000;
    const std::vector<std::string> env =
        workerEnv(reducers, dir, kTimeoutMs,
                  {fmt::format("RS_STREAMS={}", 1 + rng() % 2), "RS_MIN_CHUNK=4KiB",
                   "RS_MAX_CHUNK=8KiB"});
    g.members = spawnWorkers(
        workerBin, dir, fmt::format("group{}-rank", index), group, g.world, env, [&](int r) {
          std::vector<std::string> args = {"--count", std::to_string(kMaxCount), "--iters",
                                           std::to_string(r == g.leaver ? g.leaveAfter : g.iters),
                                           "--count-seed", std::to_string(countSeed)};
          // The victim stops itself there; the driver then kills it.
          for (std::string& a : stopBeforeArgs(r == g.victim ? g.killAfter + 1 : -1))
            args.push_back(std::move(a));
          return args;
        });
    return g;
  }
};

std::string describe(const Group& g) {
  std::string s = fmt::format("group {} ({}, world {}, iters {}, leaver {} after {}, victim {} after {})\n",
                              g.index, kFateNames[g.fate], g.world, g.iters, g.leaver,
                              g.leaveAfter, g.victim, g.killAfter);
  for (const auto& m : g.members) s += fmt::format("--- {} exit {}:\n{}", m.name, m.exitCode, m.out);
  return s;
}

// Checks a finished group's outcome; returns the all-reduces it completed (its longest member).
int judge(const Group& g) {
  int completed = 0;
  for (int r = 0; r < g.world; ++r) {
    const Child& c = g.members[static_cast<size_t>(r)];
    completed = std::max(completed, doneCount(c));
    if (c.exitCode == 4) failRun("wrong result\n" + describe(g));
    bool ok = false;
    switch (g.fate) {
      case kClean: ok = c.exitCode == 0 && !lineStartingWith(c, "finished").empty(); break;
      case kLeave: ok = r == g.leaver ? c.exitCode == 0 : c.exitCode == 3; break;
      case kKill: ok = r == g.victim ? c.exitCode == 128 + 9 : c.exitCode == 3; break;
    }
    if (!ok) failRun(fmt::format("rank {}: unexpected outcome\n{}", r, describe(g)));
  }
  return completed;
}

int run(int argc, char** argv) {
  Soak s;
  const DriverArgs args = parseDriverArgs(argc, argv, "soak --server BIN --worker BIN");
  s.serverBin = args.serverBin;
  s.workerBin = args.workerBin;
  const uint64_t seed = std::getenv("RS_SOAK_SEED") ? std::strtoull(std::getenv("RS_SOAK_SEED"), nullptr, 10)
                                                   : std::random_device{}();
  const int groups = std::getenv("RS_SOAK_GROUPS") ? std::atoi(std::getenv("RS_SOAK_GROUPS")) : 320;
  fmt::print("soak: seed {} (RS_SOAK_SEED={} replays it), {} groups, {} at a time, {} reducers\n",
             seed, seed, groups, kConcurrentGroups, kReducers);
  std::fflush(stdout);
  s.rng.seed(seed);

  s.dir = makeRunDir("rs-soak", s.rng(), s.rng());
  for (int i = 0; i < kReducers; ++i) {
    auto r = startReducer(s.serverBin, s.dir, i,
                          {"--io-threads", "2", "--secret-file", s.dir + "/secret",
                           "--collective-timeout-ms", std::to_string(kTimeoutMs),
                           "--memory-limit", "64MiB", "--log-level", "warn"});
    if (!r) failRun(r.status().message());
    s.reducers.push_back(std::move(*r));
  }
  std::vector<Sample> before, peak(kReducers);
  for (int i = 0; i < kReducers; ++i) before.push_back(s.sample(i));

  const auto t0 = Clock::now();
  std::list<Group> active;
  int started = 0, allReduces = 0;
  int fates[3] = {0, 0, 0};
  auto samplePeaks = [&] {
    for (int i = 0; i < kReducers; ++i) {
      const Sample x = s.sample(i);
      Sample& p = peak[static_cast<size_t>(i)];
      p.fds = std::max(p.fds, x.fds);
      p.rssKb = std::max(p.rssKb, x.rssKb);
      p.hwmKb = std::max(p.hwmKb, x.hwmKb);
      p.slotBytes = std::max(p.slotBytes, x.slotBytes);
      p.groups = std::max(p.groups, x.groups);
    }
  };
  auto lastSample = Clock::now();
  while (started < groups || !active.empty()) {
    while (started < groups && static_cast<int>(active.size()) < kConcurrentGroups)
      active.push_back(s.start(started++));
    for (auto it = active.begin(); it != active.end();) {
      Group& g = *it;
      for (auto& m : g.members) pollChild(m);
      if (g.fate == kKill && !g.killed && g.members[static_cast<size_t>(g.victim)].stopped) {
        if (!killChild(g.members[static_cast<size_t>(g.victim)])) failRun("a killed worker was not reaped");
        g.killed = true;
      }
      const bool over = std::all_of(g.members.begin(), g.members.end(), [](const Child& c) { return c.exited; });
      // A hang guard per group: a group's whole run takes well under a second when idle.
      if (!over && Clock::now() - g.startedAt > std::chrono::seconds(60)) {
        const std::string what = describe(g);
        for (auto& m : g.members) killChild(m);
        failRun("a group did not end within 60 s: a hang\n" + what);
      }
      if (!over) {
        ++it;
        continue;
      }
      allReduces += judge(g);
      ++fates[g.fate];
      it = active.erase(it);
    }
    if (Clock::now() - lastSample > milliseconds(100)) {
      samplePeaks();
      lastSample = Clock::now();
    }
    if (Clock::now() - t0 > std::chrono::seconds(240)) {
      std::string what;
      for (const auto& g : active) what += describe(g);
      failRun("the soak did not end within 240 s: a hang?\n" + what);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  samplePeaks();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  // Every worker is gone: descriptors, slot memory and groups return to their start.
  std::vector<Sample> after(kReducers);
  const auto settleStart = Clock::now();
  for (int i = 0; i < kReducers; ++i) {
    const Sample& b = before[static_cast<size_t>(i)];
    const bool settled = waitFor(
        [&] {
          after[static_cast<size_t>(i)] = s.sample(i);
          const Sample& a = after[static_cast<size_t>(i)];
          return a.fds == b.fds && a.slotBytes == b.slotBytes && a.groups == 0;
        },
        std::chrono::seconds(30));
    const Sample& a = after[static_cast<size_t>(i)];
    if (!settled)
      failRun(fmt::format("reducer {} did not return to its start: fds {} (start {}), slot memory {} "
                       "(start {}), groups {}\n{}", i, a.fds, b.fds, a.slotBytes, b.slotBytes,
                       a.groups, tail(s.reducers[static_cast<size_t>(i)].log)));
  }
  const double settle = std::chrono::duration<double>(Clock::now() - settleStart).count();
  fmt::print("soak: {} groups ({} clean, {} with a member leaving, {} with a member killed), {} "
             "all-reduces completed, in {:.1f} s; the reducers settled {:.1f} s after the last "
             "worker ended\n",
             groups, fates[kClean], fates[kLeave], fates[kKill], allReduces, seconds, settle);
  fmt::print("soak: per reducer, before / during (peak) / after; RSS bound: start + {} MiB\n",
             kRssMarginKb >> 10);
  bool rssOk = true;
  for (int i = 0; i < kReducers; ++i) {
    const Sample &b = before[static_cast<size_t>(i)], &p = peak[static_cast<size_t>(i)],
                 &a = after[static_cast<size_t>(i)];
    fmt::print("  reducer {}: fds {} / {} / {}; VmRSS {} / {} / {} KiB (VmHWM {} KiB); slot memory "
               "{} / {} / {} bytes; groups {} / {} / {}\n",
               i, b.fds, p.fds, a.fds, b.rssKb, p.rssKb, a.rssKb, a.hwmKb, b.slotBytes,
               p.slotBytes, a.slotBytes, b.groups, p.groups, a.groups);
    if (a.rssKb > b.rssKb + kRssMarginKb) rssOk = false;
  }
  if (allReduces < 1000) failRun(fmt::format("only {} all-reduces completed", allReduces));
  if (!rssOk) failRun("a reducer's RSS ended above its start + the margin");
  fmt::print("soak: descriptors and slot memory back at their start, RSS within its bound "
             "(seed {})\n", seed);
  for (auto& r : s.reducers) killChild(r.proc);
  std::system(("rm -rf " + s.dir).c_str());
  return 0;
}

}  // namespace
}  // namespace rs::test

int main(int argc, char** argv) { return rs::test::run(argc, argv); }

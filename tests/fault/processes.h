// Test support for multi-process fault tests: child processes watched without blocking
// (output lines, stops, exits), real reduction-server processes with their metrics, and what
// /proc says about a process. Every wait is bounded; children die with the test
// (PR_SET_PDEATHSIG).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/common/status.h"

namespace rs::test {

struct Child {
  std::string name;
  pid_t pid = -1;
  int outFd = -1;        // its stdout, non-blocking (-1: not captured, or closed)
  std::string out;       // what it printed so far
  bool exited = false;   // reaped
  int exitCode = -1;     // exit status, or 128 + signal
  bool stopped = false;  // seen stopped by waitpid and not continued since
  std::chrono::steady_clock::time_point exitedAt;
};

// Starts argv[0] with argv, the environment plus `env` ("NAME=value", overriding), stdout to a
// pipe when `captureStdout` (else to `logPath`), stderr to `logPath`.
Result<Child> spawnChild(const std::string& name, const std::vector<std::string>& argv,
                         const std::vector<std::string>& env, bool captureStdout,
                         const std::string& logPath);
// Reads what is there and notes a stop or an exit; never blocks.
void pollChild(Child& c);
// A line of its output that starts with `prefix`, or "".
std::string lineStartingWith(const Child& c, const std::string& prefix);
// The collectives a fault_worker reported done so far (its "done <i>" lines).
int doneCount(const Child& c);
void continueChild(Child& c);
void stopChild(Child& c);  // SIGSTOP (pollChild then sees the stop)
// SIGKILL, then reaps it within `deadline` (false if it could not be reaped).
bool killChild(Child& c, std::chrono::milliseconds deadline = std::chrono::milliseconds(10000));

// Polls `condition` (after `poll`) until true or the deadline; a hang guard, not a timing.
bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds deadline,
             const std::function<void()>& poll = {});

// A reduction-server process on loopback ports it picks (its data port `dataPort` where one is
// given: a reducer restarted under its address), with metrics on.
struct Reducer {
  Child proc;
  uint16_t dataPort = 0;
  uint16_t metricsPort = 0;
  std::string log;
};
Result<Reducer> startReducer(const std::string& bin, const std::string& dir, int index,
                             const std::vector<std::string>& flags, uint16_t dataPort = 0);

// One scrape of http://127.0.0.1:<port>/metrics: series (name{labels}) -> value.
using Metrics = std::map<std::string, double>;
Result<Metrics> scrapeMetrics(uint16_t port);
double metric(const Metrics& m, const std::string& series);  // 0 when absent

// /proc/<pid>: open descriptors, VmRSS and VmHWM in KiB (-1 if unreadable).
long openFds(pid_t pid);
long statusKb(pid_t pid, const std::string& field);

std::string tail(const std::string& path, size_t bytes = 3000);

// What every fault driver does: stop with "FAILED: <why>" on stdout and exit 1 (the children
// die with it, PR_SET_PDEATHSIG); and make its working directory /tmp/<prefix>-XXXXXX, holding
// `secret` (a job secret of 32 hex digits from `a` and `b`, mode 0600). Returns the directory.
[[noreturn]] void failRun(const std::string& why);
std::string makeRunDir(const std::string& prefix, uint64_t a, uint64_t b);

}  // namespace rs::test

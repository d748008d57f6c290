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
#include <random>
#include <string>
#include <utility>
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

// What the fault drivers share beyond single processes: their command line, the reducers'
// list and metrics, a fresh group, its workers, and a wait that fails the run with what every
// process said last.

// A driver's command line: --server BIN and --worker BIN, and the flags of `more` (each a flag
// and the string its value goes to). The run fails with `usage` where a binary is missing.
struct DriverArgs {
  std::string serverBin, workerBin;
};
DriverArgs parseDriverArgs(int argc, char** argv, const std::string& usage,
                           const std::vector<std::pair<std::string, std::string*>>& more = {});
// "127.0.0.1:<data port>" of each reducer, comma-separated (RS_REDUCERS).
std::string reducerList(const std::vector<Reducer>& reducers);
// One scrape of reducer i's metrics; where none comes the run fails, with its log's tail.
Metrics scrapeOrFail(const std::vector<Reducer>& reducers, int i);
// A fresh group id: 32 hex digits from `rng`.
std::string randomGroupId(std::mt19937_64& rng);
// A fault_worker's environment: RS_REDUCERS, the run's secret in `dir`, RS_TIMEOUT_MS
// `timeoutMs`, a 10 s connect timeout and one client io thread; then `more` ("NAME=value").
std::vector<std::string> workerEnv(const std::vector<Reducer>& reducers, const std::string& dir,
                                   int timeoutMs, const std::vector<std::string>& more);
// --stop-before `collective` (the worker stops itself there), or nothing where it is < 0.
std::vector<std::string> stopBeforeArgs(int collective);
// `world` fault_workers (`bin`) of `group`, rank r named `name` + r, each run with
// --group, --world, --rank and then argsOf(r); stdout read (Child::out), stderr to
// dir/workers.log. The run fails where one does not start.
std::vector<Child> spawnWorkers(const std::string& bin, const std::string& dir,
                                const std::string& name, const std::string& group, int world,
                                const std::vector<std::string>& env,
                                const std::function<std::vector<std::string>(int rank)>& argsOf);
// Each worker of `groups` (its output's last `outTail` bytes; 0: all of it) and each
// reducer's log tail: what a failure's message shows.
std::string describeRun(const std::vector<const std::vector<Child>*>& groups,
                        const std::vector<Reducer>& reducers, size_t outTail = 0);
// Polls every worker of `groups` and every reducer (pollChild).
void pollRun(const std::vector<std::vector<Child>*>& groups, std::vector<Reducer>& reducers);
// Waits for `condition`, calling `poll` before each look, until `deadline`; past it the run
// fails with "timed out waiting for <what>" and describe().
void awaitOrFail(const std::string& what, const std::function<bool()>& condition,
                 std::chrono::milliseconds deadline, const std::function<void()>& poll,
                 const std::function<std::string()>& describe);

// What every fault driver does: stop with "FAILED: <why>" on stdout and exit 1 (the children
// die with it, PR_SET_PDEATHSIG); and make its working directory /tmp/<prefix>-XXXXXX, holding
// `secret` (a job secret of 32 hex digits from `a` and `b`, mode 0600). Returns the directory.
[[noreturn]] void failRun(const std::string& why);
std::string makeRunDir(const std::string& prefix, uint64_t a, uint64_t b);

}  // namespace rs::test

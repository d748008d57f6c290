// Child processes for the local pool: reducers (the real reduction-server binary) and workers
// (this benchmark in worker mode). Children die with the launcher (PR_SET_PDEATHSIG), and the
// destructor terminates whatever is still running.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace rs::bench {

class ProcessPool {
 public:
  ProcessPool() = default;
  ~ProcessPool();
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;

  // Starts argv[0] with argv; throws on failure. Returns the pid.
  pid_t spawn(const std::vector<std::string>& argv, bool quietStdout = false);
  // Waits for pid; returns its exit code (128 + signal when killed), or -1 on timeout.
  int wait(pid_t pid, std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL after `grace`, for every child still running.
  void terminateAll(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));

 private:
  std::vector<pid_t> children_;
};

// The directory holding the running executable.
std::string executableDir();
// Waits for a file that a reducer writes once listening; returns its contents.
std::string waitForFile(const std::string& path, std::chrono::milliseconds timeout);

}  // namespace rs::bench

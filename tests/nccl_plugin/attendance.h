// How well the thread that drives the plugin (test(), which does the I/O under caller
// progress) was attended: the longest stretch between two of its test() calls, and how much of
// one stretch it spent waiting for a CPU (/proc/thread-self/schedstat). A member unattended for
// half the loss bound can be silent to its reducers for the whole bound (heartbeats go after a
// third of it), so a loss case that failed beside such a wait was starved, not shown wrong.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rs::harness {

class Attendance {
 public:
  using Clock = std::chrono::steady_clock;
  Attendance();
  // At each test() call, on the driving thread. `where`: what the thread did since the last.
  void beat(const char* where);
  // Nothing is in flight, so nothing to attend: the next stretch starts now.
  void rest();
  // "longest stretch between test() calls 412 ms (in publishing progress), the longest wait
  // for a CPU within one 398 ms"
  std::string summary() const;
  double longestMs() const { return longestMs_; }
  double longestRunQueueMs() const { return runQueueMs_; }

 private:
  // This thread's time waiting on a run queue so far (ns), 0 where the kernel keeps none.
  static uint64_t runQueueNs();
  Clock::time_point last_;
  Clock::time_point sampledAt_;
  uint64_t sampled_ = 0;  // runQueueNs() at sampledAt_, at most 1 ms before last_
  double longestMs_ = 0;
  std::string longestWhere_;
  double runQueueMs_ = 0;
};

}  // namespace rs::harness

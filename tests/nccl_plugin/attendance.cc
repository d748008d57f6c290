#include "tests/nccl_plugin/attendance.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace rs::harness {

Attendance::Attendance() : last_(Clock::now()), sampledAt_(last_), sampled_(runQueueNs()) {}

uint64_t Attendance::runQueueNs() {
  // schedstat: time on a CPU, time waiting on a run queue (ns), timeslices.
  uint64_t onCpu = 0, waiting = 0;
  if (int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC); fd >= 0) {
    char buf[96] = {};
    if (::read(fd, buf, sizeof buf - 1) > 0)
      std::sscanf(buf, "%" SCNu64 " %" SCNu64, &onCpu, &waiting);
    ::close(fd);
  }
  return waiting;
}

void Attendance::beat(const char* where) {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  // The run queue is read about once a millisecond (a read costs some microseconds), and at
  // the end of any stretch long enough to matter.
  if (ms >= 10 || now - sampledAt_ >= std::chrono::milliseconds(1)) {
    const uint64_t waited = runQueueNs();
    if (ms >= 10) runQueueMs_ = std::max(runQueueMs_, static_cast<double>(waited - sampled_) / 1e6);
    sampled_ = waited;
    sampledAt_ = now;
  }
  if (ms > longestMs_) {
    longestMs_ = ms;
    longestWhere_ = where;
  }
  last_ = now;
}

void Attendance::rest() {
  last_ = sampledAt_ = Clock::now();
  sampled_ = runQueueNs();
}

std::string Attendance::summary() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "longest stretch between test() calls %.0f ms (in %s), the longest wait for a "
                "CPU within one %.0f ms",
                longestMs_, longestWhere_.c_str(), runQueueMs_);
  return buf;
}

}  // namespace rs::harness

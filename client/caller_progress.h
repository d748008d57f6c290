// Progress driven by the calling threads instead of an io thread (ClientOptions::Progress::
// kCaller). A thread that waits runs the communicator's io_context itself: the write happens
// inside submit's wait, and the thread sleeps in epoll until the result's bytes arrive, so a
// small all-reduce costs one sleep and one wake-up per member instead of the four of a hand-off
// to an io thread and back (on a VM, context switches are the largest cost of an 8 KiB
// all-reduce: bench/RESULTS.md).
//
// One thread drives at a time. The others wait on their request and take over when the driver
// leaves, checking again every kTakeOverCheck; the driver's handlers complete their requests
// meanwhile, since one io_context carries every stream.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <mutex>

namespace rs::client {

class CallerProgress {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::microseconds kTakeOverCheck{500};

  explicit CallerProgress(asio::io_context& io) : io_(io) {}

  // Runs handlers on this thread until done() or `until`; true if done() held. While another
  // thread drives, calls idleWait(t) (which returns by t, earlier if done() may hold).
  bool runUntil(Clock::time_point until, const std::function<bool()>& done,
                const std::function<void(Clock::time_point)>& idleWait);
  // Runs what is ready without blocking, unless another thread is driving.
  void poll();

 private:
  asio::io_context& io_;
  std::mutex driveMu_;
};

}  // namespace rs::client

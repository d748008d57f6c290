// Calls a member function of each target about `delay` after it was added, unless the target is
// gone, on one timer for them all: the RECEIVEDs (client/ack_timer.h) and COMMITs (server/shard.h)
// that no data frame carried. A call may come up to a quarter of the delay early, so that one
// wake-up serves the targets due about together. Everything runs on the timer's io thread; the
// owner keeps this object until that thread no longer runs (its handler holds `this`).
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <system_error>
#include <vector>

namespace rs::transport {

template <typename T>
class DelayedCalls {
 public:
  using Call = void (T::*)();
  DelayedCalls(asio::io_context& io, std::chrono::steady_clock::duration delay, Call call)
      : timer_(io), delay_(delay), call_(call) {}

  void add(std::weak_ptr<T> target) {
    waiting_.push_back({std::move(target), std::chrono::steady_clock::now() + delay_});
    if (waiting_.size() == 1) arm();
  }
  // Calls nothing more (shutdown).
  void cancel() {
    waiting_.clear();
    timer_.cancel();
  }

 private:
  struct Waiting {
    std::weak_ptr<T> target;
    std::chrono::steady_clock::time_point due;
  };

  void arm() {
    timer_.expires_at(waiting_.front().due);
    timer_.async_wait([this](const std::error_code& ec) {
      if (ec) return;
      // In the order they were added, so their deadlines rise.
      const auto now = std::chrono::steady_clock::now() + delay_ / 4;
      std::vector<std::shared_ptr<T>> due;
      while (!waiting_.empty() && waiting_.front().due <= now) {
        if (auto t = waiting_.front().target.lock()) due.push_back(std::move(t));
        waiting_.pop_front();
      }
      if (!waiting_.empty()) arm();
      for (const auto& t : due) ((*t).*call_)();
    });
  }

  asio::steady_timer timer_;
  const std::chrono::steady_clock::duration delay_;
  const Call call_;
  std::deque<Waiting> waiting_;
};

}  // namespace rs::transport

#include "client/ack_timer.h"

#include <utility>

#include "client/connection.h"

namespace rs::client {

void AckTimer::add(std::weak_ptr<Connection> connection) {
  waiting_.push_back({std::move(connection), std::chrono::steady_clock::now() + kAckDelay});
  if (waiting_.size() == 1) arm();
}

void AckTimer::arm() {
  timer_.expires_at(waiting_.front().due);
  timer_.async_wait([this](const std::error_code& ec) {
    if (ec) return;
    // In the order they were added, so their deadlines rise: send those due or nearly (one
    // wake-up for them all), wait for the rest.
    const auto now = std::chrono::steady_clock::now() + kAckDelay / 4;
    size_t sent = 0;
    while (sent < waiting_.size() && waiting_[sent].due <= now) ++sent;
    std::deque<Waiting> due(std::make_move_iterator(waiting_.begin()),
                             std::make_move_iterator(waiting_.begin() + sent));
    waiting_.erase(waiting_.begin(), waiting_.begin() + sent);
    if (!waiting_.empty()) arm();
    for (const Waiting& w : due)
      if (auto c = w.connection.lock()) c->acknowledgeNow();
  });
}

}  // namespace rs::client

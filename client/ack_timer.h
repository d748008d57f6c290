// The RECEIVEDs of one io thread's connections that no REDUCE frame carried, sent within
// kAckDelay on one timer (client/connection.h). A connection acknowledges a chunk's result in
// front of the next REDUCE frame it writes on that stream, which costs no write and no wake-up
// of the reducer of its own: a stream often carries the next collective's chunk soon after.
// When none comes, this timer sends the RECEIVED alone, about kAckDelay after it became due (a
// quarter less at the most, so that one wake-up sends those due about together); one timer for
// the thread, set to the earliest of those waiting.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>

namespace rs::client {

class Connection;

// Long enough to catch the next small collective on a stream that the chunks rotate over (a
// collective of R chunks uses one stream of each reducer, the next collective the next stream:
// a stream's next chunk comes K collectives later), short beside a collective timeout. Only a
// member waiting for room to keep its results waits on it, and that member sends its own at
// once (CommunicatorCore::onResultsIn). With 5 ms, a third of the acknowledgements of 64 KiB
// all-reduces on loopback (4 workers, 4 reducers x 4 streams, 0.7-1 ms each) still went alone.
inline constexpr auto kAckDelay = std::chrono::milliseconds(20);

class AckTimer {
 public:
  explicit AckTimer(asio::io_context& io) : timer_(io) {}
  // On the io thread: `connection` has a RECEIVED due; Connection::acknowledgeNow() runs within
  // kAckDelay unless the connection is gone.
  void add(std::weak_ptr<Connection> connection);

 private:
  struct Waiting {
    std::weak_ptr<Connection> connection;
    std::chrono::steady_clock::time_point due;
  };
  void arm();

  asio::steady_timer timer_;
  std::deque<Waiting> waiting_;  // in the order added, so by deadline
};

}  // namespace rs::client

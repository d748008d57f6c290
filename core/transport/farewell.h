// A last word on a stream whose owner has let go of it (proto/FAILOVER.md, "Partitions and
// lost members": a member that moves away from a reducer says so on its streams to it). The
// farewell writes its bytes, then keeps the connection open, reading and dropping whatever the
// peer still sends, until the peer ends it or `linger` passes, and only then closes. Closing at
// once would throw the word away: a socket closed with unread input sends a reset, and bytes
// not yet sent are dropped with it. It owns itself (its pending handlers hold it) and needs
// nothing of the owner that started it.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/stream.h"

namespace rs::transport {

class Farewell : public std::enable_shared_from_this<Farewell> {
 public:
  // `stream` from Stream::handOver(), on `io`'s thread; `bytes` whole frames (the rest of a
  // frame in flight first, then the word).
  static void send(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes,
                   std::chrono::milliseconds linger);

  Farewell(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes);

 private:
  void start(std::chrono::milliseconds linger);
  void drain();
  void finish();

  std::unique_ptr<Stream> stream_;
  const std::string bytes_;
  ConstBuffer buffer_{nullptr, 0};
  std::vector<char> sink_;
  asio::steady_timer timer_;
  bool done_ = false;
};

}  // namespace rs::transport

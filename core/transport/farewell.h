// A last word on a stream whose owner has let go of it (proto/FAILOVER.md, "Partitions and
// lost members": a member that moves away from a reducer says so on its streams to it). The
// farewell writes its bytes, then keeps the connection open, reading and dropping whatever the
// peer still sends, until the peer ends it or `linger` passes, and only then closes. Closing at
// once would throw the word away: a socket closed with unread input sends a reset, and bytes
// not yet sent are dropped with it. A stream whose payloads travel on a channel beside it (the
// fabric) hands the channel over too, detached (payload_channel.h): its payloads in flight go
// on, and the peer's pieces are taken and dropped, so the peer's writes keep landing in a
// registered ring until the farewell ends. It owns itself (its pending handlers hold it) and
// needs nothing of the owner that started it.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/payload_channel.h"
#include "core/transport/stream.h"

namespace rs::transport {

class Farewell : public std::enable_shared_from_this<Farewell> {
 public:
  // `stream` from Stream::handOver(), on `io`'s thread; `bytes` whole frames (the rest of a
  // frame in flight first, then the word); `channel`, detached, or null; closed at the end.
  static void send(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes,
                   std::chrono::milliseconds linger,
                   std::shared_ptr<PayloadChannel> channel = nullptr);

  Farewell(asio::io_context& io, std::unique_ptr<Stream> stream, std::string bytes,
           std::shared_ptr<PayloadChannel> channel);

 private:
  void start(std::chrono::milliseconds linger);
  void drain();
  void dropPieces();
  void finish();

  std::unique_ptr<Stream> stream_;
  std::shared_ptr<PayloadChannel> channel_;
  const std::string bytes_;
  ConstBuffer buffer_{nullptr, 0};
  std::vector<char> sink_;
  asio::steady_timer timer_;
  bool done_ = false;
};

}  // namespace rs::transport

// TCP implementation of transport::Stream over an Asio socket.
#pragma once

#include <sys/uio.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <memory>
#include <vector>

#include "core/common/status.h"
#include "core/transport/stream.h"

namespace rs::transport::tcp {

class TcpStream final : public Stream {
 public:
  // A connected socket, already tuned (socket_options.h).
  explicit TcpStream(asio::ip::tcp::socket socket);
  ~TcpStream() override;

  void asyncReadExactly(void* data, size_t size, IoHandler handler) override;
  void asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt = 1) override;
  void asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) override;
  bool trySendNow(const void* data, size_t size) override;
  uint64_t bytesSent() const override { return bytesSent_; }
  uint64_t bytesArrived() const override;
  uint64_t bytesQueued() const override;
  void asyncWaitReadable(WaitHandler handler, size_t wakeAt = 1) override;
  bool watchPeerGone(WaitHandler handler) override;
  void stopWatchingPeer() override;
  Result<std::unique_ptr<Stream>> moveTo(asio::io_context& target) override;
  Result<std::unique_ptr<Stream>> handOver() override;
  void setPacingRate(uint64_t bytesPerSecond) override;
  void setLossBound(std::chrono::milliseconds bound, bool unreadSendsToo) override;
  void shutdownSend() override;
  void close() override;
  bool isOpen() const override { return socket_.is_open(); }
  const Endpoint& peer() const override { return peer_; }
  const std::string& peerName() const override { return peerName_; }
  asio::any_io_executor executor() override { return socket_.get_executor(); }

  asio::ip::tcp::socket& socket() { return socket_; }

 private:
  void readExactlyFrom(std::byte* data, size_t size, size_t done, IoHandler handler);
  void sendSome(bool initiating);
  void endWrite(const std::error_code& error, bool initiating);
  void setLowWatermark(size_t bytes);    // SO_RCVLOWAT, set only when it changes
  void lowerLowWatermark(size_t bytes);  // only if it is above `bytes`
  // Waits for the watch's epoll set (see watchPeerGone) to report the peer's end, for watch
  // number `watch` (a stopped one reports operation_aborted).
  void awaitPeerGone(uint64_t watch, WaitHandler handler);
  // eof if the peer has closed its side, its error if the connection failed, else nothing.
  std::error_code peerGone();

  asio::ip::tcp::socket socket_;
  Endpoint peer_;
  std::string peerName_;
  // The pending write: its buffers from the first not wholly sent (unsent_), the bytes of it
  // sent so far, and its handler.
  std::vector<iovec> gather_;
  size_t unsent_ = 0;
  size_t written_ = 0;
  IoHandler writeHandler_;
  uint64_t bytesSent_ = 0;                  // bytesSent()
  uint64_t bytesRead_ = 0;                  // handed to readers so far (bytesArrived)
  int lowWatermark_ = 1;                    // SO_RCVLOWAT now set (the kernel's default is 1)
  int unsentLimit_ = 0;  // TCP_NOTSENT_LOWAT as set; 0: never set (the kernel's: unlimited)
  // An epoll set holding this socket for its peer's end (watchPeerGone); opened at the first
  // watch, closed with the stream.
  std::unique_ptr<asio::posix::stream_descriptor> peerWatch_;
  uint64_t watch_ = 0;  // the current watch's number; stopWatchingPeer moves it on
};

}  // namespace rs::transport::tcp

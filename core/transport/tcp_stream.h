// TCP implementation of transport::Stream over an Asio socket, plus the socket tuning that
// every data connection gets (TCP_NODELAY, keep-alive, optional fixed buffer sizes).
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <memory>
#include <vector>

#include "core/common/status.h"
#include "core/transport/stream.h"

namespace rs::transport {

struct TcpOptions {
  // 0 leaves the kernel's autotuning on, which on Linux usually beats a fixed size because a
  // fixed SO_RCVBUF is capped by net.core.rmem_max (often 208 KiB).
  int sendBufferBytes = 0;
  int recvBufferBytes = 0;
  // Keep-alive finds a peer that vanished without a FIN while no collective is in flight.
  bool keepAlive = true;
  int keepAliveIdleSeconds = 30;
  int keepAliveIntervalSeconds = 5;
  int keepAliveProbes = 4;
};

// Applies TCP_NODELAY and `options` to a connected socket.
Status configureTcpSocket(asio::ip::tcp::socket& socket, const TcpOptions& options);

class TcpStream final : public Stream {
 public:
  explicit TcpStream(asio::ip::tcp::socket socket);
  ~TcpStream() override;

  // Moves the connected socket onto another io_context (a session leaves the acceptor's thread
  // for the io thread that owns its stream index). No operation may be pending.
  static Result<std::unique_ptr<TcpStream>> moveTo(std::unique_ptr<TcpStream> stream,
                                                   asio::io_context& target);

  void asyncReadExactly(void* data, size_t size, IoHandler handler) override;
  void asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt = 1) override;
  void asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) override;
  void shutdownSend() override;
  void close() override;
  bool isOpen() const override { return socket_.is_open(); }
  const std::string& peerName() const override { return peerName_; }
  asio::any_io_executor executor() override { return socket_.get_executor(); }

  asio::ip::tcp::socket& socket() { return socket_; }

 private:
  void readExactlyFrom(std::byte* data, size_t size, size_t done, IoHandler handler);
  void setLowWatermark(size_t bytes);    // SO_RCVLOWAT, set only when it changes
  void lowerLowWatermark(size_t bytes);  // only if it is above `bytes`

  asio::ip::tcp::socket socket_;
  std::string peerName_;
  std::vector<asio::const_buffer> gather_;  // the pending write's buffers
  int lowWatermark_ = 1;                    // SO_RCVLOWAT now set (the kernel's default is 1)
};

// "tcp://host:port" of the remote end, or "tcp://?" when the socket has none.
std::string describePeer(const asio::ip::tcp::socket& socket);

}  // namespace rs::transport

// An in-memory implementation of transport::Stream: the two ends of one connection in one
// process, each on an io_context of its own (they may run on different threads). It keeps the
// whole contract of stream.h, so that the transport tests run over it as over TCP and the next
// transport (fabric/) has a model without sockets:
// - each direction has a bounded receive buffer: a write hands over only what fits and
//   completes once the peer has read enough to take the rest (flow control, so a peer that
//   stops reading holds its writer back as TCP's window does);
// - bytes arrive in the step that writes them (bytesSent and the peer's bytesArrived move
//   together), whether or not the reader's thread runs;
// - handlers run on the owning end's executor, never inside the call that starts an operation;
// - the errors are TCP's, as Asio reports them: eof after the peer's shutdownSend() or close(),
//   connection_reset after resetConnection() or a close() that left bytes unread (a kernel
//   answers that with a reset, which farewell.h exists to avoid), broken_pipe for a write
//   toward a peer that closed or after shutdownSend(), operation_aborted for what close(),
//   handOver() or stopWatchingPeer() ended. Bytes already queued stay readable before a reset's
//   error, as Linux keeps them.
// No timers, no sleeps: every wait is for the peer's next step.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/io_context.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/transport/stream.h"

namespace rs::transport::memory {

struct Link;  // the state the two ends share, under its lock (memory_stream.cc)

class MemoryStream final : public Stream {
 public:
  // Each direction's receive buffer unless the pair is made with another size.
  static constexpr size_t kDefaultBufferBytes = 256 << 10;

  MemoryStream(asio::io_context& io, std::shared_ptr<Link> link, int side, Endpoint peer);
  ~MemoryStream() override;
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;

  void asyncReadExactly(void* data, size_t size, IoHandler handler) override;
  void asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt = 1) override;
  uint64_t bytesQueued() const override;
  void asyncWaitReadable(WaitHandler handler, size_t wakeAt = 1) override;
  bool watchPeerGone(WaitHandler handler) override;
  void stopWatchingPeer() override;
  void asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) override;
  uint64_t bytesSent() const override { return bytesSent_; }
  uint64_t bytesArrived() const override;
  bool trySendNow(const void* data, size_t size) override;
  Result<std::unique_ptr<Stream>> moveTo(asio::io_context& target) override;
  Result<std::unique_ptr<Stream>> handOver() override;
  void shutdownSend() override;
  void close() override;
  bool isOpen() const override { return open_; }
  const Endpoint& peer() const override { return peer_; }
  const std::string& peerName() const override { return peerName_; }
  asio::any_io_executor executor() override { return io_->get_executor(); }

  // Fails the connection as a lost one fails (a TCP reset): the peer's pending and later
  // operations end with connection_reset (a read after the bytes it had queued), and this end
  // is closed as by close().
  void resetConnection();
  // Each direction's receive buffer: what a writer can hand over while its peer reads nothing.
  size_t bufferBytes() const;

 private:
  enum class ReadKind { kNone, kExactly, kSome, kWait };
  struct PendingRead {
    ReadKind kind = ReadKind::kNone;
    std::byte* data = nullptr;
    size_t size = 0;
    size_t done = 0;
    size_t wakeAt = 1;
    IoHandler io;
    WaitHandler wait;
  };
  struct PendingWrite {
    bool active = false;
    std::vector<ConstBuffer> gather;
    size_t next = 0;    // the first buffer not wholly handed over
    size_t offset = 0;  // of it, the bytes handed over
    size_t written = 0;
    IoHandler handler;
  };

  // Runs on this end's executor when the link changed for it (bytes, room, the peer's end).
  friend struct Link;
  void progress();
  // Each moves what it can and completes its operation when done; the link's lock is held.
  void advanceRead();
  void advanceWrite();
  void advanceWatch();
  void completeRead(const std::error_code& error);
  void completeWrite(const std::error_code& error);
  void abortPending();
  // Gives this end's place on the link to a new stream on `io`; this one is left closed.
  std::unique_ptr<MemoryStream> detachTo(asio::io_context& io);

  asio::io_context* io_;
  std::shared_ptr<Link> link_;
  const int side_;
  Endpoint peer_;
  std::string peerName_;
  // What the link's wake-ups reach this stream through; nulled when it goes away, on its own
  // thread, which is where the wake-ups run.
  std::shared_ptr<MemoryStream*> self_;
  bool open_ = true;
  bool attached_ = true;  // this stream still holds its end of the link (not moved away)
  bool sendShut_ = false;
  uint64_t bytesSent_ = 0;
  PendingRead read_;
  PendingWrite write_;
  WaitHandler watch_;
};

// A connected pair: the first end on `first`, the second on `second` (the same context or
// two). Each end's peer() names the other: {"memory<n>", 2} for the first, {"memory<n>", 1}
// for the second, n counting the pairs made in this process (one host per pair).
std::pair<std::unique_ptr<MemoryStream>, std::unique_ptr<MemoryStream>> connectedPair(
    asio::io_context& first, asio::io_context& second,
    size_t bufferBytes = MemoryStream::kDefaultBufferBytes);

}  // namespace rs::transport::memory

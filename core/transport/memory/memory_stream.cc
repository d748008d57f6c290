#include "core/transport/memory/memory_stream.h"

#include <algorithm>
#include <asio/error.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <cstring>
#include <mutex>

namespace rs::transport::memory {

// What the two ends share. Each end touches its own stream's state on its own thread only; the
// bytes between them, the ends' states and how to wake them live here, under `mu`.
struct Link : std::enable_shared_from_this<Link> {
  // One direction's receive buffer, a fixed ring.
  class Ring {
   public:
    explicit Ring(size_t capacity) : bytes_(capacity) {}
    size_t capacity() const { return bytes_.size(); }
    size_t size() const { return size_; }
    size_t room() const { return bytes_.size() - size_; }
    size_t put(const std::byte* data, size_t n) {
      n = std::min(n, room());
      if (n == 0) return 0;
      const size_t tail = (head_ + size_) % bytes_.size();
      const size_t first = std::min(n, bytes_.size() - tail);
      std::memcpy(bytes_.data() + tail, data, first);
      std::memcpy(bytes_.data(), data + first, n - first);
      size_ += n;
      return n;
    }
    size_t take(std::byte* out, size_t n) {
      n = std::min(n, size_);
      if (n == 0) return 0;
      const size_t first = std::min(n, bytes_.size() - head_);
      std::memcpy(out, bytes_.data() + head_, first);
      std::memcpy(out + first, bytes_.data(), n - first);
      head_ = (head_ + n) % bytes_.size();
      size_ -= n;
      return n;
    }
    void clear() { head_ = size_ = 0; }

   private:
    std::vector<std::byte> bytes_;
    size_t head_ = 0;
    size_t size_ = 0;
  };

  // One end: what its peer sent it, and where it lives.
  struct End {
    explicit End(size_t bufferBytes) : inbox(bufferBytes) {}
    Ring inbox;            // arrived, unread
    uint64_t arrived = 0;  // every byte ever put into the inbox (bytesArrived)
    bool finished = false;  // the peer shut its sending side: end of stream after the inbox
    std::error_code failed;  // the connection failed for this end: after the inbox, this error
    bool closed = false;     // this end let go of the connection: nothing reaches it any more
    // The stream that holds this end now, and its executor; `epoch` moves on when another
    // stream takes the end over (moveTo, handOver), so that a wake-up posted to the old one
    // does not swallow the new one's.
    asio::any_io_executor executor;
    std::weak_ptr<MemoryStream*> owner;
    uint64_t epoch = 0;
    bool wakePosted = false;
  };

  explicit Link(size_t bufferBytes) : ends{End(bufferBytes), End(bufferBytes)} {}

  // Has end `side`'s stream look at the link again, on its own thread (never inside the caller:
  // a handler never runs inside the call that started its operation). One wake-up at a time
  // is enough: it looks at everything. `mu` is held.
  void wake(int side) {
    End& end = ends[side];
    if (end.closed || end.wakePosted || !end.executor) return;
    end.wakePosted = true;
    asio::post(end.executor,
               [link = shared_from_this(), side, epoch = end.epoch, owner = end.owner] {
                 {
                   std::lock_guard lock(link->mu);
                   if (link->ends[side].epoch == epoch) link->ends[side].wakePosted = false;
                 }
                 // The stream goes away only on this thread: it cannot between these lines.
                 if (auto self = owner.lock(); self && *self) (*self)->progress();
               });
  }

  std::mutex mu;
  End ends[2];
};

namespace {

template <typename Handler, typename... Args>
void postCall(asio::io_context& io, Handler handler, Args... args) {
  asio::post(io.get_executor(),
             [h = std::move(handler), args...]() mutable { h(args...); });
}

}  // namespace

MemoryStream::MemoryStream(asio::io_context& io, std::shared_ptr<Link> link, int side,
                           Endpoint peer)
    : io_(&io),
      link_(std::move(link)),
      side_(side),
      peer_(std::move(peer)),
      peerName_("memory://" + peer_.toString()),
      self_(std::make_shared<MemoryStream*>(this)) {
  std::lock_guard lock(link_->mu);
  Link::End& end = link_->ends[side_];
  end.executor = io.get_executor();
  end.owner = self_;
  ++end.epoch;
  end.wakePosted = false;
}

MemoryStream::~MemoryStream() {
  close();
  *self_ = nullptr;
}

size_t MemoryStream::bufferBytes() const { return link_->ends[side_].inbox.capacity(); }

void MemoryStream::progress() {
  if (!open_) return;
  std::lock_guard lock(link_->mu);
  advanceRead();
  advanceWrite();
  advanceWatch();
}

void MemoryStream::asyncReadExactly(void* data, size_t size, IoHandler handler) {
  if (!open_) return postCall(*io_, std::move(handler), asio::error::bad_descriptor, size_t{0});
  if (size == 0) return postCall(*io_, std::move(handler), std::error_code(), size_t{0});
  read_ = {ReadKind::kExactly, static_cast<std::byte*>(data), size, 0, 1, std::move(handler), {}};
  std::lock_guard lock(link_->mu);
  advanceRead();
}

void MemoryStream::asyncReadSome(void* data, size_t size, IoHandler handler, size_t wakeAt) {
  if (!open_) return postCall(*io_, std::move(handler), asio::error::bad_descriptor, size_t{0});
  if (size == 0) return postCall(*io_, std::move(handler), std::error_code(), size_t{0});
  read_ = {ReadKind::kSome, static_cast<std::byte*>(data), size, 0, wakeAt, std::move(handler), {}};
  std::lock_guard lock(link_->mu);
  advanceRead();
}

void MemoryStream::asyncWaitReadable(WaitHandler handler, size_t wakeAt) {
  if (!open_) return postCall(*io_, std::move(handler), asio::error::bad_descriptor);
  read_ = {ReadKind::kWait, nullptr, 0, 0, wakeAt, {}, std::move(handler)};
  std::lock_guard lock(link_->mu);
  advanceRead();
}

// A read-some waits for min(wakeAt, size) bytes, to the letter (TCP honours a hint from 16 KiB
// only), so a caller that asks for more than its peer is sure to send hangs here rather than
// now and then. As the kernel does, never past what the buffer holds: a writer that waits for
// room would otherwise wait on a reader that waits for bytes.
void MemoryStream::advanceRead() {
  Link::End& in = link_->ends[side_];
  const auto wakeFor = [&](size_t limit) {
    return std::clamp<size_t>(read_.wakeAt, 1, std::min(limit, in.inbox.capacity()));
  };
  switch (read_.kind) {
    case ReadKind::kNone:
      return;
    case ReadKind::kExactly: {
      const size_t n = in.inbox.take(read_.data + read_.done, read_.size - read_.done);
      if (n > 0) {
        read_.done += n;
        link_->wake(1 - side_);  // room for the peer's write
      }
      if (read_.done == read_.size) return completeRead({});
      if (in.failed) return completeRead(in.failed);
      if (in.finished) return completeRead(asio::error::eof);
      return;
    }
    case ReadKind::kSome: {
      const size_t queued = in.inbox.size();
      if (queued >= wakeFor(read_.size) || (queued > 0 && (in.finished || in.failed))) {
        read_.done = in.inbox.take(read_.data, read_.size);
        link_->wake(1 - side_);
        return completeRead({});
      }
      if (queued == 0 && in.failed) return completeRead(in.failed);
      if (queued == 0 && in.finished) return completeRead(asio::error::eof);
      return;
    }
    case ReadKind::kWait:
      // At the first byte: for a wait the hint is a ceiling (TCP lowers its mark to it and never
      // raises it), and FrameReader::readWhole takes a unit's front from what is there.
      if (in.inbox.size() > 0 || in.finished || in.failed) completeRead({});
      return;
  }
}

void MemoryStream::completeRead(const std::error_code& error) {
  PendingRead done = std::move(read_);
  read_ = {};
  if (done.kind == ReadKind::kWait) return postCall(*io_, std::move(done.wait), error);
  postCall(*io_, std::move(done.io), error, done.done);
}

uint64_t MemoryStream::bytesQueued() const {
  if (!open_) return 0;
  std::lock_guard lock(link_->mu);
  return link_->ends[side_].inbox.size();
}

uint64_t MemoryStream::bytesArrived() const {
  std::lock_guard lock(link_->mu);
  return link_->ends[side_].arrived;
}

bool MemoryStream::watchPeerGone(WaitHandler handler) {
  if (!open_) return false;
  watch_ = std::move(handler);
  std::lock_guard lock(link_->mu);
  advanceWatch();
  return true;
}

void MemoryStream::advanceWatch() {
  if (!watch_) return;
  const Link::End& in = link_->ends[side_];
  std::error_code gone = in.failed;
  if (!gone && in.finished) gone = asio::error::eof;
  if (!gone) return;
  postCall(*io_, std::move(watch_), gone);
  watch_ = nullptr;
}

void MemoryStream::stopWatchingPeer() {
  if (!watch_) return;
  postCall(*io_, std::move(watch_), std::error_code(asio::error::operation_aborted));
  watch_ = nullptr;
}

void MemoryStream::asyncWriteAll(const ConstBuffer* buffers, size_t count, IoHandler handler) {
  if (!open_) return postCall(*io_, std::move(handler), asio::error::bad_descriptor, size_t{0});
  write_ = {true, std::vector<ConstBuffer>(buffers, buffers + count), 0, 0, 0, std::move(handler)};
  std::lock_guard lock(link_->mu);
  advanceWrite();
}

// Hands over what the peer's buffer takes now; bytesSent and the peer's bytesArrived move in
// this same step.
void MemoryStream::advanceWrite() {
  if (!write_.active) return;
  const Link::End& in = link_->ends[side_];
  Link::End& out = link_->ends[1 - side_];
  if (in.failed) return completeWrite(in.failed);
  if (sendShut_ || out.closed) return completeWrite(asio::error::broken_pipe);
  size_t moved = 0;
  while (write_.next < write_.gather.size()) {
    const ConstBuffer& buffer = write_.gather[write_.next];
    const size_t n = out.inbox.put(static_cast<const std::byte*>(buffer.data) + write_.offset,
                                   buffer.size - write_.offset);
    moved += n;
    write_.offset += n;
    if (write_.offset < buffer.size) break;  // the peer's buffer is full
    ++write_.next;
    write_.offset = 0;
  }
  if (moved > 0) {
    bytesSent_ += moved;
    write_.written += moved;
    out.arrived += moved;
    link_->wake(1 - side_);
  }
  if (write_.next == write_.gather.size()) completeWrite({});
}

void MemoryStream::completeWrite(const std::error_code& error) {
  PendingWrite done = std::move(write_);
  write_ = {};
  postCall(*io_, std::move(done.handler), error, done.written);
}

bool MemoryStream::trySendNow(const void* data, size_t size) {
  if (!open_ || sendShut_ || write_.active) return false;
  std::lock_guard lock(link_->mu);
  Link::End& out = link_->ends[1 - side_];
  if (link_->ends[side_].failed || out.closed || out.inbox.room() < size) return false;
  out.inbox.put(static_cast<const std::byte*>(data), size);
  out.arrived += size;
  bytesSent_ += size;
  if (size > 0) link_->wake(1 - side_);
  return true;
}

void MemoryStream::shutdownSend() {
  if (!open_ || sendShut_) return;
  sendShut_ = true;
  std::lock_guard lock(link_->mu);
  link_->ends[1 - side_].finished = true;
  link_->wake(1 - side_);
  advanceWrite();  // a write still pending cannot finish: broken_pipe
}

void MemoryStream::abortPending() {
  const std::error_code aborted = asio::error::operation_aborted;
  if (read_.kind != ReadKind::kNone) completeRead(aborted);
  if (write_.active) completeWrite(aborted);
  if (watch_) {
    postCall(*io_, std::move(watch_), aborted);
    watch_ = nullptr;
  }
}

// A FIN, or a reset when bytes sent to this end were left unread (what a kernel does, and
// what Farewell avoids by reading to the end before it closes).
void MemoryStream::close() {
  if (!open_) return;
  open_ = false;
  abortPending();
  if (!attached_) return;
  std::lock_guard lock(link_->mu);
  Link::End& in = link_->ends[side_];
  Link::End& out = link_->ends[1 - side_];
  if (in.closed) return;
  if (in.inbox.size() > 0 && !out.failed) out.failed = asio::error::connection_reset;
  out.finished = true;
  in.closed = true;
  in.inbox.clear();
  in.owner.reset();
  link_->wake(1 - side_);
}

void MemoryStream::resetConnection() {
  if (open_ && attached_) {
    std::lock_guard lock(link_->mu);
    Link::End& out = link_->ends[1 - side_];
    if (!out.failed) out.failed = asio::error::connection_reset;
  }
  close();
}

std::unique_ptr<MemoryStream> MemoryStream::detachTo(asio::io_context& io) {
  auto moved = std::make_unique<MemoryStream>(io, link_, side_, peer_);  // takes the end over
  moved->peerName_ = peerName_;
  moved->bytesSent_ = bytesSent_;
  moved->sendShut_ = sendShut_;
  attached_ = false;
  open_ = false;
  return moved;
}

Result<std::unique_ptr<Stream>> MemoryStream::moveTo(asio::io_context& target) {
  if (!open_) return ioError("moving " + peerName_ + ": the stream is closed");
  if (read_.kind != ReadKind::kNone || write_.active || watch_)
    return failedPrecondition("moving " + peerName_ + ": an operation is pending on it");
  return std::unique_ptr<Stream>(detachTo(target));
}

// Unlike moveTo, pending operations are allowed: they end with operation_aborted, a write where
// it is (what it had not handed over is the new owner's to send).
Result<std::unique_ptr<Stream>> MemoryStream::handOver() {
  if (!open_) return ioError("handing over " + peerName_ + ": the stream is closed");
  abortPending();
  return std::unique_ptr<Stream>(detachTo(*io_));
}

std::pair<std::unique_ptr<MemoryStream>, std::unique_ptr<MemoryStream>> connectedPair(
    asio::io_context& first, asio::io_context& second, size_t bufferBytes) {
  static std::atomic<uint64_t> pairs{0};
  const std::string host = "memory" + std::to_string(pairs++);
  auto link = std::make_shared<Link>(std::max<size_t>(bufferBytes, 1));
  auto a = std::make_unique<MemoryStream>(first, link, 0, Endpoint{host, 2});
  auto b = std::make_unique<MemoryStream>(second, link, 1, Endpoint{host, 1});
  return {std::move(a), std::move(b)};
}

}  // namespace rs::transport::memory

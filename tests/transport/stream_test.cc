// The Stream contract (core/transport/stream.h) over every implementation (test::TcpPair,
// test::MemoryPair; tests/support/stream_pair.h): the move to another io_context, gather writes
// and their count of bytes sent, the best-effort send of a last frame, the watch for a peer
// that goes away while nothing is read, the count of bytes arrived, half-close, close and a
// reset, and a wait for bytes that reads nothing. What only TCP has (SO_RCVLOWAT carried by a
// move, socket buffer sizes) is checked where the pair is TCP's; TCP's own options are in
// tcp_stream_test.cc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/transport/stream.h"
#include "tests/support/run_until.h"
#include "tests/support/stream_pair.h"
#include "tests/support/wait_until.h"

namespace rs::transport {
namespace {

int lowWatermarkOf(tcp::TcpStream& stream) {
  int value = 0;
  socklen_t len = sizeof(value);
  REQUIRE(::getsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &value,
                       &len) == 0);
  return value;
}

// The peer writes `bytes`; then `context` runs until the pending read completed (`*got` set).
size_t feedThrough(test::StreamPair& p, asio::io_context& context, size_t bytes, size_t* got) {
  std::vector<char> data(bytes, 'x');
  REQUIRE(!p.peerWrite(data.data(), data.size()));
  REQUIRE(test::runUntil(context, [&] { return *got != 0; }));
  return *got;
}

// What a watch (watchPeerGone) ended with.
struct PeerWatch {
  bool done = false;
  std::error_code why;
  WaitHandler handler() {
    return [this](const std::error_code& ec) {
      done = true;
      why = ec;
    };
  }
};

// How an operation ended, and on which thread its handler ran.
struct Outcome {
  bool done = false;
  std::error_code error;
  size_t bytes = 0;
  std::thread::id thread;
  IoHandler handler() {
    return [this](const std::error_code& ec, size_t n) {
      done = true;
      error = ec;
      bytes = n;
      thread = std::this_thread::get_id();
    };
  }
};

}  // namespace

TEMPLATE_TEST_CASE("stream: moveTo carries the connection, its name and its count to another "
                   "io_context (and, over TCP, its SO_RCVLOWAT)",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  std::vector<char> buf(256 << 10);
  size_t got = 0;
  auto handler = [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    got = n;
  };
  p.local->asyncReadSome(buf.data(), buf.size(), handler, 64 << 10);
  REQUIRE(feedThrough(p, p.io, 64 << 10, &got) == (64 << 10));
  if (auto* tcp = p.tcp()) REQUIRE(lowWatermarkOf(*tcp) == (64 << 10));
  const std::string name = p.local->peerName();
  const Endpoint peer = p.local->peer();

  asio::io_context target;
  auto moved = p.local->moveTo(target);
  REQUIRE(moved.isOk());
  std::unique_ptr<Stream> stream = std::move(*moved);
  CHECK_FALSE(p.local->isOpen());  // the old one holds nothing any more
  CHECK(stream->isOpen());
  CHECK(stream->peerName() == name);
  CHECK(stream->peer() == peer);
  CHECK(stream->bytesArrived() == (64 << 10));
  CHECK(stream->executor() == asio::any_io_executor(target.get_executor()));
  auto* tcp = dynamic_cast<tcp::TcpStream*>(stream.get());
  if (p.tcp()) {
    REQUIRE(tcp != nullptr);
    CHECK(lowWatermarkOf(*tcp) == (64 << 10));
  }

  // The read completes on the target context (and over TCP, the same mark is known to the new
  // stream: a wake at 64 KiB makes no setsockopt).
  got = 0;
  stream->asyncReadSome(buf.data(), buf.size(), handler, 64 << 10);
  if (tcp) CHECK(lowWatermarkOf(*tcp) == (64 << 10));
  CHECK(feedThrough(p, target, 64 << 10, &got) == (64 << 10));
  // And it writes back to the same peer.
  const char hello[] = "hi";
  ConstBuffer out{hello, 2};
  bool written = false;
  stream->asyncWriteAll(&out, 1, [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    REQUIRE(n == 2);
    written = true;
  });
  REQUIRE(test::runUntil(target, [&] { return written; }));
  char back[2] = {};
  REQUIRE(!p.peerReadExactly(back, 2));
  CHECK(std::string(back, 2) == "hi");
}

TEMPLATE_TEST_CASE("stream: trySendNow sends a small frame whole, or nothing when the send path "
                   "is full",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;  // here the local stream sends and the peer receives
  const std::string frame(300, 'A');
  REQUIRE(p.local->trySendNow(frame.data(), frame.size()));
  std::string first(frame.size(), '\0');
  REQUIRE(!p.peerReadExactly(first.data(), first.size()));
  CHECK(first == frame);

  // The peer stops reading: the local stream sends until its path takes no more.
  const size_t queued = p.localFill(*p.local);
  CHECK_FALSE(p.local->trySendNow(frame.data(), frame.size()));

  // Everything the peer receives before the end of the stream is filler: the frame did not go
  // out, not even in part.
  p.local->close();
  std::string rest;
  std::vector<char> chunk(64 << 10);
  std::error_code ec;
  for (;;) {
    const size_t n = p.peerReadSome(chunk.data(), chunk.size(), ec);
    rest.append(chunk.data(), n);
    if (ec) break;
  }
  CHECK(ec == asio::error::eof);
  CHECK(rest.size() == queued);
  CHECK(std::count(rest.begin(), rest.end(), 'f') == static_cast<std::ptrdiff_t>(rest.size()));
}

TEMPLATE_TEST_CASE("stream: asyncWriteAll counts each byte in bytesSent as the transport takes "
                   "it, and delivers the gather exactly",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;  // here the local stream sends and the peer receives
  if (auto* tcp = p.tcp()) {  // small socket buffers, so that the write goes out in many sends
    const int small = 64 << 10;
    REQUIRE(::setsockopt(tcp->socket().native_handle(), SOL_SOCKET, SO_SNDBUF, &small,
                         sizeof(small)) == 0);
    int result = -1;
    p.onPeer([&](Stream& s) {
      result = ::setsockopt(dynamic_cast<tcp::TcpStream&>(s).socket().native_handle(),
                            SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    });
    REQUIRE(result == 0);
  }
  std::vector<uint8_t> head(72), body(3 << 20);
  for (size_t i = 0; i < head.size(); ++i) head[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<uint8_t>(i * 7 % 251);
  const ConstBuffer gather[] = {{head.data(), head.size()}, {nullptr, 0},
                                {body.data(), body.size()}};
  const uint64_t total = head.size() + body.size();
  Outcome write;
  p.local->asyncWriteAll(gather, 3, write.handler());
  CHECK_FALSE(write.done);  // never inside the call
  CHECK(p.local->bytesSent() > 0);
  CHECK(p.local->bytesSent() < total);

  // Whatever the peer has read was counted before it could read it.
  std::vector<uint8_t> received;
  std::vector<uint8_t> piece(16 << 10);
  size_t behind = 0;  // reads that found more than bytesSent counted
  while (received.size() < total) {
    if (received.size() == p.local->bytesSent())  // all that went out is read: let more go
      REQUIRE(test::runUntil(p.io, [&] { return p.local->bytesSent() > received.size(); }));
    std::error_code ec;
    const size_t n = p.peerReadSome(piece.data(), piece.size(), ec);
    REQUIRE(!ec);
    received.insert(received.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(n));
    if (received.size() > p.local->bytesSent()) ++behind;
  }
  CHECK(behind == 0);
  REQUIRE(test::runUntil(p.io, [&] { return write.done; }));
  CHECK(write.error == std::error_code());
  CHECK(write.bytes == total);
  CHECK(write.thread == std::this_thread::get_id());
  CHECK(p.local->bytesSent() == total);
  std::vector<uint8_t> expected(head);
  expected.insert(expected.end(), body.begin(), body.end());
  CHECK(received == expected);
}

TEMPLATE_TEST_CASE("stream: asyncWriteAll on a closed stream fails through its handler",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  p.local->close();
  const char byte = 'x';
  const ConstBuffer one{&byte, 1};
  Outcome write;
  p.local->asyncWriteAll(&one, 1, write.handler());
  CHECK_FALSE(write.done);
  REQUIRE(test::runUntil(p.io, [&] { return write.done; }));
  CHECK(write.error);
  CHECK(p.local->bytesSent() == 0);
}

TEMPLATE_TEST_CASE("stream: trySendNow on a closed stream sends nothing", "[transport]",
                   test::TcpPair, test::MemoryPair) {
  TestType p;
  p.local->close();
  const char byte = 'x';
  CHECK_FALSE(p.local->trySendNow(&byte, 1));
}

// What a parked session relies on (server/session.h): it reads nothing, yet learns at once that
// its member went away, and the bytes the member sent before stay for the read that resumes.
TEMPLATE_TEST_CASE("stream: watchPeerGone sees the peer's FIN behind unread bytes, reads "
                   "nothing, and idles while bytes arrive",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  PeerWatch watch;
  REQUIRE(p.local->watchPeerGone(watch.handler()));
  const std::vector<char> data(1000, 'd');
  REQUIRE(!p.peerWrite(data.data(), data.size()));
  REQUIRE(test::waitUntil([&] { return p.local->bytesQueued() == 1000; }));
  // The arrival wakes the watch for one look at the stream; then it waits for the next event:
  // bytes that sit there run nothing (no spin), and nothing was read.
  p.io.poll();
  p.io.poll();
  CHECK(p.io.poll() == 0);
  CHECK_FALSE(watch.done);
  CHECK(p.local->bytesQueued() == 1000);

  p.peerShutdownSend();
  REQUIRE(test::runUntil(p.io, [&] { return watch.done; }));
  CHECK(watch.why == asio::error::eof);
  CHECK(p.local->bytesQueued() == 1000);
  // The bytes are all there for a read, then the end of the stream.
  std::vector<char> got(2000);
  Outcome read;
  p.local->asyncReadSome(got.data(), got.size(), read.handler());
  REQUIRE(test::runUntil(p.io, [&] { return read.done; }));
  CHECK(!read.error);
  CHECK(read.bytes == 1000);
  Outcome end;
  p.local->asyncReadSome(got.data(), got.size(), end.handler());
  REQUIRE(test::runUntil(p.io, [&] { return end.done; }));
  CHECK(end.error == asio::error::eof);
}

TEMPLATE_TEST_CASE("stream: watchPeerGone sees a FIN that came before it began, and a reset "
                   "behind a full buffer",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  PeerWatch watch;
  SECTION("closed before") {
    REQUIRE(!p.peerWrite(std::vector<uint8_t>(100, 'x')));
    p.peerShutdownSend();
    REQUIRE(test::waitUntil([&] { return p.peerEndArrived(); }));
    REQUIRE(p.local->watchPeerGone(watch.handler()));
    REQUIRE(test::runUntil(p.io, [&] { return watch.done; }));
    CHECK(watch.why == asio::error::eof);
  }
  SECTION("reset while the receive buffer is full") {
    REQUIRE(p.local->watchPeerGone(watch.handler()));
    // The peer sends until the local stream's buffer (and window) are full: nothing runs
    // meanwhile.
    CHECK(p.peerFill() > 0);
    p.io.poll();
    CHECK(p.io.poll() == 0);
    CHECK_FALSE(watch.done);
    p.peerReset();
    REQUIRE(test::runUntil(p.io, [&] { return watch.done; }));
    CHECK(watch.why == asio::error::connection_reset);
  }
}

TEMPLATE_TEST_CASE("stream: stopWatchingPeer ends the watch alone: a read right after it gets "
                   "the queued bytes, and a close aborts a watch",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  PeerWatch watch;
  REQUIRE(p.local->watchPeerGone(watch.handler()));
  REQUIRE(!p.peerWrite(std::vector<uint8_t>(300, 'y')));
  REQUIRE(test::waitUntil([&] { return p.local->bytesQueued() == 300; }));
  // Stopped and read in the same turn: the read does not wait behind the watch's wait for an
  // event that will not come (the bytes are already there).
  p.local->stopWatchingPeer();
  std::vector<char> got(1000);
  size_t n = 0;
  p.local->asyncReadSome(got.data(), got.size(), [&](const std::error_code&, size_t k) { n = k; });
  REQUIRE(test::runUntil(p.io, [&] { return watch.done && n != 0; }));
  CHECK(watch.why == asio::error::operation_aborted);
  CHECK(n == 300);

  PeerWatch closed;
  REQUIRE(p.local->watchPeerGone(closed.handler()));
  p.local->close();
  REQUIRE(test::runUntil(p.io, [&] { return closed.done; }));
  CHECK(closed.why == asio::error::operation_aborted);
}

TEMPLATE_TEST_CASE("stream: bytesArrived counts bytes waiting unread as soon as they arrive, and "
                   "reads do not move it",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  CHECK(p.local->bytesArrived() == 0);
  std::vector<char> data(1000, 'a');
  REQUIRE(!p.peerWrite(data.data(), data.size()));
  // Nothing is read, and the local context does not even run: the bytes wait and count.
  REQUIRE(test::waitUntil([&] { return p.local->bytesArrived() == 1000; }));
  std::vector<char> got(400);
  size_t read = 0;
  p.local->asyncReadExactly(got.data(), got.size(), [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    read = n;
  });
  REQUIRE(test::runUntil(p.io, [&] { return read == 400; }));
  CHECK(p.local->bytesArrived() == 1000);
  std::vector<char> rest(600 + 5);
  read = 0;
  p.local->asyncReadSome(rest.data(), rest.size(), [&](const std::error_code& ec, size_t n) {
    REQUIRE(!ec);
    read = n;
  });
  REQUIRE(test::runUntil(p.io, [&] { return read == 600; }));
  CHECK(p.local->bytesArrived() == 1000);
  REQUIRE(!p.peerWrite(data.data(), 5));
  REQUIRE(test::waitUntil([&] { return p.local->bytesArrived() == 1005; }));
  // A moved stream keeps its count.
  asio::io_context other;
  auto moved = p.local->moveTo(other);
  REQUIRE(moved.isOk());
  CHECK((*moved)->bytesArrived() == 1005);
}

TEMPLATE_TEST_CASE("stream: shutdownSend half-closes: the peer reads what was written, then the "
                   "end, reading goes on, and a later write fails with broken_pipe",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  const std::string word = "last";
  const ConstBuffer out{word.data(), word.size()};
  Outcome write;
  p.local->asyncWriteAll(&out, 1, write.handler());
  REQUIRE(test::runUntil(p.io, [&] { return write.done; }));
  REQUIRE(!write.error);
  p.local->shutdownSend();
  std::string got(word.size(), '\0');
  REQUIRE(!p.peerReadExactly(got.data(), got.size()));
  CHECK(got == word);
  char more = 0;
  std::error_code end;
  CHECK(p.peerReadSome(&more, 1, end) == 0);
  CHECK(end == asio::error::eof);

  // The other direction is open: the peer's reply comes, on this thread.
  REQUIRE(!p.peerWrite(std::vector<uint8_t>{'o', 'k'}));
  char reply[2] = {};
  Outcome read;
  p.local->asyncReadExactly(reply, 2, read.handler());
  REQUIRE(test::runUntil(p.io, [&] { return read.done; }));
  CHECK(!read.error);
  CHECK(std::string(reply, 2) == "ok");
  CHECK(read.thread == std::this_thread::get_id());
  CHECK(p.local->isOpen());

  Outcome late;
  p.local->asyncWriteAll(&out, 1, late.handler());
  REQUIRE(test::runUntil(p.io, [&] { return late.done; }));
  CHECK(late.error == asio::error::broken_pipe);
}

TEMPLATE_TEST_CASE("stream: close ends a pending read and a write held back by the peer with "
                   "operation_aborted, later, on this thread, and the peer reads what was sent, "
                   "then the end",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  std::vector<char> in(1000);
  Outcome read, write;
  p.local->asyncReadSome(in.data(), in.size(), read.handler());
  const std::vector<char> big(64 << 20, 'b');  // more than any receive path holds
  const ConstBuffer out{big.data(), big.size()};
  p.local->asyncWriteAll(&out, 1, write.handler());
  p.io.poll();
  REQUIRE_FALSE(write.done);  // held back: the peer reads nothing
  CHECK_FALSE(read.done);
  const uint64_t sent = p.local->bytesSent();
  CHECK(sent > 0);

  p.local->close();
  CHECK_FALSE(read.done);  // never inside the call
  CHECK_FALSE(write.done);
  CHECK_FALSE(p.local->isOpen());
  p.local->close();  // idempotent
  REQUIRE(test::runUntil(p.io, [&] { return read.done && write.done; }));
  CHECK(read.error == asio::error::operation_aborted);
  CHECK(write.error == asio::error::operation_aborted);
  CHECK(read.thread == std::this_thread::get_id());
  CHECK(write.thread == std::this_thread::get_id());
  CHECK(p.local->bytesSent() == sent);

  std::vector<char> chunk(256 << 10);
  uint64_t received = 0;
  std::error_code ec;
  while (!ec) received += p.peerReadSome(chunk.data(), chunk.size(), ec);
  CHECK(ec == asio::error::eof);
  CHECK(received == sent);
}

TEMPLATE_TEST_CASE("stream: a reset fails a read with connection_reset after the bytes that had "
                   "arrived, and fails writes",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  REQUIRE(!p.peerWrite(std::vector<uint8_t>(100, 'r')));
  REQUIRE(test::waitUntil([&] { return p.local->bytesQueued() == 100; }));
  p.peerReset();
  std::vector<char> in(1000);
  Outcome first;
  p.local->asyncReadSome(in.data(), in.size(), first.handler());
  REQUIRE(test::runUntil(p.io, [&] { return first.done; }));
  CHECK(!first.error);
  CHECK(first.bytes == 100);
  Outcome second;
  p.local->asyncReadSome(in.data(), in.size(), second.handler());
  REQUIRE(test::runUntil(p.io, [&] { return second.done; }));
  CHECK(second.error == asio::error::connection_reset);
  CHECK(second.bytes == 0);

  const char byte = 'x';
  const ConstBuffer one{&byte, 1};
  Outcome write;
  p.local->asyncWriteAll(&one, 1, write.handler());
  REQUIRE(test::runUntil(p.io, [&] { return write.done; }));
  // A broken pipe or a reset, whichever the transport reports.
  CHECK((write.error == asio::error::connection_reset ||
         write.error == asio::error::broken_pipe));
}

TEMPLATE_TEST_CASE("stream: asyncWaitReadable completes once bytes are queued, or at the peer's "
                   "end, and reads nothing, and a read of bytesQueued gets them all",
                   "[transport]", test::TcpPair, test::MemoryPair) {
  TestType p;
  bool ready = false;
  std::error_code why;
  p.local->asyncWaitReadable([&](const std::error_code& ec) {
    ready = true;
    why = ec;
  });
  p.io.poll();
  CHECK_FALSE(ready);
  REQUIRE(!p.peerWrite(std::vector<uint8_t>(5000, 'w')));
  REQUIRE(test::runUntil(p.io, [&] { return ready; }));
  CHECK(!why);
  REQUIRE(test::waitUntil([&] { return p.local->bytesQueued() == 5000; }));
  std::vector<char> in(p.local->bytesQueued());
  Outcome read;
  p.local->asyncReadSome(in.data(), in.size(), read.handler());
  REQUIRE(test::runUntil(p.io, [&] { return read.done; }));
  CHECK(read.bytes == 5000);
  CHECK(p.local->bytesQueued() == 0);

  ready = false;
  p.local->asyncWaitReadable([&](const std::error_code& ec) {
    ready = true;
    why = ec;
  });
  p.io.poll();
  CHECK_FALSE(ready);
  p.peerShutdownSend();
  REQUIRE(test::runUntil(p.io, [&] { return ready; }));
  CHECK(!why);  // the next read says which
  Outcome end;
  p.local->asyncReadSome(in.data(), in.size(), end.handler());
  REQUIRE(test::runUntil(p.io, [&] { return end.done; }));
  CHECK(end.error == asio::error::eof);
}

}  // namespace rs::transport

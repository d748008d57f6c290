// A reducer that misbehaves on purpose, for tests of what a member accepts from one: a real
// listening socket on 127.0.0.1 whose every accepted connection runs `serve` on a thread of its
// own, speaking (or failing to speak) the wire protocol through the helpers below. No Catch2
// here (the helpers throw on a broken conversation, which ends that connection's thread), so
// that a test program other than a Catch2 binary may use it too.
#pragma once

#include <sys/socket.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/common/endpoint.h"
#include "core/wire/control_frames.h"
#include "core/wire/fabric_frames.h"
#include "core/wire/frame.h"

namespace rs::test {

class FakeReducer {
 public:
  using Socket = asio::ip::tcp::socket;
  using Serve = std::function<void(Socket& connection)>;

  // `receiveBuffer` > 0: the SO_RCVBUF of every accepted connection (set on the listener, so
  // that the window is that small from the start): a fake that stops reading then holds a
  // member's upload back after about that many bytes. `port`: where it listens (0: any), e.g.
  // the port of a reducer stopped in its place.
  explicit FakeReducer(Serve serve, int receiveBuffer = 0, uint16_t port = 0)
      : serve_(std::move(serve)), acceptor_(io_) {
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    if (receiveBuffer > 0)
      acceptor_.set_option(asio::socket_base::receive_buffer_size(receiveBuffer));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), port});
    acceptor_.listen();
    acceptThread_ = std::thread([this] { acceptLoop(); });
  }

  // Shuts the listener and every connection down (which ends the blocked reads and writes of
  // the serving threads) and joins the threads.
  ~FakeReducer() {
    stopping_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // ends a blocked accept on Linux
    acceptThread_.join();
    std::lock_guard lock(mu_);
    for (auto& c : connections_) ::shutdown(c->native_handle(), SHUT_RDWR);
    for (auto& t : threads_) t.join();
  }
  FakeReducer(const FakeReducer&) = delete;
  FakeReducer& operator=(const FakeReducer&) = delete;

  Endpoint endpoint() const { return {"127.0.0.1", acceptor_.local_endpoint().port()}; }
  int accepted() const { return accepted_.load(); }

 private:
  void acceptLoop() {
    while (!stopping_) {
      auto connection = std::make_shared<Socket>(io_);
      std::error_code ec;
      acceptor_.accept(*connection, ec);
      if (ec || stopping_) return;
      std::lock_guard lock(mu_);
      connections_.push_back(connection);
      ++accepted_;
      threads_.emplace_back([this, connection] {
        try {
          serve_(*connection);
        } catch (const std::exception&) {
          // The member closed, or said something the fake did not expect: this connection ends.
        }
      });
    }
  }

  Serve serve_;
  asio::io_context io_;  // only for the sockets: every call on them blocks
  asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::mutex mu_;
  std::vector<std::shared_ptr<Socket>> connections_;
  std::vector<std::thread> threads_;
  std::thread acceptThread_;
};

// --- What a fake reducer says and reads -----------------------------------------------------

inline void writeBytes(FakeReducer::Socket& s, const void* data, size_t size) {
  asio::write(s, asio::buffer(data, size));
}

inline wire::FrameHeader readHeaderOf(FakeReducer::Socket& s, uint32_t maxPayload = 64u << 20) {
  wire::HeaderBytes bytes;
  asio::read(s, asio::buffer(bytes));
  wire::FrameHeader h;
  wire::DecodeLimits limits;
  limits.maxPayloadBytes = maxPayload;
  if (Status st = wire::decodeHeader(bytes.data(), bytes.size(), limits, &h); !st.isOk())
    throw std::runtime_error("fake reducer: " + st.toString());
  return h;
}

// The CHALLENGE of an open reducer (no job secret), header and payload.
inline std::vector<uint8_t> challengeFrame() {
  wire::FrameHeader h;
  h.type = wire::FrameType::kChallenge;
  h.payloadLength = wire::kChallengePayloadSize;
  const wire::HeaderBytes header = wire::encodeHeader(h);
  const auto payload = wire::encodeChallenge({});
  std::vector<uint8_t> frame(header.begin(), header.end());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

// The HELLO_ACK of a reducer that takes chunks of up to `maxPayload` bytes, on a stream whose
// loss bound is `lossDetectMs` (0: none).
inline std::vector<uint8_t> helloAckFrame(uint32_t maxPayload, uint32_t lossDetectMs = 0) {
  wire::FrameHeader h;
  h.type = wire::FrameType::kHelloAck;
  h.payloadLength = wire::kHelloAckPayloadSize;
  const wire::HeaderBytes header = wire::encodeHeader(h);
  const auto payload = wire::encodeHelloAck({.maxPayloadBytes = maxPayload, .ioThreads = 1,
                                             .serverVersion = 1 << 8,
                                             .lossDetectMs = lossDetectMs});
  std::vector<uint8_t> frame(header.begin(), header.end());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

// Reads a HELLO (header and payload) and returns its header.
inline wire::FrameHeader readHello(FakeReducer::Socket& s) {
  const wire::FrameHeader h = readHeaderOf(s);
  if (h.type != wire::FrameType::kHello) throw std::runtime_error("fake reducer: no HELLO");
  std::vector<uint8_t> payload(h.payloadLength);
  asio::read(s, asio::buffer(payload));
  return h;
}

// The first half of an open reducer's handshake: CHALLENGE, then the member's HELLO, decoded
// (a fake that answers by what the HELLO says: its stream, its flags).
struct Greeted {
  wire::FrameHeader header;
  wire::HelloPayload hello;
};
inline Greeted challengeAndReadHello(FakeReducer::Socket& s) {
  const std::vector<uint8_t> challenge = challengeFrame();
  writeBytes(s, challenge.data(), challenge.size());
  Greeted g{.header = readHeaderOf(s), .hello = {}};
  if (g.header.type != wire::FrameType::kHello) throw std::runtime_error("fake reducer: no HELLO");
  std::vector<uint8_t> payload(g.header.payloadLength);
  asio::read(s, asio::buffer(payload));
  if (!wire::decodeHello(payload.data(), payload.size(), &g.hello).isOk())
    throw std::runtime_error("fake reducer: a HELLO that does not decode");
  return g;
}

// After HELLO_ACK, to a HELLO that asked for the fabric (a member run over it, RS_TEST_FABRIC):
// FABRIC_DECLINE, so that the member goes on over TCP, which is what these fakes speak.
inline void declineFabricIfAsked(FakeReducer::Socket& s, const wire::FrameHeader& hello) {
  if ((hello.flags & wire::kFlagFabric) == 0) return;
  const wire::FabricFrame decline =
      wire::fabricDeclineFrame(hello.group, hello.rank, "a fake reducer has no fabric");
  writeBytes(s, decline.header.data(), decline.header.size());
  writeBytes(s, decline.payload.data(), decline.payload.size());
}

// The whole handshake of an open reducer: CHALLENGE, the member's HELLO, HELLO_ACK (and
// FABRIC_DECLINE if the HELLO asked for the fabric).
inline wire::FrameHeader acceptMember(FakeReducer::Socket& s, uint32_t maxPayload,
                                      uint32_t lossDetectMs = 0) {
  const std::vector<uint8_t> challenge = challengeFrame();
  writeBytes(s, challenge.data(), challenge.size());
  const wire::FrameHeader hello = readHello(s);
  const std::vector<uint8_t> ack = helloAckFrame(maxPayload, lossDetectMs);
  writeBytes(s, ack.data(), ack.size());
  declineFabricIfAsked(s, hello);
  return hello;
}

// Reads and drops whatever arrives until the member closes (or the fake is destroyed).
inline void readUntilClosed(FakeReducer::Socket& s) {
  std::vector<uint8_t> sink(64 << 10);
  std::error_code ec;
  while (!ec) s.read_some(asio::buffer(sink), ec);
}

// A RESULT part for elements [offset, offset + values.size() / element size) of the chunk whose
// REDUCE header is `reduce`, carrying `values` as its payload.
inline void sendResultPart(FakeReducer::Socket& s, const wire::FrameHeader& reduce,
                           uint64_t offset, const std::vector<uint8_t>& values) {
  const uint32_t count = static_cast<uint32_t>(values.size() / dataTypeSize(reduce.dtype));
  const wire::FrameHeader h = wire::resultHeader({.group = reduce.group,
                                                  .rank = reduce.rank,
                                                  .seq = reduce.seq,
                                                  .chunk = reduce.chunk,
                                                  .elemOffset = offset,
                                                  .elemCount = count,
                                                  .dtype = reduce.dtype,
                                                  .op = reduce.op});
  const wire::HeaderBytes header = wire::encodeHeader(h);
  writeBytes(s, header.data(), header.size());
  writeBytes(s, values.data(), values.size());
}

// An ERROR or ABORT frame with `reason` (any text a hostile reducer may choose).
inline void sendFailure(FakeReducer::Socket& s, bool abort, const std::string& reason) {
  const Status status(StatusCode::kAborted, reason);
  const wire::ErrorFrame f =
      abort ? wire::abortFrame({}, 0, status) : wire::errorFrame({}, 0, status);
  writeBytes(s, f.header.data(), f.header.size());
  writeBytes(s, f.reason.data(), f.reason.size());
}

}  // namespace rs::test

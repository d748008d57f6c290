// The reducer's side of a data stream's handshake (server/handshake.h) on its own: a listener on
// loopback hands every accepted stream to a Handshake whose owner records what it is told, and
// a raw socket plays the worker. A HELLO with a wrong proof is refused with an ERROR naming it,
// counted as auth and logged, and never handed off; the right proof is handed off as the group,
// rank and stream it names; an evicted handshake gets the ERROR its eviction names; a worker
// that sends no HELLO is closed without a reply once the handshake timeout ran out. Every
// handshake tells its owner once that it ended.
#include <catch2/catch.hpp>

#include <asio/executor_work_guard.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/transport/listener.h"
#include "server/handshake.h"
#include "tests/support/log_capture.h"
#include "tests/support/raw_member.h"
#include "tests/support/wait_until.h"

namespace rs::test {
namespace {

using Catch::Matchers::Contains;
using server::HandshakeFailure;

constexpr const char* kServerHandshakeSecret = "server-handshake-secret-0123456789";

// A reducer's data port with nothing behind it but handshakes: an io thread, a listener on
// 127.0.0.1 and one Handshake per accepted connection. As the owner it records what they say.
class Handshakes : private server::HandshakeOwner {
 public:
  struct HandedOff {
    GroupId group;
    uint32_t rank;
    uint16_t streamIndex;
  };

  explicit Handshakes(uint32_t handshakeTimeoutMs = 120000)
      : registry_(server::RegistryLimits{}, 1), guard_(asio::make_work_guard(io_)) {
    config_.secret = kServerHandshakeSecret;
    config_.maxChunkBytes = 8u << 20;
    config_.handshakeTimeoutMs = handshakeTimeoutMs;
    auto listener =
        transport::listen(io_, {"127.0.0.1", 0}, config_.transport, PortZero::kAllowed);
    REQUIRE(listener.status().toString() == "OK");
    listener_ = std::move(*listener);
    acceptNext();
    thread_ = std::thread([this] { io_.run(); });
  }

  // Ends what is left on the io thread (pending handshakes evicted, handed-off streams closed),
  // then lets the thread run out.
  ~Handshakes() {
    asio::post(io_, [this] {
      listener_->close();
      for (auto& weak : started_)
        if (auto h = weak.lock()) h->evict(abortedError("the test is over"));
      std::lock_guard lock(mu_);
      for (auto& s : streams_) s->close();
    });
    guard_.reset();
    thread_.join();
  }

  uint16_t port() const { return listener_->port(); }
  int ended() const { return ended_.load(); }
  uint64_t refusals(HandshakeFailure why) const { return refusals_.count(why); }
  std::vector<HandedOff> handedOff() {
    std::lock_guard lock(mu_);
    return handedOff_;
  }
  // Calls `fn` on every handshake still pending, on the io thread, and waits for it. First lets
  // every handler queued so far run: a write's completion is queued once the handler that
  // started the write has ended, so that `fn` finds each CHALLENGE that reached its peer done.
  void forEachPending(const std::function<void(server::Handshake&)>& fn) {
    onIoThread([] {});
    onIoThread([&] {
      for (auto& weak : started_)
        if (auto h = weak.lock()) fn(*h);
    });
  }

 private:
  void onIoThread(const std::function<void()>& fn) {
    std::promise<void> done;
    asio::post(io_, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }

  void acceptNext() {
    listener_->asyncAccept([this](const std::error_code& ec,
                                  std::unique_ptr<transport::Stream> stream) {
      if (ec) return;
      server::HandshakeOwner& owner = *this;
      auto handshake = std::make_shared<server::Handshake>(
          owner, io_, config_, registry_, refusals_, std::move(stream), "127.0.0.1",
          started_.size() + 1);
      started_.push_back(handshake);
      handshake->run();
      acceptNext();
    });
  }

  void handshakeEnded(const server::Handshake&) override { ++ended_; }
  void handOff(std::unique_ptr<transport::Stream> stream, std::shared_ptr<server::Group> group,
               uint32_t rank, uint16_t streamIndex, uint32_t /*lossDetectMs*/,
               bool /*askedFabric*/) override {
    std::lock_guard lock(mu_);
    handedOff_.push_back({group->id(), rank, streamIndex});
    streams_.push_back(std::move(stream));
  }

  asio::io_context io_;
  server::ServerConfig config_;
  server::GroupRegistry registry_;
  server::HandshakeRefusals refusals_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::unique_ptr<transport::Listener> listener_;
  std::vector<std::weak_ptr<server::Handshake>> started_;  // io thread
  std::atomic<int> ended_{0};
  std::mutex mu_;
  std::vector<HandedOff> handedOff_;                       // guarded by mu_
  std::vector<std::unique_ptr<transport::Stream>> streams_;  // guarded by mu_
  std::thread thread_;
};

// Reads until the peer closes; true when nothing came before the close.
bool closedWithoutReply(asio::ip::tcp::socket& s) {
  uint8_t byte;
  std::error_code ec;
  const size_t n = s.read_some(asio::buffer(&byte, 1), ec);
  return n == 0 && ec == asio::error::eof;
}

}  // namespace

TEST_CASE("server handshake: a wrong proof is refused with an ERROR naming it, counted as auth "
          "and logged, and never handed off") {
  LogCapture log;
  Handshakes handshakes;
  asio::io_context io;
  asio::ip::tcp::socket s = rawSocket(io, handshakes.port());
  const wire::ChallengePayload challenge = readChallenge(s);
  CHECK(challenge.mode == wire::AuthMode::kJobSecret);
  asio::write(s, asio::buffer(helloFrame(challenge, GroupId::random(), 0, 2, 1, 1,
                                         "not-the-job-secret-0123456789")));
  // The state first: a socket read would wait forever for an ERROR that never comes.
  REQUIRE(waitUntil([&] { return handshakes.ended() == 1; }));
  REQUIRE(handshakes.handedOff().empty());
  CHECK(handshakes.refusals(HandshakeFailure::kAuth) == 1);
  CHECK_THAT(readRefusal(s), Contains("HELLO's auth proof is wrong for this connection"));
  CHECK(log.contains("refused data connection from tcp://127.0.0.1:"));
}

TEST_CASE("server handshake: the right proof is handed off as the group, rank and stream it "
          "names") {
  Handshakes handshakes;
  asio::io_context io;
  asio::ip::tcp::socket s = rawSocket(io, handshakes.port());
  const GroupId group = GroupId::random();
  sendHello(s, group, 1, 2, 1, 1, kServerHandshakeSecret);
  REQUIRE(waitUntil([&] { return handshakes.handedOff().size() == 1; }));
  const auto handed = handshakes.handedOff().front();
  CHECK(handed.group == group);
  CHECK(handed.rank == 1);
  CHECK(handed.streamIndex == 0);
  CHECK(handshakes.ended() == 1);
  for (size_t why = 0; why < server::kNumHandshakeFailures; ++why)
    CHECK(handshakes.refusals(static_cast<HandshakeFailure>(why)) == 0);
}

TEST_CASE("server handshake: an evicted handshake gets the ERROR its eviction names") {
  Handshakes handshakes;
  asio::io_context io;
  asio::ip::tcp::socket s = rawSocket(io, handshakes.port());
  readChallenge(s);
  handshakes.forEachPending([](server::Handshake& h) {
    h.evict(resourceExhausted("its oldest made room (--max-pending-handshakes)"));
  });
  REQUIRE(waitUntil([&] { return handshakes.ended() == 1; }));
  REQUIRE(handshakes.refusals(HandshakeFailure::kLimit) == 1);
  CHECK(handshakes.handedOff().empty());
  CHECK_THAT(readRefusal(s), Contains("its oldest made room (--max-pending-handshakes)"));
}

TEST_CASE("server handshake: no HELLO within the handshake timeout closes without a reply") {
  Handshakes handshakes(/*handshakeTimeoutMs=*/200);
  asio::io_context io;
  asio::ip::tcp::socket s = rawSocket(io, handshakes.port());
  readChallenge(s);
  REQUIRE(waitUntil([&] { return handshakes.ended() == 1; }));
  CHECK(handshakes.refusals(HandshakeFailure::kTimeout) == 1);
  CHECK(closedWithoutReply(s));
}

}  // namespace rs::test

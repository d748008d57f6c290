// A relay in front of a real reducer, for tests of a reducer whose connections end in a reset
// (its host's kernel answers RST, as when its process died with bytes still unread): members
// dial the relay, and each accepted connection is piped both ways to `upstream`, until
// resetAll() ends every connection, now and later, with a reset on the member's side
// (SO_LINGER 0, then close) and a close of the upstream one. Built on FakeReducer: one thread
// per connection, which polls both sockets and moves the bytes that are ready, never blocking
// on one direction while the other waits.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/fake_reducer.h"

namespace rs::test {

class ResetRelay {
 public:
  explicit ResetRelay(Endpoint upstream)
      : upstream_(std::move(upstream)),
        fake_([this](FakeReducer::Socket& member) { pipe(member); }) {}
  // The pipes end within a poll period; fake_'s teardown then shuts the members' sides.
  ~ResetRelay() {
    stopping_ = true;
    while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  ResetRelay(const ResetRelay&) = delete;
  ResetRelay& operator=(const ResetRelay&) = delete;

  Endpoint endpoint() const { return fake_.endpoint(); }
  // Every connection ends in a reset within a poll period (kPollMs), and so does every later one.
  void resetAll() { resetting_ = true; }
  // Connections ended by resetAll so far.
  int resets() const { return resets_.load(); }

 private:
  static constexpr int kPollMs = 5;
  static constexpr size_t kBufferBytes = 64 << 10;

  // One direction's bytes read and not yet written on.
  struct Direction {
    Direction(int fromFd, int toFd) : from(fromFd), to(toFd) {}
    int from, to;
    std::vector<char> pending;
    size_t written = 0;
    bool ended = false;  // `from` said EOF or failed: the pipe ends once `pending` is written
    bool idle() const { return written == pending.size(); }
  };

  void pipe(FakeReducer::Socket& member) {
    ++active_;
    struct Leave {
      std::atomic<int>& active;
      ~Leave() { --active; }
    } leave{active_};
    if (stopping_) return;  // fake_'s teardown has the member's side
    asio::ip::tcp::socket up(member.get_executor());
    std::error_code refused;
    up.connect({asio::ip::make_address(upstream_.host), upstream_.port}, refused);
    if (refused) {  // the upstream is gone: the member's dial ends as it would have there
      ::shutdown(member.native_handle(), SHUT_RDWR);
      return;
    }
    Direction in(member.native_handle(), up.native_handle());
    Direction out(up.native_handle(), member.native_handle());
    while (!stopping_ && !resetting_ && !(in.ended && in.idle()) && !(out.ended && out.idle()) &&
           step(in, out)) {
    }
    if (stopping_) return;
    if (resetting_) {
      member.set_option(asio::socket_base::linger(true, 0));
      member.close();  // the reset
      ++resets_;
    } else {
      ::shutdown(member.native_handle(), SHUT_RDWR);  // the upstream's end, passed on
    }
  }

  // One poll of both directions; false where a write failed.
  static bool step(Direction& a, Direction& b) {
    Direction* dirs[2] = {&a, &b};
    pollfd fds[2];
    for (int i = 0; i < 2; ++i) {
      const Direction& d = *dirs[i];
      if (!d.idle()) fds[i] = {d.to, POLLOUT, 0};
      else if (!d.ended) fds[i] = {d.from, POLLIN, 0};
      else fds[i] = {-1, 0, 0};  // ended and written: nothing to wait for
    }
    if (::poll(fds, 2, kPollMs) < 0) return errno == EINTR;
    for (int i = 0; i < 2; ++i) {
      Direction& d = *dirs[i];
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      if (d.idle()) {
        d.pending.resize(kBufferBytes);
        d.written = 0;
        const ssize_t n = ::recv(d.from, d.pending.data(), d.pending.size(), MSG_DONTWAIT);
        const bool again = n < 0 && (errno == EAGAIN || errno == EINTR);
        d.pending.resize(n > 0 ? static_cast<size_t>(n) : 0);
        d.ended = n == 0 || (n < 0 && !again);
      } else {
        const ssize_t n = ::send(d.to, d.pending.data() + d.written, d.pending.size() - d.written,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
        if (n > 0) d.written += static_cast<size_t>(n);
      }
    }
    return true;
  }

  const Endpoint upstream_;
  std::atomic<bool> stopping_{false}, resetting_{false};
  std::atomic<int> resets_{0}, active_{0};
  FakeReducer fake_;  // last: its threads run pipe(), which reads the members above
};

}  // namespace rs::test

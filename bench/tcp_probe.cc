#include "bench/tcp_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rs::bench {
namespace {

int listenLoopback(uint16_t* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(fd, 64) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("tcp probe: cannot listen on loopback");
  *port = ntohs(a.sin_port);
  return fd;
}

int connectLoopback(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("tcp probe: cannot connect on loopback");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace

TcpProbeResult probeLoopbackTcp(int streams, std::chrono::milliseconds duration) {
  uint16_t port = 0;
  const int listener = listenLoopback(&port);
  std::vector<int> senders, receivers;
  for (int i = 0; i < streams; ++i) {
    senders.push_back(connectLoopback(port));
    receivers.push_back(::accept(listener, nullptr, nullptr));
  }
  ::close(listener);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> received{0};
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < streams; ++i) {
    threads.emplace_back([fd = senders[i], &stop] {
      std::vector<char> block(1 << 20, 'x');
      while (!stop.load(std::memory_order_relaxed))
        if (::send(fd, block.data(), block.size(), MSG_NOSIGNAL) <= 0) break;
      ::shutdown(fd, SHUT_WR);
    });
    threads.emplace_back([fd = receivers[i], &received] {
      std::vector<char> block(1 << 20);
      for (;;) {
        ssize_t n = ::recv(fd, block.data(), block.size(), 0);
        if (n <= 0) break;
        received.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
      }
    });
  }
  std::this_thread::sleep_for(duration);
  const uint64_t bytes = received.load();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stop = true;
  for (auto& t : threads) t.join();
  for (int fd : senders) ::close(fd);
  for (int fd : receivers) ::close(fd);
  return {static_cast<double>(bytes) / secs, streams, secs};
}

}  // namespace rs::bench

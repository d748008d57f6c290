// tcp_relay: the CPU floor. A relay receives bytes on each stream and sends the same bytes back
// on it, nothing else: no framing, no reduction, no copies beyond the one buffer each stream
// reads into. Driven with the bytes a reducer sees in an all-reduce of S bytes (each of W
// workers sends S/R to each of R reducers over K streams and gets S/R back), its CPU per byte
// is what kernel TCP plus a minimal user-space loop cost; the reducer's over it is our overhead.
//
//   tcp_relay --listen 10.0.0.100:2224 [--threads 1] [--buffer 512K] [--port-file F]
//             [--link-gbps G]
//   tcp_relay --relays h:p,h:p --streams 4 --world 4 --rank 0 [-b 8K -e 64M -f 2 -n 10 -w 2]
//             [--link-gbps G]
//
// The relay serves until killed, each thread an epoll loop over its share of the streams
// (level-triggered; a stream alternates between reading into its buffer and writing it back).
// The driver prints allreduce_perf's table (time per iteration: every stream's bytes sent and
// read back), so that bench/cluster/run.sh stamps its rows and CPU as it does ours; rank 0
// prints. The drivers do not wait for each other: the time is a reference, the CPU is the point.
//
// --link-gbps paces every stream as our data path paces a busy one (SO_MAX_PACING_RATE and its
// unsent limit, transport::tcp::setPacing), so that a paced reducer is held against a relay that
// pays the kernel's pacing too: the relay gives each stream an equal part of the paced link
// (LinkShare::kPacedFraction) among the streams it has accepted (a relay serves one run, whose
// streams all carry bytes at once, as a reducer's do at the sizes this floor is run at); a
// driver, the smaller of its own link's part and its part of each relay's link (W drivers
// share it), as a worker's pacer does.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "bench/floor_options.h"
#include "bench/floor_socket.h"
#include "core/cluster/cluster_spec.h"
#include "core/common/byte_size.h"
#include "core/transport/link_share.h"
#include "core/transport/tcp/socket_options.h"

namespace rs::bench {
namespace {

// --- relay -------------------------------------------------------------------------------------

struct Stream {
  int fd = -1;
  std::vector<char> buffer;
  size_t head = 0, tail = 0;  // bytes read but not yet sent back: [head, tail)
  uint32_t interest = EPOLLIN;
};

void setInterest(int epoll, Stream* s, uint32_t events) {
  if (s->interest == events) return;
  s->interest = events;
  epoll_event e{events, {.ptr = s}};
  ::epoll_ctl(epoll, EPOLL_CTL_MOD, s->fd, &e);
}

// Moves bytes until the socket would block, for at most a few rounds so that one busy stream
// does not starve the others (level-triggered epoll reports it again). False: the stream ended.
bool relay(int epoll, Stream* s) {
  for (int round = 0; round < 16; ++round) {
    if (s->head < s->tail) {
      const ssize_t n =
          ::send(s->fd, s->buffer.data() + s->head, s->tail - s->head, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        setInterest(epoll, s, EPOLLOUT);
        return true;
      }
      if (n < 0) return false;
      s->head += static_cast<size_t>(n);
      continue;
    }
    s->head = s->tail = 0;
    const ssize_t n = ::recv(s->fd, s->buffer.data(), s->buffer.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      setInterest(epoll, s, EPOLLIN);
      return true;
    }
    if (n <= 0) return false;
    s->tail = static_cast<size_t>(n);
  }
  return true;
}

void relayLoop(int epoll) {
  std::vector<epoll_event> events(64);
  for (;;) {
    const int n = ::epoll_wait(epoll, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      auto* s = static_cast<Stream*>(events[static_cast<size_t>(i)].data.ptr);
      if (!relay(epoll, s)) {
        ::epoll_ctl(epoll, EPOLL_CTL_DEL, s->fd, nullptr);
        ::close(s->fd);
        delete s;  // NOLINT(cppcoreguidelines-owning-memory): owned by its epoll entry
      }
    }
  }
}

// A stream's pace when `streams` streams share a link of `linkBytesPerSecond` (0: unpaced),
// as our data path's LinkShare gives it.
uint64_t streamPace(uint64_t linkBytesPerSecond, uint64_t streams) {
  if (linkBytesPerSecond == 0) return 0;
  return transport::LinkShare::pacedShare(linkBytesPerSecond, static_cast<uint32_t>(streams));
}

int runRelay(const Endpoint& where, const std::string& portFile, int threads, size_t bufferBytes,
             const transport::TcpOptions& options, uint64_t linkBytesPerSecond) {
  auto listener = listenOn(where, portFile);
  if (!listener) {
    fmt::print(stderr, "tcp_relay: {}\n", listener.status().message());
    return 1;
  }
  std::vector<int> epolls;
  for (int t = 0; t < threads; ++t) {
    epolls.push_back(::epoll_create1(EPOLL_CLOEXEC));
    std::thread(relayLoop, epolls.back()).detach();
  }
  std::vector<int> paced;  // every stream accepted, re-paced as each one joins
  for (size_t next = 0;; ++next) {  // streams dealt to the threads in turn, as the reducer's
    auto fd = acceptTuned(*listener, options);
    if (!fd) {
      fmt::print(stderr, "tcp_relay: {}\n", fd.status().message());
      continue;
    }
    if (linkBytesPerSecond > 0) {
      paced.push_back(*fd);
      // Another thread may be sending on these sockets: the kernel serialises the option.
      const uint64_t pace = streamPace(linkBytesPerSecond, paced.size());
      for (int p : paced) (void)transport::tcp::setPacing(p, pace, 0);
    }
    auto* stream = new Stream{*fd, std::vector<char>(bufferBytes)};  // NOLINT: see relayLoop
    epoll_event e{EPOLLIN, {.ptr = stream}};
    ::epoll_ctl(epolls[next % epolls.size()], EPOLL_CTL_ADD, *fd, &e);
  }
}

// --- driver ------------------------------------------------------------------------------------

struct DriveOptions {
  std::vector<Endpoint> relays;
  int streams = 4, world = 1, rank = 0;
  uint64_t chunk = 1 << 20;
  uint64_t linkBytesPerSecond = 0;  // every host's link, to pace at (0: unpaced)
  SizeSweep sweep;
};

// Part `index` of `total` split in `parts` as evenly as whole bytes allow.
uint64_t share(uint64_t total, uint64_t parts, uint64_t index) {
  return total / parts + (index < total % parts ? 1 : 0);
}

// One iteration: every stream sends its bytes in chunk-sized writes and reads them back, all
// streams at once (the relay echoes as it reads, so a stream that only sent would stall).
Status iterate(const std::vector<int>& fds, const std::vector<uint64_t>& bytes, uint64_t chunk,
               std::vector<char>& out, std::vector<char>& in) {
  std::vector<uint64_t> toSend = bytes, toRecv = bytes;
  std::vector<pollfd> polls(fds.size());
  for (;;) {
    size_t active = 0;
    for (size_t i = 0; i < fds.size(); ++i) {
      polls[i] = {fds[i], 0, 0};
      if (toSend[i] > 0) polls[i].events |= POLLOUT;
      if (toRecv[i] > 0) polls[i].events |= POLLIN;
      if (polls[i].events) ++active;
    }
    if (active == 0) return Status::ok();
    if (::poll(polls.data(), polls.size(), 30000) <= 0)
      return ioError("driver: no progress in 30 s");
    for (size_t i = 0; i < fds.size(); ++i) {
      if (polls[i].revents & (POLLERR | POLLHUP)) return ioError("driver: a relay stream failed");
      if ((polls[i].revents & POLLOUT) && toSend[i] > 0) {
        const ssize_t n =
            ::send(fds[i], out.data(), std::min(toSend[i], chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) toSend[i] -= static_cast<uint64_t>(n);
      }
      if ((polls[i].revents & POLLIN) && toRecv[i] > 0) {
        const ssize_t n =
            ::recv(fds[i], in.data(), std::min<uint64_t>(toRecv[i], in.size()), MSG_DONTWAIT);
        if (n == 0) return ioError("driver: a relay closed a stream");
        if (n > 0) toRecv[i] -= static_cast<uint64_t>(n);
      }
    }
  }
}

int runDriver(const DriveOptions& o, const transport::TcpOptions& options) {
  std::vector<int> fds;
  for (const Endpoint& relay : o.relays)
    for (int k = 0; k < o.streams; ++k) {
      auto fd = connectTuned(relay, options);
      if (!fd) {
        fmt::print(stderr, "tcp_relay: rank {}: {}\n", o.rank, fd.status().message());
        return 1;
      }
      fds.push_back(*fd);
    }
  // Its own link shared by its R x K streams, and each relay's link shared by W drivers' K
  // streams: the tighter of the two.
  const uint64_t perLink = static_cast<uint64_t>(o.streams) *
                           std::max<uint64_t>(o.relays.size(), static_cast<uint64_t>(o.world));
  const uint64_t pace = streamPace(o.linkBytesPerSecond, perLink);
  for (int fd : fds) (void)transport::tcp::setPacing(fd, pace, 0);
  const bool printer = o.rank == 0;
  if (printer) {
    fmt::print(
        "# tcp_relay driver: {} workers, {} relays x {} streams, writes of at most {}, "
        "iters {} warmup {}; each worker sends S/R to each relay and reads it back\n#\n",
        o.world, o.relays.size(), o.streams, formatByteSize(o.chunk), o.sweep.iters, o.sweep.warmup);
    fmt::print("# {:>10}  {:>12}  {:>6}  {:>5}  {:>10}  {:>7}  {:>7}  {:>6}\n", "size", "count",
               "type", "redop", "time", "algbw", "busbw", "#wrong");
    fmt::print("# {:>10}  {:>12}  {:>6}  {:>5}  {:>10}  {:>7}  {:>7}  {:>6}\n", "(B)", "(bytes)",
               "", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }
  std::vector<char> out(o.chunk, 'r'), in(1 << 20);
  for (uint64_t bytes : o.sweep.sizes()) {
    std::vector<uint64_t> perStream;
    for (size_t r = 0; r < o.relays.size(); ++r) {
      const uint64_t toRelay = share(bytes, o.relays.size(), r);
      for (int k = 0; k < o.streams; ++k)
        perStream.push_back(
            share(toRelay, static_cast<uint64_t>(o.streams), static_cast<uint64_t>(k)));
    }
    Status s = Status::ok();
    for (int i = 0; s.isOk() && i < o.sweep.warmup; ++i) s = iterate(fds, perStream, o.chunk, out, in);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; s.isOk() && i < o.sweep.iters; ++i) s = iterate(fds, perStream, o.chunk, out, in);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.sweep.iters;
    if (!s.isOk()) {
      fmt::print(stderr, "tcp_relay: rank {}: {} bytes: {}\n", o.rank, bytes, s.message());
      return 1;
    }
    if (printer) {
      const double algbw = static_cast<double>(bytes) / seconds / 1e9;
      fmt::print("  {:>10}  {:>12}  {:>6}  {:>5}  {:>10.1f}  {:>7.3f}  {:>7.3f}  {:>6}\n", bytes,
                 bytes, "bytes", "echo", seconds * 1e6, algbw,
                 algbw * 2.0 * (o.world - 1) / o.world, 0);
      std::fflush(stdout);
    }
  }
  for (int fd : fds) ::close(fd);
  return 0;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  std::string listen, relays, portFile, chunk = "1M", buffer = "512K";
  int threads = 1;
  double linkGbps = 0;
  rs::bench::DriveOptions d;
  CLI::App app{"tcp_relay: receive on each stream, send the same bytes back (the CPU floor)"};
  auto* l = app.add_option("--listen", listen, "Relay on host:port (port 0: any)");
  app.add_option("--relays", relays, "Drive the relays at host:port,...")->excludes(l);
  app.add_option("--port-file", portFile, "Relay: write '<port> <pid>' here once listening");
  app.add_option("--threads", threads, "Relay: epoll threads (as the reducer's --io-threads)")
      ->capture_default_str();
  app.add_option("--buffer", buffer, "Relay: each stream's buffer")->capture_default_str();
  app.add_option("--streams", d.streams, "Driver: streams per relay")->capture_default_str();
  app.add_option("--world", d.world, "Driver: workers in the run (for busbw)")
      ->capture_default_str();
  app.add_option("--rank", d.rank, "Driver: this worker (rank 0 prints)")->capture_default_str();
  app.add_option("--chunk", chunk, "Driver: largest write (the client's --max-chunk)")
      ->capture_default_str();
  app.add_option("--link-gbps", linkGbps,
                 "Every host's link rate: pace each stream as ours paces a busy one (0: unpaced)")
      ->capture_default_str();
  const rs::bench::FloorOptions floor(app, "iterations", /*iters=*/10, /*warmup=*/2);
  CLI11_PARSE(app, argc, argv);

  auto sweep = floor.sweep();
  auto options = floor.tcpOptions();
  if (!sweep || !options) {
    fmt::print(stderr, "tcp_relay: {}\n", (!sweep ? sweep.status() : options.status()).message());
    return 2;
  }
  auto chunkB = rs::parseByteSize(chunk), bufferB = rs::parseByteSize(buffer);
  if (!chunkB || !bufferB || *chunkB == 0 || *bufferB == 0 || d.streams < 1 || threads < 1 ||
      d.world < 1 || !(linkGbps >= 0)) {
    fmt::print(stderr, "tcp_relay: bad option (--chunk, --buffer > 0; --streams, --threads, "
                       "--world >= 1; --link-gbps >= 0)\n");
    return 2;
  }
  if (!listen.empty()) {
    auto where = rs::parseEndpoint(listen, "--listen", rs::PortZero::kAllowed);
    if (!where) {
      fmt::print(stderr, "tcp_relay: {}\n", where.status().message());
      return 2;
    }
    return rs::bench::runRelay(*where, portFile, threads, *bufferB, *options,
                               rs::transport::LinkShare::bytesPerSecondFromGbps(linkGbps));
  }
  auto list = rs::cluster::parseReducerList(relays);
  if (relays.empty() || !list) {
    fmt::print(stderr, "tcp_relay: {}\n",
               relays.empty() ? "give --listen or --relays" : list.status().message());
    return 2;
  }
  d.relays = *list;
  d.chunk = *chunkB;
  d.linkBytesPerSecond = rs::transport::LinkShare::bytesPerSecondFromGbps(linkGbps);
  d.sweep = *sweep;
  return rs::bench::runDriver(d, *options);
}

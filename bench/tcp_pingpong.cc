// tcp_pingpong: the latency floor. The round trip of S bytes over one TCP connection with our
// data path's socket options: the client sends S bytes, the server reads all S and then writes
// S back (a message ping-pong, as osu_latency or an ICMP echo: a reducer too can only return a
// chunk once all of it has arrived). An all-reduce of S bytes moves S out of and back into each
// worker, so its time over this one is "ours / floor".
//
//   tcp_pingpong --listen 10.0.0.100:2225 [--port-file F]        (serves until killed)
//   tcp_pingpong --connect 10.0.0.100:2225 [-b 8K -e 64M -f 2 -n 50 -w 5]
//
// A separate program from tcp_probe, which measures loopback throughput inside allreduce_perf:
// this one runs between two hosts and measures one message's round trip.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench/floor_options.h"
#include "bench/floor_socket.h"
#include "bench/latency_summary.h"

namespace rs::bench {
namespace {

// Before each size, the client says what follows: `rounds` round trips of `bytes` each.
// bytes == 0 ends the connection.
struct SizeHeader {
  uint64_t bytes = 0;
  uint64_t rounds = 0;
};

Status serveConnection(int fd) {
  std::vector<char> buffer;
  for (;;) {
    SizeHeader h;
    RS_RETURN_IF_ERROR(recvAll(fd, reinterpret_cast<char*>(&h), sizeof h));
    if (h.bytes == 0) return Status::ok();
    buffer.resize(h.bytes);
    for (uint64_t i = 0; i < h.rounds; ++i) {
      RS_RETURN_IF_ERROR(recvAll(fd, buffer.data(), h.bytes));
      RS_RETURN_IF_ERROR(sendAll(fd, buffer.data(), h.bytes));
    }
  }
}

int runServer(const Endpoint& where, const std::string& portFile,
              const transport::TcpOptions& options) {
  auto listener = listenOn(where, portFile);
  if (!listener) {
    fmt::print(stderr, "tcp_pingpong: {}\n", listener.status().message());
    return 1;
  }
  for (;;) {  // one client at a time: a second one would share the link and skew both
    auto fd = acceptTuned(*listener, options);
    if (!fd) {
      fmt::print(stderr, "tcp_pingpong: {}\n", fd.status().message());
      continue;
    }
    if (Status c = serveConnection(*fd); !c.isOk())
      fmt::print(stderr, "tcp_pingpong: connection: {}\n", c.message());
    ::close(*fd);
  }
}

int runClient(const Endpoint& peer, const SizeSweep& sweep, const transport::TcpOptions& options) {
  auto fd = connectTuned(peer, options);
  if (!fd) {
    fmt::print(stderr, "tcp_pingpong: {}\n", fd.status().message());
    return 1;
  }
  fmt::print(
      "# tcp_pingpong: round trip of S bytes to {} (the server reads all S, then writes "
      "S back), one connection, TCP_NODELAY, iters {} warmup {}\n#\n",
      peer.toString(), sweep.iters, sweep.warmup);
  fmt::print("# {:>10}  {:>6}  {:>10}  {:>10}  {:>10}  {:>10}\n", "size", "iters", "median", "p99",
             "mean", "min");
  fmt::print("# {:>10}  {:>6}  {:>10}  {:>10}  {:>10}  {:>10}\n", "(B)", "", "(us)", "(us)", "(us)",
             "(us)");
  std::fflush(stdout);
  std::vector<char> out(sweep.maxBytes, 'p'), in(sweep.maxBytes);
  for (uint64_t bytes : sweep.sizes()) {
    const SizeHeader h{bytes, static_cast<uint64_t>(sweep.warmup + sweep.iters)};
    Status s = sendAll(*fd, reinterpret_cast<const char*>(&h), sizeof h);
    std::vector<double> micros;
    for (int i = 0; s.isOk() && i < sweep.warmup + sweep.iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      s = sendAll(*fd, out.data(), bytes);
      if (s.isOk()) s = recvAll(*fd, in.data(), bytes);
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= sweep.warmup)
        micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    if (!s.isOk()) {
      fmt::print(stderr, "tcp_pingpong: {} bytes: {}\n", bytes, s.message());
      return 1;
    }
    const LatencySummary l = summarize(micros);
    fmt::print("  {:>10}  {:>6}  {:>10.1f}  {:>10.1f}  {:>10.1f}  {:>10.1f}\n", bytes, sweep.iters,
               l.median, l.p99, l.mean, l.min);
    std::fflush(stdout);
  }
  const SizeHeader done{};
  (void)sendAll(*fd, reinterpret_cast<const char*>(&done), sizeof done);
  ::close(*fd);
  return 0;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  std::string listen, connect, portFile;
  CLI::App app{"tcp_pingpong: round trip of S bytes over TCP with our socket options"};
  auto* l = app.add_option("--listen", listen, "Serve on host:port (port 0: any)");
  app.add_option("--connect", connect, "Measure against the server at host:port")->excludes(l);
  app.add_option("--port-file", portFile, "Server: write '<port> <pid>' here once listening");
  const rs::bench::FloorOptions floor(app, "round trips", /*iters=*/50, /*warmup=*/5);
  CLI11_PARSE(app, argc, argv);

  auto sweep = floor.sweep();
  auto options = floor.tcpOptions();
  if (!sweep || !options) {
    fmt::print(stderr, "tcp_pingpong: {}\n", (!sweep ? sweep.status() : options.status()).message());
    return 2;
  }
  const std::string& where = listen.empty() ? connect : listen;
  auto endpoint =
      rs::parseEndpoint(where, listen.empty() ? "--connect" : "--listen",
                        listen.empty() ? rs::PortZero::kRefused : rs::PortZero::kAllowed);
  if (where.empty() || !endpoint) {
    fmt::print(stderr, "tcp_pingpong: {}\n",
               where.empty() ? "give --listen or --connect" : endpoint.status().message());
    return 2;
  }
  return listen.empty() ? rs::bench::runClient(*endpoint, *sweep, *options)
                        : rs::bench::runServer(*endpoint, portFile, *options);
}

// tcp_pingpong: the latency floor. The round trip of S bytes over one TCP connection with our
// data path's socket options: the client sends S bytes, the server reads all S and then writes
// S back (a message ping-pong, as osu_latency or an ICMP echo: a reducer too can only return a
// chunk once all of it has arrived). An all-reduce of S bytes moves S out of and back into each
// worker, so its time over this one is "ours / floor".
//
//   tcp_pingpong --listen 10.0.0.100:2225 [--port-file F] [--members W]   (serves until killed)
//   tcp_pingpong --connect 10.0.0.100:2225[,host:port...] [--chunks] [-b 8K -e 64M -f 2 -n 50 -w 5]
//
// With --members W on every server and W clients run at once, each with --chunks and the list
// of all R servers, it is the gather floor: our all-reduce's messages without the reduction.
// Each client cuts S into the client library's chunks (core/cluster/sharding.h, its default
// sizes, chunk numbers running on from one collective to the next) and sends chunk k to server
// k mod R; a server waits until it has a chunk from all W members, then sends each its own
// back. What a reducer adds over this (framing, the sum, its scheduling) is ours / gather; the
// gap from the one-client ping-pong to this is what W members' messages cost on these links
// and this machine.
//
// A separate program from tcp_probe, which measures loopback throughput inside allreduce_perf:
// this one runs between two hosts and measures one message's round trip.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <thread>
#include <vector>

#include "bench/floor_options.h"
#include "bench/floor_socket.h"
#include "bench/latency_summary.h"
#include "core/cluster/cluster_spec.h"
#include "core/cluster/sharding.h"

namespace rs::bench {
namespace {

// Before each size, a client tells each server what follows: `rounds` round trips of `bytes`
// each, cut into chunks as the client library cuts a collective (`minChunk`, `maxChunk`; both
// at least `bytes` for one whole message), chunk k going to server k mod `servers`; this one
// is server `index`. bytes == 0 ends the session.
struct SizeHeader {
  uint64_t bytes = 0;
  uint64_t rounds = 0;
  uint64_t minChunk = 0, maxChunk = 0;
  uint64_t servers = 1, index = 0;
};

// One collective's chunks, as the client library plans them (fp32 elements where S allows).
cluster::ChunkPlan planFor(const SizeHeader& h) {
  const size_t elem = h.bytes % 4 == 0 ? 4 : 1;
  return cluster::planChunks(h.bytes / elem, elem, static_cast<uint32_t>(h.servers),
                             {h.minChunk, h.maxChunk});
}

uint64_t chunkBytes(const SizeHeader& h, const cluster::ChunkPlan& plan, uint64_t k) {
  const size_t elem = h.bytes % 4 == 0 ? 4 : 1;
  return plan.elemsInChunk(k, h.bytes / elem) * elem;
}

// Reads `bytes` from every member into its buffer, whichever sends first.
Status gatherChunk(const std::vector<int>& members, std::vector<std::vector<char>>& buffers,
                   uint64_t bytes) {
  std::vector<uint64_t> got(members.size(), 0);
  std::vector<pollfd> polls(members.size());
  for (;;) {
    size_t waiting = 0;
    for (size_t m = 0; m < members.size(); ++m) {
      polls[m] = {members[m], static_cast<short>(got[m] < bytes ? POLLIN : 0), 0};
      if (got[m] < bytes) ++waiting;
    }
    if (waiting == 0) return Status::ok();
    const int ready = ::poll(polls.data(), polls.size(), 30000);
    if (ready == 0) return ioError("no chunk from a member in 30 s");
    if (ready < 0 && errno != EINTR) return ioError("poll failed");
    for (size_t m = 0; m < members.size(); ++m) {
      if (!(polls[m].revents & (POLLIN | POLLHUP | POLLERR)) || got[m] >= bytes) continue;
      const ssize_t n = ::recv(members[m], buffers[m].data() + got[m], bytes - got[m], 0);
      if (n == 0) return ioError("a member closed its connection");
      if (n < 0 && errno != EINTR && errno != EAGAIN) return ioError("recv from a member failed");
      if (n > 0) got[m] += static_cast<uint64_t>(n);
    }
  }
}

// One session: every member's headers, then each round's chunks routed here, each gathered
// from all members and sent back to each.
Status serveMembers(const std::vector<int>& members) {
  std::vector<std::vector<char>> buffers(members.size());
  uint64_t nextChunk = 0;  // runs on across rounds and sizes, as the client's chunk numbers
  for (;;) {
    SizeHeader h;
    for (size_t m = 0; m < members.size(); ++m) {
      SizeHeader mine;
      RS_RETURN_IF_ERROR(recvAll(members[m], reinterpret_cast<char*>(&mine), sizeof mine));
      if (m > 0 && (mine.bytes != h.bytes || mine.rounds != h.rounds))
        return invalidArgument("the members asked for different sizes");
      h = mine;
    }
    if (h.bytes == 0) return Status::ok();
    if (h.servers == 0 || h.index >= h.servers || h.minChunk == 0 || h.maxChunk < h.minChunk)
      return invalidArgument("bad size header");
    const cluster::ChunkPlan plan = planFor(h);
    for (auto& b : buffers) b.resize(chunkBytes(h, plan, 0));  // the first chunk is the largest
    for (uint64_t r = 0; r < h.rounds; ++r, nextChunk += plan.numChunks) {
      for (uint64_t k = 0; k < plan.numChunks; ++k) {
        if (cluster::reducerForChunk(nextChunk + k, static_cast<uint32_t>(h.servers)) != h.index)
          continue;
        const uint64_t bytes = chunkBytes(h, plan, k);
        RS_RETURN_IF_ERROR(gatherChunk(members, buffers, bytes));
        for (size_t m = 0; m < members.size(); ++m)
          RS_RETURN_IF_ERROR(sendAll(members[m], buffers[m].data(), bytes));
      }
    }
  }
}

int runServer(const Endpoint& where, const std::string& portFile, int membersPerSession,
              const transport::TcpOptions& options) {
  auto listener = listenOn(where, portFile);
  if (!listener) {
    fmt::print(stderr, "tcp_pingpong: {}\n", listener.status().message());
    return 1;
  }
  for (;;) {  // one session at a time: a second one would share the link and skew both
    std::vector<int> members;
    while (members.size() < static_cast<size_t>(membersPerSession)) {
      auto fd = acceptTuned(*listener, options);
      if (!fd) {
        fmt::print(stderr, "tcp_pingpong: {}\n", fd.status().message());
        continue;
      }
      members.push_back(*fd);
    }
    if (Status c = serveMembers(members); !c.isOk())
      fmt::print(stderr, "tcp_pingpong: session: {}\n", c.message());
    for (int fd : members) ::close(fd);
  }
}

int runClient(const std::vector<Endpoint>& servers, bool chunked, const SizeSweep& sweep,
              const transport::TcpOptions& options) {
  std::vector<int> fds;
  for (const Endpoint& server : servers) {
    auto fd = connectTuned(server, options);
    if (!fd) {
      fmt::print(stderr, "tcp_pingpong: {}\n", fd.status().message());
      return 1;
    }
    fds.push_back(*fd);
  }
  const cluster::ChunkingOptions chunking =
      chunked ? cluster::ChunkingOptions{}
              : cluster::ChunkingOptions{std::numeric_limits<uint64_t>::max(),
                                         std::numeric_limits<uint64_t>::max()};
  if (chunked)
    fmt::print("# tcp_pingpong: gather floor: S cut into the client's chunks ({}..{}), chunk k to "
               "server k mod {} of {}, each echoed once every member's copy is in; iters {} "
               "warmup {}\n#\n",
               chunking.minChunkBytes, chunking.maxChunkBytes, servers.size(),
               servers.front().toString(), sweep.iters, sweep.warmup);
  else
    fmt::print(
        "# tcp_pingpong: round trip of S bytes to {} (the server reads all S, then writes "
        "S back), one connection, TCP_NODELAY, iters {} warmup {}\n#\n",
        servers.front().toString(), sweep.iters, sweep.warmup);
  fmt::print("# {:>10}  {:>6}  {:>10}  {:>10}  {:>10}  {:>10}\n", "size", "iters", "median", "p99",
             "mean", "min");
  fmt::print("# {:>10}  {:>6}  {:>10}  {:>10}  {:>10}  {:>10}\n", "(B)", "", "(us)", "(us)", "(us)",
             "(us)");
  std::fflush(stdout);
  std::vector<char> out(sweep.maxBytes, 'p'), in(sweep.maxBytes);
  uint64_t nextChunk = 0;
  for (uint64_t bytes : sweep.sizes()) {
    SizeHeader h{bytes, static_cast<uint64_t>(sweep.warmup + sweep.iters),
                 chunking.minChunkBytes, chunking.maxChunkBytes, fds.size(), 0};
    Status s = Status::ok();
    for (size_t i = 0; s.isOk() && i < fds.size(); ++i) {
      h.index = i;
      s = sendAll(fds[i], reinterpret_cast<const char*>(&h), sizeof h);
    }
    const cluster::ChunkPlan plan = planFor(h);
    auto serverOf = [&](uint64_t k) {
      return fds[cluster::reducerForChunk(nextChunk + k, static_cast<uint32_t>(fds.size()))];
    };
    std::vector<double> micros;
    for (int i = 0; s.isOk() && i < sweep.warmup + sweep.iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      for (uint64_t k = 0, at = 0; s.isOk() && k < plan.numChunks; at += chunkBytes(h, plan, k++))
        s = sendAll(serverOf(k), out.data() + at, chunkBytes(h, plan, k));
      for (uint64_t k = 0, at = 0; s.isOk() && k < plan.numChunks; at += chunkBytes(h, plan, k++))
        s = recvAll(serverOf(k), in.data() + at, chunkBytes(h, plan, k));
      const auto t1 = std::chrono::steady_clock::now();
      nextChunk += plan.numChunks;
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
  for (int fd : fds) {
    (void)sendAll(fd, reinterpret_cast<const char*>(&done), sizeof done);
    ::close(fd);
  }
  return 0;
}

}  // namespace
}  // namespace rs::bench

int main(int argc, char** argv) {
  std::string listen, connect, portFile;
  int members = 1;
  bool chunked = false;
  CLI::App app{"tcp_pingpong: round trip of S bytes over TCP with our socket options"};
  auto* l = app.add_option("--listen", listen, "Serve on host:port (port 0: any)");
  app.add_option("--connect", connect, "Measure against the server(s) at host:port[,...]")
      ->excludes(l);
  app.add_option("--port-file", portFile, "Server: write '<port> <pid>' here once listening");
  app.add_option("--members", members,
                 "Server: clients per session, each chunk echoed once all have sent it")
      ->capture_default_str();
  app.add_flag("--chunks", chunked,
               "Client: cut S into the client library's chunks over the servers (gather floor)");
  const rs::bench::FloorOptions floor(app, "round trips", /*iters=*/50, /*warmup=*/5);
  CLI11_PARSE(app, argc, argv);

  auto sweep = floor.sweep();
  auto options = floor.tcpOptions();
  if (!sweep || !options) {
    fmt::print(stderr, "tcp_pingpong: {}\n", (!sweep ? sweep.status() : options.status()).message());
    return 2;
  }
  if (members < 1) {
    fmt::print(stderr, "tcp_pingpong: --members must be at least 1\n");
    return 2;
  }
  if (!listen.empty()) {
    auto endpoint = rs::parseEndpoint(listen, "--listen", rs::PortZero::kAllowed);
    if (!endpoint) {
      fmt::print(stderr, "tcp_pingpong: {}\n", endpoint.status().message());
      return 2;
    }
    return rs::bench::runServer(*endpoint, portFile, members, *options);
  }
  auto servers = rs::cluster::parseReducerList(connect);
  if (connect.empty() || !servers) {
    fmt::print(stderr, "tcp_pingpong: {}\n",
               connect.empty() ? "give --listen or --connect" : servers.status().message());
    return 2;
  }
  return rs::bench::runClient(*servers, chunked, *sweep, *options);
}

// rs_attacker: a hostile or broken peer of the reducers, for measuring what it costs a healthy
// job that runs beside it (bench/cluster/attack.sh). Each mode is one class of the threats in
// the README's "Security and operations"; it runs for --duration seconds and prints what the
// reducers answered: how many attempts, how many were refused with which (named) reason, and
// the longest time a refusal took.
//
//   rs_attacker --mode silent|no-proof|bad-proof|other-job|garbage|stall|no-read|conn-flood
//               --reducers H:P[,H:P...] [--group HEX] [--world W] [--duration S] [...]
//
// silent     holds --connections connections that never answer the CHALLENGE (handshake pool)
// no-proof   HELLOs for --group (a victim's id, as if guessed) without a proof, in a loop
// bad-proof  the same with a proof under a wrong secret
// other-job  the same from another job of the pool, with that job's own valid key
// garbage    random bytes where the HELLO belongs, in a loop
// stall      an authenticated tenant (RS_SECRET / RS_SECRET_FILE) whose partner never comes:
//            rank 0 of a group of 2 sends --bytes on every stream and waits, group after group
// no-read    an authenticated tenant alone in its group (world 1) that sends chunks and never
//            reads a result, so that its results back up in the reducers
// conn-flood an authenticated tenant holding --connections streams, each in a group of its own
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/common/byte_size.h"
#include "core/common/endpoint.h"
#include "core/common/log.h"
#include "core/common/text.h"
#include "core/wire/auth.h"
#include "core/wire/control_frames.h"
#include "core/wire/frame.h"
#include "rs/client.h"

namespace rs {
namespace {

using Clock = std::chrono::steady_clock;

// SIGTERM or SIGINT ends the attack early; the tally is printed all the same. Installed without
// SA_RESTART, so that a blocked read or write returns and the loop sees it.
std::atomic<bool> gStop{false};
void onStop(int) { gStop = true; }

struct Tally {
  uint64_t attempts = 0;
  uint64_t accepted = 0;   // the reducer let it in (a defect for the refusal modes)
  std::map<std::string, uint64_t> refusals;  // reason -> count
  double slowestRefusalMs = 0;
  bool underway = false;
  uint64_t bytesSent = 0;          // no-read: chunk bytes the reducers took
  uint64_t bytesSentUnderway = 0;  // of which after they first stopped taking them

  // Once, when the attack is in place: attack.sh waits for this line before it measures.
  void markUnderway() {
    if (underway) return;
    underway = true;
    fmt::print("first attempt done\n");
    std::fflush(stdout);
  }

  void refused(const std::string& reason, Clock::time_point since) {
    markUnderway();
    ++refusals[reason];
    slowestRefusalMs = std::max(
        slowestRefusalMs, std::chrono::duration<double, std::milli>(Clock::now() - since).count());
  }
};

// A blocking socket whose reads and writes give up after `timeout`: the reducer owes every
// peer an answer within its handshake timeout, and an attacker must not hang either.
int dial(const Endpoint& to, std::chrono::milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(to.port);
  if (::inet_pton(AF_INET, to.host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool readAll(int fd, void* out, size_t size) {
  auto* p = static_cast<uint8_t*>(out);
  while (size > 0) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Writes until done, the peer closed, or `deadline`: the no-read mode must end on time even
// while the reducer has stopped reading from it.
// `blocked`, if given, is called once the peer has taken nothing for a second.
bool writeAll(int fd, const void* data, size_t size,
              Clock::time_point deadline = Clock::time_point::max(),
              const std::function<void()>& blocked = {}) {
  const auto* p = static_cast<const uint8_t*>(data);
  auto waitingSince = Clock::now();
  while (size > 0) {
    pollfd w{fd, POLLOUT, 0};
    if (::poll(&w, 1, 100) == 0) {
      if (Clock::now() >= deadline) return false;
      if (blocked && Clock::now() - waitingSince > std::chrono::seconds(1)) blocked();
      continue;
    }
    waitingSince = Clock::now();
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The next frame's header, or nullopt when the connection closed or timed out.
std::optional<wire::FrameHeader> readHeader(int fd) {
  wire::HeaderBytes bytes;
  if (!readAll(fd, bytes.data(), bytes.size())) return std::nullopt;
  wire::FrameHeader h;
  if (!wire::decodeHeader(bytes.data(), bytes.size(), {}, &h).isOk()) return std::nullopt;
  return h;
}

std::optional<wire::ChallengePayload> readChallenge(int fd) {
  auto h = readHeader(fd);
  if (!h || h->type != wire::FrameType::kChallenge) return std::nullopt;
  std::array<uint8_t, wire::kChallengePayloadSize> bytes;
  wire::ChallengePayload c;
  if (!readAll(fd, bytes.data(), bytes.size()) ||
      !wire::decodeChallenge(bytes.data(), bytes.size(), &c).isOk())
    return std::nullopt;
  return c;
}

// What the reducer answered a HELLO with: "accepted", the reason of its ERROR or ABORT cut to
// its first clause (so that the tally groups alike refusals), or how the connection ended.
std::string readVerdict(int fd) {
  auto h = readHeader(fd);
  if (!h) return "closed without a frame";
  if (h->type == wire::FrameType::kHelloAck) return "accepted";
  if (h->type != wire::FrameType::kError && h->type != wire::FrameType::kAbort)
    return fmt::format("unexpected {} frame", wire::frameTypeName(h->type));
  std::vector<uint8_t> payload(h->payloadLength);
  wire::PeerError e;
  if (!readAll(fd, payload.data(), payload.size()) ||
      !wire::parseErrorFrame(*h, payload.data(), payload.size(), &e).isOk())
    return "unreadable refusal";
  return e.reason.substr(0, e.reason.find_first_of(":("));
}

// A HELLO as a worker of `job` (empty: the pool's own identity) would send it, proven with
// `secret` if not empty.
std::vector<uint8_t> helloFrame(const wire::ChallengePayload& challenge, const GroupId& group,
                                uint32_t rank, uint32_t world, uint16_t stream, uint16_t streams,
                                uint16_t reducer, uint16_t reducers, std::string_view secret,
                                const std::string& job = {}) {
  wire::HelloPayload hello;
  hello.jobName = job;
  hello.worldSize = world;
  hello.streamIndex = stream;
  hello.streamCount = streams;
  hello.reducerIndex = reducer;
  hello.reducerCount = reducers;
  auto made = wire::helloFrame(group, rank, std::move(hello), secret, challenge.nonce);
  if (!made) return {};
  std::vector<uint8_t> frame(wire::kHeaderSize + wire::kHelloPayloadSize);
  std::copy(made->header.begin(), made->header.end(), frame.begin());
  std::copy(made->payload.begin(), made->payload.end(), frame.begin() + wire::kHeaderSize);
  return frame;
}

struct Config {
  std::string mode;
  std::vector<Endpoint> reducers;
  GroupId victim = GroupId::random();
  uint32_t world = 2;
  double durationS = 10;
  uint32_t connections = 64;
  uint32_t streams = 4;
  size_t bytes = 16u << 20;
  std::string secret;  // the tenant's own, for stall, no-read and conn-flood
  std::string job;     // the tenant's job (RS_JOB), whose key `secret` is
  std::chrono::milliseconds ioTimeout{30000};
};

bool pastDeadline(Clock::time_point end) { return gStop || Clock::now() >= end; }

// no-proof, bad-proof, other-job, garbage: one connection after another, each answered or closed.
void refusalLoop(const Config& c, Tally& t, Clock::time_point end) {
  std::mt19937_64 rng(std::random_device{}());
  for (size_t i = 0; !pastDeadline(end); ++i) {
    const Endpoint& to = c.reducers[i % c.reducers.size()];
    const auto start = Clock::now();
    ++t.attempts;
    int fd = dial(to, c.ioTimeout);
    if (fd < 0) { t.refused("connect failed", start); continue; }
    auto challenge = readChallenge(fd);
    if (!challenge) { t.refused("no challenge", start); ::close(fd); continue; }
    std::vector<uint8_t> out;
    if (c.mode == "garbage") {
      out.resize(wire::kHeaderSize + wire::kHelloPayloadSize);
      for (auto& b : out) b = static_cast<uint8_t>(rng());
    } else {
      // other-job: a genuine tenant of the pool, with its own valid key, naming the victim's
      // group; bad-proof: a guess; no-proof: nothing.
      const std::string key = c.mode == "bad-proof"   ? "a-guess-at-the-job-secret-0000000"
                              : c.mode == "other-job" ? c.secret
                                                      : "";
      out = helloFrame(*challenge, c.victim, 0, c.world, 0, 1,
                       static_cast<uint16_t>(i % c.reducers.size()),
                       static_cast<uint16_t>(c.reducers.size()), key,
                       c.mode == "other-job" ? c.job : std::string());
    }
    writeAll(fd, out.data(), out.size());
    const std::string verdict = readVerdict(fd);
    if (verdict == "accepted") {
      ++t.accepted;
      t.markUnderway();
    } else {
      t.refused(verdict, start);
    }
    ::close(fd);
  }
}

// silent: connections that read the CHALLENGE and say nothing; each is replaced when the
// reducer closes it, so the pressure on the handshake pool stays at --connections.
void silentLoop(const Config& c, Tally& t, Clock::time_point end) {
  struct Held { int fd; Clock::time_point since; };
  std::vector<Held> held;
  size_t next = 0;
  while (!pastDeadline(end)) {
    while (held.size() < c.connections) {
      ++t.attempts;
      const auto start = Clock::now();
      int fd = dial(c.reducers[next++ % c.reducers.size()], c.ioTimeout);
      if (fd < 0) { t.refused("connect failed", start); break; }
      held.push_back({fd, start});
    }
    if (held.size() >= c.connections) t.markUnderway();
    std::vector<pollfd> fds;
    for (const Held& h : held) fds.push_back({h.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 200);
    for (size_t i = fds.size(); i-- > 0;) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = ::recv(held[i].fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) continue;  // the CHALLENGE, or the reason that follows it
      t.refused("closed while silent", held[i].since);
      ::close(held[i].fd);
      held.erase(held.begin() + static_cast<ptrdiff_t>(i));
    }
  }
  for (const Held& h : held) ::close(h.fd);
}

// conn-flood: an authenticated tenant that opens --connections streams, each joining a group of
// its own that never runs a collective, and holds them: groups, connections per peer and the
// idle timeout are what stop it.
void connFloodLoop(const Config& c, Tally& t, Clock::time_point end) {
  std::vector<int> held;
  size_t next = 0;
  while (!pastDeadline(end)) {
    if (held.size() >= c.connections) {
      // Full: keep what is held, and notice the ones the reducer closes.
      std::vector<pollfd> fds;
      for (int fd : held) fds.push_back({fd, POLLRDHUP, 0});
      ::poll(fds.data(), fds.size(), 200);
      for (size_t i = fds.size(); i-- > 0;) {
        if (!fds[i].revents) continue;
        t.refused("held stream closed by the reducer", Clock::now());
        ::close(held[i]);
        held.erase(held.begin() + static_cast<ptrdiff_t>(i));
      }
      continue;
    }
    ++t.attempts;
    const auto start = Clock::now();
    const size_t r = next++ % c.reducers.size();
    int fd = dial(c.reducers[r], c.ioTimeout);
    if (fd < 0) { t.refused("connect failed", start); continue; }
    auto challenge = readChallenge(fd);
    std::vector<uint8_t> hello;
    if (challenge)
      hello = helloFrame(*challenge, GroupId::random(), 0, 2, 0, 1, static_cast<uint16_t>(r),
                         static_cast<uint16_t>(c.reducers.size()), c.secret, c.job);
    const std::string verdict = !challenge ? "no challenge"
                                : !writeAll(fd, hello.data(), hello.size(), end)
                                    ? "write failed"
                                    : readVerdict(fd);
    if (verdict == "accepted") {
      ++t.accepted;
      t.markUnderway();
      held.push_back(fd);
    } else {
      t.refused(verdict, start);
      ::close(fd);
    }
  }
  for (int fd : held) ::close(fd);
}

client::ClientOptions tenantOptions(const Config& c) {
  client::ClientOptions o;
  o.reducers = c.reducers;
  o.streamsPerReducer = c.streams;
  o.secret = c.secret;
  o.jobName = c.job;
  (void)o.applyEnvironment();  // RS_TIMEOUT_MS (checked in run())
  return o;
}

// stall: the partner never arrives, so every chunk rank 0 sent waits in the reducers until the
// group's timeout; then again with a new group.
void stallLoop(const Config& c, Tally& t, Clock::time_point end) {
  std::vector<float> buf(c.bytes / sizeof(float), 1.0f);
  while (!pastDeadline(end)) {
    ++t.attempts;
    const auto start = Clock::now();
    auto comm = client::Communicator::connect(tenantOptions(c), {GroupId::random(), 2, 0});
    t.markUnderway();
    if (!comm.isOk()) {
      t.refused(std::string("connect: ") + statusCodeName(comm.status().code()), start);
      continue;
    }
    Status st = (*comm)->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                   ReduceOp::kSum);
    if (st.isOk()) ++t.accepted;
    else t.refused(std::string("all-reduce: ") + statusCodeName(st.code()), start);
  }
}

// no-read: world 1, so every chunk completes at once and its result heads back, into a socket
// whose reader never reads (and whose receive buffer is small).
void noReadLoop(const Config& c, Tally& t, Clock::time_point end) {
  const uint32_t count = 256 * 1024;  // 1 MiB of fp32 per chunk
  std::vector<float> payload(count, 1.0f);
  while (!pastDeadline(end)) {
    ++t.attempts;
    const auto start = Clock::now();
    const GroupId group = GroupId::random();
    int fd = dial(c.reducers[0], c.ioTimeout);
    if (fd < 0) { t.refused("connect failed", start); continue; }
    int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    auto challenge = readChallenge(fd);
    std::vector<uint8_t> hello;
    if (challenge)
      hello = helloFrame(*challenge, group, 0, 1, 0, 1, 0, 1, c.secret, c.job);
    if (!challenge || !writeAll(fd, hello.data(), hello.size()) || readVerdict(fd) != "accepted") {
      t.refused("handshake refused", start);
      ::close(fd);
      continue;
    }
    // Chunks until the reducer stops taking them (its buffers and ours full) or closes.
    for (uint64_t i = 0; !pastDeadline(end); ++i) {
      wire::ChunkFields f;
      f.group = group;
      f.seq = i;
      f.chunk = i;
      f.elemCount = count;
      f.dtype = DataType::kFloat32;
      f.op = ReduceOp::kSum;
      const wire::HeaderBytes h = wire::encodeHeader(wire::reduceHeader(f));
      // Underway once the reducers stopped taking chunks: before that, this is only one more
      // tenant sending at its link's rate, whose cost is the link's to share.
      const auto full = [&] { t.markUnderway(); };
      if (!writeAll(fd, h.data(), h.size(), end, full) ||
          !writeAll(fd, payload.data(), payload.size() * sizeof(float), end, full))
        break;
      const uint64_t bytes = h.size() + payload.size() * sizeof(float);
      t.bytesSent += bytes;
      if (t.underway) t.bytesSentUnderway += bytes;
    }
    // Blocked (or the deadline): wait, still not reading, for the reducer to end it.
    pollfd p{fd, POLLRDHUP, 0};
    while (!pastDeadline(end) && ::poll(&p, 1, 200) == 0) {}
    if (p.revents) t.refused("closed by the reducer", start);
    ::close(fd);
  }
}

int run(int argc, char** argv) {
  Config c;
  std::string reducers, group;
  CLI::App app{"A hostile or broken peer of the reducers (bench/cluster/attack.sh)"};
  app.add_option("--mode", c.mode)->required()->check(
      CLI::IsMember(
          {"silent", "no-proof", "bad-proof", "other-job", "garbage", "stall", "no-read",
           "conn-flood"}));
  app.add_option("--reducers", reducers, "host:port,...")->required();
  app.add_option("--group", group, "the victim's group id (hex), for no-proof and bad-proof");
  app.add_option("--world", c.world, "the victim's world size");
  app.add_option("--duration", c.durationS, "seconds");
  app.add_option("--connections", c.connections, "silent, conn-flood: connections held");
  app.add_option("--streams", c.streams, "stall: streams per reducer");
  std::string bytes = "16MiB";
  app.add_option("--bytes", bytes, "stall: bytes per all-reduce (16MiB, 4M...)");
  CLI11_PARSE(app, argc, argv);
  for (std::string_view r : split(reducers, ',')) {
    auto e = parseEndpoint(r, "--reducers", PortZero::kRefused);
    if (!e.isOk()) { fmt::print(stderr, "{}\n", e.status().toString()); return 2; }
    c.reducers.push_back(*e);
  }
  if (auto b = parseByteSize(bytes); b.isOk()) {
    c.bytes = *b;
  } else {
    fmt::print(stderr, "--bytes: {}\n", b.status().toString());
    return 2;
  }
  if (!group.empty()) {
    auto g = GroupId::parse(group);
    if (!g.isOk()) { fmt::print(stderr, "{}\n", g.status().toString()); return 2; }
    c.victim = *g;
  }
  {
    client::ClientOptions env;  // the tenant: RS_SECRET_FILE or RS_SECRET, and RS_JOB
    if (Status st = env.applyEnvironment(); !st.isOk()) {
      fmt::print(stderr, "{}\n", st.toString());
      return 2;
    }
    c.secret = env.secret;
    c.job = env.jobName;
  }

  struct sigaction stop {};
  stop.sa_handler = onStop;
  ::sigaction(SIGTERM, &stop, nullptr);
  ::sigaction(SIGINT, &stop, nullptr);
  (void)configureLogging("critical", "text");  // the tally says what happened
  Tally t;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(c.durationS));
  if (c.mode == "silent") silentLoop(c, t, end);
  else if (c.mode == "stall") stallLoop(c, t, end);
  else if (c.mode == "no-read") noReadLoop(c, t, end);
  else if (c.mode == "conn-flood") connFloodLoop(c, t, end);
  else refusalLoop(c, t, end);

  fmt::print("attack {}: {} attempts, {} accepted, slowest refusal {:.0f} ms\n", c.mode,
             t.attempts, t.accepted, t.slowestRefusalMs);
  for (const auto& [reason, n] : t.refusals) fmt::print("  refused {:6d}x  {}\n", n, reason);
  if (t.bytesSent)
    fmt::print("  sent {:.0f} MiB of chunks, {:.0f} MiB of it after the reducers first stopped "
               "taking them\n",
               t.bytesSent / 1048576.0, t.bytesSentUnderway / 1048576.0);
  return 0;
}

}  // namespace
}  // namespace rs

int main(int argc, char** argv) { return rs::run(argc, argv); }

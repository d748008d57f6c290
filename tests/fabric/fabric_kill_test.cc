// A peer killed mid-write: the survivor's pending writes fail, each with a clear error, within a
// bound, and nothing hangs. The target is another process (fabric_peer), SIGKILLed while the
// writes are in flight.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "tests/support/fabric_side.h"

extern char** environ;

namespace fab = rs::transport::fabric;
using rs::test::FabricSide;

namespace {

// The target process and what it printed: its address and the buffer it registered.
struct PeerProcess {
  pid_t pid = -1;
  std::vector<uint8_t> address;
  fab::RemoteBuffer buffer;

  ~PeerProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// Starts fabric_peer and reads its one line, waiting at most `bound` for it.
void startPeer(PeerProcess& peer, std::chrono::milliseconds bound) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  char path[] = RS_FABRIC_PEER;
  char* argv[] = {path, nullptr};
  const int rc = posix_spawn(&peer.pid, path, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  REQUIRE(rc == 0);
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (line.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    REQUIRE(left.count() > 0);
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[256];
    const ssize_t n = read(out[0], chunk, sizeof chunk);
    REQUIRE(n > 0);  // the peer printed its line before it closed stdout
    line.append(chunk, static_cast<size_t>(n));
  }
  close(out[0]);
  std::istringstream in(line);
  std::string hex;
  in >> hex >> peer.buffer.address >> peer.buffer.key >> peer.buffer.size;
  REQUIRE(in);
  REQUIRE(hex.size() % 2 == 0);
  for (size_t i = 0; i < hex.size(); i += 2) {
    peer.address.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
}

}  // namespace

TEST_CASE("a peer killed mid-write fails the survivor's pending writes within a bound",
          "[fabric]") {
  const bool deliveryComplete = GENERATE(true, false);
  // Small enough that every write fits the sockets' buffers: what a sender's completion means
  // then depends on delivery-complete alone.
  constexpr size_t kWrite = 64u << 10;
  constexpr int kInFlight = 8;
  constexpr auto kBound = std::chrono::seconds(30);
  PeerProcess target;
  startPeer(target, std::chrono::seconds(60));
  REQUIRE(target.buffer.size >= kInFlight * kWrite);

  FabricSide writer = rs::test::openFabricSide("writer", deliveryComplete);
  std::vector<uint8_t> source(kWrite, 0x3C);
  fab::RegisteredMemory sourceMemory =
      rs::test::registerFabricMemory(writer, source, fab::RegisteredMemory::Access::kLocal);
  auto peer = writer.endpoint->addPeer(target.address, "fabric_peer");
  REQUIRE(peer.status().toString() == "OK");
  // One write that completes: the connection is up and the target lands writes.
  REQUIRE(writer.endpoint->postWrite(*peer, sourceMemory, 0, kWrite, target.buffer, 0, 0, 0)
              .toString() == "OK");
  auto first = writer.endpoint->next(kBound);
  REQUIRE(first.status().toString() == "OK");
  REQUIRE(first->status.toString() == "OK");

  // Stopped, the target lands nothing more (it progresses only by polling): the writes below are
  // in flight, some bytes in the sockets, none acknowledged, when it is killed.
  REQUIRE(kill(target.pid, SIGSTOP) == 0);
  int status = 0;
  REQUIRE(waitpid(target.pid, &status, WUNTRACED) == target.pid);
  REQUIRE(WIFSTOPPED(status));
  for (int i = 1; i <= kInFlight; ++i) {
    REQUIRE(writer.endpoint
                ->postWrite(*peer, sourceMemory, 0, kWrite, target.buffer,
                            static_cast<uint64_t>(i - 1) * kWrite, static_cast<uint32_t>(i),
                            static_cast<uint64_t>(i))
                .toString() == "OK");
  }
  std::vector<fab::FabricCompletion> done;
  if (deliveryComplete) {
    // No acknowledgement can come from a stopped target, so nothing completes meanwhile (the
    // window only bounds the look: a slower machine sees the same).
    auto early = writer.endpoint->next(std::chrono::milliseconds(500));
    CHECK(early.status().code() == rs::StatusCode::kTimeout);
    if (early.isOk()) done.push_back(std::move(*early));
  } else {
    // The trap, recorded: transmit-complete reports the writes done once the bytes are in the
    // sockets, to a target that is stopped and will die before it lands any of them.
    for (int i = 0; i < kInFlight; ++i) {
      auto c = writer.endpoint->next(kBound);
      if (!c.isOk()) break;
      done.push_back(std::move(*c));
    }
  }
  REQUIRE(kill(target.pid, SIGKILL) == 0);
  REQUIRE(waitpid(target.pid, &status, 0) == target.pid);
  target.pid = -1;

  const size_t beforeKill = done.size();
  const rs::Status finished = writer.endpoint->finishPending(kBound, done);
  std::string seen = std::to_string(beforeKill) + " completed before the kill; finishPending: " +
                     finished.toString();
  int failed = 0;
  int byProvider = 0;
  for (const auto& c : done) {
    seen += "\n  token " + std::to_string(c.token) + ": " + c.status.toString();
    if (!c.status.isOk()) ++failed;
    if (!c.status.isOk() && c.status.code() != rs::StatusCode::kTimeout) ++byProvider;
  }
  WARN((deliveryComplete ? "delivery-complete" : "transmit-complete")
       << ", peer killed: " << failed << " of " << done.size() << " failed, " << byProvider
       << " of them reported by the provider itself: " << seen);
  // Every write completed, one way or the other, within the bound; none is left pending.
  CHECK(writer.endpoint->pending() == 0);
  CHECK(done.size() == kInFlight);
  if (deliveryComplete) {
    // Not one of them is taken for delivered: the target died before acknowledging any, and
    // each error names the write and the peer.
    CHECK(failed == kInFlight);
    for (const auto& c : done) {
      CHECK_THAT(c.status.message(), Catch::Contains("RMA write of 65536 bytes to fabric_peer"));
    }
  }
}

TEST_CASE("a peer that stops answering costs the bound, never a hang", "[fabric]") {
  // A host that vanished without a reset (a cable pulled) looks like a stopped process to the
  // writer: the provider reports nothing, and only the bound ends the wait.
  constexpr size_t kWrite = 1u << 20;
  constexpr int kInFlight = 4;
  PeerProcess target;
  startPeer(target, std::chrono::seconds(60));
  FabricSide writer = rs::test::openFabricSide("writer");
  std::vector<uint8_t> source(kWrite, 0x3C);
  fab::RegisteredMemory sourceMemory =
      rs::test::registerFabricMemory(writer, source, fab::RegisteredMemory::Access::kLocal);
  auto peer = writer.endpoint->addPeer(target.address, "fabric_peer");
  REQUIRE(peer.isOk());
  REQUIRE(writer.endpoint->postWrite(*peer, sourceMemory, 0, kWrite, target.buffer, 0, 0, 0)
              .toString() == "OK");
  auto first = writer.endpoint->next(std::chrono::seconds(30));
  REQUIRE(first.status().toString() == "OK");
  REQUIRE(first->status.toString() == "OK");

  REQUIRE(kill(target.pid, SIGSTOP) == 0);
  int status = 0;
  REQUIRE(waitpid(target.pid, &status, WUNTRACED) == target.pid);
  for (int i = 1; i <= kInFlight; ++i) {
    REQUIRE(writer.endpoint
                ->postWrite(*peer, sourceMemory, 0, kWrite, target.buffer,
                            static_cast<uint64_t>(i) * kWrite, static_cast<uint32_t>(i),
                            static_cast<uint64_t>(i))
                .toString() == "OK");
  }
  // Delivery-complete: no acknowledgement can come from a stopped target, so the bound is what
  // ends this, whatever the machine's speed.
  std::vector<fab::FabricCompletion> done;
  const rs::Status finished = writer.endpoint->finishPending(std::chrono::milliseconds(500), done);
  CHECK(finished.code() == rs::StatusCode::kTimeout);
  CHECK(writer.endpoint->pending() == 0);
  REQUIRE(done.size() == kInFlight);
  for (const auto& c : done) {
    CHECK(c.status.code() == rs::StatusCode::kTimeout);
    CHECK_THAT(c.status.message(), Catch::Contains("RMA write of 1048576 bytes to fabric_peer"));
  }
  // The endpoint is closed: later posts fail at once, naming why.
  CHECK(writer.endpoint->postWrite(*peer, sourceMemory, 0, 1, target.buffer, 0, 9, 9).code() ==
        rs::StatusCode::kTimeout);
}

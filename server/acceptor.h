// Accepts data connections and runs their handshake: the first frame must be a valid HELLO
// within the handshake timeout; the registry then admits the stream into its group and the
// hand-off moves it to the io thread that owns its stream index. A refused connection gets
// an ERROR frame with the reason before it is closed (one refused at accept, for a full
// handshake pool, gets it in place of the CHALLENGE).
//
// The handshake pool (--max-pending-handshakes) is shared fairly between peer addresses: each
// holds at most --max-pending-handshakes-per-peer, and when the pool is full a newcomer takes
// the place of the oldest pending handshake of the address holding the most, if that one holds
// at least two more than the newcomer's (fewer would only move the excess from one address to
// another). So hosts that sit at their share cannot keep another host's workers out.
#pragma once

#include <asio/io_context.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/common/log_limiter.h"
#include "core/common/status.h"
#include "core/transport/listener.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"

namespace rs::server {

class Acceptor {
 public:
  // Takes a handshaken stream, admitted into `group` as `rank`'s stream `streamIndex`.
  using HandOff = std::function<void(std::unique_ptr<transport::Stream> stream,
                                     std::shared_ptr<Group> group, uint32_t rank,
                                     uint16_t streamIndex)>;

  // Handshakes run on `io`.
  Acceptor(asio::io_context& io, const ServerConfig& config, GroupRegistry& registry,
           HandOff handOff);
  // Binds `hostPort` (port 0: any free port).
  Status listen(const std::string& hostPort);
  void start();
  void stop();
  uint16_t port() const { return listener_ ? listener_->port() : 0; }
  // Counters for stats and metrics (any thread).
  uint64_t accepted() const { return accepted_.load(std::memory_order_relaxed); }
  uint64_t handshakeFailures(HandshakeFailure why) const {
    return handshakeFailures_[static_cast<size_t>(why)].load(std::memory_order_relaxed);
  }
  int pendingHandshakes() const { return pendingHandshakes_.load(std::memory_order_relaxed); }
  // Pending handshakes refused to make room for another address's connection.
  uint64_t handshakeEvictions() const { return evictions_.load(std::memory_order_relaxed); }
  // Passing accept errors (out of descriptors, ...), each retried after a pause.
  uint64_t acceptErrors() const { return listener_ ? listener_->acceptErrors() : 0; }

 private:
  class Handshake;
  void acceptNext();
  // Pending handshakes of one peer address, oldest first, each with its number (the lower, the
  // older).
  struct Pending {
    std::weak_ptr<Handshake> handshake;
    uint64_t number;
  };
  using PeerHandshakes = std::list<Pending>;
  // Makes room in the handshake pool for a connection from `peer` (an address without the port),
  // evicting another address's oldest handshake if the pool is full (see above), or says which
  // cap refuses it. Acceptor thread only, as are the two below.
  Status makeRoom(const std::string& peer);
  // Takes the place makeRoom made; handshakeEnded gives it back.
  void enlist(const std::shared_ptr<Handshake>& handshake);
  void handshakeEnded(const Handshake& handshake);
  // Tells a connection refused at accept why, in an ERROR frame in place of the CHALLENGE (best
  // effort: nothing is pending on a fresh connection, so it is sent whole or not at all).
  static void refuseAtAccept(transport::Stream& stream, const Status& why);
  void logRefusal(const std::string& peerName, const Status& why);
  void countFailure(HandshakeFailure why) {
    handshakeFailures_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  }

  asio::io_context& io_;
  const ServerConfig& config_;
  GroupRegistry& registry_;
  const HandOff handOff_;
  std::unique_ptr<transport::Listener> listener_;
  std::atomic<uint64_t> accepted_{0};  // TCP connections accepted, before their handshake
  std::array<std::atomic<uint64_t>, kNumHandshakeFailures> handshakeFailures_{};
  std::atomic<int> pendingHandshakes_{0};
  std::atomic<uint64_t> evictions_{0};
  // Pending handshakes per peer address (--max-pending-handshakes-per-peer, and the eviction
  // above); acceptor thread. An address with none has no entry.
  std::unordered_map<std::string, PeerHandshakes> pendingByPeer_;
  uint64_t handshakesStarted_ = 0;  // numbers each handshake, so that the oldest is known
  // Refusals are logged at most 20 per 10 s (a flood of bad proofs must not fill the disk);
  // rs_handshake_failures_total counts every one.
  LogLimiter refusalLog_{20, std::chrono::seconds(10)};
};

}  // namespace rs::server

// Accepts data connections and runs each one's handshake (server/handshake.h) in a bounded
// pool; an admitted stream goes to the hand-off, which moves it to the io thread that owns its
// stream index. A connection refused at accept, for a full handshake pool, gets an ERROR frame
// with the reason in place of the CHALLENGE.
//
// The handshake pool (--max-pending-handshakes) is shared fairly between peer addresses: each
// holds at most --max-pending-handshakes-per-peer, and when the pool is full a newcomer takes
// the place of the oldest pending handshake of the address holding the most, if that one holds
// at least two more than the newcomer's (fewer would only move the excess from one address to
// another). So hosts that sit at their share cannot keep another host's workers out.
#pragma once

#include <asio/io_context.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/common/status.h"
#include "core/transport/listener.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"
#include "server/handshake.h"

namespace rs::server {

class Acceptor final : private HandshakeOwner {
 public:
  // Takes a handshaken stream, admitted into `group` as `rank`'s stream `streamIndex`, with
  // the loss bound `lossDetectMs`.
  using HandOff = std::function<void(std::unique_ptr<transport::Stream> stream,
                                     std::shared_ptr<Group> group, uint32_t rank,
                                     uint16_t streamIndex, uint32_t lossDetectMs,
                                     bool askedFabric)>;

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
  uint64_t handshakeFailures(HandshakeFailure why) const { return refusals_.count(why); }
  int pendingHandshakes() const { return pendingHandshakes_.load(std::memory_order_relaxed); }
  // Pending handshakes refused to make room for another address's connection.
  uint64_t handshakeEvictions() const { return evictions_.load(std::memory_order_relaxed); }
  // Passing accept errors (out of descriptors, ...), each retried after a pause.
  uint64_t acceptErrors() const { return listener_ ? listener_->acceptErrors() : 0; }

 private:
  void acceptNext();
  // Pending handshakes of one peer address by their numbers: the first is the oldest.
  using PeerHandshakes = std::map<uint64_t, std::weak_ptr<Handshake>>;
  // Makes room in the handshake pool for a connection from `peer` (an address without the port),
  // evicting another address's oldest handshake if the pool is full (see above), or says which
  // cap refuses it. Acceptor thread only, as are the three below.
  Status makeRoom(const std::string& peer);
  // Takes the place makeRoom made; handshakeEnded gives it back.
  void enlist(const std::shared_ptr<Handshake>& handshake);
  // HandshakeOwner
  void handshakeEnded(const Handshake& handshake) override;
  void handOff(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
               uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs,
               bool askedFabric) override;

  asio::io_context& io_;
  const ServerConfig& config_;
  GroupRegistry& registry_;
  const HandOff handOff_;
  std::unique_ptr<transport::Listener> listener_;
  std::atomic<uint64_t> accepted_{0};  // TCP connections accepted, before their handshake
  HandshakeRefusals refusals_;         // at accept and in the handshakes
  std::atomic<int> pendingHandshakes_{0};
  std::atomic<uint64_t> evictions_{0};
  // Pending handshakes per peer address (--max-pending-handshakes-per-peer, and the eviction
  // above); acceptor thread. An address with none has no entry.
  std::unordered_map<std::string, PeerHandshakes> pendingByPeer_;
  uint64_t handshakesStarted_ = 0;  // numbers each handshake, so that the oldest is known
};

}  // namespace rs::server

#include "server/acceptor.h"

#include <fmt/format.h>

#include "core/common/endpoint.h"
#include "core/common/log.h"
#include "core/transport/stream_error.h"

namespace rs::server {
Acceptor::Acceptor(asio::io_context& io, const ServerConfig& config, GroupRegistry& registry,
                   HandOff handOff)
    : io_(io), config_(config), registry_(registry), handOff_(std::move(handOff)) {}

Status Acceptor::listen(const std::string& hostPort) {
  auto endpoint = parseEndpoint(
      hostPort, "the data address (--data-listen, RS_DATA_LISTEN or CLUSTER_SPEC)",
      PortZero::kAllowed);
  if (!endpoint) return endpoint.status();
  auto listener = transport::listen(io_, *endpoint, config_.transport, PortZero::kAllowed);
  if (!listener)
    return Status(listener.status().code(), "data plane " + listener.status().message());
  listener_ = std::move(*listener);
  return Status::ok();
}

void Acceptor::start() { acceptNext(); }

void Acceptor::stop() {
  if (listener_) listener_->close();
}

void Acceptor::acceptNext() {
  listener_->asyncAccept([this](const std::error_code& ec,
                                std::unique_ptr<transport::Stream> stream) {
    if (transport::cancelled(ec)) return;
    if (ec) {
      rs::logger().warn("accept failed: {}", ec.message());
      acceptNext();
      return;
    }
    accepted_.fetch_add(1, std::memory_order_relaxed);
    // The per-peer connection cap counts hosts, not ports.
    std::string peer = stream->peer().host;
    if (Status full = makeRoom(peer); !full.isOk()) {
      refusals_.record(HandshakeFailure::kLimit, stream->peerName(), full);
      Handshake::refuseAtAccept(*stream, full);
    } else {
      HandshakeOwner& owner = *this;
      auto handshake = std::make_shared<Handshake>(owner, io_, config_, registry_, refusals_,
                                                   std::move(stream), std::move(peer),
                                                   ++handshakesStarted_);
      enlist(handshake);
      handshake->run();
    }
    acceptNext();
  });
}

Status Acceptor::makeRoom(const std::string& peer) {
  // The global cap bounds the descriptors and timers that silent connections hold; the per-peer
  // cap keeps one address from taking the whole pool, and the eviction below keeps addresses
  // that together fill it from keeping another one out.
  const auto mine = pendingByPeer_.find(peer);
  const size_t held = mine == pendingByPeer_.end() ? 0 : mine->second.size();
  if (held >= config_.maxPendingHandshakesPerPeer)
    return resourceExhausted(fmt::format(
        "peer {} already has {} handshakes pending (--max-pending-handshakes-per-peer)", peer,
        held));
  if (pendingHandshakes_.load() < static_cast<int>(config_.maxPendingHandshakes))
    return Status::ok();
  // The pool is full: the address holding the most (of those holding as many, the one whose
  // oldest is oldest) gives up its oldest, if it holds at least two more than `peer`.
  const PeerHandshakes* most = nullptr;
  for (const auto& [address, handshakes] : pendingByPeer_) {
    if (most == nullptr || handshakes.size() > most->size() ||
        (handshakes.size() == most->size() &&
         handshakes.begin()->first < most->begin()->first))
      most = &handshakes;
  }
  const std::shared_ptr<Handshake> oldest =
      most != nullptr && most->size() >= held + 2 ? most->begin()->second.lock() : nullptr;
  if (!oldest)
    return resourceExhausted(fmt::format(
        "{} handshakes already pending, and no address holds two more than {} (which holds {}) "
        "(--max-pending-handshakes)",
        config_.maxPendingHandshakes, peer, held));
  const Status why = resourceExhausted(fmt::format(
      "{} handshakes pending, {} of them from {}, the most of any address: its oldest made room "
      "for a connection from {} (--max-pending-handshakes)",
      config_.maxPendingHandshakes, most->size(), oldest->peer(), peer));
  evictions_.fetch_add(1, std::memory_order_relaxed);
  oldest->evict(why);  // ends it: handshakeEnded takes it off the lists
  return Status::ok();
}

void Acceptor::enlist(const std::shared_ptr<Handshake>& handshake) {
  pendingByPeer_[handshake->peer()].emplace(handshake->number(), handshake);
  pendingHandshakes_.fetch_add(1);
}

void Acceptor::handshakeEnded(const Handshake& handshake) {
  pendingHandshakes_.fetch_sub(1);
  auto it = pendingByPeer_.find(handshake.peer());
  it->second.erase(handshake.number());
  if (it->second.empty()) pendingByPeer_.erase(it);
}

void Acceptor::handOff(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
                       uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs,
                       bool askedFabric) {
  handOff_(std::move(stream), std::move(group), rank, streamIndex, lossDetectMs, askedFabric);
}

}  // namespace rs::server

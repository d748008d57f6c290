// A new data connection's handshake, from accept until its stream is admitted into a group or
// refused (proto/WIRE.md, "Authentication"): the reducer sends a CHALLENGE with a fresh nonce;
// the first frame back must be a valid HELLO within --handshake-timeout-ms, proven with the
// pool's secret or the named job's key when the reducer has one; the registry then admits the
// stream into its group and the owner takes it on. A refused connection is counted and logged
// (HandshakeRefusals) and gets an ERROR frame with the reason before it is closed, unless it
// went silent or away. The acceptor keeps accepting, holds the pool of pending handshakes and
// routes admitted streams to their io threads.
//
// Everything here runs on the acceptor's io thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/common/log_limiter.h"
#include "core/common/status.h"
#include "core/transport/stream.h"
#include "core/wire/control_frames.h"
#include "core/wire/frame.h"
#include "server/config.h"
#include "server/failure_reason.h"
#include "server/group_registry.h"

namespace rs::server {

// Connections refused before they joined a group: each counted by reason
// (rs_handshake_failures_total) and logged as "refused data connection from <peer>: <why>", at
// most 20 lines per 10 s (a flood of bad proofs must not fill the disk; the count is exact).
class HandshakeRefusals {
 public:
  void record(HandshakeFailure why, const std::string& peerName, const Status& reason);
  // Any thread (stats and metrics).
  uint64_t count(HandshakeFailure why) const {
    return counts_[static_cast<size_t>(why)].load(std::memory_order_relaxed);
  }

 private:
  std::array<std::atomic<uint64_t>, kNumHandshakeFailures> counts_{};
  LogLimiter log_{20, std::chrono::seconds(10)};
};

class Handshake;

// What a handshake tells the acceptor that started it.
class HandshakeOwner {
 public:
  // The handshake ended, refused or admitted (then just before handOff): its place in the pool
  // is free.
  virtual void handshakeEnded(const Handshake& handshake) = 0;
  // Takes the handshaken stream, admitted into `group` as `rank`'s stream `streamIndex`, whose
  // loss bound is `lossDetectMs` (ServerConfig::streamLossDetectMs of the HELLO's ask), whose
  // HELLO asked for a fabric channel (`askedFabric`, proto/WIRE.md "The fabric").
  virtual void handOff(std::unique_ptr<transport::Stream> stream, std::shared_ptr<Group> group,
                       uint32_t rank, uint16_t streamIndex, uint32_t lossDetectMs,
                       bool askedFabric) = 0;

 protected:
  ~HandshakeOwner() = default;
};

class Handshake : public std::enable_shared_from_this<Handshake> {
 public:
  // `owner`, `config`, `registry` and `refusals` outlive the handshake. `peer` is the peer's
  // address without the port; `number` orders handshakes by age (the lower, the older).
  Handshake(HandshakeOwner& owner, asio::io_context& io, const ServerConfig& config,
            GroupRegistry& registry, HandshakeRefusals& refusals,
            std::unique_ptr<transport::Stream> stream, std::string peer, uint64_t number);

  // Sends the CHALLENGE and starts the timeout; the handshake keeps itself alive until it ends.
  void run();
  // Refuses it (counted as kLimit, with an ERROR naming `why`): the pool gave its place to a
  // connection from another address.
  void evict(const Status& why);

  const std::string& peer() const { return peer_; }
  uint64_t number() const { return number_; }

  // Tells a connection refused before any handshake started (a full pool) why, in an ERROR
  // frame in place of the CHALLENGE, and closes it. Best effort: nothing is pending on a fresh
  // connection, so it is sent whole or not at all.
  static void refuseAtAccept(transport::Stream& stream, const Status& why);

 private:
  void sendChallenge();
  void onHeader(const std::error_code& ec);
  void onPayload(const std::error_code& ec);
  // With a job secret, the HELLO must carry helloProof() for this connection's nonce, under
  // the pool's secret or, when it names a job, that job's key.
  Status checkProof(const wire::HelloPayload& p) const;
  // Counts, logs, tells the peer why if `reply`, and closes.
  void refuse(HandshakeFailure why, const Status& reason, bool reply);

  HandshakeOwner& owner_;
  const ServerConfig& config_;
  GroupRegistry& registry_;
  HandshakeRefusals& refusals_;
  std::unique_ptr<transport::Stream> stream_;
  const std::string peer_;
  const uint64_t number_;
  asio::steady_timer timer_;
  wire::Nonce nonce_{};
  wire::HeaderBytes challengeHeader_{};
  std::array<uint8_t, wire::kChallengePayloadSize> challengePayload_{};
  bool writing_ = false;  // the CHALLENGE is going out
  wire::HeaderBytes header_{};
  std::array<uint8_t, wire::kHelloPayloadSize> payload_{};
  wire::FrameHeader hello_;
  bool finished_ = false;
  wire::ErrorFrame reply_;
  transport::ConstBuffer buffers_[2]{};
};

}  // namespace rs::server

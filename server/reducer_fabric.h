// The reducer's side of the fabric's set-up (proto/FABRIC.md, "Set-up"; proto/WIRE.md, "The
// fabric"): which provider it offers (--fabric-provider, resolved on each io thread at start,
// one log line), and on each io thread the hub that opens a channel for every stream whose
// HELLO asks for one. Without libfabric in the build, or without a provider, it offers nothing,
// says why in the FABRIC_DECLINE, and the reducer serves over TCP alone: never a failed start.
#pragma once

#include <asio/io_context.hpp>

#include <memory>
#include <string>

#include "core/common/status.h"
#include "core/transport/payload_channel.h"
#include "core/transport/user_memory.h"
#include "core/wire/fabric_frames.h"
#include "server/config.h"
#include "server/memory_budget.h"

namespace rs::server {

// One stream's channel, the grant that offers it to the worker, and its memory's charge against
// --memory-limit (held while the stream lives).
struct FabricOffer {
  std::shared_ptr<transport::PayloadChannel> channel;
  wire::FabricGrant grant;
  BookkeepingCharge charge;
};

class ReducerFabric {
 public:
  // The fabric of io thread `shard`, or null with *why (the reason a DECLINE gives). Shard 0
  // logs the outcome.
  static std::unique_ptr<ReducerFabric> open(asio::io_context& io, const ServerConfig& config,
                                             uint32_t shard, std::string* why);
  ~ReducerFabric();
  ReducerFabric(const ReducerFabric&) = delete;
  ReducerFabric& operator=(const ReducerFabric&) = delete;

  // A channel for one stream (`name` names it in errors) and the grant that offers it, its
  // memory (streamBytes) charged to `budget` first: refused, the stream gets no fabric.
  Result<FabricOffer> offer(const std::string& name, const std::shared_ptr<MemoryBudget>& budget);
  // The worker's FABRIC_ACCEPT: its grant checked and `channel` (from offer()) connected to it.
  // A worker's ring sizes the send ring that mirrors it here: one larger than maxPeerRingBytes()
  // is refused (a member must not make the reducer allocate what it likes).
  Status accept(transport::PayloadChannel& channel, const wire::FabricGrant& worker);
  // What one stream's channel may hold: its receive ring, and a send ring of at most
  // maxPeerRingBytes().
  uint64_t streamBytes() const;
  uint64_t maxPeerRingBytes() const;
  // Results leave from the buffers in `buffers` (the slot pool's) without the copy into the
  // send rings (transport/user_memory.h).
  void sendFrom(std::shared_ptr<const transport::UserMemory> buffers);
  // Payload bytes sent: straight from those buffers, and through the send rings. Any thread.
  uint64_t bytesZeroCopy() const;
  uint64_t bytesCopied() const;
  // Fails every channel (the reducer stops).
  void shutdown(const Status& why);
  // "tcp;ofi_rxm"
  const std::string& provider() const;

 private:
  struct Impl;
  explicit ReducerFabric(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rs::server

// The fabric of a communicator's io threads (proto/FABRIC.md; RS_FABRIC, RS_FABRIC_NODE): one
// FabricHub per io_context, opened at start-up before the threads run, whose channels that
// thread's streams use. What RS_FABRIC asks is a wish, never a requirement: a provider that is
// absent, a probe that finds no device ("auto") or a hub that fails to open is one log line, and
// the streams run on TCP. Built without libfabric, there is never a hub.
#pragma once

#include <asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/transport/user_memory.h"
#include "rs/client.h"

namespace rs::transport::fabric {
class FabricHub;
}  // namespace rs::transport::fabric

namespace rs::client {

// The receive ring of each fabric stream of a worker, which the reducer writes RESULT pieces
// into: 8 slots of 256 KiB (2 MiB registered per stream, 32 MiB at 16 streams). 256 KiB pieces
// keep the per-write cost small (on the tcp provider the channel matches a TCP stream from
// 256 KiB up: bench/RESULTS.md); 8 credits hold two default chunks (RS_MAX_CHUNK 1 MiB) in
// flight while this thread copies the first out, and cover 2 MiB of round trip (170 us at
// 100 Gbit/s) before the reducer waits for a credit.
inline constexpr uint32_t kResultRingSlots = 8;
inline constexpr uint32_t kResultRingSlotBytes = 256 << 10;

class FabricHubs {
 public:
  // Hubs on `ios` as options.fabric says ("off", "auto": verbs, then efa; or a provider's
  // name), bound to options.fabricNode, each following `userMemory` (the buffers registered
  // for zero-copy sends). `who` names this member in the log line.
  FabricHubs(const ClientOptions& options, const std::vector<asio::io_context*>& ios,
             const std::string& who, std::shared_ptr<const transport::UserMemory> userMemory);
  // Shuts the hubs down: after every channel on them was closed and dropped, with no io thread
  // running (a hub is driven by one thread at a time).
  ~FabricHubs();
  FabricHubs(const FabricHubs&) = delete;
  FabricHubs& operator=(const FabricHubs&) = delete;

  // The hub of io_context `io` (the index into the list given); null: TCP only.
  transport::fabric::FabricHub* at(size_t io) const;
  // The provider in use ("verbs;ofi_rxm"), or empty.
  const std::string& provider() const { return provider_; }
  // The hubs' payload counters, summed (any thread).
  FabricStats stats() const;

  // The providers RS_FABRIC names, in the order tried: none for "off", verbs then efa for
  // "auto", else the one given.
  static std::vector<std::string> candidates(const std::string& fabric);

 private:
  std::vector<std::unique_ptr<transport::fabric::FabricHub>> hubs_;
  std::string provider_;
};

}  // namespace rs::client

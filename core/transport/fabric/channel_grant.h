// What one end of a fabric channel hands the other over the authenticated TCP stream (the
// FABRIC_OFFER/ACCEPT frames carry it), and the checks on it: a peer's grant is network input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/status.h"
#include "core/transport/fabric/registered_memory.h"

namespace rs::transport::fabric {

// A receive ring: `slots` buffers of `slotBytes`, one piece each; the slots are the credits.
struct RingShape {
  uint32_t slots = 0;
  uint32_t slotBytes = 0;

  static constexpr uint32_t kMaxSlots = 1024;  // the sequence space (2^20) stays far wider
  static constexpr uint32_t kMinSlotBytes = 4096;
  static constexpr uint32_t kMaxSlotBytes = 16u << 20;
  static constexpr uint32_t kSlotAlign = 64;  // cache lines: pieces never share one
  // A whole ring: the writer mirrors the peer's ring in a send ring of its own, so a peer's
  // shape sizes our memory too.
  static constexpr uint64_t kMaxRingBytes = uint64_t{1} << 30;

  uint64_t bytes() const { return uint64_t{slots} * slotBytes; }
  bool operator==(const RingShape&) const = default;
};

// OK, or why not ("ring of 0 slots (expected 1..1024)").
Status checkRingShape(const RingShape& ring);

struct ChannelGrant {
  std::string provider;          // "tcp;ofi_rxm": both ends must match
  std::vector<uint8_t> address;  // the hub endpoint's (<= FabricDomain::kMaxAddressBytes)
  uint16_t channelId = 0;        // < 4096: immediates' and control words' channel field
  RingShape ring;                // this side's receive ring
  RemoteBuffer ringBuffer;       // where the peer writes it (size == ring.bytes())
};

// A peer's grant against what this end runs: the provider, the address length, the id range,
// the ring's shape and that the buffer is exactly the ring. The message names `who`.
Status checkPeerGrant(const ChannelGrant& peer, const std::string& ourProvider,
                      size_t ourAddressBytes, const std::string& who);

}  // namespace rs::transport::fabric

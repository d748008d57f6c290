// The frames that set up a stream's fabric channel (proto/FABRIC.md, "Set-up"; their bytes in
// proto/WIRE.md): FABRIC_OFFER (reducer -> worker) and FABRIC_ACCEPT (worker -> reducer) each
// carry the sender's grant, FABRIC_DECLINE either way a reason. No I/O: what a sender fills in
// and what a receiver reads back. The grant arrives from the network: every field is checked
// here, and the fabric layer checks it again against what it can do.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/status.h"
#include "core/wire/frame.h"

namespace rs::wire {

// The ranges a grant may name (the fabric layer may accept less).
inline constexpr uint32_t kMaxFabricChannelId = 4095;  // 12 bits of the immediate data
inline constexpr uint32_t kMaxFabricSlots = 1024;
inline constexpr uint32_t kMinFabricSlotBytes = 4096;
inline constexpr uint32_t kMaxFabricSlotBytes = 16u << 20;
inline constexpr uint32_t kFabricSlotAlignment = 64;

// One side's channel for one stream: where the peer reaches it and writes into it.
struct FabricGrant {
  std::string provider;          // libfabric's name for it, "verbs;ofi_rxm": both ends must match
  std::vector<uint8_t> address;  // the endpoint's (fi_getname), 1..kMaxFabricAddressBytes
  uint16_t channelId = 0;        // 0..kMaxFabricChannelId: names the channel on its endpoint
  uint32_t slots = 0;            // the receive ring: 1..kMaxFabricSlots slots
  uint32_t slotBytes = 0;        // of kMinFabricSlotBytes..kMaxFabricSlotBytes, a multiple of 64
  uint64_t ringAddress = 0;      // where the peer's RMA writes name it (address or offset)
  uint64_t ringKey = 0;          // the ring's registration key
  uint64_t ringSize = 0;         // slots x slotBytes

  bool operator==(const FabricGrant&) const = default;
};

// A provider name as it travels: 1..kMaxFabricProviderBytes of A-Z a-z 0-9 ; _ . - (printable
// in any log line).
bool isValidFabricProvider(std::string_view provider);

// The grant's bytes; INVALID_ARGUMENT naming the field when it is out of its range.
Result<std::vector<uint8_t>> encodeFabricGrant(const FabricGrant& grant);
// A PROTOCOL_ERROR starting "fabric grant: " naming the first field out of range.
Status decodeFabricGrant(const uint8_t* data, size_t size, FabricGrant* out);

struct FabricFrame {
  HeaderBytes header{};
  std::vector<uint8_t> payload;
};
// FABRIC_OFFER (the reducer's grant, to `rank`) or FABRIC_ACCEPT (the worker's, from `rank`).
Result<FabricFrame> fabricOfferFrame(const GroupId& group, uint32_t rank,
                                     const FabricGrant& grant);
Result<FabricFrame> fabricAcceptFrame(const GroupId& group, uint32_t rank,
                                      const FabricGrant& grant);
// FABRIC_DECLINE with `reason` (cut to kMaxErrorMessageBytes as an ERROR's; an empty one reads
// "declined").
FabricFrame fabricDeclineFrame(const GroupId& group, uint32_t rank, std::string_view reason);
// The reason of a FABRIC_DECLINE whose header decoded, escaped for logs (as parseErrorFrame's).
Status parseFabricDecline(const uint8_t* payload, size_t size, std::string* reason);

// The probe (WIRE.md, "The fabric"): once the member's FABRIC_ACCEPT is out, each end writes one
// piece of kFabricProbeBytes on the channel before any payload, and the member takes the stream
// onto the fabric only once its own probe was delivered and the reducer's arrived intact; else
// it sends FABRIC_DECLINE (after its ACCEPT) and the stream runs over TCP. A fabric that a
// firewall or a wrong GID or subnet keeps from carrying data is then a fallback, not a loss.
inline constexpr size_t kFabricProbeBytes = 64;
enum class ProbeFrom : uint8_t { kMember = 1, kReducer = 2 };
using FabricProbe = std::array<uint8_t, kFabricProbeBytes>;
// "rs-fabric-probe" and a zero, the group, the rank (the member's, either way), who wrote it;
// zeros to the end.
FabricProbe fabricProbe(const GroupId& group, uint32_t rank, ProbeFrom from);
// OK when `piece` is exactly that probe; else a PROTOCOL_ERROR saying what differs.
Status checkFabricProbe(const uint8_t* piece, size_t size, const GroupId& group, uint32_t rank,
                        ProbeFrom from);

}  // namespace rs::wire

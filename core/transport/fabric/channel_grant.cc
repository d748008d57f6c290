#include "core/transport/fabric/channel_grant.h"

#include <fmt/format.h>

#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/fabric_immediate.h"

namespace rs::transport::fabric {

Status checkRingShape(const RingShape& ring) {
  if (ring.slots < 1 || ring.slots > RingShape::kMaxSlots) {
    return invalidArgument(fmt::format("ring of {} slots (expected 1..{})", ring.slots,
                                       RingShape::kMaxSlots));
  }
  if (ring.slotBytes < RingShape::kMinSlotBytes || ring.slotBytes > RingShape::kMaxSlotBytes ||
      ring.slotBytes % RingShape::kSlotAlign != 0) {
    return invalidArgument(fmt::format("ring slots of {} bytes (expected {}..{}, a multiple of {})",
                                       ring.slotBytes, RingShape::kMinSlotBytes,
                                       RingShape::kMaxSlotBytes, RingShape::kSlotAlign));
  }
  if (ring.bytes() > RingShape::kMaxRingBytes) {
    return invalidArgument(fmt::format("ring of {} x {} bytes (at most {} bytes in all)",
                                       ring.slots, ring.slotBytes, RingShape::kMaxRingBytes));
  }
  return Status::ok();
}

Status checkPeerGrant(const ChannelGrant& peer, const std::string& ourProvider,
                      size_t ourAddressBytes, const std::string& who) {
  auto refuse = [&](const std::string& why) {
    return invalidArgument(fmt::format("{}: the peer's fabric grant: {}", who, why));
  };
  if (peer.provider != ourProvider) {
    return refuse(fmt::format("provider '{}', ours '{}'", peer.provider, ourProvider));
  }
  if (peer.address.empty() || peer.address.size() > FabricDomain::kMaxAddressBytes ||
      peer.address.size() != ourAddressBytes) {
    return refuse(fmt::format("an address of {} bytes (ours has {}, at most {})",
                              peer.address.size(), ourAddressBytes,
                              FabricDomain::kMaxAddressBytes));
  }
  if (peer.channelId >= kMaxChannels) {
    return refuse(fmt::format("channel id {} (expected < {})", peer.channelId, kMaxChannels));
  }
  if (Status s = checkRingShape(peer.ring); !s.isOk()) return refuse(s.message());
  if (peer.ringBuffer.size != peer.ring.bytes()) {
    return refuse(fmt::format("a ring buffer of {} bytes for {} x {} bytes",
                              peer.ringBuffer.size, peer.ring.slots, peer.ring.slotBytes));
  }
  return Status::ok();
}

}  // namespace rs::transport::fabric

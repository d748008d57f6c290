#include "core/transport/fabric/channel_grant_wire.h"

namespace rs::transport::fabric {

wire::FabricGrant toWireGrant(const ChannelGrant& grant) {
  wire::FabricGrant out;
  out.provider = grant.provider;
  out.address = grant.address;
  out.channelId = grant.channelId;
  out.slots = grant.ring.slots;
  out.slotBytes = grant.ring.slotBytes;
  out.ringAddress = grant.ringBuffer.address;
  out.ringKey = grant.ringBuffer.key;
  out.ringSize = grant.ringBuffer.size;
  return out;
}

ChannelGrant fromWireGrant(const wire::FabricGrant& grant) {
  ChannelGrant out;
  out.provider = grant.provider;
  out.address = grant.address;
  out.channelId = grant.channelId;
  out.ring = RingShape{grant.slots, grant.slotBytes};
  out.ringBuffer = RemoteBuffer{grant.ringAddress, grant.ringKey, grant.ringSize};
  return out;
}

}  // namespace rs::transport::fabric

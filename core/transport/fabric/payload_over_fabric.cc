#include "core/transport/fabric/payload_over_fabric.h"

namespace rs::transport::fabric {

PayloadOverFabric::~PayloadOverFabric() {
  channel_->close(Status(StatusCode::kAborted, "the channel's owner is gone"));
}

void PayloadOverFabric::send(const void* src, size_t bytes,
                             std::function<void(const Status&)> done) {
  channel_->send(src, bytes, std::move(done));
}

void PayloadOverFabric::asyncNextPiece(size_t expect, PieceHandler handler) {
  channel_->asyncNextPiece(
      expect, [handler = std::move(handler)](const Status& s, std::span<const uint8_t> piece) {
        handler(s, std::as_bytes(piece));
      });
}

void PayloadOverFabric::release() {
  // A release the channel refuses (nothing handed out, or the channel failed) fails the
  // channel itself, and the owner's next call sees it.
  (void)channel_->release();
}

wire::FabricGrant toWireGrant(const ChannelGrant& g) {
  wire::FabricGrant w;
  w.provider = g.provider;
  w.address = g.address;
  w.channelId = g.channelId;
  w.slots = g.ring.slots;
  w.slotBytes = g.ring.slotBytes;
  w.ringAddress = g.ringBuffer.address;
  w.ringKey = g.ringBuffer.key;
  w.ringSize = g.ringBuffer.size;
  return w;
}

ChannelGrant fromWireGrant(const wire::FabricGrant& w) {
  ChannelGrant g;
  g.provider = w.provider;
  g.address = w.address;
  g.channelId = w.channelId;
  g.ring = {w.slots, w.slotBytes};
  g.ringBuffer = {w.ringAddress, w.ringKey, w.ringSize};
  return g;
}

}  // namespace rs::transport::fabric

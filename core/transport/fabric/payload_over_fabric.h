// A fabric channel as the PayloadChannel that the session and the connection use
// (core/transport/payload_channel.h), and a channel's grant as the FABRIC_OFFER/ACCEPT frames
// carry it (core/wire/fabric_frames.h). The one place where the fabric meets the wire's types.
#pragma once

#include <memory>

#include "core/transport/fabric/channel_grant.h"
#include "core/transport/fabric/fabric_channel.h"
#include "core/transport/payload_channel.h"
#include "core/wire/fabric_frames.h"

namespace rs::transport::fabric {

class PayloadOverFabric final : public PayloadChannel {
 public:
  explicit PayloadOverFabric(std::shared_ptr<FabricChannel> channel)
      : channel_(std::move(channel)) {}
  ~PayloadOverFabric() override;

  void send(const void* src, size_t bytes, std::function<void(const Status&)> done) override;
  uint64_t bytesPosted() const override { return channel_->bytesPosted(); }
  void asyncNextPiece(size_t expect, PieceHandler handler) override;
  void release() override;
  void detach(const Status& why) override { channel_->detach(why); }
  void close(const Status& why) override { channel_->close(why); }

  FabricChannel& channel() { return *channel_; }

 private:
  std::shared_ptr<FabricChannel> channel_;
};

wire::FabricGrant toWireGrant(const ChannelGrant& grant);
ChannelGrant fromWireGrant(const wire::FabricGrant& grant);

}  // namespace rs::transport::fabric

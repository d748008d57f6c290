// A channel's grant as FABRIC_OFFER and FABRIC_ACCEPT carry it (core/transport/fabric/
// payload_over_fabric.h): every field lands where the other end reads it, through the frame's
// bytes and back.
#include <catch2/catch.hpp>

#include "core/transport/fabric/payload_over_fabric.h"

namespace rs::test {
namespace {

using transport::fabric::ChannelGrant;

ChannelGrant sampleChannelGrant() {
  ChannelGrant g;
  g.provider = "tcp;ofi_rxm";
  g.address = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  g.channelId = 4095;
  g.ring = {8, 256 << 10};
  g.ringBuffer = {0x7f0012340000ull, 0xdeadbeefcafeull, uint64_t{8} * (256 << 10)};
  return g;
}

}  // namespace

TEST_CASE("channel grant on the wire: each field to its place and back, through the bytes") {
  const ChannelGrant g = sampleChannelGrant();
  const wire::FabricGrant w = transport::fabric::toWireGrant(g);
  CHECK(w.provider == g.provider);
  CHECK(w.address == g.address);
  CHECK(w.channelId == g.channelId);
  CHECK(w.slots == g.ring.slots);
  CHECK(w.slotBytes == g.ring.slotBytes);
  CHECK(w.ringAddress == g.ringBuffer.address);
  CHECK(w.ringKey == g.ringBuffer.key);
  CHECK(w.ringSize == g.ringBuffer.size);

  auto bytes = wire::encodeFabricGrant(w);
  REQUIRE(bytes.status().toString() == "OK");
  wire::FabricGrant decoded;
  REQUIRE(wire::decodeFabricGrant(bytes->data(), bytes->size(), &decoded).toString() == "OK");
  const ChannelGrant back = transport::fabric::fromWireGrant(decoded);
  CHECK(back.provider == g.provider);
  CHECK(back.address == g.address);
  CHECK(back.channelId == g.channelId);
  CHECK(back.ring == g.ring);
  CHECK(back.ringBuffer.address == g.ringBuffer.address);
  CHECK(back.ringBuffer.key == g.ringBuffer.key);
  CHECK(back.ringBuffer.size == g.ringBuffer.size);
  CHECK(transport::fabric::toWireGrant(back) == w);
}

}  // namespace rs::test

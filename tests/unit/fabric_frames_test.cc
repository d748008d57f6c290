// The fabric's set-up frames (core/wire/fabric_frames.h): a grant's exact bytes and back, every
// field out of its range refused by name on both sides, and OFFER, ACCEPT and DECLINE built and
// read back; the probe's exact bytes, and every other piece refused.
#include "core/wire/fabric_frames.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/decoded_header.h"
#include "tests/support/require_error.h"

using rs::GroupId;
using rs::StatusCode;
using rs::test::decodedHeader;
using rs::test::requireError;
using namespace rs::wire;

namespace {

FabricGrant sampleGrant() {
  FabricGrant g;
  g.provider = "verbs;ofi_rxm";
  g.address = {0xAA, 0xBB, 0xCC};
  g.channelId = 0x0ABC;
  g.slots = 8;
  g.slotBytes = 1 << 18;
  g.ringAddress = 0x00007F0011223344;
  g.ringKey = 0x0102030405060708;
  g.ringSize = 8u << 18;
  return g;
}

std::vector<uint8_t> encoded(const FabricGrant& g) {
  auto bytes = encodeFabricGrant(g);
  INFO(bytes.status().toString());
  REQUIRE(bytes.isOk());
  return *bytes;
}

}  // namespace

TEST_CASE("fabric frames: a grant's exact bytes, and back") {
  const FabricGrant g = sampleGrant();
  const std::vector<uint8_t> b = encoded(g);
  REQUIRE(b.size() == 40 + 13 + 3);
  const std::vector<uint8_t> fixed = {
      0xBC, 0x0A, 13, 0, 3, 0, 0, 0,                   // channel id, lengths, reserved
      8, 0, 0, 0, 0x00, 0x00, 0x04, 0x00,              // slots, slotBytes
      0x44, 0x33, 0x22, 0x11, 0x00, 0x7F, 0x00, 0x00,  // ring address
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // ring key
      0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00}; // ring size 2 MiB
  REQUIRE(std::vector<uint8_t>(b.begin(), b.begin() + 40) == fixed);
  REQUIRE(std::string(b.begin() + 40, b.begin() + 53) == "verbs;ofi_rxm");
  REQUIRE(std::vector<uint8_t>(b.begin() + 53, b.end()) == g.address);
  FabricGrant back;
  REQUIRE(decodeFabricGrant(b.data(), b.size(), &back).isOk());
  REQUIRE(back == g);
}

TEST_CASE("fabric frames: a grant out of range is refused when built, by the field's name") {
  const std::pair<void (*)(FabricGrant&), std::string> cases[] = {
      {[](FabricGrant& g) { g.provider.clear(); }, "provider ''"},
      {[](FabricGrant& g) { g.provider = "tcp ofi"; }, "provider 'tcp ofi'"},
      {[](FabricGrant& g) { g.provider = std::string(65, 'a'); }, "provider 'aaaa"},
      {[](FabricGrant& g) { g.address.clear(); }, "address of 0 bytes (expected 1..256)"},
      {[](FabricGrant& g) { g.address.assign(257, 1); }, "address of 257 bytes"},
      {[](FabricGrant& g) { g.channelId = 4096; }, "channelId 4096 (expected 0..4095)"},
      {[](FabricGrant& g) { g.slots = 0; }, "slots 0 (expected 1..1024)"},
      {[](FabricGrant& g) { g.slots = 1025; }, "slots 1025"},
      {[](FabricGrant& g) { g.slotBytes = 4032; }, "slotBytes 4032"},
      {[](FabricGrant& g) { g.slotBytes = 4096 + 32; }, "slotBytes 4128"},
      {[](FabricGrant& g) { g.slotBytes = (16u << 20) + 64; }, "slotBytes 16777280"},
      {[](FabricGrant& g) { g.ringSize += 1; }, "ringSize 2097153 (expected slots x slotBytes"},
  };
  for (const auto& [spoil, message] : cases) {
    FabricGrant g = sampleGrant();
    spoil(g);
    requireError(encodeFabricGrant(g), StatusCode::kInvalidArgument, "fabric grant: " + message);
  }
}

TEST_CASE("fabric frames: a grant from the network is checked field by field") {
  const std::vector<uint8_t> good = encoded(sampleGrant());
  FabricGrant out;
  auto decode = [&](std::vector<uint8_t> b) { return decodeFabricGrant(b.data(), b.size(), &out); };
  auto patched = [&](size_t at, uint8_t value) {
    std::vector<uint8_t> b = good;
    b[at] = value;
    return b;
  };
  requireError(decode({good.begin(), good.begin() + 41}), StatusCode::kProtocolError,
               "fabric grant: 41 bytes (expected 42..360)");
  requireError(decode(std::vector<uint8_t>(361, 1)), StatusCode::kProtocolError, "361 bytes");
  requireError(decode(patched(3, 1)), StatusCode::kProtocolError, "reserved bytes");
  requireError(decode(patched(7, 1)), StatusCode::kProtocolError, "reserved bytes");
  requireError(decode(patched(2, 0)), StatusCode::kProtocolError, "providerLength 0");
  requireError(decode(patched(2, 65)), StatusCode::kProtocolError, "providerLength 65");
  requireError(decode(patched(4, 0)), StatusCode::kProtocolError, "addressLength 0");
  // A length that disagrees with the bytes that came.
  requireError(decode(patched(4, 4)), StatusCode::kProtocolError,
               "56 bytes (expected 57: 40 + providerLength + addressLength)");
  requireError(decode(patched(45, ' ')), StatusCode::kProtocolError, "provider 'verbs ofi_rxm'");
  requireError(decode(patched(45, 0)), StatusCode::kProtocolError, "provider 'verbs\\x00ofi_rxm'");
  requireError(decode(patched(1, 0x10)), StatusCode::kProtocolError, "channelId 4284");
  requireError(decode(patched(8, 0)), StatusCode::kProtocolError, "slots 0");
  requireError(decode(patched(14, 0)), StatusCode::kProtocolError, "slotBytes 0");
  requireError(decode(patched(34, 0x21)), StatusCode::kProtocolError, "ringSize");
  REQUIRE(decode(good).isOk());
}

TEST_CASE("fabric frames: OFFER, ACCEPT and DECLINE are built and read back") {
  const GroupId group{0x11, 0x22};
  const FabricGrant g = sampleGrant();
  for (bool offer : {true, false}) {
    auto frame = offer ? fabricOfferFrame(group, 5, g) : fabricAcceptFrame(group, 5, g);
    REQUIRE(frame.isOk());
    const FrameHeader h = decodedHeader(frame->header);
    REQUIRE(h.type == (offer ? FrameType::kFabricOffer : FrameType::kFabricAccept));
    REQUIRE(h.group == group);
    REQUIRE(h.rank == 5);
    REQUIRE(h.flags == 0);
    REQUIRE(h.payloadLength == frame->payload.size());
    FabricGrant back;
    REQUIRE(decodeFabricGrant(frame->payload.data(), frame->payload.size(), &back).isOk());
    REQUIRE(back == g);
  }
  FabricGrant bad = g;
  bad.slots = 0;
  requireError(fabricOfferFrame(group, 5, bad), StatusCode::kInvalidArgument, "slots 0");

  const FabricFrame decline = fabricDeclineFrame(group, 5, "provider efa, worker has verbs\n");
  const FrameHeader h = decodedHeader(decline.header);
  REQUIRE(h.type == FrameType::kFabricDecline);
  std::string reason;
  REQUIRE(parseFabricDecline(decline.payload.data(), decline.payload.size(), &reason).isOk());
  REQUIRE(reason == "provider efa, worker has verbs\\x0a");  // escaped for the log
  const FabricFrame empty = fabricDeclineFrame(group, 5, "");
  REQUIRE(std::string(empty.payload.begin(), empty.payload.end()) == "declined");

  requireError(parseFabricDecline(nullptr, 0, &reason), StatusCode::kProtocolError,
               "fabric decline: 0 bytes (expected 1..1024)");
  const std::vector<uint8_t> notUtf8 = {'n', 'o', 0xFF};
  requireError(parseFabricDecline(notUtf8.data(), notUtf8.size(), &reason),
               StatusCode::kProtocolError, "fabric decline: error message: invalid UTF-8");
}

TEST_CASE("fabric frames: the set-up frames' headers name the stream and nothing else") {
  FrameHeader h;
  h.type = FrameType::kFabricOffer;
  h.payloadLength = 41;
  FrameHeader out;
  auto decode = [&](const FrameHeader& header) {
    const HeaderBytes b = encodeHeader(header);
    return decodeHeader(b.data(), b.size(), {}, &out);
  };
  requireError(decode(h), StatusCode::kProtocolError,
               "FABRIC_OFFER frame: payloadLength 41 (expected 42..360)");
  h.payloadLength = 42;
  REQUIRE(decode(h).isOk());
  h.seq = 1;
  requireError(decode(h), StatusCode::kProtocolError, "FABRIC_OFFER frame: seq 1 (expected 0)");
  h.seq = 0;
  h.chunk = 2;
  requireError(decode(h), StatusCode::kProtocolError, "chunk 2 (expected 0)");
  h.chunk = 0;
  h.elemCount = 1;
  requireError(decode(h), StatusCode::kProtocolError, "elemCount 1 (expected 0)");
  h.elemCount = 0;
  h.type = FrameType::kFabricDecline;
  h.payloadLength = 0;
  requireError(decode(h), StatusCode::kProtocolError,
               "FABRIC_DECLINE frame: payloadLength 0 (expected 1..1024)");
  h.payloadLength = 1024;
  REQUIRE(decode(h).isOk());
}

TEST_CASE("fabric frames: the probe's exact bytes, and any other piece refused saying where") {
  const GroupId group{0x0102030405060708, 0x1112131415161718};
  const FabricProbe p = fabricProbe(group, 0x21222324, ProbeFrom::kMember);
  const std::string magic(reinterpret_cast<const char*>(p.data()), 16);
  CHECK(magic == std::string("rs-fabric-probe\0", 16));
  CHECK(p[16] == 0x08);  // the group, little-endian, hi first
  CHECK(p[23] == 0x01);
  CHECK(p[24] == 0x18);
  CHECK(p[32] == 0x24);  // the rank
  CHECK(p[35] == 0x21);
  CHECK(p[36] == 1);     // from the member
  for (size_t i = 37; i < p.size(); ++i) CHECK(p[i] == 0);
  CHECK(fabricProbe(group, 0x21222324, ProbeFrom::kReducer)[36] == 2);

  CHECK(checkFabricProbe(p.data(), p.size(), group, 0x21222324, ProbeFrom::kMember).isOk());
  requireError(checkFabricProbe(p.data(), p.size() - 1, group, 0x21222324, ProbeFrom::kMember),
               StatusCode::kProtocolError, "the member's probe is 63 bytes (expected 64)");
  requireError(checkFabricProbe(p.data(), p.size(), group, 0x21222324, ProbeFrom::kReducer),
               StatusCode::kProtocolError, "the reducer's probe differs from byte 36 on");
  requireError(checkFabricProbe(p.data(), p.size(), group, 7, ProbeFrom::kMember),
               StatusCode::kProtocolError, "differs from byte 32 on");
  FabricProbe spoiled = p;
  spoiled[63] = 1;
  requireError(checkFabricProbe(spoiled.data(), spoiled.size(), group, 0x21222324,
                                ProbeFrom::kMember),
               StatusCode::kProtocolError, "differs from byte 63 on");
}

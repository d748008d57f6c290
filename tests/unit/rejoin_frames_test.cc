// The frames that take a restarted reducer back (core/wire/rejoin_frames.h): each builder's
// header decodes to what it was built from, re-encodes to the same bytes, and a header of their
// types that carries anything else is refused naming the field.
#include "core/wire/rejoin_frames.h"

#include <string>

#include <catch2/catch.hpp>

using Catch::Matchers::Contains;
using rs::GroupId;
using rs::Status;
using rs::StatusCode;
using namespace rs::wire;

namespace {

FrameHeader roundTripped(const HeaderBytes& bytes) {
  FrameHeader h;
  Status s = decodeHeader(bytes.data(), bytes.size(), DecodeLimits{}, &h);
  INFO(s.toString());
  REQUIRE(s.isOk());
  REQUIRE(encodeHeader(h) == bytes);
  return h;
}

void requireRefused(FrameHeader h, const std::string& fragment) {
  const HeaderBytes bytes = encodeHeader(h);
  FrameHeader out;
  Status s = decodeHeader(bytes.data(), bytes.size(), DecodeLimits{}, &out);
  INFO(s.toString());
  REQUIRE(s.code() == StatusCode::kProtocolError);
  REQUIRE_THAT(s.message(), Contains(fragment));
}

const GroupId kGroup{0x1234, 0x5678};

}  // namespace

TEST_CASE("rejoin frames: JOIN_OFFER, JOIN(n) and JOIN_AT(T) decode to what they were built "
          "from") {
  FrameHeader offer = roundTripped(encodeHeader(joinOfferHeader(kGroup, 5)));
  CHECK(offer.type == FrameType::kJoinOffer);
  CHECK(offer.group == kGroup);
  CHECK(offer.rank == 5);
  CHECK(offer.chunk == 0);
  CHECK(offer.payloadLength == 0);

  for (uint64_t n : {uint64_t{0}, uint64_t{1200}, UINT64_MAX}) {
    FrameHeader join = roundTripped(encodeHeader(joinHeader(kGroup, 2, n)));
    CHECK(join.type == FrameType::kJoin);
    CHECK(join.rank == 2);
    CHECK(join.chunk == n);
    FrameHeader at = roundTripped(encodeHeader(joinAtHeader(kGroup, 7, n)));
    CHECK(at.type == FrameType::kJoinAt);
    CHECK(at.rank == 7);
    CHECK(at.chunk == n);
    CHECK(at.seq == 0);
  }
  CHECK(frameTypeName(FrameType::kJoinAt) == "JOIN_AT");
}

TEST_CASE("rejoin frames: anything but the group, the rank and (JOIN, JOIN_AT) the chunk is "
          "refused") {
  FrameHeader offer = joinOfferHeader(kGroup, 1);
  offer.chunk = 3;
  requireRefused(offer, "JOIN_OFFER frame: chunk 3 (expected 0)");
  offer = joinOfferHeader(kGroup, 1);
  offer.payloadLength = 8;
  requireRefused(offer, "JOIN_OFFER frame: payloadLength 8 (expected 0)");

  // Each field that must stay 0, set on a JOIN or a JOIN_AT.
  const struct {
    FrameType type;
    void (*set)(FrameHeader&);
    const char* refusal;
  } broken[] = {
      {FrameType::kJoin, [](FrameHeader& h) { h.payloadLength = 4; },
       "JOIN frame: payloadLength 4 (expected 0)"},
      {FrameType::kJoin, [](FrameHeader& h) { h.seq = 1; }, "JOIN frame: seq 1 (expected 0)"},
      {FrameType::kJoinAt, [](FrameHeader& h) { h.elemCount = 2; },
       "JOIN_AT frame: elemCount 2 (expected 0)"},
      {FrameType::kJoinAt, [](FrameHeader& h) { h.status = 5; },
       "JOIN_AT frame: status 5 (expected 0)"},
  };
  for (const auto& b : broken) {
    FrameHeader h = b.type == FrameType::kJoin ? joinHeader(kGroup, 1, 40)
                                               : joinAtHeader(kGroup, 1, 40);
    b.set(h);
    requireRefused(h, b.refusal);
  }
  FrameHeader at = joinAtHeader(kGroup, 1, 40);
  at.flags = kFlagRejoin;
  requireRefused(at, "flag 0x0008 (rejoin) on a JOIN_AT frame (only HELLO may carry it)");
}

// The p2p transport's bytes (client/nccl/p2p/p2p_framing.h): piece ranges, and encode/decode of
// the handle, hello, ack and piece header with every malformed field rejected. Pure, no I/O;
// it lives here rather than in tests/unit because the framing is part of rs_nccl.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "client/nccl/p2p/p2p_framing.h"
#include "rs/nccl/p2p.h"
#include "tests/support/text_contains.h"

namespace rs::nccl::p2p {
namespace {

using test::contains;

// The ranges of all pieces, by index, after checking that they tile [0, total) exactly in
// rotation order and that only `active` pieces carry bytes.
void checkTiling(uint64_t total, uint64_t seq, uint32_t count, uint64_t minStripe) {
  INFO("total " << total << " seq " << seq << " count " << count << " minStripe " << minStripe);
  const uint32_t active = activePieces(total, count, minStripe);
  REQUIRE(active >= 1);
  REQUIRE(active <= count);
  uint64_t next = 0;
  uint32_t nonEmpty = 0;
  for (uint32_t j = 0; j < count; ++j) {
    const uint32_t index = static_cast<uint32_t>((seq + j) % count);
    const PieceRange r = pieceRange(total, seq, count, minStripe, index);
    if (j >= active) {
      REQUIRE(r.length == 0);
      continue;
    }
    REQUIRE(r.offset == next);
    next += r.length;
    if (r.length > 0) ++nonEmpty;
    // No piece is smaller than the stripe, unless the whole message is.
    if (active > 1) REQUIRE(r.length >= std::max<uint64_t>(minStripe, 1));
    // Pieces are even: they differ by at most one byte.
    const auto firstIndex = static_cast<uint32_t>(seq % count);
    const PieceRange first = pieceRange(total, seq, count, minStripe, firstIndex);
    REQUIRE(r.length + 1 >= first.length);
    REQUIRE(first.length + 1 >= r.length);
  }
  REQUIRE(next == total);
  if (total > 0 && total < std::max<uint64_t>(minStripe, 1)) REQUIRE(nonEmpty == 1);
}

}  // namespace

TEST_CASE("p2p framing: piece ranges tile every message for many sizes, socket counts and seqs",
          "[p2p][framing]") {
  const std::vector<uint64_t> stripes = {0, 1, 7, 4096, 64 << 10};
  const std::vector<uint32_t> counts = {1, 2, 3, 4, 5, 7, 8, 13, 16, 64};
  for (uint64_t stripe : stripes) {
    std::vector<uint64_t> sizes = {0, 1, 2, 3, 5, 63, 64, 65, 1000, 4095, 4096, 4097, 1 << 20,
                                   (1 << 20) + 7, 12345679};
    for (uint64_t k : {1, 2, 3, 4, 5, 8, 63, 64, 65})
      for (int64_t d : {-1, 0, 1})
        if (static_cast<int64_t>(stripe * k) + d >= 0) sizes.push_back(stripe * k + d);
    for (uint32_t count : counts)
      for (uint64_t size : sizes)
        for (uint64_t seq : {0ULL, 1ULL, 2ULL, 5ULL, 63ULL, 1000003ULL})
          checkTiling(size, seq, count, stripe);
  }
}

TEST_CASE("p2p framing: piece ranges: small messages travel whole on one socket, rotating with seq",
          "[p2p][framing]") {
  const uint64_t stripe = 64 << 10;
  for (uint64_t seq = 0; seq < 9; ++seq) {
    for (uint64_t size : {uint64_t{0}, uint64_t{1}, stripe - 1}) {
      const uint32_t carrier = static_cast<uint32_t>(seq % 4);
      for (uint32_t i = 0; i < 4; ++i) {
        const PieceRange r = pieceRange(size, seq, 4, stripe, i);
        if (i == carrier) {
          CHECK(r == PieceRange{0, size});
        } else {
          CHECK(r.length == 0);
        }
      }
    }
  }
}

TEST_CASE("p2p framing: piece ranges: active pieces grow with the size up to the socket count",
          "[p2p][framing]") {
  const uint64_t stripe = 1000;
  CHECK(activePieces(0, 4, stripe) == 1);
  CHECK(activePieces(999, 4, stripe) == 1);
  CHECK(activePieces(1000, 4, stripe) == 1);
  CHECK(activePieces(1999, 4, stripe) == 1);
  CHECK(activePieces(2000, 4, stripe) == 2);
  CHECK(activePieces(3999, 4, stripe) == 3);
  CHECK(activePieces(4000, 4, stripe) == 4);
  CHECK(activePieces(uint64_t{1} << 40, 4, stripe) == 4);
  CHECK(activePieces(10, 4, 0) == 4);  // no threshold: always striped
  CHECK(activePieces(3, 4, 0) == 3);   // but never into empty pieces beyond the bytes
  // A message over 4 sockets, seq 0: [0,2500) [2500,5000) [5000,7500) [7500,10001).
  CHECK(pieceRange(10001, 0, 4, stripe, 0) == PieceRange{0, 2500});
  CHECK(pieceRange(10001, 0, 4, stripe, 3) == PieceRange{7500, 2501});
  CHECK(pieceRange(10001, 1, 4, stripe, 1) == PieceRange{0, 2500});
  CHECK(pieceRange(10001, 1, 4, stripe, 0) == PieceRange{7500, 2501});
}

TEST_CASE("p2p framing: piece ranges: no overflow at the largest sizes, bad index is empty",
          "[p2p][framing]") {
  checkTiling(kMaxMessageBytes, 7, 64, 1);
  checkTiling(kMaxMessageBytes - 1, 3, 7, 64 << 10);
  checkTiling(~uint64_t{0}, 1, 64, 1);  // beyond any valid message, still exact
  CHECK(pieceRange(100, 0, 0, 1, 0).length == 0);
  CHECK(pieceRange(100, 0, 4, 1, 4).length == 0);
  CHECK(activePieces(100, 0, 1) == 1);
}

TEST_CASE("p2p framing: handle: round trip for IPv4 and IPv6 inside the first 96 bytes",
          "[p2p][framing]") {
  std::array<uint8_t, kHandleBytes> buf;
  buf.fill(0xEE);
  Handle v4;
  v4.family = 4;
  v4.address = {127, 0, 0, 1};
  v4.port = 41000;
  v4.listenerId = 0x0123456789abcdefULL;
  encodeHandle(v4, buf.data());
  CHECK(std::all_of(buf.begin() + kHandleEncodedBytes, buf.end(),
                    [](uint8_t b) { return b == 0xEE; }));
  Handle out;
  REQUIRE(decodeHandle(buf.data(), &out).isOk());
  CHECK(out.family == 4);
  CHECK(out.address == v4.address);
  CHECK(out.port == 41000);
  CHECK(out.scopeId == 0);
  CHECK(out.listenerId == v4.listenerId);

  Handle v6;
  v6.family = 6;
  for (size_t i = 0; i < 16; ++i) v6.address[i] = static_cast<uint8_t>(0xf0 + i);
  v6.scopeId = 3;
  v6.port = 1;
  v6.listenerId = 1;
  encodeHandle(v6, buf.data());
  REQUIRE(decodeHandle(buf.data(), &out).isOk());
  CHECK(out.family == 6);
  CHECK(out.address == v6.address);
  CHECK(out.scopeId == 3);
  CHECK(out.port == 1);
}

TEST_CASE("p2p framing: handle: every malformed field is rejected", "[p2p][framing]") {
  Handle h;
  h.address = {10, 0, 0, 2};
  h.port = 5000;
  h.listenerId = 42;
  std::array<uint8_t, kHandleEncodedBytes> good;
  encodeHandle(h, good.data());
  Handle out;
  REQUIRE(decodeHandle(good.data(), &out).isOk());
  struct Case {
    const char* name;
    size_t offset;
    uint8_t value;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"magic", 0, 'X', "magic"},         {"version", 4, 2, "version"},
      {"family 0", 5, 0, "family"},       {"family 5", 5, 5, "family"},
      {"v4 tail", 12, 1, "IPv6 address"}, {"v4 scope", 24, 1, "scope"},
      {"reserved", 29, 1, "reserved"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto bad = good;
    bad[c.offset] = c.value;
    Status s = decodeHandle(bad.data(), &out);
    CHECK(s.code() == StatusCode::kInvalidArgument);
    CHECK(contains(s.message(), c.expect));
  }
  auto noPort = good;
  noPort[6] = noPort[7] = 0;
  CHECK(contains(decodeHandle(noPort.data(), &out).message(), "port 0"));
  auto noId = good;
  std::fill(noId.begin() + 32, noId.begin() + 40, uint8_t{0});
  CHECK(contains(decodeHandle(noId.data(), &out).message(), "listener id 0"));
  std::array<uint8_t, kHandleEncodedBytes> zeros{};
  CHECK(!decodeHandle(zeros.data(), &out).isOk());
}

TEST_CASE("p2p framing: hello: round trip and every malformed field rejected", "[p2p][framing]") {
  Hello h;
  h.socketIndex = 2;
  h.socketCount = 4;
  h.listenerId = 77;
  h.connectionId = 99;
  h.minStripeBytes = 65536;
  const HelloBytes good = encodeHello(h);
  Hello out;
  REQUIRE(decodeHello(good.data(), 77, &out).isOk());
  CHECK(out.socketIndex == 2);
  CHECK(out.socketCount == 4);
  CHECK(out.connectionId == 99);
  CHECK(out.minStripeBytes == 65536);

  auto expectBad = [&](Hello v, const char* expect, uint64_t listener = 77) {
    INFO(expect);
    const HelloBytes b = encodeHello(v);
    Status s = decodeHello(b.data(), listener, &out);
    CHECK(s.code() == StatusCode::kProtocolError);
    CHECK(contains(s.message(), expect));
  };
  expectBad(h, "stale or foreign", 78);
  Hello v = h;
  v.socketCount = 0;
  expectBad(v, "socket count 0");
  v = h;
  v.socketCount = kMaxSocketsPerConnection + 1;
  expectBad(v, "socket count 65");
  v = h;
  v.socketIndex = 4;
  expectBad(v, "socket index 4 of 4");
  v = h;
  v.connectionId = 0;
  expectBad(v, "connection id 0");
  v = h;
  v.minStripeBytes = kMaxMessageBytes + 1;
  expectBad(v, "minStripeBytes");

  for (size_t offset : {size_t{0}, size_t{4}, size_t{10}, size_t{12}}) {
    INFO("byte " << offset);
    HelloBytes b = good;
    b[offset] ^= 0x5a;
    CHECK(decodeHello(b.data(), 77, &out).code() == StatusCode::kProtocolError);
  }
  // Garbage from a peer that speaks another protocol names the magic.
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n..............";
  CHECK(contains(decodeHello(reinterpret_cast<const uint8_t*>(http.data()), 77, &out).message(),
                 "magic"));
}

TEST_CASE("p2p framing: ack: round trip and rejection", "[p2p][framing]") {
  const AckBytes a = encodeAck(1234);
  CHECK(decodeAck(a.data(), 1234).isOk());
  CHECK(contains(decodeAck(a.data(), 1235).message(), "connection"));
  AckBytes b = a;
  b[0] ^= 1;
  CHECK(contains(decodeAck(b.data(), 1234).message(), "magic"));
  b = a;
  b[5] = 1;
  CHECK(contains(decodeAck(b.data(), 1234).message(), "reserved"));
}

TEST_CASE("p2p framing: piece header: round trip and every malformed field rejected",
          "[p2p][framing]") {
  const PieceHeader h{3, 4, 17, 123456789};
  const PieceHeaderBytes good = encodePieceHeader(h);
  PieceHeader out;
  REQUIRE(decodePieceHeader(good.data(), {3, 4, 17, 0}, &out).isOk());
  CHECK(out.pieceIndex == 3);
  CHECK(out.pieceCount == 4);
  CHECK(out.seq == 17);
  CHECK(out.totalBytes == 123456789);

  auto expectBad = [&](const PieceHeaderBytes& b, const PieceHeader& expected, const char* what) {
    INFO(what);
    Status s = decodePieceHeader(b.data(), expected, &out);
    CHECK(s.code() == StatusCode::kProtocolError);
    CHECK(contains(s.message(), what));
  };
  expectBad(good, {2, 4, 17, 0}, "piece index 3 on socket 2");
  expectBad(good, {3, 5, 17, 0}, "piece count 4");
  expectBad(good, {3, 4, 18, 0}, "sequence number 17");
  expectBad(encodePieceHeader({3, 4, 17, kMaxMessageBytes + 1}), {3, 4, 17, 0}, "at most");
  PieceHeaderBytes b = good;
  b[1] ^= 0xff;
  expectBad(b, {3, 4, 17, 0}, "magic");
  CHECK(decodePieceHeader(encodePieceHeader({0, 1, 0, kMaxMessageBytes}).data(), {0, 1, 0, 0}, &out)
            .isOk());
  CHECK(decodePieceHeader(encodePieceHeader({0, 1, 0, 0}).data(), {0, 1, 0, 0}, &out).isOk());

  CHECK(checkFits(0, 100, 100).isOk());
  CHECK(checkFits(0, 0, 0).isOk());
  Status s = checkFits(9, 101, 100);
  CHECK(s.code() == StatusCode::kProtocolError);
  CHECK(contains(s.message(), "message 9 has 101 bytes"));
  CHECK(contains(s.message(), "receive buffer of 100 bytes"));
}

}  // namespace rs::nccl::p2p

#include "client/nccl/p2p/p2p_framing.h"

#include <algorithm>
#include <string>

#include "core/wire/byte_order.h"

namespace rs::nccl::p2p {
namespace {

using wire::get16;
using wire::get32;
using wire::get64;
using wire::put16;
using wire::put32;
using wire::put64;

// Magics read as text in a hex dump: "RSPL" (handle), "RSPH" (hello), "RSPA" (ack), "RSPM".
constexpr uint32_t kHandleMagic = 0x4c505352;
constexpr uint32_t kHelloMagic = 0x48505352;
constexpr uint32_t kAckMagic = 0x41505352;
constexpr uint32_t kPieceMagic = 0x4d505352;
constexpr uint8_t kHandleVersion = 1;
constexpr uint16_t kHelloVersion = 1;


std::string hex(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}
std::string dec(uint64_t v) { return std::to_string(v); }

Status badMagic(const char* what, uint32_t got, uint32_t want) {
  return protocolError(std::string(what) + ": magic " + hex(got) + " (expected " + hex(want) +
                       "; not a peer of this transport?)");
}

}  // namespace

// --- Handle --------------------------------------------------------------------------------
// 0 magic u32 | 4 version u8 | 5 family u8 | 6 port u16 | 8 address[16] | 24 scope u32
// 28 reserved u32 | 32 listener id u64

void encodeHandle(const Handle& h, uint8_t* out) {
  std::fill(out, out + kHandleEncodedBytes, uint8_t{0});
  put32(out, kHandleMagic);
  out[4] = kHandleVersion;
  out[5] = h.family;
  put16(out + 6, h.port);
  std::copy(h.address.begin(), h.address.end(), out + 8);
  put32(out + 24, h.scopeId);
  put64(out + 32, h.listenerId);
}

Status decodeHandle(const uint8_t* p, Handle* out) {
  auto bad = [](const std::string& m) { return invalidArgument("p2p handle: " + m); };
  if (get32(p) != kHandleMagic)
    return bad("magic " + hex(get32(p)) + " (expected " + hex(kHandleMagic) +
               "; not written by this transport's listen())");
  if (p[4] != kHandleVersion)
    return bad("version " + dec(p[4]) + " (expected " + dec(kHandleVersion) + ")");
  Handle h;
  h.family = p[5];
  if (h.family != 4 && h.family != 6) return bad("address family " + dec(h.family));
  h.port = get16(p + 6);
  if (h.port == 0) return bad("port 0");
  std::copy(p + 8, p + 24, h.address.begin());
  h.scopeId = get32(p + 24);
  if (h.family == 4 && (h.scopeId != 0 || std::any_of(p + 12, p + 24, [](uint8_t b) {
                          return b != 0;
                        })))
    return bad("IPv4 handle with IPv6 address bytes or a scope id");
  if (get32(p + 28) != 0) return bad("reserved bytes are not zero");
  h.listenerId = get64(p + 32);
  if (h.listenerId == 0) return bad("listener id 0");
  *out = h;
  return Status::ok();
}

// --- Hello ---------------------------------------------------------------------------------
// 0 magic u32 | 4 version u16 | 6 socket index u16 | 8 socket count u16 | 10 reserved u16
// 12 reserved u32 | 16 listener id u64 | 24 connection id u64 | 32 min stripe bytes u64

HelloBytes encodeHello(const Hello& h) {
  HelloBytes b{};
  put32(b.data(), kHelloMagic);
  put16(b.data() + 4, kHelloVersion);
  put16(b.data() + 6, h.socketIndex);
  put16(b.data() + 8, h.socketCount);
  put64(b.data() + 16, h.listenerId);
  put64(b.data() + 24, h.connectionId);
  put64(b.data() + 32, h.minStripeBytes);
  return b;
}

Status decodeHello(const uint8_t* p, uint64_t listenerId, Hello* out) {
  auto bad = [](const std::string& m) { return protocolError("hello: " + m); };
  if (get32(p) != kHelloMagic) return badMagic("hello", get32(p), kHelloMagic);
  if (get16(p + 4) != kHelloVersion)
    return bad("version " + dec(get16(p + 4)) + " (expected " + dec(kHelloVersion) + ")");
  Hello h;
  h.socketIndex = get16(p + 6);
  h.socketCount = get16(p + 8);
  if (get16(p + 10) != 0 || get32(p + 12) != 0) return bad("reserved bytes are not zero");
  h.listenerId = get64(p + 16);
  h.connectionId = get64(p + 24);
  h.minStripeBytes = get64(p + 32);
  if (h.socketCount == 0 || h.socketCount > kMaxSocketsPerConnection)
    return bad("socket count " + dec(h.socketCount) + " (expected 1.." +
               dec(kMaxSocketsPerConnection) + ")");
  if (h.socketIndex >= h.socketCount)
    return bad("socket index " + dec(h.socketIndex) + " of " + dec(h.socketCount));
  if (h.listenerId != listenerId)
    return bad("for listener " + hex(h.listenerId) + ", but this is listener " +
               hex(listenerId) + " (a stale or foreign handle)");
  if (h.connectionId == 0) return bad("connection id 0");
  if (h.minStripeBytes > kMaxMessageBytes)
    return bad("minStripeBytes " + dec(h.minStripeBytes) + " (expected at most " +
               dec(kMaxMessageBytes) + ")");
  *out = h;
  return Status::ok();
}

// --- Ack -----------------------------------------------------------------------------------
// 0 magic u32 | 4 reserved u32 | 8 connection id u64

AckBytes encodeAck(uint64_t connectionId) {
  AckBytes b{};
  put32(b.data(), kAckMagic);
  put64(b.data() + 8, connectionId);
  return b;
}

Status decodeAck(const uint8_t* p, uint64_t connectionId) {
  if (get32(p) != kAckMagic) return badMagic("hello ack", get32(p), kAckMagic);
  if (get32(p + 4) != 0) return protocolError("hello ack: reserved bytes are not zero");
  if (get64(p + 8) != connectionId)
    return protocolError("hello ack: for connection " + hex(get64(p + 8)) + " (expected " +
                         hex(connectionId) + ")");
  return Status::ok();
}

// --- Piece header --------------------------------------------------------------------------
// 0 magic u32 | 4 piece index u16 | 6 piece count u16 | 8 seq u64 | 16 total bytes u64

PieceHeaderBytes encodePieceHeader(const PieceHeader& h) {
  PieceHeaderBytes b{};
  put32(b.data(), kPieceMagic);
  put16(b.data() + 4, h.pieceIndex);
  put16(b.data() + 6, h.pieceCount);
  put64(b.data() + 8, h.seq);
  put64(b.data() + 16, h.totalBytes);
  return b;
}

Status decodePieceHeader(const uint8_t* p, const PieceHeader& expected, PieceHeader* out) {
  if (get32(p) != kPieceMagic) return badMagic("piece header", get32(p), kPieceMagic);
  PieceHeader h;
  h.pieceIndex = get16(p + 4);
  h.pieceCount = get16(p + 6);
  h.seq = get64(p + 8);
  h.totalBytes = get64(p + 16);
  auto bad = [&](const std::string& m) {
    return protocolError("piece header of message " + dec(expected.seq) + ": " + m);
  };
  if (h.pieceCount != expected.pieceCount)
    return bad("piece count " + dec(h.pieceCount) + " (expected " + dec(expected.pieceCount) +
               ")");
  if (h.pieceIndex != expected.pieceIndex)
    return bad("piece index " + dec(h.pieceIndex) + " on socket " + dec(expected.pieceIndex));
  if (h.seq != expected.seq) return bad("sequence number " + dec(h.seq) + " out of order");
  if (h.totalBytes > kMaxMessageBytes)
    return bad("size " + dec(h.totalBytes) + " bytes (expected at most " +
               dec(kMaxMessageBytes) + ")");
  *out = h;
  return Status::ok();
}

Status checkFits(uint64_t seq, uint64_t totalBytes, uint64_t capacity) {
  if (totalBytes <= capacity) return Status::ok();
  return protocolError("message " + dec(seq) + " has " + dec(totalBytes) +
                       " bytes, more than its receive buffer of " + dec(capacity) + " bytes");
}

// --- Striping ------------------------------------------------------------------------------

uint32_t activePieces(uint64_t totalBytes, uint32_t pieceCount, uint64_t minStripeBytes) {
  if (pieceCount == 0) return 1;
  const uint64_t stripe = std::max<uint64_t>(minStripeBytes, 1);
  return static_cast<uint32_t>(std::clamp<uint64_t>(totalBytes / stripe, 1, pieceCount));
}

PieceRange pieceRange(uint64_t totalBytes, uint64_t seq, uint32_t pieceCount,
                      uint64_t minStripeBytes, uint32_t index) {
  if (pieceCount == 0 || index >= pieceCount) return {};
  const uint32_t active = activePieces(totalBytes, pieceCount, minStripeBytes);
  // The first active piece rotates with seq, so that small messages take turns on the sockets.
  const uint32_t first = static_cast<uint32_t>(seq % pieceCount);
  const uint32_t j = (index + pieceCount - first) % pieceCount;
  if (j >= active) return {};
  // 128-bit products: exact for any 64-bit size.
  using U128 = unsigned __int128;
  const auto begin = static_cast<uint64_t>(U128{totalBytes} * j / active);
  const auto end = static_cast<uint64_t>(U128{totalBytes} * (j + 1) / active);
  return {begin, end - begin};
}

}  // namespace rs::nccl::p2p

// The p2p transport's bytes: the listen handle, the per-socket hello and its ack, and the
// piece header that starts every message on every socket. Pure encode/decode/validate, no
// I/O; all integers little-endian at fixed offsets.
//
// Striping: a message of T bytes becomes one piece per socket. Each socket carries, per
// message, a 24-byte header {seq, T, piece index, piece count} and then its piece's bytes, so
// every socket's reader proceeds on its own: the byte range of piece k follows from T, the
// message's seq and the connection's (socket count, minStripeBytes), which the hello fixed.
// Messages below minStripeBytes travel whole on one socket (rotated by seq so that a stream
// of small messages spreads over all sockets), the others get an empty piece; larger ones are
// split over as many sockets as keep every piece at least minStripeBytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/common/status.h"

namespace rs::nccl::p2p {

inline constexpr uint32_t kMaxSocketsPerConnection = 64;
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 40;  // NCCL_MAX_NET_SIZE_BYTES
// NCCL keeps its own state in the handle's last 32 bytes between connect() retries.
inline constexpr size_t kHandleUsableBytes = 96;

// --- Handle (listen -> NCCL -> the peer's connect) ---------------------------------------

// The listener's numeric host travels as the transport packs it (core/transport/packed_host.h:
// family, address bytes, scope), so that neither end names a socket library and this format
// stays what it was. A transport that dials something other than an IP address and port (a
// fabric's own address) would add its bytes in a new handle version: 56 of the usable bytes
// are still free.
struct Handle {
  uint8_t family = 4;  // 4 or 6
  std::array<uint8_t, 16> address{};  // IPv4 in the first 4 bytes, the rest zero
  uint32_t scopeId = 0;  // IPv6 link-local scope; 0 otherwise
  uint16_t port = 0;
  uint64_t listenerId = 0;  // random, non-zero: a hello naming another listener is refused
};
inline constexpr size_t kHandleEncodedBytes = 40;
static_assert(kHandleEncodedBytes <= kHandleUsableBytes);

// Writes kHandleEncodedBytes bytes.
void encodeHandle(const Handle& handle, uint8_t* out);
Status decodeHandle(const uint8_t* data, Handle* out);

// --- Hello (connector -> listener, first bytes on every socket) -------------------------

struct Hello {
  uint16_t socketIndex = 0;
  uint16_t socketCount = 0;
  uint64_t listenerId = 0;
  uint64_t connectionId = 0;  // random, non-zero: groups one connector's sockets
  uint64_t minStripeBytes = 0;  // the sender's striping threshold, which the receiver mirrors
};
inline constexpr size_t kHelloBytes = 40;
using HelloBytes = std::array<uint8_t, kHelloBytes>;

HelloBytes encodeHello(const Hello& hello);
// Checks everything, including that the hello is for `listenerId`.
Status decodeHello(const uint8_t* data, uint64_t listenerId, Hello* out);

// --- Ack (listener -> connector, once per socket, after a valid hello) ------------------

inline constexpr size_t kAckBytes = 16;
using AckBytes = std::array<uint8_t, kAckBytes>;

AckBytes encodeAck(uint64_t connectionId);
Status decodeAck(const uint8_t* data, uint64_t connectionId);

// --- Piece header (sender -> receiver, before each message's piece on each socket) ------

struct PieceHeader {
  uint16_t pieceIndex = 0;  // the socket's index
  uint16_t pieceCount = 0;  // the connection's socket count
  uint64_t seq = 0;  // the message's number on the connection, from 0
  uint64_t totalBytes = 0;  // the whole message
};
inline constexpr size_t kPieceHeaderBytes = 24;
using PieceHeaderBytes = std::array<uint8_t, kPieceHeaderBytes>;

PieceHeaderBytes encodePieceHeader(const PieceHeader& header);
// Checks the magic and that the header is the one `expected` names (same index, count and
// seq), and that totalBytes is at most kMaxMessageBytes. The size against the posted
// receive's capacity is the receiver's check (checkFits).
Status decodePieceHeader(const uint8_t* data, const PieceHeader& expected, PieceHeader* out);
Status checkFits(uint64_t seq, uint64_t totalBytes, uint64_t capacity);

// --- Striping -----------------------------------------------------------------------------

struct PieceRange {
  uint64_t offset = 0;
  uint64_t length = 0;
  friend bool operator==(const PieceRange&, const PieceRange&) = default;
};

// How many sockets carry bytes of a message of `totalBytes` (at least 1, even for 0 bytes).
uint32_t activePieces(uint64_t totalBytes, uint32_t pieceCount, uint64_t minStripeBytes);
// Piece `index`'s byte range. The ranges of indexes 0..pieceCount-1 tile [0, totalBytes).
PieceRange pieceRange(uint64_t totalBytes, uint64_t seq, uint32_t pieceCount,
                      uint64_t minStripeBytes, uint32_t index);

}  // namespace rs::nccl::p2p

// The frames by which a restarted reducer is taken back (proto/FAILOVER.md, "A reducer comes
// back"; their bytes in proto/WIRE.md, "Rejoin"). No I/O: what a sender fills in. Each is a
// header alone on stream 0 of a joining group, decoded and checked by decodeHeader:
//   JOIN_OFFER            reducer -> member: every member's streams are in; answer;
//   JOIN(n)               member -> reducer: its next collective's first running chunk number;
//   JOIN_AT(T)            reducer -> member: T = the largest n; live again from chunk T on.
// The streams that carry them were opened with the HELLO's kFlagRejoin.
#pragma once

#include <cstdint>

#include "core/wire/frame.h"

namespace rs::wire {

FrameHeader joinOfferHeader(const GroupId& group, uint32_t rank);
FrameHeader joinHeader(const GroupId& group, uint32_t rank, uint64_t nextChunk);
FrameHeader joinAtHeader(const GroupId& group, uint32_t rank, uint64_t rejoinChunk);

}  // namespace rs::wire

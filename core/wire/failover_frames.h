// The frames by which a group goes on without a lost reducer (proto/FAILOVER.md; their bytes in
// proto/WIRE.md): FAILOVER and LOST with the dead set they carry, and a resent chunk's FINAL and
// COMMITTED. No I/O: what a sender fills in and what a receiver reads back.
//
// A resent chunk on a lane is one member's entry for it (core/failover/resent_chunk.h), sent as
// exactly one of:
//   COMMITTED(c: n)                  it saw c committed (a header alone, naming the chunk as
//                                    its REDUCE does, so that any entry can open its slot);
//   FINAL(c: n, r) [REDUCE [r, n)]   it holds elements [0, r) final, 1 <= r <= n: the FINAL
//                                    header names the whole chunk (elemOffset and elemCount n,
//                                    as the chunk's REDUCE) and carries the r elements; when
//                                    r < n, the next frame on the lane is the REDUCE of the rest
//                                    (remainderHeader), and nothing else may come between;
//   REDUCE(c: n)                     no final prefix (r = 0): the chunk's plain REDUCE.
// So a receiver knows n and r from the first frame of each entry, and whether a frame follows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/common/status.h"
#include "core/wire/control_frames.h"
#include "core/wire/frame.h"

namespace rs::wire {

// The dead set as it travels in FAILOVER and LOST: reducer indices, strictly increasing, 1 to
// kMaxDeadReducers of them, each below kMaxDeadReducers, 2 bytes each. An encoding error names
// the first entry out of order or range; a decoding error starts "dead set: ".
Result<std::vector<uint8_t>> encodeDeadSet(std::span<const uint32_t> dead);
Status decodeDeadSet(const uint8_t* data, size_t size, std::vector<uint32_t>* out);

struct DeadSetFrame {
  HeaderBytes header{};
  std::vector<uint8_t> payload;
};
// FAILOVER, the first frame on a lane from `rank`: the dead set the lane was opened under, and
// the sender's commit watermark for the lane's (lost reducer, stream): the lowest chunk of it
// whose COMMIT it has not seen. `generation` (in seq): the rejoins its sender has taken
// (proto/FAILOVER.md, "A reducer comes back"; cluster::DeadView).
Result<DeadSetFrame> failoverFrame(const GroupId& group, uint32_t rank, uint64_t watermark,
                                   std::span<const uint32_t> dead, uint64_t generation = 0);
// LOST, from a survivor to `rank` on a normal stream: the dead set it learned, of `generation`.
Result<DeadSetFrame> lostFrame(const GroupId& group, uint32_t rank,
                               std::span<const uint32_t> dead, uint64_t generation = 0);

// FINAL: `chunk` as its REDUCE names it, with a payload of its first `prefix` elements (the
// caller keeps 1 <= prefix <= chunk.elemCount).
FrameHeader finalHeader(const ChunkFields& chunk, uint32_t prefix);
// The final prefix r, in elements, of a FINAL header that decoded.
uint32_t finalPrefix(const FrameHeader& final);
// The REDUCE of elements [r, n) that follows a FINAL with r < n (sender and receiver alike).
FrameHeader remainderHeader(const FrameHeader& final);
// COMMITTED (header only): `chunk`, as its REDUCE names it, was seen committed by its sender.
FrameHeader committedHeader(const ChunkFields& chunk);

}  // namespace rs::wire

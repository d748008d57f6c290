// The 32 bits of immediate data every data-path RMA write carries (verbs' and EFA's size):
// `channel id (12 bits) << 20 | sequence (20 bits)`. The channel id names the stream on the
// target's endpoint; the sequence numbers the stream's pieces modulo 2^20, far beyond any
// credit window (<= 1024 slots), so a duplicate or an out-of-window piece is detectable. No I/O.
#pragma once

#include <cstdint>

namespace rs::transport::fabric {

inline constexpr uint32_t kChannelIdBits = 12;
inline constexpr uint32_t kMaxChannels = 1u << kChannelIdBits;  // ids 0..4095 per endpoint
inline constexpr uint32_t kSequenceBits = 20;
inline constexpr uint32_t kSequenceMask = (1u << kSequenceBits) - 1;

inline constexpr uint32_t encodeImmediate(uint16_t channelId, uint64_t sequence) {
  return (static_cast<uint32_t>(channelId) << kSequenceBits) |
         (static_cast<uint32_t>(sequence) & kSequenceMask);
}
inline constexpr uint16_t immediateChannel(uint32_t immediate) {
  return static_cast<uint16_t>(immediate >> kSequenceBits);
}
inline constexpr uint32_t immediateSequence(uint32_t immediate) {
  return immediate & kSequenceMask;
}

}  // namespace rs::transport::fabric

// The 8-byte control word a channel sends over the fabric (a plain send into one of the hub's
// posted receives), little-endian:
//   bytes 0-1  destination channel id (< 4096; the receiving hub routes by it)
//   byte  2    kind (1: credit)
//   byte  3    zero
//   bytes 4-7  credit: slots the sender of the word has released so far, cumulative mod 2^32
// Cumulative rather than incremental: a word that coalesces several releases, or one that
// follows another, says the same thing, and the receiver derives its credits from the
// difference. Decoding checks only the size; what the fields mean is the channel's to judge
// (an unknown kind fails that channel, not the hub). No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace rs::transport::fabric {

inline constexpr size_t kControlWordBytes = 8;

enum class ControlKind : uint8_t { kCredit = 1 };

struct ControlWord {
  uint16_t channelId = 0;
  uint8_t kind = 0;      // a ControlKind, as it arrived
  uint8_t reserved = 0;  // zero as sent
  uint32_t value = 0;    // kCredit: cumulative slots released mod 2^32
};

inline void encodeControlWord(const ControlWord& w, uint8_t* out) {
  out[0] = static_cast<uint8_t>(w.channelId);
  out[1] = static_cast<uint8_t>(w.channelId >> 8);
  out[2] = w.kind;
  out[3] = w.reserved;
  for (int i = 0; i < 4; ++i) out[4 + i] = static_cast<uint8_t>(w.value >> (8 * i));
}

// nullopt when the message is not exactly one word.
inline std::optional<ControlWord> decodeControlWord(std::span<const uint8_t> in) {
  if (in.size() != kControlWordBytes) return std::nullopt;
  ControlWord w;
  w.channelId = static_cast<uint16_t>(in[0] | (in[1] << 8));
  w.kind = in[2];
  w.reserved = in[3];
  for (int i = 0; i < 4; ++i) w.value |= static_cast<uint32_t>(in[4 + i]) << (8 * i);
  return w;
}

}  // namespace rs::transport::fabric

// CRC-32C (Castagnoli), the checksum of the frame header. It covers 68 header bytes per frame,
// never the payload, but every frame pays it twice (encode, decode): the table-driven loop was
// the largest user-space symbol of small all-reduces on both sides (bench/RESULTS.md, "One read
// per small frame"), so x86-64 uses the SSE4.2 crc32 instruction when the CPU has it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rs::wire {

// Reflected polynomial 0x82F63B78 (0x1EDC6F41 normal), initial value and final XOR 0xFFFFFFFF:
// the iSCSI/SCTP/ext4 CRC. crc32c("123456789") == 0xE3069283.
//
// `crc` is the result over the bytes before `data`, so a checksum may be computed in pieces:
// crc32c(b, nb, crc32c(a, na)) == crc32c(a ++ b). The empty input gives 0.
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

// The same, table-driven on every CPU: the reference the instruction path is tested against.
uint32_t crc32cPortable(const void* data, size_t size, uint32_t crc = 0);

}  // namespace rs::wire

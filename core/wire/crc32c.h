// CRC-32C (Castagnoli), the checksum of the frame header. Portable and table-driven: it covers
// 68 header bytes per frame, never the payload, so speed does not matter here.
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

}  // namespace rs::wire

// Byte sizes as people write them in flags and environment variables: "65536", "64KiB", "4M",
// "1GiB", "1GB". K/M/G and KiB/MiB/GiB are binary (2^10...); KB/MB/GB are decimal.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/common/status.h"

namespace rs {

Result<uint64_t> parseByteSize(std::string_view text);
// "1.5 GiB", "256 KiB", "17 B": for logs.
std::string formatByteSize(uint64_t bytes);

}  // namespace rs

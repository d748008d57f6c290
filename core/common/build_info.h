// What was built: version, commit and build type, for --version lines, logs and metrics.
#pragma once

#include <string>
#include <string_view>

namespace rs {

struct BuildInfo {
  std::string_view version;    // the project version, "0.1.0"
  std::string_view commit;     // git commit (12 hex digits, "-dirty" if modified), or "unknown"
  std::string_view buildType;  // CMake build type, with the sanitizer if any: "Debug+address"
};

const BuildInfo& buildInfo();

// "<program> 0.1.0 (commit 0123456789ab, RelWithDebInfo, SIMD AVX3_ZEN4)". The SIMD target comes
// from the caller (reduce::activeTargetName()), since this layer sits below the kernels.
std::string versionLine(std::string_view program, std::string_view simdTarget);

}  // namespace rs

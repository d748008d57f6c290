#include "core/common/build_info.h"

#include <fmt/format.h>

#include "build_commit.h"  // generated at every build: RS_GIT_COMMIT

namespace rs {

const BuildInfo& buildInfo() {
  static const BuildInfo info{RS_VERSION, RS_GIT_COMMIT, RS_BUILD_TYPE};
  return info;
}

std::string versionLine(std::string_view program, std::string_view simdTarget) {
  const BuildInfo& b = buildInfo();
  return fmt::format("{} {} (commit {}, {}, SIMD {})", program, b.version, b.commit, b.buildType,
                     simdTarget);
}

}  // namespace rs

// Logging setup shared by the daemon, the tools and the client library (spdlog).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "core/common/status.h"

namespace rs {

enum class LogFormat { kText, kJson };

// Sets the default logger's level ("trace".."critical", "off") and format: plain text, or one
// JSON object per line ({"time","severity","logger","message"}) for cloud logging agents.
Status configureLogging(const std::string& level, const std::string& format);

// Call before starting threads that log. spdlog builds its registry on first use, behind a
// static guard inside Debian's prebuilt (uninstrumented) libspdlog: built before the threads
// exist, every thread sees it built, and TSan sees why.
inline void buildLoggerBeforeThreads() { spdlog::default_logger_raw(); }

// JSON string escaping (quotes, backslashes, control characters), for the JSON log format.
std::string jsonEscape(std::string_view text);

}  // namespace rs

// The project's logger and its setup, shared by the daemon, the tools and the client library.
// Library code logs through rs::logger(), a logger of its own named "reduction-server", never
// through spdlog's process-wide default: inside a training process (the NCCL plugin, a user of
// rs/client.h) that default belongs to the host, and PyTorch or TensorFlow may use spdlog too.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "core/common/status.h"

namespace rs {

inline constexpr const char* kLoggerName = "reduction-server";

// The project's logger: to stdout, as spdlog's default logger. Not registered with spdlog (until
// configureLogging makes it the default), so that a host's spdlog::set_level() or drop_all()
// do not reach it. Its sinks may be replaced only before threads that log start (the NCCL
// plugin does so at init).
spdlog::logger& logger();

// For programs of our own (the daemon, the benchmarks, the tests), never for a library: sets the
// project logger's level ("trace".."critical", "off") and format (plain text, or one JSON object
// per line, {"time","severity","logger","message"}, for cloud logging agents) and makes it
// spdlog's default too, so that lines logged through either look alike.
Status configureLogging(const std::string& level, const std::string& format);

// Call before starting threads that log. spdlog builds its registry on first use, behind a
// static guard inside Debian's prebuilt (uninstrumented) libspdlog: built before the threads
// exist, every thread sees it built, and TSan sees why. The same holds for the project logger.
inline void buildLoggerBeforeThreads() {
  spdlog::default_logger_raw();
  logger();
}

// JSON string escaping (quotes, backslashes, control characters), for the JSON log format.
std::string jsonEscape(std::string_view text);

}  // namespace rs

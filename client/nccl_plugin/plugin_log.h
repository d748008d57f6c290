// The plugin logs only through the logger NCCL hands to init(), so its lines appear under
// NCCL_DEBUG / NCCL_DEBUG_SUBSYS like NCCL's own, prefixed "NET/RS : ". Before init there is
// nowhere to log, and nothing is printed.
#pragma once

#include <fmt/format.h>

#include <string>

#include "client/nccl_plugin/nccl_net_abi.h"

namespace rs::plugin {

// Installs NCCL's logger; the client library's own log lines (rs::logger()) are forwarded to it
// too. spdlog's default logger, the host's, is left alone.
void setNcclLogger(ncclDebugLogger_t logger);
void logLine(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
             const std::string& message);

}  // namespace rs::plugin

#define RS_PLUGIN_LOG(level, flags, ...) \
  ::rs::plugin::logLine(level, flags, __FILE__, __LINE__, fmt::format(__VA_ARGS__))
#define RS_PLUGIN_WARN(...) RS_PLUGIN_LOG(NCCL_LOG_WARN, NCCL_NET, __VA_ARGS__)
#define RS_PLUGIN_INFO(flags, ...) RS_PLUGIN_LOG(NCCL_LOG_INFO, flags, __VA_ARGS__)

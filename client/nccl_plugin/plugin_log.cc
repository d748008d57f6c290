#include "client/nccl_plugin/plugin_log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>

#include "core/common/log.h"

namespace rs::plugin {
namespace {

std::atomic<ncclDebugLogger_t> gLogger{nullptr};

// Carries the client library's spdlog lines into NCCL's logger.
class NcclSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const ncclDebugLogLevel level =
        msg.level >= spdlog::level::warn ? NCCL_LOG_WARN
        : msg.level >= spdlog::level::info ? NCCL_LOG_INFO
                                           : NCCL_LOG_TRACE;
    logLine(level, NCCL_NET, msg.source.filename ? msg.source.filename : "rs",
            msg.source.line, std::string(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}
};

}  // namespace

void setNcclLogger(ncclDebugLogger_t logger) {
  if (logger == nullptr || gLogger.exchange(logger) != nullptr) return;
  // Only the project's named logger: spdlog's default belongs to the host process. NCCL calls
  // init before it creates any communicator, so no thread of ours logs yet.
  spdlog::logger& project = rs::logger();
  project.sinks().assign(1, std::make_shared<NcclSink>());
  project.set_level(spdlog::level::info);  // NCCL filters further by NCCL_DEBUG
}

void logLine(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
             const std::string& message) {
  ncclDebugLogger_t logger = gLogger.load();
  if (logger != nullptr) logger(level, flags, file, line, "NET/RS : %s", message.c_str());
}

}  // namespace rs::plugin

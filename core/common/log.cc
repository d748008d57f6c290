#include "core/common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace rs {

std::string jsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

namespace {

// Severity names as Google Cloud Logging reads them from the "severity" field.
const char* cloudSeverity(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug: return "DEBUG";
    case spdlog::level::info: return "INFO";
    case spdlog::level::warn: return "WARNING";
    case spdlog::level::err: return "ERROR";
    case spdlog::level::critical: return "CRITICAL";
    default: return "DEFAULT";
  }
}

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    auto since = msg.time.time_since_epoch();
    std::time_t secs = duration_cast<seconds>(since).count();
    auto micros = duration_cast<microseconds>(since).count() % 1000000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[40];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    std::string line = fmt::format(
        "{{\"time\":\"{}.{:06d}Z\",\"severity\":\"{}\",\"logger\":\"{}\",\"message\":\"{}\"}}\n",
        stamp, micros, cloudSeverity(msg.level), jsonEscape({msg.logger_name.data(), msg.logger_name.size()}),
        jsonEscape({msg.payload.data(), msg.payload.size()}));
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

const std::shared_ptr<spdlog::logger>& projectLogger() {
  // Never destroyed: threads of a host process may still log while it exits.
  static const auto* const project = new std::shared_ptr<spdlog::logger>(
      std::make_shared<spdlog::logger>(kLoggerName,
                                       std::make_shared<spdlog::sinks::stdout_color_sink_mt>()));
  return *project;
}

}  // namespace

spdlog::logger& logger() { return *projectLogger(); }

Status configureLogging(const std::string& level, const std::string& format) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off")
    return invalidArgument("log level '" + level +
                           "' is not one of trace, debug, info, warn, error, critical, off");
  if (format != "json" && format != "text")
    return invalidArgument("log format '" + format + "' is not 'text' or 'json'");
  // Default first: set_level and set_formatter below reach every logger spdlog knows.
  spdlog::set_default_logger(projectLogger());
  spdlog::set_level(lvl);
  if (format == "json") {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%f %^%l%$ [%n] %v");
  }
  return Status::ok();
}

}  // namespace rs

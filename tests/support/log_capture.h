// Keeps what the project's logger (rs::logger()) writes while it lives, so that a test can assert
// on a logged event (a state) instead of on elapsed time. spdlog's default logger is watched too
// where it is another logger. Create it before the test starts any thread that logs, and let it
// die after they are gone: spdlog's sink list is not guarded.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/common/log.h"

namespace rs::test {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096)) {
    // The project logger lives as long as the process: a non-owning pointer is enough.
    watched_.emplace_back(std::shared_ptr<void>(), &rs::logger());
    if (spdlog::default_logger_raw() != &rs::logger()) watched_.push_back(spdlog::default_logger());
    for (const auto& l : watched_) l->sinks().push_back(sink_);
  }
  ~LogCapture() {
    for (const auto& l : watched_) {
      auto& sinks = l->sinks();
      sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    }
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Whether any line logged so far (at the logger's level or above) contains `text`.
  bool contains(const std::string& text) const { return count(text) > 0; }
  // How many of the lines logged so far (the last 4096) contain `text`.
  size_t count(const std::string& text) const {
    size_t n = 0;
    for (const std::string& line : sink_->last_formatted())
      n += line.find(text) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  // Owned, not borrowed: configureLogging (a LocalPool starting) replaces spdlog's default
  // logger, which would otherwise be freed while this still holds our sink in it.
  std::vector<std::shared_ptr<spdlog::logger>> watched_;
};

}  // namespace rs::test

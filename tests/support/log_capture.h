// Keeps what the default spdlog logger writes while it lives, so that a test can assert on a
// logged event (a state) instead of on elapsed time. Create it before the test starts any
// thread that logs, and let it die after they are gone: spdlog's sink list is not guarded.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>

namespace rs::test {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Whether any line logged so far (at the logger's level or above) contains `text`.
  bool contains(const std::string& text) const {
    for (const std::string& line : sink_->last_formatted())
      if (line.find(text) != std::string::npos) return true;
    return false;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace rs::test

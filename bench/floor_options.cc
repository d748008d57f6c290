#include "bench/floor_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <climits>

#include "core/common/byte_size.h"

namespace rs::bench {
namespace {

Result<uint64_t> byteSizeOf(const std::string& text, std::string_view flag) {
  auto bytes = parseByteSize(text);
  if (!bytes) return invalidArgument(fmt::format("{} '{}': {}", flag, text, bytes.status().message()));
  return *bytes;
}

// A socket buffer size: setsockopt takes an int.
Result<int> bufferOf(const std::string& text, std::string_view flag) {
  auto bytes = byteSizeOf(text, flag);
  if (!bytes) return bytes.status();
  if (*bytes > static_cast<uint64_t>(INT_MAX))
    return invalidArgument(fmt::format("{} {}: at most {} bytes (setsockopt's int)", flag, text, INT_MAX));
  return static_cast<int>(*bytes);
}

}  // namespace

std::vector<uint64_t> SizeSweep::sizes() const {
  std::vector<uint64_t> out;
  for (uint64_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    out.push_back(bytes);
    if (bytes > maxBytes / factor) break;  // the next product would pass maxBytes or overflow
  }
  return out;
}

FloorOptions::FloorOptions(CLI::App& app, std::string_view repetition, int iters, int warmup) {
  sweep_.iters = iters;
  sweep_.warmup = warmup;
  app.add_option("-b,--min-bytes", minBytes_)->capture_default_str();
  app.add_option("-e,--max-bytes", maxBytes_)->capture_default_str();
  app.add_option("-f,--factor", sweep_.factor, "Size multiplier between rows")->capture_default_str();
  app.add_option("-n,--iters", sweep_.iters, fmt::format("Timed {} per size", repetition))
      ->capture_default_str();
  app.add_option("-w,--warmup", sweep_.warmup, fmt::format("Untimed {} per size", repetition))
      ->capture_default_str();
  app.add_option("--socket-send-buffer", sendBuffer_,
                 "SO_SNDBUF (0: kernel autotuning), as the reducer's flag")
      ->capture_default_str();
  app.add_option("--socket-recv-buffer", recvBuffer_, "SO_RCVBUF (0: kernel autotuning)")
      ->capture_default_str();
}

Result<SizeSweep> FloorOptions::sweep() const {
  SizeSweep s = sweep_;
  auto minB = byteSizeOf(minBytes_, "-b");
  if (!minB) return minB.status();
  auto maxB = byteSizeOf(maxBytes_, "-e");
  if (!maxB) return maxB.status();
  s.minBytes = *minB;
  s.maxBytes = *maxB;
  if (s.minBytes == 0 || s.maxBytes < s.minBytes)
    return invalidArgument(fmt::format("-b {} -e {}: need 0 < -b <= -e", minBytes_, maxBytes_));
  if (s.factor < 2) return invalidArgument(fmt::format("-f {}: need at least 2", s.factor));
  if (s.iters < 1) return invalidArgument(fmt::format("-n {}: need at least 1", s.iters));
  if (s.warmup < 0) return invalidArgument(fmt::format("-w {}: need at least 0", s.warmup));
  return s;
}

Result<transport::TcpOptions> FloorOptions::tcpOptions() const {
  transport::TcpOptions options;
  auto send = bufferOf(sendBuffer_, "--socket-send-buffer");
  if (!send) return send.status();
  auto recv = bufferOf(recvBuffer_, "--socket-recv-buffer");
  if (!recv) return recv.status();
  options.sendBufferBytes = *send;
  options.recvBufferBytes = *recv;
  return options;
}

}  // namespace rs::bench

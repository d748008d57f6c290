// The command-line options the floor benchmarks (tcp_pingpong, tcp_relay) share: the size sweep
// (-b/-e/-f/-n/-w, as allreduce_perf's) and the socket buffers (--socket-send-buffer,
// --socket-recv-buffer, as the reducer's), declared once so that both programs take them alike
// and bench/cluster/run.sh can pass the same flags to either.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/status.h"
#include "core/transport/options.h"

namespace CLI {
class App;
}  // namespace CLI

namespace rs::bench {

struct SizeSweep {
  uint64_t minBytes = 0, maxBytes = 0;
  uint64_t factor = 2;
  int iters = 0, warmup = 0;

  // minBytes, minBytes * factor, ... up to maxBytes (no product past it, nor an overflow).
  std::vector<uint64_t> sizes() const;
};

// Declares the options on `app` (after the program's own, so --help lists them last);
// `repetition` names one timed repetition in their help ("round trips", "iterations").
// Read them with sweep() and tcpOptions() once `app` has parsed.
class FloorOptions {
 public:
  FloorOptions(CLI::App& app, std::string_view repetition, int iters, int warmup);
  FloorOptions(const FloorOptions&) = delete;  // `app` holds pointers into it
  FloorOptions& operator=(const FloorOptions&) = delete;

  // The sweep, or why not (naming the flag).
  Result<SizeSweep> sweep() const;
  // Our data path's socket options with the buffers given, or why not.
  Result<transport::TcpOptions> tcpOptions() const;

 private:
  std::string minBytes_ = "8K", maxBytes_ = "64M";
  std::string sendBuffer_ = "0", recvBuffer_ = "0";
  SizeSweep sweep_;
};

}  // namespace rs::bench

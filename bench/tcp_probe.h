// A raw TCP throughput probe on loopback: `streams` sender/receiver pairs move bytes as fast as
// they can for a fixed time. The all-reduce benchmark prints its figures beside this one,
// measured in the same run, so a ratio shows how much of the machine's plain TCP capacity the
// reduction path achieves.
#pragma once

#include <chrono>

namespace rs::bench {

struct TcpProbeResult {
  double bytesPerSecond = 0;  // aggregate over all streams
  int streams = 0;
  double seconds = 0;
};

TcpProbeResult probeLoopbackTcp(int streams, std::chrono::milliseconds duration);

}  // namespace rs::bench

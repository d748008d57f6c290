#include "client/commit_ledger.h"

#include <fmt/format.h>

#include "core/cluster/chunk_owner.h"
#include "core/cluster/sharding.h"

namespace rs::client {

CommitLedger::CommitLedger(uint32_t reducers, uint32_t streams)
    : reducers_(reducers),
      streams_(streams),
      step_(uint64_t{reducers} * streams),
      lines_(static_cast<size_t>(reducers) * streams) {
  // The first chunk of (home h, stream s) is s * R + h.
  for (uint32_t h = 0; h < reducers; ++h)
    for (uint32_t s = 0; s < streams; ++s) lineOf(h, s).watermark = uint64_t{s} * reducers + h;
}

bool CommitLedger::advance(Line& line) {
  bool moved = false;
  while (!line.above.empty() && *line.above.begin() == line.watermark) {
    line.above.erase(line.above.begin());
    line.watermark += step_;
    moved = true;
  }
  line.onLanes.erase(line.onLanes.begin(), line.onLanes.lower_bound(line.watermark));
  return moved;
}

void CommitLedger::sentOnLane(const wire::FrameHeader& header) {
  const uint32_t home = cluster::reducerForChunk(header.chunk, reducers_);
  const uint32_t stream = cluster::streamForChunk(header.chunk, reducers_, streams_);
  std::lock_guard lock(mu_);
  Line& line = lineOf(home, stream);
  if (header.chunk >= line.watermark) line.onLanes.emplace(header.chunk, header);
}

std::vector<wire::FrameHeader> CommitLedger::committedAbove(uint32_t home,
                                                            uint32_t stream) const {
  std::lock_guard lock(mu_);
  const Line& line = lines_[home * streams_ + stream];
  std::vector<wire::FrameHeader> out;
  for (uint64_t c : line.above)
    if (auto it = line.onLanes.find(c); it != line.onLanes.end()) out.push_back(it->second);
  return out;
}

std::optional<uint64_t> CommitLedger::streamCommitted(uint32_t home, uint32_t stream,
                                                      uint64_t chunk) {
  std::lock_guard lock(mu_);
  Line& line = lineOf(home, stream);
  if (chunk < line.watermark) return std::nullopt;
  line.above.erase(line.above.begin(), line.above.upper_bound(chunk));
  line.watermark = chunk + step_;  // a chunk of the line: its next
  advance(line);
  line.onLanes.erase(line.onLanes.begin(), line.onLanes.lower_bound(line.watermark));
  return line.watermark;
}

Result<std::optional<uint64_t>> CommitLedger::laneCommitted(uint32_t home, uint32_t stream,
                                                            uint32_t owner,
                                                            const cluster::DeadSet& dead,
                                                            uint64_t chunk, uint64_t numbered) {
  if (cluster::reducerForChunk(chunk, reducers_) != home ||
      cluster::streamForChunk(chunk, reducers_, streams_) != stream)
    return protocolError(fmt::format("COMMIT for chunk {} on the lane of reducer {} stream {}, "
                                     "which carries none of that reducer and stream's chunks",
                                     chunk, home, stream));
  if (chunk >= numbered)
    return protocolError(fmt::format("COMMIT for chunk {} on the lane of reducer {} stream {}, "
                                     "but this member has numbered only chunks below {}: no "
                                     "member sent it",
                                     chunk, home, stream, numbered));
  std::lock_guard lock(mu_);
  Line& line = lineOf(home, stream);
  for (uint64_t c = line.watermark; c <= chunk; c += step_) {
    Result<uint32_t> o = cluster::chunkOwner(c, dead);
    if (!o) return o.status();
    if (*o == owner) line.above.insert(c);
  }
  if (!advance(line)) return std::optional<uint64_t>();
  return std::optional<uint64_t>(line.watermark);
}

uint64_t CommitLedger::watermark(uint32_t home, uint32_t stream) const {
  std::lock_guard lock(mu_);
  return lines_[home * streams_ + stream].watermark;
}

bool CommitLedger::committed(uint64_t chunk) const {
  const uint32_t home = cluster::reducerForChunk(chunk, reducers_);
  const uint32_t stream = cluster::streamForChunk(chunk, reducers_, streams_);
  std::lock_guard lock(mu_);
  const Line& line = lines_[home * streams_ + stream];
  return chunk < line.watermark || line.above.contains(chunk);
}

}  // namespace rs::client

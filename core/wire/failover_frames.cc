#include "core/wire/failover_frames.h"

#include <string>

#include "core/wire/byte_order.h"

namespace rs::wire {
namespace {

// Named apart from frame.cc's decimal(): the sanitizer trees compile the two in one unity file.
std::string decimal(uint64_t v) { return std::to_string(v); }

// Why `dead` is not a dead set as it travels, or "" when it is one.
std::string deadSetProblem(std::span<const uint32_t> dead) {
  if (dead.empty()) return "no reducers (expected 1.." + decimal(kMaxDeadReducers) + ")";
  if (dead.size() > kMaxDeadReducers)
    return decimal(dead.size()) + " reducers (expected at most " + decimal(kMaxDeadReducers) + ")";
  for (size_t i = 0; i < dead.size(); ++i) {
    if (dead[i] >= kMaxDeadReducers)
      return "reducer " + decimal(dead[i]) + " at entry " + decimal(i) + " (expected below " +
             decimal(kMaxDeadReducers) + ")";
    if (i > 0 && dead[i] <= dead[i - 1])
      return "reducer " + decimal(dead[i]) + " at entry " + decimal(i) + " after " +
             decimal(dead[i - 1]) + " (expected strictly increasing)";
  }
  return "";
}

Result<DeadSetFrame> deadSetFrame(FrameType type, const GroupId& group, uint32_t rank,
                                  uint64_t chunk, std::span<const uint32_t> dead,
                                  uint64_t generation) {
  Result<std::vector<uint8_t>> payload = encodeDeadSet(dead);
  if (!payload) return payload.status();
  FrameHeader h;
  h.type = type;
  h.group = group;
  h.rank = rank;
  h.seq = generation;
  h.chunk = chunk;
  h.payloadLength = static_cast<uint32_t>(payload->size());
  return DeadSetFrame{encodeHeader(h), std::move(*payload)};
}

}  // namespace

Result<std::vector<uint8_t>> encodeDeadSet(std::span<const uint32_t> dead) {
  if (std::string problem = deadSetProblem(dead); !problem.empty())
    return invalidArgument("dead set: " + problem);
  std::vector<uint8_t> out(dead.size() * kDeadSetEntryBytes);
  for (size_t i = 0; i < dead.size(); ++i)
    put16(&out[i * kDeadSetEntryBytes], static_cast<uint16_t>(dead[i]));
  return out;
}

Status decodeDeadSet(const uint8_t* data, size_t size, std::vector<uint32_t>* out) {
  if (size == 0 || size % kDeadSetEntryBytes != 0 ||
      size > kMaxDeadReducers * kDeadSetEntryBytes)
    return protocolError("dead set: " + decimal(size) + " bytes (expected " +
                         decimal(kDeadSetEntryBytes) + ".." +
                         decimal(kMaxDeadReducers * kDeadSetEntryBytes) + ", " +
                         decimal(kDeadSetEntryBytes) + " a reducer)");
  std::vector<uint32_t> dead(size / kDeadSetEntryBytes);
  for (size_t i = 0; i < dead.size(); ++i) dead[i] = get16(data + i * kDeadSetEntryBytes);
  if (std::string problem = deadSetProblem(dead); !problem.empty())
    return protocolError("dead set: " + problem);
  *out = std::move(dead);
  return Status::ok();
}

Result<DeadSetFrame> failoverFrame(const GroupId& group, uint32_t rank, uint64_t watermark,
                                   std::span<const uint32_t> dead, uint64_t generation) {
  return deadSetFrame(FrameType::kFailover, group, rank, watermark, dead, generation);
}

Result<DeadSetFrame> lostFrame(const GroupId& group, uint32_t rank,
                               std::span<const uint32_t> dead, uint64_t generation) {
  return deadSetFrame(FrameType::kLost, group, rank, 0, dead, generation);
}

FrameHeader finalHeader(const ChunkFields& chunk, uint32_t prefix) {
  FrameHeader h = reduceHeader(chunk);
  h.type = FrameType::kFinal;
  h.payloadLength = static_cast<uint32_t>(uint64_t{prefix} * dataTypeSize(chunk.dtype));
  return h;
}

uint32_t finalPrefix(const FrameHeader& final) {
  return static_cast<uint32_t>(final.payloadLength / dataTypeSize(final.dtype));
}

FrameHeader remainderHeader(const FrameHeader& final) {
  const uint32_t prefix = finalPrefix(final);
  return reduceHeader({.group = final.group,
                       .rank = final.rank,
                       .seq = final.seq,
                       .chunk = final.chunk,
                       .elemOffset = final.elemOffset + prefix,
                       .elemCount = final.elemCount - prefix,
                       .dtype = final.dtype,
                       .op = final.op});
}

FrameHeader committedHeader(const ChunkFields& chunk) {
  FrameHeader h = reduceHeader(chunk);
  h.type = FrameType::kCommitted;
  h.payloadLength = 0;
  return h;
}

}  // namespace rs::wire

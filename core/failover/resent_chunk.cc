#include "core/failover/resent_chunk.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/reduce/reduce.h"

namespace rs::failover {
namespace {

bool overlaps(std::span<const std::byte> a, std::span<const std::byte> b) {
  if (a.empty() || b.empty()) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a.data());
  const auto b0 = reinterpret_cast<uintptr_t>(b.data());
  return a0 < b0 + b.size() && b0 < a0 + a.size();
}

}  // namespace

Result<ResentChunk> ResentChunk::create(const Setup& setup) {
  if (setup.worldSize == 0)
    return invalidArgument("resent chunk " + std::to_string(setup.chunk) +
                           ": a group of 0 members");
  if (!isValidDataType(static_cast<uint32_t>(setup.dtype)) ||
      !isValidReduceOp(static_cast<uint32_t>(setup.op)))
    return invalidArgument("resent chunk " + std::to_string(setup.chunk) + ": element type " +
                           std::to_string(static_cast<int>(setup.dtype)) + " or operation " +
                           std::to_string(static_cast<int>(setup.op)) + " does not exist");
  return ResentChunk(setup);
}

std::string ResentChunk::name() const { return "resent chunk " + std::to_string(setup_.chunk); }

Status ResentChunk::add(uint32_t rank, const ResentEntry& entry) {
  const std::string who = name() + ": rank " + std::to_string(rank);
  if (rank >= entries_.size())
    return protocolError(who + " is not in the group of " + std::to_string(entries_.size()) +
                         " members");
  if (have_[rank]) return protocolError(who + " resent it twice");
  if (!entry.committed) {
    const uint64_t n = setup_.elemCount;
    if (entry.finalPrefix > n)
      return protocolError(who + " holds a final prefix of " + std::to_string(entry.finalPrefix) +
                           " elements, but the chunk has " + std::to_string(n));
    const uint64_t want = n * dataTypeSize(setup_.dtype);
    if (entry.elements.size() != want)
      return protocolError(who + " resent " + std::to_string(entry.elements.size()) +
                           " bytes, but the chunk's " + std::to_string(n) + " " +
                           std::string(dataTypeName(setup_.dtype)) + " elements are " +
                           std::to_string(want));
  }
  entries_[rank] = entry;
  have_[rank] = true;
  ++received_;
  return Status::ok();
}

Status ResentChunk::checkAgreement(const Resolution& r) const {
  const size_t size = dataTypeSize(setup_.dtype);
  const std::byte* longest = entries_[r.prefixFrom].elements.data();
  for (uint32_t rank = 0; rank < entries_.size(); ++rank) {
    const ResentEntry& e = entries_[rank];
    if (e.committed || rank == r.prefixFrom || e.finalPrefix == 0) continue;
    const size_t bytes = e.finalPrefix * size;
    if (std::memcmp(e.elements.data(), longest, bytes) == 0) continue;
    size_t at = 0;
    while (e.elements[at] == longest[at]) ++at;
    return protocolError(name() + ": ranks " + std::to_string(r.prefixFrom) + " and " +
                         std::to_string(rank) + " hold different final bits for element " +
                         std::to_string(at / size) +
                         " (the members already disagree on its result)");
  }
  return Status::ok();
}

Result<ResentChunk::Resolution> ResentChunk::resolve(std::span<std::byte> out) const {
  if (!complete()) {
    std::string missing;
    for (size_t r = 0; r < have_.size(); ++r)
      if (!have_[r]) missing += (missing.empty() ? "" : ",") + std::to_string(r);
    return failedPrecondition(name() + ": ranks " + missing + " have not resent it yet");
  }
  const uint64_t n = setup_.elemCount;
  Resolution res;
  bool held = false;
  uint64_t shortest = n;
  int committedBy = -1;
  for (uint32_t rank = 0; rank < entries_.size(); ++rank) {
    const ResentEntry& e = entries_[rank];
    if (e.committed) {
      if (committedBy < 0) committedBy = static_cast<int>(rank);
      continue;
    }
    if (!held || e.finalPrefix > res.finalPrefix) {
      res.finalPrefix = e.finalPrefix;
      res.prefixFrom = rank;
    }
    held = true;
    shortest = std::min(shortest, e.finalPrefix);
  }
  if (committedBy >= 0 && shortest < n) {
    for (uint32_t rank = 0; rank < entries_.size(); ++rank)
      if (!entries_[rank].committed && entries_[rank].finalPrefix < n)
        return protocolError(name() + ": rank " + std::to_string(committedBy) +
                             " saw it committed, but rank " + std::to_string(rank) +
                             " holds only " + std::to_string(entries_[rank].finalPrefix) +
                             " of its " + std::to_string(n) +
                             " result elements (a commit follows every member's RECEIVED)");
  }
  if (held) {
    if (Status s = checkAgreement(res); !s.isOk()) return s;
  }
  if (committedBy >= 0 || shortest == n) return Resolution{};  // commit, send nothing

  const size_t size = dataTypeSize(setup_.dtype);
  if (out.size() != n * size)
    return invalidArgument(name() + ": the result needs " + std::to_string(n * size) +
                           " bytes, not " + std::to_string(out.size()));
  for (uint32_t rank = 0; rank < entries_.size(); ++rank) {
    const std::span<const std::byte> in = entries_[rank].elements;
    if (rank == 0 && in.data() == out.data()) continue;  // in place over rank 0's entry
    if (overlaps(out, in))
      return invalidArgument(name() + ": the result would overwrite rank " + std::to_string(rank) +
                             "'s entry");
  }
  const std::byte* prefix = entries_[res.prefixFrom].elements.data();
  if (res.finalPrefix > 0 && prefix != out.data())
    std::memcpy(out.data(), prefix, res.finalPrefix * size);
  std::vector<const void*> inputs(entries_.size());
  for (uint32_t rank = 0; rank < entries_.size(); ++rank)
    inputs[rank] = entries_[rank].elements.data() + res.finalPrefix * size;
  reduce::reduceInputs(setup_.dtype, setup_.op, inputs.data(), inputs.size(),
                       out.data() + res.finalPrefix * size, n - res.finalPrefix,
                       setup_.fp32Accumulator);
  res.sendResult = true;
  return res;
}

}  // namespace rs::failover

// A survivor's resolve of one resent chunk (proto/FAILOVER.md, "Resolving a resent chunk"):
// the W entries that the members resent for a chunk of a lost reducer, and what the survivor
// does once all are in. No I/O: the caller stages the entries' bytes and sends the outcome.
//
// Each member's entry is the COMMITTED marker (it saw the chunk's COMMIT), or what it holds:
// elements [0, r) final bits (the RESULT parts it had from the lost reducer, front to back),
// [r, n) its own contribution. Then:
// - any COMMITTED marker, or every r = n: every member has the whole result; commit it and
//   send nothing;
// - else, with r* the largest r: [0, r*) are the bits of a member with the longest prefix
//   (computed once, by the lost reducer, and the same bits for everyone who has them), and
//   [r*, n) is reduced afresh from every member's contribution, which every member sent
//   for that range. The whole chunk goes to every member as RESULT; each writes past its own
//   prefix.
//
// [r*, n) is reduced in rank order with the fused kernel in the group's accumulator
// (reduce::reduceInputs), the arithmetic of the lost reducer's deterministic mode
// (server/slot.h): each element's bits depend on neither where the range starts nor the SIMD
// target, so with RS_DETERMINISTIC=1 they are the bits of a run without the loss. Without it
// the lost reducer summed in arrival order, and any one order keeps the guarantee (each
// element computed once); rank order is the one path for both.
//
// Checked, at the cost of one read of the prefixes (less than the reduction reads): entries
// of the chunk's length, prefixes within it, and members' prefixes that agree where they
// overlap. Two members with different bits for one element means the members already hold
// different results; the resolve then fails the chunk, rather than hand on one member's bits.
// A COMMITTED marker beside a member without the whole result cannot happen in a correct run
// (a commit follows every member's RECEIVED) and fails too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/common/status.h"
#include "core/reduce/dtype.h"

namespace rs::failover {

struct ResentEntry {
  bool committed = false;    // the COMMITTED marker: nothing else is sent
  uint64_t finalPrefix = 0;  // r: elements [0, r) hold the final result
  // All n elements, wire-typed: [0, r) final, the rest the member's own contribution.
  std::span<const std::byte> elements;
};

class ResentChunk {
 public:
  struct Setup {
    uint64_t chunk = 0;  // for messages
    uint32_t worldSize = 0;
    uint32_t elemCount = 0;
    DataType dtype = DataType::kFloat32;
    ReduceOp op = ReduceOp::kSum;
    Fp32Accumulator fp32Accumulator = Fp32Accumulator::kFp32;  // the group's (dtype.h)
  };
  // Errors: no members, or a type or op that does not exist.
  static Result<ResentChunk> create(const Setup& setup);

  // Member `rank`'s entry. Its bytes must stay where they are until resolve(). Errors: a rank
  // outside the group, a second entry from it, a prefix past the chunk, or elements that are
  // not the chunk's n elements.
  Status add(uint32_t rank, const ResentEntry& entry);
  bool complete() const { return received_ == entries_.size(); }

  struct Resolution {
    bool sendResult = false;   // false: commit the chunk and send nothing
    uint64_t finalPrefix = 0;  // r*: [0, r*) copied from rank prefixFrom, the rest reduced
    uint32_t prefixFrom = 0;   // the lowest rank with the longest prefix
  };
  // Once complete: what to do, and where a result is to be sent the whole chunk written to
  // `out` (n elements, wire-typed). `out` is either apart from every entry's elements or
  // exactly rank 0's (in place, over its staging, as the deterministic slot does). Errors: not
  // complete, an `out` of another length or overlapping another entry, or inconsistent
  // entries (above); `out` is then unchanged.
  Result<Resolution> resolve(std::span<std::byte> out) const;

 private:
  explicit ResentChunk(const Setup& setup)
      : setup_(setup), entries_(setup.worldSize), have_(setup.worldSize, false) {}
  std::string name() const;
  Status checkAgreement(const Resolution& r) const;

  Setup setup_;
  std::vector<ResentEntry> entries_;
  std::vector<bool> have_;
  uint32_t received_ = 0;
};

}  // namespace rs::failover

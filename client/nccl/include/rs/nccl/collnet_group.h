// A CollNet group: the NCCL heads of one communicator (one per node) as one reduction group.
//
// NCCL creates a group collectively: every head calls listen(), NCCL exchanges the 128-byte
// handles over its own bootstrap, then every head calls connect(handles, nranks, rank) at
// once and expects it to return only when the group works, with the same verdict on every
// node. So the group id is derived from the handles (every node holds the same array, and a
// new communicator brings new random handles), and connect ends with a barrier through the
// reducers: it succeeds on every node or, after the rendezvous timeout, fails on every node.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>

#include "core/common/status.h"
#include "core/wire/group_id.h"
#include "rs/client.h"

namespace rs::nccl {

// What a head's listen() writes into NCCL's handle buffer.
struct CollNetHandle {
  static constexpr uint32_t kMagic = 0x4c434752;  // "RGCL"
  uint32_t magic = kMagic;
  uint32_t version = 1;
  uint64_t nonceHi = 0;
  uint64_t nonceLo = 0;

  static CollNetHandle fresh();  // random nonce
};
static_assert(sizeof(CollNetHandle) <= 128, "must fit NCCL_NET_HANDLE_MAXSIZE");

// The same id on every node for the same handles; errors name a handle that is not ours.
Result<GroupId> groupIdFromHandles(const void* const* handles, int nranks);

class CollNetGroup {
 public:
  // Connects to the reducers as member `rank` of `nranks` and waits, at most
  // `rendezvousTimeout`, until every member has joined (a one-element all-reduce).
  static Result<std::unique_ptr<CollNetGroup>> connect(const client::ClientOptions& options,
                                                       const void* const* handles, int nranks,
                                                       int rank,
                                                       std::chrono::milliseconds rendezvousTimeout);

  Result<std::shared_ptr<client::AllReduceRequest>> allReduceAsync(const void* send, void* recv,
                                                           size_t count, DataType type,
                                                           ReduceOp op) {
    return comm_->allReduceAsync(send, recv, count, type, op);
  }
  client::Communicator& communicator() { return *comm_; }
  const GroupId& id() const { return comm_->group().id; }

  // Whether NCCL may offload (type, op): every type NCCL 2.28 has (fp8 E4M3 and E5M2
  // included) and ops sum, prod, max, min (avg arrives as a pre-scaled sum).
  static bool supports(int ncclDataType, int ncclRedOp);

 private:
  explicit CollNetGroup(std::unique_ptr<client::Communicator> comm) : comm_(std::move(comm)) {}
  std::unique_ptr<client::Communicator> comm_;
};

}  // namespace rs::nccl

#include "rs/nccl/collnet_group.h"

#include <algorithm>
#include <cstring>

#include "core/common/splitmix.h"
#include "core/reduce/dtype.h"

namespace rs::nccl {

CollNetHandle CollNetHandle::fresh() {
  CollNetHandle h;
  const GroupId random = GroupId::random();
  h.nonceHi = random.hi;
  h.nonceLo = random.lo;
  return h;
}

Result<GroupId> groupIdFromHandles(const void* const* handles, int nranks) {
  if (nranks < 1) return invalidArgument("CollNet group of " + std::to_string(nranks) + " ranks");
  GroupId id{0x52454455434552ull, static_cast<uint64_t>(nranks)};  // "REDUCER", n
  for (int r = 0; r < nranks; ++r) {
    if (handles[r] == nullptr) return invalidArgument("CollNet handle " + std::to_string(r) + " is null");
    CollNetHandle h;
    std::memcpy(&h, handles[r], sizeof h);
    if (h.magic != CollNetHandle::kMagic || h.version != 1)
      return invalidArgument("CollNet handle " + std::to_string(r) +
                             " was not made by this plugin's listen() (bad magic or version)");
    // A strong mix, so that the ids of different handle sets differ.
    id.hi = splitMix64(id.hi ^ h.nonceHi ^ splitMix64(static_cast<uint64_t>(r)));
    id.lo = splitMix64(id.lo ^ h.nonceLo ^ splitMix64(id.hi));
  }
  return id;
}

Result<std::unique_ptr<CollNetGroup>> CollNetGroup::connect(
    const client::ClientOptions& options, const void* const* handles, int nranks, int rank,
    std::chrono::milliseconds rendezvousTimeout) {
  if (rank < 0 || rank >= nranks)
    return invalidArgument("CollNet rank " + std::to_string(rank) + " of " +
                           std::to_string(nranks));
  auto id = groupIdFromHandles(handles, nranks);
  if (!id) return id.status();
  // The reducers time a chunk out after the longer of the two waits; the client times the
  // rendezvous barrier by its own deadline.
  client::ClientOptions o = options;
  o.collectiveTimeout = std::max(options.collectiveTimeout, rendezvousTimeout);
  auto comm = client::Communicator::connect(
      o, {*id, static_cast<uint32_t>(nranks), static_cast<uint32_t>(rank)});
  if (!comm) return comm.status();
  uint32_t present = 1;
  auto barrier = (*comm)->allReduceAsync(&present, &present, 1, DataType::kUint32,
                                         ReduceOp::kSum, rendezvousTimeout);
  Status done = barrier ? (*barrier)->wait() : barrier.status();
  if (!done.isOk())
    return Status(done.code(), "CollNet rendezvous of " + std::to_string(nranks) +
                                   " nodes failed: " + done.message());
  if (present != static_cast<uint32_t>(nranks))
    return internalError("CollNet rendezvous counted " + std::to_string(present) + " of " +
                         std::to_string(nranks) + " nodes");
  return std::unique_ptr<CollNetGroup>(new CollNetGroup(std::move(*comm)));
}

bool CollNetGroup::supports(int ncclDataType, int ncclRedOp) {
  // NCCL's types, fp8 (10, 11) included, match rs::DataType 1:1.
  return isValidDataType(static_cast<uint32_t>(ncclDataType)) && ncclRedOp >= 0 &&
         ncclRedOp < kNumReduceOps;
}

}  // namespace rs::nccl

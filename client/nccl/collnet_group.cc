#include "rs/nccl/collnet_group.h"

#include <algorithm>
#include <cstring>

#include "core/reduce/dtype.h"

namespace rs::nccl {
namespace {

// splitmix64's finaliser: a strong 64-bit mix, so ids of different handle sets differ.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

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
    id.hi = mix(id.hi ^ h.nonceHi ^ mix(static_cast<uint64_t>(r)));
    id.lo = mix(id.lo ^ h.nonceLo ^ mix(id.hi));
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

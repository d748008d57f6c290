// Memory registered with a fabric domain: what the rest of the code passes around for the data
// path. Locally it gives the descriptor every operation on it needs (FI_MR_LOCAL); to peers it
// gives a RemoteBuffer (virtual address, provider-chosen key, size), carried by the TCP
// handshake or a control message, which is all a peer needs to write into it.
//
// Registration pins pages and costs microseconds to milliseconds: the reducer registers its
// slot pools once, the plugin registers what NCCL hands to regMr once per buffer.
#pragma once

#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>

#include "core/common/status.h"

namespace rs::transport::fabric {

class FabricDomain;

// Where a peer may write, as that peer hands it over: the remote address to name in an RMA
// write (a virtual address under FI_MR_VIRT_ADDR, else an offset), the key, and how many bytes
// from that address are ours to write. Arrives from the network: a writer checks every write
// against `size` before posting it.
struct RemoteBuffer {
  uint64_t address = 0;
  uint64_t key = 0;
  uint64_t size = 0;
};

class RegisteredMemory {
 public:
  enum class Access {
    kLocal,        // sources of writes and sends, targets of receives
    kRemoteWrite,  // also written by peers' RMA writes (the reducer's slots, workers' results)
  };

  // Registers [data, data + size). The memory stays the caller's and must outlive this object.
  static Result<RegisteredMemory> add(FabricDomain& domain, void* data, size_t size,
                                      Access access);

  RegisteredMemory() = default;
  RegisteredMemory(RegisteredMemory&& other) noexcept;
  RegisteredMemory& operator=(RegisteredMemory&& other) noexcept;
  RegisteredMemory(const RegisteredMemory&) = delete;
  RegisteredMemory& operator=(const RegisteredMemory&) = delete;
  ~RegisteredMemory();

  bool isRegistered() const { return mr_ != nullptr; }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // The local descriptor for operations on this memory (fi_mr_desc).
  void* descriptor() const { return desc_; }
  uint64_t key() const { return key_; }
  // What a peer needs to write into [offset, offset + size) of this memory.
  RemoteBuffer remote(size_t offset, size_t size) const;
  RemoteBuffer remote() const { return remote(0, size_); }

  // Deregisters: from then on a peer's write with this key fails (a stale key). Idempotent.
  Status close();

 private:
  fid_mr* mr_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* desc_ = nullptr;
  uint64_t key_ = 0;
  bool virtualAddresses_ = true;
};

}  // namespace rs::transport::fabric

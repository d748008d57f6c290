// An opened provider: the fabric, the domain (a device, or an interface on tcp) and the address
// vector of the peers its endpoints reach. Registered memory and endpoints belong to a domain
// and must be closed before it (they hold pointers into it).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/common/status.h"
#include "core/transport/fabric/fabric_info.h"

namespace rs::transport::fabric {

class FabricDomain {
 public:
  // The longest endpoint address we take from a peer.
  static constexpr size_t kMaxAddressBytes = 256;

  static Result<std::unique_ptr<FabricDomain>> open(FabricInfo info);
  ~FabricDomain();
  FabricDomain(const FabricDomain&) = delete;
  FabricDomain& operator=(const FabricDomain&) = delete;

  const FabricInfo& info() const { return info_; }
  const std::string& provider() const { return provider_; }
  fid_fabric* fabric() const { return fabric_; }
  fid_domain* domain() const { return domain_; }
  fid_av* av() const { return av_; }

  // A peer's address (the bytes its FabricEndpoint::address() gave, carried by the TCP
  // handshake) in the address vector. The bytes are the peer's input: a malformed address is
  // an error, never a crash.
  Result<fi_addr_t> insertPeer(std::span<const uint8_t> address);
  Status removePeer(fi_addr_t peer);

  // A key for the next registration where the provider does not choose keys (no FI_MR_PROV_KEY):
  // unique within the domain.
  uint64_t nextRequestedKey() { return nextKey_++; }

 private:
  explicit FabricDomain(FabricInfo info);

  FabricInfo info_;
  std::string provider_;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_av* av_ = nullptr;
  uint64_t nextKey_ = 1;
};

}  // namespace rs::transport::fabric

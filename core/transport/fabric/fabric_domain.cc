#include "core/transport/fabric/fabric_domain.h"

#include <fmt/format.h>

#include "core/transport/fabric/fabric_error.h"

namespace rs::transport::fabric {

FabricDomain::FabricDomain(FabricInfo info)
    : info_(std::move(info)), provider_(info_.providerName()) {}

Result<std::unique_ptr<FabricDomain>> FabricDomain::open(FabricInfo info) {
  std::unique_ptr<FabricDomain> d(new FabricDomain(std::move(info)));
  fi_info* fi = const_cast<fi_info*>(d->info_.get());  // libfabric's API takes it non-const
  int rc = fi_fabric(fi->fabric_attr, &d->fabric_, nullptr);
  if (rc != 0) return fabricError(fmt::format("{}: fi_fabric", d->provider_), rc);
  rc = fi_domain(d->fabric_, fi, &d->domain_, nullptr);
  if (rc != 0) {
    return fabricError(fmt::format("{}: fi_domain on {}", d->provider_, d->info_.domainName()), rc);
  }
  fi_av_attr attr{};
  // A table: peers are indexed 0, 1, ... in insertion order, the cheapest lookup on every
  // provider (EFA and verbs' rxm map either).
  attr.type = FI_AV_TABLE;
  rc = fi_av_open(d->domain_, &attr, &d->av_, nullptr);
  if (rc != 0) return fabricError(fmt::format("{}: fi_av_open", d->provider_), rc);
  return d;
}

FabricDomain::~FabricDomain() {
  // Children before parents; a close that fails leaks the object (logged and counted).
  if (av_ != nullptr) (void)closeFabricObject(&av_->fid, provider_ + "'s address vector");
  if (domain_ != nullptr) (void)closeFabricObject(&domain_->fid, provider_ + "'s domain");
  if (fabric_ != nullptr) (void)closeFabricObject(&fabric_->fid, provider_ + "'s fabric");
}

Result<fi_addr_t> FabricDomain::insertPeer(std::span<const uint8_t> address) {
  // An address is at most a few dozen bytes on every provider (sockaddr, verbs GID + QPN, EFA's
  // GID + QPN + key); the bound keeps a peer's garbage out of the provider's parser (the
  // endpoint also checks that it has the length of its own).
  if (address.empty() || address.size() > kMaxAddressBytes) {
    return invalidArgument(fmt::format("{}: a peer's fabric address has {} bytes (expected 1..{})",
                                       provider_, address.size(), kMaxAddressBytes));
  }
  fi_addr_t peer = FI_ADDR_NOTAVAIL;
  const int n = fi_av_insert(av_, address.data(), 1, &peer, 0, nullptr);
  if (n != 1 || peer == FI_ADDR_NOTAVAIL) {
    return fabricError(fmt::format("{}: fi_av_insert of a peer's address", provider_),
                       n < 0 ? n : -FI_EINVAL);
  }
  return peer;
}

Status FabricDomain::removePeer(fi_addr_t peer) {
  const int rc = fi_av_remove(av_, &peer, 1, 0);
  if (rc != 0) return fabricError(fmt::format("{}: fi_av_remove", provider_), rc);
  return Status::ok();
}

}  // namespace rs::transport::fabric

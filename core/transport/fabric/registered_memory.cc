#include "core/transport/fabric/registered_memory.h"

#include <fmt/format.h>

#include <utility>

#include "core/transport/fabric/fabric_domain.h"
#include "core/transport/fabric/fabric_error.h"

namespace rs::transport::fabric {

Result<RegisteredMemory> RegisteredMemory::add(FabricDomain& domain, void* data, size_t size,
                                               Access access) {
  if (data == nullptr || size == 0) {
    return invalidArgument(fmt::format("{}: registering {} bytes at {}", domain.provider(), size,
                                       data));
  }
  uint64_t flags = FI_SEND | FI_RECV | FI_WRITE;
  if (access == Access::kRemoteWrite) flags |= FI_REMOTE_WRITE;
  const fi_info* info = domain.info().get();
  const bool providerKeys = (info->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
  // Under FI_MR_PROV_KEY the requested key is ignored: the provider's (fi_mr_key) is the one.
  const uint64_t requested = providerKeys ? 0 : domain.nextRequestedKey();
  RegisteredMemory m;
  const int rc = fi_mr_reg(domain.domain(), data, size, flags, 0, requested, 0, &m.mr_, nullptr);
  if (rc != 0) {
    m.mr_ = nullptr;
    return fabricError(fmt::format("{}: fi_mr_reg of {} bytes", domain.provider(), size), rc);
  }
  m.data_ = static_cast<uint8_t*>(data);
  m.size_ = size;
  m.desc_ = fi_mr_desc(m.mr_);
  m.key_ = fi_mr_key(m.mr_);
  if (m.key_ == FI_KEY_NOTAVAIL) {
    return internalError(fmt::format("{}: a registration without a key", domain.provider()));
  }
  m.virtualAddresses_ = domain.info().virtualAddresses();
  return m;
}

RegisteredMemory::RegisteredMemory(RegisteredMemory&& other) noexcept { *this = std::move(other); }

RegisteredMemory& RegisteredMemory::operator=(RegisteredMemory&& other) noexcept {
  if (this != &other) {
    (void)close();
    mr_ = std::exchange(other.mr_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    desc_ = std::exchange(other.desc_, nullptr);
    key_ = std::exchange(other.key_, 0);
    virtualAddresses_ = other.virtualAddresses_;
  }
  return *this;
}

RegisteredMemory::~RegisteredMemory() { (void)close(); }

RemoteBuffer RegisteredMemory::remote(size_t offset, size_t size) const {
  const uint64_t base = virtualAddresses_ ? reinterpret_cast<uintptr_t>(data_) : 0;
  if (offset > size_) offset = size_;
  if (size > size_ - offset) size = size_ - offset;
  return {base + offset, key_, size};
}

Status RegisteredMemory::close() {
  if (mr_ == nullptr) return Status::ok();
  fid* registration = &mr_->fid;
  mr_ = nullptr;
  desc_ = nullptr;
  return closeFabricObject(registration, "a memory registration");
}

}  // namespace rs::transport::fabric

// Finding a libfabric provider for the data path, under verbs' rules on every provider
// (proto/FABRIC.md, "Verbs' rules"): the userspace tcp provider is more forgiving than verbs and
// EFA and would hide bugs that only hardware shows, so the tests ask it for what hardware needs.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/common/status.h"

namespace rs::transport::fabric {

// Which provider, and where.
struct FabricChoice {
  // libfabric's name for it: "tcp" (tests; RDM through ofi_rxm), "verbs" (InfiniBand, RoCE; RDM
  // through ofi_rxm), "efa". Required: the fabric is never chosen by accident.
  std::string provider;
  // The local address or interface to bind ("127.0.0.1" on loopback); empty: the provider's
  // first.
  std::string node;
};

// One provider's description (an fi_info) that matched our hints. Owns it.
class FabricInfo {
 public:
  // fi_getinfo with the hints below. An error names the provider asked for and the providers
  // this libfabric has, so "verbs is absent" reads as such and not as a failure of ours.
  static Result<FabricInfo> probe(const FabricChoice& choice);

  const fi_info* get() const { return info_.get(); }
  // "tcp;ofi_rxm": the provider that matched, with the utility layer over it.
  std::string providerName() const;
  // The domain (device or interface) it runs on: "lo", "mlx5_0", "rdmap0s6-rdm".
  std::string domainName() const;
  // One line for the log: provider, domain, fabric, endpoint type, memory-registration mode.
  std::string describe() const;
  // Whether remote addresses are virtual addresses (FI_MR_VIRT_ADDR) or offsets into the
  // registered region; what registered_memory.h hands to peers depends on it.
  bool virtualAddresses() const;
  // Bytes of immediate data a write may carry to the target's completion (we use 4: verbs').
  size_t immediateBytes() const;

 private:
  struct Free {
    void operator()(fi_info* info) const { fi_freeinfo(info); }
  };
  explicit FabricInfo(fi_info* info) : info_(info) {}
  std::unique_ptr<fi_info, Free> info_;
};

// The libfabric API version we ask for (what the code is written against).
inline constexpr uint32_t kFabricApiVersion = FI_VERSION(1, 11);

// The hints: FI_EP_RDM, caps FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE, modes FI_CONTEXT |
// FI_CONTEXT2 | FI_RX_CQ_DATA (we can honour them), mr_mode FI_MR_LOCAL | FI_MR_VIRT_ADDR |
// FI_MR_ALLOCATED | FI_MR_PROV_KEY, delivery-complete writes, ordered sends, one thread per
// domain. The caller frees it (fi_freeinfo).
fi_info* verbsRulesHints(const FabricChoice& choice);

// The names of the providers this libfabric offers on this machine (any capability): for error
// messages and `--fabric-provider` help.
std::vector<std::string> availableProviders();

// What a provider must give us beyond what fi_getinfo matched: remote CQ data of at least 4
// bytes, and the memory-registration rules we asked for. OK or why not.
Status checkVerbsRules(const fi_info& info);

}  // namespace rs::transport::fabric

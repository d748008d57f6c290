#include "core/transport/fabric/fabric_info.h"

#include <fmt/format.h>
#include <rdma/fi_domain.h>

#include <algorithm>
#include <cstring>

#include "core/transport/fabric/fabric_error.h"
#include "core/transport/fabric/fabric_library.h"

namespace rs::transport::fabric {
namespace {

// Verbs' memory-registration rules (FI_MR_BASIC spelled out): local buffers need registration
// and a descriptor on every operation, the provider picks the keys, remote addresses are virtual
// addresses, and only allocated memory can be registered. FI_MR_ENDPOINT (bind each region to an
// endpoint) is not asked for: verbs and EFA do not need it, and a provider that does would not
// match, which is the honest outcome until the code binds regions.
constexpr uint64_t kMrMode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

std::string modeNames(uint64_t mode) {
  std::string out;
  auto add = [&](uint64_t bit, const char* name) {
    if (mode & bit) out += out.empty() ? name : fmt::format("|{}", name);
  };
  add(FI_MR_LOCAL, "LOCAL");
  add(FI_MR_VIRT_ADDR, "VIRT_ADDR");
  add(FI_MR_ALLOCATED, "ALLOCATED");
  add(FI_MR_PROV_KEY, "PROV_KEY");
  add(FI_MR_ENDPOINT, "ENDPOINT");
  add(FI_MR_HMEM, "HMEM");
  return out.empty() ? "none" : out;
}

}  // namespace

fi_info* verbsRulesHints(const FabricChoice& choice) {
  fi_info* hints = fi_allocinfo();
  if (hints == nullptr) return nullptr;
  // Messages for the small control words (credits, the end of a lane), RMA writes for the data.
  hints->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
  // Modes we honour: every operation's context starts with a struct fi_context2, and a write
  // with immediate data may consume a posted receive at the target (verbs' write-with-immediate
  // does; fabric_endpoint.h reports it).
  hints->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
  // Reliable datagrams: the endpoint type EFA offers at all, and what verbs and tcp offer through
  // ofi_rxm; one endpoint reaches every peer by its address, which the TCP handshake carries.
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = static_cast<int>(kMrMode);
  // One thread drives each domain (its endpoints' completion queues): no locks in the provider.
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  // A sender's completion only once the data is visible at the target: the protocol hands a
  // slot or a result to the peer on it (on tcp a plain completion can come before that).
  hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
  // Control messages arrive in the order they were sent; RMA writes have no order (EFA's SRD
  // gives none): the protocol never relies on it.
  hints->tx_attr->msg_order = FI_ORDER_SAS;
  hints->rx_attr->msg_order = FI_ORDER_SAS;
  hints->fabric_attr->prov_name = strdup(choice.provider.c_str());
  return hints;
}

std::vector<std::string> availableProviders() {
  fi_info* all = nullptr;
  std::vector<std::string> names;
  if (!fabricLibraryStatus().isOk()) return names;
  if (fi_getinfo(kFabricApiVersion, nullptr, nullptr, 0, nullptr, &all) != 0) return names;
  for (fi_info* it = all; it != nullptr; it = it->next) {
    if (it->fabric_attr == nullptr || it->fabric_attr->prov_name == nullptr) continue;
    std::string name = it->fabric_attr->prov_name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  fi_freeinfo(all);
  return names;
}

Status checkVerbsRules(const fi_info& info) {
  const uint64_t mode = static_cast<uint64_t>(info.domain_attr->mr_mode);
  // A provider may leave out a rule it does not need; it may not add one we did not ask for.
  if ((mode & ~kMrMode) != 0) {
    return failedPrecondition(fmt::format("provider {} needs memory-registration modes {} beyond "
                                          "ours ({})",
                                          info.fabric_attr->prov_name, modeNames(mode & ~kMrMode),
                                          modeNames(kMrMode)));
  }
  if (info.domain_attr->cq_data_size < 4) {
    return failedPrecondition(fmt::format("provider {} carries {} bytes of immediate data; the "
                                          "protocol needs 4",
                                          info.fabric_attr->prov_name,
                                          info.domain_attr->cq_data_size));
  }
  return Status::ok();
}

Result<FabricInfo> FabricInfo::probe(const FabricChoice& choice) {
  if (choice.provider.empty()) return invalidArgument("no libfabric provider named");
  RS_RETURN_IF_ERROR(fabricLibraryStatus());
  fi_info* hints = verbsRulesHints(choice);
  if (hints == nullptr) return resourceExhausted("fi_allocinfo: out of memory");
  fi_info* found = nullptr;
  const char* node = choice.node.empty() ? nullptr : choice.node.c_str();
  const int rc = fi_getinfo(kFabricApiVersion, node, nullptr, node != nullptr ? FI_SOURCE : 0,
                            hints, &found);
  fi_freeinfo(hints);
  if (rc != 0 || found == nullptr) {
    std::string here;
    for (const std::string& name : availableProviders()) here += here.empty() ? name : ", " + name;
    return fabricError(fmt::format("libfabric {}.{} has no provider '{}'{} with RDM endpoints and "
                                   "RMA writes under verbs' rules (providers here: {}); fi_getinfo",
                                   FI_MAJOR(fi_version()), FI_MINOR(fi_version()), choice.provider,
                                   node != nullptr ? fmt::format(" on {}", choice.node) : "",
                                   here.empty() ? "none" : here),
                       rc != 0 ? rc : -FI_ENODATA);
  }
  // The first match is the provider's preferred one; the rest are dropped.
  fi_freeinfo(found->next);
  found->next = nullptr;
  FabricInfo info(found);
  RS_RETURN_IF_ERROR(checkVerbsRules(*found));
  return info;
}

std::string FabricInfo::providerName() const { return info_->fabric_attr->prov_name; }

std::string FabricInfo::domainName() const {
  return info_->domain_attr->name != nullptr ? info_->domain_attr->name : "";
}

std::string FabricInfo::describe() const {
  return fmt::format("provider {} on {} (fabric {}), {} endpoints, memory registration {}, "
                     "{} bytes of immediate data",
                     providerName(), domainName(),
                     info_->fabric_attr->name != nullptr ? info_->fabric_attr->name : "?",
                     info_->ep_attr->type == FI_EP_RDM ? "RDM" : "other",
                     modeNames(static_cast<uint64_t>(info_->domain_attr->mr_mode)),
                     info_->domain_attr->cq_data_size);
}

bool FabricInfo::virtualAddresses() const {
  return (static_cast<uint64_t>(info_->domain_attr->mr_mode) & FI_MR_VIRT_ADDR) != 0;
}

size_t FabricInfo::immediateBytes() const { return info_->domain_attr->cq_data_size; }

}  // namespace rs::transport::fabric

#include "core/transport/fabric/fabric_library.h"

#ifdef RS_FABRIC_DLOPEN

#include <dlfcn.h>
#include <fmt/format.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <string>

namespace rs::transport::fabric {
namespace {

// The versions the fabric layer's references bind to with libfabric 1.11 to 1.17's headers
// (`nm -u` of a linked build: fi_getinfo@FABRIC_1.3 ...): the same ABI at run time, whatever
// newer libfabric.so.1 the image has.
struct Library {
  Status status;
  decltype(&::fi_getinfo) getinfo = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;
  decltype(&::fi_version) version = nullptr;
};

template <typename F>
Status bind(void* lib, const char* name, const char* version, F* out) {
  *out = reinterpret_cast<F>(dlvsym(lib, name, version));
  if (*out != nullptr) return Status::ok();
  return unavailableError(fmt::format("libfabric.so.1 has no {}@{} (older than libfabric 1.5?)",
                                      name, version));
}

Library load() {
  Library l;
  void* lib = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    const std::string why = e != nullptr ? e : "dlopen failed";
    // Absent, or present but unloadable (a dependency missing, as a provider library whose
    // package's scripts never ran): the second must not read as the first.
    const bool absent = why.rfind("libfabric.so.1:", 0) == 0 &&
                        why.find("No such file") != std::string::npos;
    l.status = unavailableError(
        (absent ? "libfabric is not installed (" : "libfabric.so.1 did not load (") + why + ")");
    return l;
  }
  for (Status s : {bind(lib, "fi_getinfo", "FABRIC_1.3", &l.getinfo),
                   bind(lib, "fi_freeinfo", "FABRIC_1.3", &l.freeinfo),
                   bind(lib, "fi_dupinfo", "FABRIC_1.3", &l.dupinfo),
                   bind(lib, "fi_fabric", "FABRIC_1.1", &l.fabric),
                   bind(lib, "fi_strerror", "FABRIC_1.0", &l.strerror),
                   bind(lib, "fi_version", "FABRIC_1.0", &l.version)}) {
    if (!s.isOk() && l.status.isOk()) l.status = s;
  }
  if (!l.status.isOk()) {
    dlclose(lib);
    l = Library{l.status};
  }
  return l;  // loaded: kept for the life of the process
}

const Library& library() {
  static const Library l = load();
  return l;
}

}  // namespace

Status fabricLibraryStatus() { return library().status; }

}  // namespace rs::transport::fabric

// The six imports, hidden inside the plugin (its symbols are all local but NCCL's tables).
// Reached only after fabricLibraryStatus() said OK (FabricInfo::probe asks it first); a call
// before that fails as libfabric fails, never crashes.
using rs::transport::fabric::library;

extern "C" {

int fi_getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
               const struct fi_info* hints, struct fi_info** info) {
  const auto f = library().getinfo;
  return f != nullptr ? f(version, node, service, flags, hints, info) : -FI_ENOSYS;
}

void fi_freeinfo(struct fi_info* info) {
  if (const auto f = library().freeinfo) f(info);
}

struct fi_info* fi_dupinfo(const struct fi_info* info) {
  const auto f = library().dupinfo;
  return f != nullptr ? f(info) : nullptr;
}

int fi_fabric(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  const auto f = library().fabric;
  return f != nullptr ? f(attr, fabric, context) : -FI_ENOSYS;
}

const char* fi_strerror(int errnum) {
  const auto f = library().strerror;
  return f != nullptr ? f(errnum) : "libfabric is not loaded";
}

uint32_t fi_version(void) {
  const auto f = library().version;
  return f != nullptr ? f() : 0;
}

}  // extern "C"

#else  // linked

namespace rs::transport::fabric {

Status fabricLibraryStatus() { return Status::ok(); }

}  // namespace rs::transport::fabric

#endif

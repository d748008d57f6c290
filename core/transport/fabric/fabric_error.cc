#include "core/transport/fabric/fabric_error.h"

#include <fmt/format.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <cstdlib>

#include "core/common/log.h"

namespace rs::transport::fabric {

StatusCode fabricStatusCode(int err) {
  switch (std::abs(err)) {
    case FI_ENODATA:
    case FI_ENOSYS:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case FI_ENETDOWN:
    case FI_ESHUTDOWN:
      return StatusCode::kUnavailable;
    case FI_ETIMEDOUT:
      return StatusCode::kTimeout;
    case FI_ECANCELED:
      return StatusCode::kAborted;
    case FI_EINVAL:
    case FI_EBADFLAGS:
    case FI_EOPNOTSUPP:
      return StatusCode::kInvalidArgument;
    case FI_ETRUNC:  // a peer's message larger than the receive posted for it
      return StatusCode::kProtocolError;
    case FI_ENOMEM:
    case FI_ENOSPC:
    case FI_ETOOSMALL:
      return StatusCode::kResourceExhausted;
    default:
      return StatusCode::kIoError;
  }
}

Status fabricError(std::string_view what, int rc) {
  return Status(fabricStatusCode(rc),
                fmt::format("{}: {} (fi error {})", what, fi_strerror(std::abs(rc)), rc));
}

namespace {
std::atomic<uint64_t> refusedCloses{0};
}  // namespace

Status closeFabricObject(fid* object, std::string_view what) {
  if (object == nullptr) return Status::ok();
  const int rc = fi_close(object);
  if (rc == 0) return Status::ok();
  refusedCloses.fetch_add(1, std::memory_order_relaxed);
  Status refused = fabricError(fmt::format("fi_close of {}", what), rc);
  logger().warn("{}; the object is leaked", refused.message());
  return refused;
}

uint64_t closesRefused() { return refusedCloses.load(std::memory_order_relaxed); }

}  // namespace rs::transport::fabric

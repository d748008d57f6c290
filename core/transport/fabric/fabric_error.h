// libfabric's return codes as Status values: what failed, named by the caller (the provider, the
// operation, the peer), with libfabric's own words and number.
#pragma once

#include <cstdint>
#include <string_view>

struct fid;

#include "core/common/status.h"

namespace rs::transport::fabric {

// A Status for a libfabric call that returned `rc` (a negative FI_E* code): "<what>: <libfabric's
// text> (fi error <n>)". The code says what a caller can do about it: kUnavailable where no
// provider or peer is there (FI_ENODATA, FI_ECONNREFUSED, ...), kTimeout, kAborted for a
// cancelled operation, kProtocolError for a peer's message too large for its receive
// (FI_ETRUNC), kInvalidArgument for a call we got wrong, kIoError otherwise.
Status fabricError(std::string_view what, int rc);

// The StatusCode for a libfabric error number (positive, as in fi_cq_err_entry::err).
StatusCode fabricStatusCode(int err);

// fi_close of one of our libfabric objects, `what` naming it in the warning a refused close
// logs. A refusal (FI_EBUSY: a child of it is still open) leaks the object, so it is counted:
// the tests read closesRefused() to show that every object we open we also close.
Status closeFabricObject(fid* object, std::string_view what);
uint64_t closesRefused();

}  // namespace rs::transport::fabric

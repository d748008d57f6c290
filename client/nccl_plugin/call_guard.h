// How every entry point turns failures into an ncclResult_t: a Status becomes a WARN line and
// its code (nccl_result.h says which and why), and nothing is thrown across the C ABI.
#pragma once

#include <exception>

#include "client/nccl_plugin/nccl_result.h"
#include "client/nccl_plugin/plugin_log.h"

namespace rs::plugin {

// A failed call's WARN line and its code.
inline ncclResult_t toNccl(const Status& s, const char* call, CallSide side) {
  if (s.isOk()) return ncclSuccess;
  RS_PLUGIN_WARN("{} failed: {}", call, s.toString());
  return ncclResultFor(s.code(), side);
}

// Runs `body` (returning ncclResult_t), turning any exception into an internal error.
template <typename F>
ncclResult_t guarded(const char* call, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    RS_PLUGIN_WARN("{} failed: unexpected exception: {}", call, e.what());
  } catch (...) {
    RS_PLUGIN_WARN("{} failed: unexpected exception", call);
  }
  return ncclInternalError;
}

}  // namespace rs::plugin

#define RS_REQUIRE(cond, call, ...)                             \
  do {                                                          \
    if (!(cond)) {                                              \
      RS_PLUGIN_WARN("{}: {}", call, fmt::format(__VA_ARGS__)); \
      return ncclInternalError;                                 \
    }                                                           \
  } while (0)

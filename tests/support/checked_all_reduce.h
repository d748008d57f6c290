// One member's all-reduce of `count` elements of exact inputs (verify_pattern.h), checked
// element by element against what every member must receive.
#pragma once

#include <fmt/format.h>

#include "core/common/aligned_buffer.h"
#include "rs/client.h"
#include "tests/support/verify_pattern.h"

namespace rs::test {

inline Status checkedAllReduce(client::Communicator& comm, int rank, int world, uint64_t count,
                               DataType type, ReduceOp op, bool inPlace) {
  const size_t bytes = count * dataTypeSize(type);
  AlignedBuffer send(bytes + 1), recv(bytes + 1);
  for (uint64_t i = 0; i < count; ++i) storeAs(type, send.data(), i, exactInput(rank, i, op));
  void* out = inPlace ? send.data() : recv.data();
  RS_RETURN_IF_ERROR(comm.allReduce(send.data(), out, count, type, op));
  for (uint64_t i = 0; i < count; ++i) {
    const double want = expectedResult(type, op, world, i);
    const double got = loadAs(type, out, i);
    if (got != want)
      return internalError(fmt::format("{} {} of {} elements: element {} is {}, expected {}",
                                       dataTypeName(type), reduceOpName(op), count, i, got, want));
  }
  return Status::ok();
}

}  // namespace rs::test

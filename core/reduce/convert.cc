#include "core/reduce/convert.h"

#include "core/reduce/reduce.h"

namespace rs::reduce {

// An fp32 buffer is exactly a bf16/fp16 accumulator, so the reducer's finalize (one operand,
// no division) and accumulateFirst are the narrowing and widening kernels already.
void narrowFloat32(DataType to, const float* src, void* dst, size_t count) {
  if (!isNarrowFloat(to)) return;
  finalize(to, ReduceOp::kSum, src, dst, count, 1);
}

void widenToFloat32(DataType from, const void* src, float* dst, size_t count) {
  if (!isNarrowFloat(from)) return;
  accumulateFirst(from, src, dst, count);
}

}  // namespace rs::reduce

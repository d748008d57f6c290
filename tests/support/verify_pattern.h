// Inputs whose all-reduce is exact in every type, to check results end to end (tests, the
// all-reduce benchmark, the NCCL plugin harness): small integers, representable even in bf16,
// whose sums, products, maxima and minima over up to 12 members stay exact and in range. fp8
// holds fewer of them (E5M2 the integers to 8, E4M3 to 16): a member stores its input rounded to
// the type, and the expected result is the exact fold of those, rounded once, as the reducer's
// fp32 accumulator gives it.
// Library rs_verify_pattern, for tests and benchmarks only: the daemon and the plugin never
// link it.
#pragma once

#include <cstdint>

#include "core/reduce/dtype.h"

namespace rs::test {

// Member `rank`'s input at element i.
double exactInput(int rank, uint64_t i, ReduceOp op);
// The result every member must receive at element i, as the reducer rounds it.
double expectedResult(DataType type, ReduceOp op, int world, uint64_t i);
// Element i of a typed buffer, to and from double.
void storeAs(DataType type, void* buffer, uint64_t i, double value);
double loadAs(DataType type, const void* buffer, uint64_t i);

}  // namespace rs::test

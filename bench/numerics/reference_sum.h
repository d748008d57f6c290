// The fp64 reference of a sum: Neumaier's compensated summation, so the reference itself does
// not carry the rounding error it is meant to expose. Its error is about one fp64 rounding of
// the result plus n * 2^-106 of the sum of magnitudes, far below an fp32 ULP of any sum whose
// terms cancel less than about 2^50 times, which covers every input numerics_bench draws.
#pragma once

#include <cmath>

namespace rs::bench::numerics {

class ReferenceSum {
 public:
  void add(double x) {
    const double t = sum_ + x;
    // The low-order part lost by t, taken from whichever operand is larger in magnitude.
    if (std::fabs(sum_) >= std::fabs(x)) {
      compensation_ += (sum_ - t) + x;
    } else {
      compensation_ += (x - t) + sum_;
    }
    sum_ = t;
  }
  double value() const { return sum_ + compensation_; }

 private:
  double sum_ = 0;
  double compensation_ = 0;
};

}  // namespace rs::bench::numerics

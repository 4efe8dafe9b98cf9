// The backward passes' tests (backward_test.cc, group_backward_test.cc):
// the documented bounds (docs/accuracy.md, "Backward") and the tolerance of
// a dx against the reference's fp32 dx.
#ifndef SIMDNORM_TESTS_SUPPORT_GRAD_BOUNDS_H_
#define SIMDNORM_TESTS_SUPPORT_GRAD_BOUNDS_H_

#include <cmath>

#include "simdnorm/simdnorm.h"

namespace simdnorm_test {

// In units of kGradUlp = 2^-23: fp32 dx within kDxBound * 2^-23 * M_j;
// dgamma and dbeta within kDgammaBound (kDbetaBound) * 2^-23 times their
// sums of |dy| (|xhat| + tau) (of |dy|).
inline constexpr double kDxBound = 128.0;
inline constexpr double kDgammaBound = 64.0;
inline constexpr double kDbetaBound = 32.0;
inline constexpr double kGradUlp = 0x1p-23;

// Half an ulp of a 16-bit type relative to the value (0 for F32).
inline double HalfUlp(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 ? 0x1p-8 : t == SIMDNORM_F16 ? 0x1p-11 : 0.0;
}

// |dx - want| allowed for a dx of type t against the reference's fp32 dx
// `want` (itself 2^-24 relative off), with M_j = m: the fp32 bound, and
// for 16-bit dx half an ulp of |want| plus that (f16: plus half its
// smallest subnormal).
inline double DxTolerance(simdnorm_dtype t, double want, double m) {
  const double e32 = kDxBound * kGradUlp * m + 1e-37;
  return e32 + 0x1p-24 * std::fabs(want) +
         HalfUlp(t) * (std::fabs(want) + e32) +
         (t == SIMDNORM_F16 ? 0x1p-25 : 0.0);
}

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_GRAD_BOUNDS_H_

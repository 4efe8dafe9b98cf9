// The registry of operations (simdnorm_op_info): each kind's public
// description with what the library needs to compute it. Adding a kind is
// its entry in ops.cc, its per-row statistic below (kernels and correct
// rounding share the uncentered kernels, which take the kind per row), its
// float64 reference (the entry's `denominator`), and the public enum value.
#ifndef SIMDNORM_LIB_OPS_H_
#define SIMDNORM_LIB_OPS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

struct Op {
  simdnorm_op_info info;
  // The float64 reference's denominator of xhat = (x - center) /
  // denominator, from second = sum((x - center)^2) over the n elements
  // (center = the mean for centered kinds, else 0).
  double (*denominator)(double second, double n, double eps);
};

// The entries, in kind order (ops[k].info.kind == k).
inline constexpr int kNumKinds = 3;
extern const Op kOps[kNumKinds];

// The entry of a kind, or nullptr when it is not one.
inline const Op* OpOf(int kind) {
  return kind >= 0 && kind < kNumKinds ? &kOps[kind] : nullptr;
}

// The multiplier of an uncentered kind's row, t = (x * s) * mul, from
// sum_sq = sum((x * s)^2) in double, s a power of two (1 unless the row
// was rescaled against overflow or underflow).
inline double UncenteredMul(int kind, double sum_sq, float s, size_t n,
                            float eps) {
  const double sd = static_cast<double>(s);
  if (kind == SIMDNORM_L2NORM) {
    // 1 / (s * max(||x||, eps)), s * ||x|| = sqrt(sum_sq); s * eps exact.
    return 1.0 / std::max(std::sqrt(sum_sq), static_cast<double>(eps) * sd);
  }
  const double ms = sum_sq / static_cast<double>(n) / (sd * sd);
  return 1.0 / (std::sqrt(ms + static_cast<double>(eps)) * sd);
}

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_OPS_H_

// The registry of operations (simdnorm_op_info): each kind's public
// description with what the library needs to compute it. Adding an
// uncentered kind is its entry in ops.cc (its denominator in float64, which
// the reference and the kernels' per-row multiplier use, with its error
// bound and its exact form for correct rounding) and the public enum value.
#ifndef SIMDNORM_LIB_OPS_H_
#define SIMDNORM_LIB_OPS_H_

#include <cstddef>

#include "lib/dyadic.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

struct Op {
  simdnorm_op_info info;
  // The denominator D of xhat = (x - center) / D from second = sum((x -
  // center)^2) over the n elements (center = the mean for centered kinds,
  // else 0), in float64: the reference's.
  double (*denominator)(double second, double n, double eps);
  // Correct rounding's r = 1 / D in double from a second within ds of the
  // exact one, with *er a bound of r's relative error (< 0: none usable);
  // inv_n = 1 / n rounded once.
  double (*scale)(double second, double ds, double inv_n, double eps,
                  double* er);
  // (n D)^2 exactly, from n, n * second and eps (correct rounding's exact
  // path: xhat = n (x - center) / sqrt((n D)^2)).
  Dyadic (*exact_n2_d2)(const Dyadic& n, const Dyadic& n_second,
                        const Dyadic& eps);
  // The backward pass (simdnorm_backward): the weight w of sum(g * xhat) in
  // dx = r * (g - a - xhat * w * sum(g * xhat)), r = 1 / denominator (a =
  // mean(g) for centered kinds, else 0). From xhat = (x - center) * r(second):
  // w = -2 r'(second) / r^3 = 2 * denominator * d(denominator)/d(second),
  // e.g. 1 / n for sqrt(second / n + eps). Same arguments as denominator.
  double (*sum_weight)(double second, double n, double eps);
};

// The entries of the kinds over rows (simdnorm_desc), in kind order
// (ops[k].info.kind == k). Kinds of other descriptors follow them in the
// public registry (kGroupNormInfo) but have no Op: they compute nothing
// through the row machinery.
inline constexpr int kNumRowKinds = 3;
extern const Op kOps[kNumRowKinds];

// GroupNorm's registry entry (simdnorm_group_desc; group_norm.h).
extern const simdnorm_op_info kGroupNormInfo;
// BatchNorm's (simdnorm_batch_desc; batch_norm.h).
extern const simdnorm_op_info kBatchNormInfo;

// The entry of a row kind, or nullptr when it is not one.
inline const Op* OpOf(int kind) {
  return kind >= 0 && kind < kNumRowKinds ? &kOps[kind] : nullptr;
}

// Whether a kind's statistics are of x - mean(x) (LayerNorm's).
inline bool IsCentered(int kind) { return kOps[kind].info.centered != 0; }

// Which of the scales below a row kind's is, for the kernels that also
// compute it a block of rows at a time (lib/row_stats-inl.h): 1 /
// sqrt(second / n + eps) (LayerNorm's, RMSNorm's), 1 / max(sqrt(second),
// eps) (L2's), or another (computed row by row).
enum class ScaleForm { kOther, kMeanSquareRoot, kNormOrEps };
ScaleForm ScaleFormOf(int kind);

// The multiplier of an uncentered kind's row, t = (x * s) * mul, from
// sum_sq = sum((x * s)^2) in double, s a power of two (1 unless the row
// was rescaled against overflow or underflow): the kind's own denominator
// (the reference's) of sum(x^2) = sum_sq / s^2, exact as s^2 is a power of
// two within double's range.
inline double UncenteredMul(int kind, double sum_sq, float s, size_t n,
                            float eps) {
  const double sd = static_cast<double>(s);
  const double denominator = kOps[kind].denominator(
      sum_sq / (sd * sd), static_cast<double>(n), static_cast<double>(eps));
  return 1.0 / (denominator * sd);
}

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_OPS_H_

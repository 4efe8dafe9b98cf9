// The registry's entries and the C API over them.
#include "lib/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace simdnorm {
namespace internal {
namespace {

constexpr unsigned kFloats =
    1u << SIMDNORM_F32 | 1u << SIMDNORM_BF16 | 1u << SIMDNORM_F16;
constexpr unsigned kOutputs = kFloats | 1u << SIMDNORM_I8;
constexpr unsigned kFlags = SIMDNORM_ROUND_NORMALIZED | SIMDNORM_Y_STREAM |
                            SIMDNORM_Y_CACHED | SIMDNORM_FAST_ROUNDING;
// fp32 outputs: docs/accuracy.md, "Bounds".
constexpr double kF32Bound = 32.0;

constexpr double kU = 0x1p-53;  // double's unit roundoff

// The relative error of r = fl(1 / fl(sqrt(w))) against 1 / sqrt(w*), |w -
// w*| <= dw: (1 + t)^(-1/2) is within 0.5 (1 - |t|)^(-3/2) |t| < 0.51 |t|
// of 1 for |t| <= 2^-10; then the square root and the division round. r *
// r is 1 / w within 8u.
double InvSqrtError(double w, double dw, double r) {
  const double rho = (dw + 2 * kU * w) * (r * r) * (1 + 8 * kU);
  return (w > 0 && std::isfinite(r) && rho <= 0x1p-10) ? 0.51 * rho + 3 * kU
                                                       : -1.0;
}

// LayerNorm, RMSNorm: D = sqrt(second / n + eps); (n D)^2 = n second + n^2
// eps.
double MeanSquareRoot(double second, double n, double eps) {
  return std::sqrt(second / n + eps);
}
double MeanSquareRootScale(double second, double ds, double inv_n, double eps,
                           double* er) {
  // 1/n multiplied in: each such product two roundings.
  const double mean = second * inv_n, w = mean + eps;
  const double r = 1.0 / std::sqrt(w);
  *er = InvSqrtError(w, ds * inv_n * (1 + 6 * kU) + 3 * kU * mean, r);
  return r;
}
Dyadic ExactMeanSquareRoot(const Dyadic& n, const Dyadic& n_second,
                           const Dyadic& eps) {
  return n_second + n * n * eps;
}

// L2: D = max(sqrt(second), eps); (n D)^2 = max(n (n second), (n eps)^2).
double NormOrEps(double second, double, double eps) {
  return std::max(std::sqrt(second), eps);
}
// max(., eps) moves no value further from another (and only down, relative
// to the larger), so r's relative error is at most that of 1 / sqrt(second);
// where even second + ds is below eps^2, r = 1 / eps rounded once.
double NormOrEpsScale(double second, double ds, double, double eps,
                      double* er) {
  const double r = 1.0 / NormOrEps(second, 0.0, eps);
  *er = eps > 0 && (second + ds) * (1 + 4 * kU) < eps * eps
            ? kU
            : InvSqrtError(second, ds + kU * second, r);
  return r;
}
Dyadic ExactNormOrEps(const Dyadic& n, const Dyadic& n_second,
                      const Dyadic& eps) {
  const Dyadic a = n * n_second, ne = n * eps, b = ne * ne;
  return a.Compare(b) >= 0 ? a : b;
}

// 2 * den * d(den)/d(second) for den = sqrt(second / n + eps): 1 / n.
double MeanSquareRootWeight(double, double n, double) { return 1.0 / n; }

// For den = max(sqrt(second), eps): 1 where the norm is above eps, 0 where
// den is the constant eps (at equality den is eps either way; the weight
// follows den, as it does in the kernels).
double NormOrEpsWeight(double second, double, double eps) {
  return std::sqrt(second) > eps ? 1.0 : 0.0;
}

}  // namespace

ScaleForm ScaleFormOf(int kind) {
  const Op* op = OpOf(kind);
  if (op == nullptr) return ScaleForm::kOther;
  return op->scale == MeanSquareRootScale ? ScaleForm::kMeanSquareRoot
         : op->scale == NormOrEpsScale    ? ScaleForm::kNormOrEps
                                          : ScaleForm::kOther;
}

const Op kOps[kNumRowKinds] = {
    {{SIMDNORM_LAYERNORM, "layernorm", "LayerNorm",
      "y = (x - mean) / sqrt(var + eps) * gamma + beta",
      "torch.nn.functional.layer_norm", 1, kFloats, kOutputs, kFloats, kFlags,
      kF32Bound, 1, SIMDNORM_ROW_DESC},
     MeanSquareRoot,
     MeanSquareRootScale,
     ExactMeanSquareRoot,
     MeanSquareRootWeight},
    {{SIMDNORM_RMSNORM, "rmsnorm", "RMSNorm",
      "y = x / sqrt(mean(x^2) + eps) * gamma + beta",
      "torch.nn.functional.rms_norm", 0, kFloats, kOutputs, kFloats, kFlags,
      kF32Bound, 1, SIMDNORM_ROW_DESC},
     MeanSquareRoot,
     MeanSquareRootScale,
     ExactMeanSquareRoot,
     MeanSquareRootWeight},
    {{SIMDNORM_L2NORM, "l2norm", "L2Norm",
      "y = x / max(sqrt(sum(x^2)), eps) * gamma + beta",
      "torch.nn.functional.normalize", 0, kFloats, kOutputs, kFloats, kFlags,
      kF32Bound, 1, SIMDNORM_ROW_DESC},
     NormOrEps,
     NormOrEpsScale,
     ExactNormOrEps,
     NormOrEpsWeight},
};

// Statistics as LayerNorm's, so its fp32 bound (docs/accuracy.md); 16-bit y
// correctly rounded unless SIMDNORM_FAST_ROUNDING. Its backward pass is
// simdnorm_group_norm_backward.
const simdnorm_op_info kGroupNormInfo = {
    SIMDNORM_GROUPNORM,
    "groupnorm",
    "GroupNorm",
    "y = (x - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]",
    "torch.nn.functional.group_norm",
    1,
    kFloats,
    kFloats,
    kFloats,
    SIMDNORM_FAST_ROUNDING,
    kF32Bound,
    1,
    SIMDNORM_GROUP_DESC};

// Training statistics as LayerNorm's, inference within a few ulps (see
// batch_rows-inl.h): the same fp32 bound; 16-bit y as GroupNorm's. Its
// backward is simdnorm_batch_norm_backward (batch_backward.h).
const simdnorm_op_info kBatchNormInfo = {
    SIMDNORM_BATCHNORM,
    "batchnorm",
    "BatchNorm",
    "y = (x - mean_c) / sqrt(var_c + eps) * gamma[c] + beta[c]",
    "torch.nn.functional.batch_norm",
    1,
    kFloats,
    kFloats,
    kFloats,
    SIMDNORM_FAST_ROUNDING,
    kF32Bound,
    1,
    SIMDNORM_BATCH_DESC};

}  // namespace internal
}  // namespace simdnorm

extern "C" {

// The row kinds, then GroupNorm and BatchNorm (kind order throughout).
size_t simdnorm_op_count(void) { return simdnorm::internal::kNumRowKinds + 2; }

const simdnorm_op_info* simdnorm_op_at(size_t i) {
  if (i < simdnorm::internal::kNumRowKinds) {
    return &simdnorm::internal::kOps[i].info;
  }
  if (i == simdnorm::internal::kNumRowKinds) {
    return &simdnorm::internal::kGroupNormInfo;
  }
  return i == simdnorm::internal::kNumRowKinds + 1
             ? &simdnorm::internal::kBatchNormInfo
             : nullptr;
}

const simdnorm_op_info* simdnorm_op_of(simdnorm_kind kind) {
  int k;  // the raw value: a C caller may pass any int
  std::memcpy(&k, &kind, sizeof(k));
  return k >= 0 ? simdnorm_op_at(static_cast<size_t>(k)) : nullptr;
}

}  // extern "C"

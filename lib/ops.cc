// The registry's entries and the C API over them.
#include "lib/ops.h"

#include <algorithm>
#include <cmath>

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

double MeanSquareRoot(double second, double n, double eps) {
  return std::sqrt(second / n + eps);
}

double NormOrEps(double second, double, double eps) {
  return std::max(std::sqrt(second), eps);
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

const Op kOps[kNumKinds] = {
    {{SIMDNORM_LAYERNORM, "layernorm", "LayerNorm",
      "y = (x - mean) / sqrt(var + eps) * gamma + beta",
      "torch.nn.functional.layer_norm", 1, kFloats, kOutputs, kFloats, kFlags,
      kF32Bound, 1},
     MeanSquareRoot,
     MeanSquareRootWeight},
    {{SIMDNORM_RMSNORM, "rmsnorm", "RMSNorm",
      "y = x / sqrt(mean(x^2) + eps) * gamma + beta",
      "torch.nn.functional.rms_norm", 0, kFloats, kOutputs, kFloats, kFlags,
      kF32Bound, 1},
     MeanSquareRoot,
     MeanSquareRootWeight},
    {{SIMDNORM_L2NORM, "l2norm", "L2Norm",
      "y = x / max(sqrt(sum(x^2)), eps) * gamma + beta",
      "torch.nn.functional.normalize", 0, kFloats, kOutputs, kFloats, kFlags,
      kF32Bound, 1},
     NormOrEps,
     NormOrEpsWeight},
};

}  // namespace internal
}  // namespace simdnorm

extern "C" {

size_t simdnorm_op_count(void) { return simdnorm::internal::kNumKinds; }

const simdnorm_op_info* simdnorm_op_at(size_t i) {
  return i < simdnorm::internal::kNumKinds ? &simdnorm::internal::kOps[i].info
                                           : nullptr;
}

const simdnorm_op_info* simdnorm_op_of(simdnorm_kind kind) {
  const simdnorm::internal::Op* op =
      simdnorm::internal::OpOf(static_cast<int>(kind));
  return op ? &op->info : nullptr;
}

}  // extern "C"

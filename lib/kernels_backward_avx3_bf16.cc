// The backward kernels for AVX3_BF16: Highway's AVX3 target plus the
// AVX512_BF16 conversions for bf16 stores of dx, compiled as
// avx3_bf16_target.h sets up: those of bf16 dx (the others are AVX3's,
// isa.cc). Empty with a Highway that has AVX3_ZEN4.
#include "lib/avx3_bf16_target.h"

#if !defined(HWY_AVX3_ZEN4)

#include "lib/backward.h"
#include "lib/backward_rows-inl.h"

// The table is data, filled at compile time: no target attributes here.
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

constexpr BackwardKernels kBackwardKernels;

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm

namespace simdnorm {
namespace internal {

const TargetBackward kAvx3Bf16BackwardKernels = {
    kTargetAvx3Bf16, "AVX3_BF16", &N_AVX3_BF16::kBackwardKernels.table};

}  // namespace internal
}  // namespace simdnorm

#endif  // !defined(HWY_AVX3_ZEN4)

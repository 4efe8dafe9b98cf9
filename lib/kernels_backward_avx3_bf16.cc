// The backward kernels for AVX3_BF16: Highway's AVX3 target plus the
// AVX512_BF16 conversions for bf16 stores of dx, compiled as
// kernels_avx3_bf16.cc compiles the forward ones (see there: namespace
// simdnorm::N_AVX3_BF16, AVX3's attributes plus "avx512bf16"). Empty with a
// Highway that has AVX3_ZEN4.
#include "hwy/detect_targets.h"

#if !defined(HWY_AVX3_ZEN4)

#define SIMDNORM_NAMESPACE N_AVX3_BF16
#define SIMDNORM_WITH_AVX512BF16 1
#undef HWY_TARGET
#define HWY_TARGET HWY_AVX3
#include "hwy/highway.h"
// After highway.h (its ops keep the AVX3 attributes): our kernels get
// AVX512_BF16 too.
#undef HWY_TARGET_STR
#define HWY_TARGET_STR HWY_TARGET_STR_AVX3 ",avx512bf16"

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

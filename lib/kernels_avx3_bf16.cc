// LayerNorm and RMSNorm kernels for AVX3_BF16: Highway's AVX3 target plus
// the AVX512_BF16 conversions for bf16 stores (convert-inl.h), which
// Highway 1.0.3 has no target for; compiled as avx3_bf16_target.h sets up.
// Only the kernels that write bf16 (x or y bf16: convert-inl.h,
// kCompiledHere); the others are AVX3's (isa.cc).
// With a Highway that has AVX3_ZEN4 (and AVX3_SPR) this file is empty: those
// targets take the same paths in kernels_layernorm.cc and kernels_rmsnorm.cc.
#include "lib/avx3_bf16_target.h"

#if !defined(HWY_AVX3_ZEN4)

#include "lib/kernel_table.h"
#include "lib/norm_rows-inl.h"

// The tables are data, filled at compile time: no target attributes here
// (clang rejects a region of them that holds no function).
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

constexpr KindKernels<0> kLayerNormKernels;
constexpr KindKernels<1> kRMSNormKernels;

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm

namespace simdnorm {
namespace internal {

const TargetKernels kAvx3Bf16LayerNormKernels = {
    kTargetAvx3Bf16, "AVX3_BF16", &N_AVX3_BF16::kLayerNormKernels.table};
const TargetKernels kAvx3Bf16RMSNormKernels = {
    kTargetAvx3Bf16, "AVX3_BF16", &N_AVX3_BF16::kRMSNormKernels.table};

}  // namespace internal
}  // namespace simdnorm

#endif  // !defined(HWY_AVX3_ZEN4)

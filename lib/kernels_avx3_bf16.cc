// LayerNorm and RMSNorm kernels for AVX3_BF16: Highway's AVX3 target plus
// the AVX512_BF16 conversions for bf16 stores (convert-inl.h), which
// Highway 1.0.3 has no target for. Compiled like one target of
// foreach_target.h: the code before the kernels at the library's baseline,
// the kernels under Highway's AVX3 target attributes plus "avx512bf16", in
// namespace simdnorm::N_AVX3_BF16, so that no function here shares a
// mangled name with the dynamic AVX3 build (the linker would keep either).
// With a Highway that has AVX3_ZEN4 (and AVX3_SPR) this file is empty: those
// targets take the same paths in kernels_layernorm.cc and kernels_rmsnorm.cc.
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

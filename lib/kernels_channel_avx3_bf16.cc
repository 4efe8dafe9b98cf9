// The GroupNorm and BatchNorm forward kernels for AVX3_BF16: Highway's AVX3
// target plus the AVX512_BF16 conversions, compiled as avx3_bf16_target.h
// sets up. Their correctly rounded bf16 y round both ends of each lane's
// bound by VCVTNEPS2BF16 (channel_checked-inl.h, StoreLean). Only the
// kernels of bf16 x or y; the others, and the backward passes, are AVX3's
// (isa.cc). Empty with a Highway that has AVX3_ZEN4.
#include "lib/avx3_bf16_target.h"

#if !defined(HWY_AVX3_ZEN4)

#include "lib/batch_norm.h"
#include "lib/batch_rows-inl.h"
#include "lib/group_norm.h"
#include "lib/group_rows-inl.h"

// The tables are data, filled at compile time: no target attributes here.
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

constexpr GroupKernels kGroupKernels;
constexpr BatchKernels kBatchKernels;

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm

namespace simdnorm {
namespace internal {

const TargetGroup kAvx3Bf16GroupKernels = {kTargetAvx3Bf16, "AVX3_BF16",
                                           &N_AVX3_BF16::kGroupKernels.table};
const TargetBatch kAvx3Bf16BatchKernels = {kTargetAvx3Bf16, "AVX3_BF16",
                                           &N_AVX3_BF16::kBatchKernels.table};

}  // namespace internal
}  // namespace simdnorm

#endif  // !defined(HWY_AVX3_ZEN4)

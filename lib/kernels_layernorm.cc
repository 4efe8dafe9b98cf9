// layernorm kernels for every Highway target, registered in the kernel table.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/kernels_layernorm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "lib/kernel_table.h"
#include "lib/norm_rows-inl.h"
#include "simdnorm/simdnorm.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace HWY_NAMESPACE {

[[maybe_unused]] const bool kLayernormRegistered =
    internal::RegisterKernels(HWY_TARGET, hwy::TargetName(HWY_TARGET),
                              SIMDNORM_LAYERNORM, KindKernels<0>().table);

int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace simdnorm {
namespace internal {

HWY_EXPORT(CompiledTarget);

int64_t BestTarget() { return HWY_DYNAMIC_DISPATCH(CompiledTarget)(); }

}  // namespace internal
}  // namespace simdnorm
#endif  // HWY_ONCE

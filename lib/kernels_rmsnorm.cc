// rmsnorm kernels for every Highway target, registered in the kernel table.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/kernels_rmsnorm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "lib/kernel_table.h"
#include "lib/norm_rows-inl.h"
#include "simdnorm/simdnorm.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace HWY_NAMESPACE {

[[maybe_unused]] const bool kRmsnormRegistered =
    internal::RegisterKernels(HWY_TARGET, hwy::TargetName(HWY_TARGET),
                              SIMDNORM_RMSNORM, KindKernels<1>().table);

}  // namespace HWY_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

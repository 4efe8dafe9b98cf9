// RMSNorm kernels, compiled once per Highway target (foreach_target.h) and
// exported to the ISA registry through Highway's dispatch table.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/kernels_rmsnorm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "lib/kernel_table.h"
#include "lib/norm_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

constexpr KindKernels<1> kRMSNormKernels;

internal::TargetKernels RMSNormKernels() {
  return {HWY_TARGET, hwy::TargetName(HWY_TARGET), &kRMSNormKernels.table};
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace simdnorm {
namespace internal {

HWY_EXPORT(RMSNormKernels);

// Every entry of the dispatch table is one compiled target's function (the
// first re-runs CPU detection, then calls the best one): calling each names
// its target. The registry ignores repeats.
void VisitRMSNormKernels(void (*visit)(const TargetKernels&, void* ctx),
                         void* ctx) {
  for (const auto fn : HWY_DISPATCH_TABLE(RMSNormKernels)) {
    if (fn != nullptr) visit(fn(), ctx);
  }
}

}  // namespace internal
}  // namespace simdnorm
#endif  // HWY_ONCE

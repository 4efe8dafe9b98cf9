// GroupNorm backward kernels, compiled once per Highway target
// (foreach_target.h) and exported to the ISA registry through Highway's
// dispatch table.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/kernels_group_backward.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "lib/group_backward-inl.h"
#include "lib/group_backward.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

constexpr GroupBackwardKernels kGroupBackwardKernels;

internal::TargetGroupBackward TargetGroupBackwardKernels() {
  return {HWY_TARGET, hwy::TargetName(HWY_TARGET),
          &kGroupBackwardKernels.table};
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace simdnorm {
namespace internal {

HWY_EXPORT(TargetGroupBackwardKernels);

// As VisitGroupKernels (kernels_group.cc).
void VisitGroupBackwardKernels(void (*visit)(const TargetGroupBackward&,
                                             void* ctx),
                               void* ctx) {
  for (const auto fn : HWY_DISPATCH_TABLE(TargetGroupBackwardKernels)) {
    if (fn != nullptr) visit(fn(), ctx);
  }
}

}  // namespace internal
}  // namespace simdnorm
#endif  // HWY_ONCE

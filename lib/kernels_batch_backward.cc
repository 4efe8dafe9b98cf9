// BatchNorm backward kernels, compiled once per Highway target
// (foreach_target.h) and exported to the ISA registry through Highway's
// dispatch table.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "lib/kernels_batch_backward.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// Must come after foreach_target.h.
#include "hwy/highway.h"
#include "lib/batch_backward-inl.h"
#include "lib/batch_backward.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

constexpr BatchBackwardKernels kBatchBackwardKernels;

internal::TargetBatchBackward TargetBatchBackwardKernels() {
  return {HWY_TARGET, hwy::TargetName(HWY_TARGET),
          &kBatchBackwardKernels.table};
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace simdnorm {
namespace internal {

HWY_EXPORT(TargetBatchBackwardKernels);

// As VisitLayerNormKernels (kernels_layernorm.cc): each entry of the
// dispatch table names its target; the registry ignores repeats.
void VisitBatchBackwardKernels(void (*visit)(const TargetBatchBackward&,
                                             void* ctx),
                               void* ctx) {
  for (const auto fn : HWY_DISPATCH_TABLE(TargetBatchBackwardKernels)) {
    if (fn != nullptr) visit(fn(), ctx);
  }
}

}  // namespace internal
}  // namespace simdnorm
#endif  // HWY_ONCE

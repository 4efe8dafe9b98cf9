// GroupNorm's backward pass (simdnorm_group_norm_backward): the validated
// problem, the kernels' signature and table, and the entry points. Plain
// C++ (no SIMD types), shared by the per-target kernels
// (group_backward-inl.h), dispatch (isa.cc) and the driver
// (group_backward.cc).
#ifndef SIMDNORM_LIB_GROUP_BACKWARD_H_
#define SIMDNORM_LIB_GROUP_BACKWARD_H_

#include <cstddef>
#include <cstdint>

#include "lib/group_norm.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// One call's operands, validated.
struct GroupBackwardArgs {
  // What the forward's statistics code reads: c, hw, groups, cg, x, eps
  // (y, gamma and beta are null).
  GroupArgs stats;
  const void* dy;
  int dy_type;  // simdnorm_dtype
  void* dx;
  int dx_type;
  const float* gamma;  // c floats (1 where the caller passed none)
  // n * c floats, [sample][channel], or null when not wanted: each
  // sample's sums over its positions of dy * xhat and of dy.
  float* dgamma_part;
  float* dbeta_part;
  // The forward's saved statistics (simdnorm_group_backward_desc's mean,
  // rstd): null (both), or n * groups floats each, indexed by sample *
  // groups + group.
  const float* mean = nullptr;
  const float* rstd = nullptr;
};

// Units [begin, end) as the forward's: (sample, group) pairs for NCHW,
// samples for NHWC. A unit writes only its own dx and its own entries of
// the partial sums, so any partition gives the same bits.
using GroupBackwardFn = void (*)(const GroupBackwardArgs& args, size_t begin,
                                 size_t end);

// [layout][x_type]; dy and dx types are converted at run time (each unit
// goes through fp32 chunks), so that the kernels stay few.
using GroupBackwardTable = GroupBackwardFn[kNumLayouts][kNumInTypes];

struct TargetGroupBackward {
  int64_t target;
  const char* name;
  const GroupBackwardTable* table;
};

// Calls `visit` for each target the kernels were compiled for
// (kernels_group_backward.cc); a target may come twice. AVX3_BF16 uses
// AVX3's (isa.cc).
void VisitGroupBackwardKernels(void (*visit)(const TargetGroupBackward&,
                                             void* ctx),
                               void* ctx);

struct GroupBackwardProblem {
  GroupBackwardArgs args;  // gamma and the partials are the driver's
  size_t n;
  int layout, x_type, param_type;
  const void* gamma;
  float* dgamma;
  float* dbeta;
};

// SIMDNORM_OK with *p filled, or the status of the first problem found, in
// the order of simdnorm.h.
simdnorm_status ValidateGroupBackward(const simdnorm_group_backward_desc* d,
                                      GroupBackwardProblem* p);

// The entry points over a whole descriptor (group_backward.cc,
// reference_group_backward.cc).
Status GroupBackward(const simdnorm_group_backward_desc& d);
Status GroupBackwardReference(const simdnorm_group_backward_desc& d);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_GROUP_BACKWARD_H_

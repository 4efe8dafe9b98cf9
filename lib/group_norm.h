// GroupNorm (simdnorm_group_norm): the validated problem, the kernels'
// signature and table, and the entry points. Plain C++ (no SIMD types),
// shared by the per-target kernels (group_rows-inl.h), dispatch (isa.cc)
// and the driver (group_norm.cc).
#ifndef SIMDNORM_LIB_GROUP_NORM_H_
#define SIMDNORM_LIB_GROUP_NORM_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "lib/kernel_table.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// One call's operands, validated. The weights are made fp32 by the driver
// (c floats each, never null: 1 and -0 where the caller passed none;
// t * g + -0 == t * g bit for bit).
struct GroupArgs {
  size_t c, hw, groups, cg;  // cg = c / groups
  const void* x;
  void* y;
  const float* gamma;
  const float* beta;
  float eps;
  // bf16 and f16 y correctly rounded (not SIMDNORM_FAST_ROUNDING).
  bool correct_rounding = false;
  // Saved statistics (simdnorm_group_desc's mean_out, rstd_out): null or
  // n * groups floats, indexed by sample * groups + group.
  float* mean_out = nullptr;
  float* rstd_out = nullptr;
};

// Saves the statistics of group `index` (GroupArgs::mean_out, rstd_out,
// when wanted) from its double mean and second = sum((x - mean)^2) over
// its cg * hw elements: the mean and 1 / sqrt(second / m + eps), each
// rounded once to fp32; both NaN when the mean is not finite (a NaN or an
// inf in the group, whose second may then be anything), as the rows'
// (norm_rows-inl.h's SaveStats).
inline void SaveGroupStats(const GroupArgs& a, size_t index, double mean,
                           double second) {
  const bool finite = std::isfinite(mean);
  if (a.mean_out != nullptr) {
    a.mean_out[index] = finite ? static_cast<float>(mean) : NAN;
  }
  if (a.rstd_out != nullptr) {
    const double m = static_cast<double>(a.cg * a.hw);
    a.rstd_out[index] =
        finite ? static_cast<float>(
                     1.0 / std::sqrt(second / m + static_cast<double>(a.eps)))
               : NAN;
  }
}

// Units [begin, end): (sample, group) pairs, unit = sample * groups +
// group, for NCHW; samples for NHWC. A unit's result depends only on that
// unit, so any partition gives the same bits.
using GroupFn = void (*)(const GroupArgs& args, size_t begin, size_t end);

inline constexpr int kNumLayouts = 2;  // SIMDNORM_NCHW, SIMDNORM_NHWC

// [layout][x_type][y_type]
using GroupTable = GroupFn[kNumLayouts][kNumInTypes][kNumInTypes];

struct TargetGroup {
  int64_t target;
  const char* name;
  const GroupTable* table;
};

// Calls `visit` for each target the group kernels were compiled for
// (kernels_group.cc); a target may come twice. simdnorm's AVX3_BF16 has
// its own table (kernels_channel_avx3_bf16.cc, isa.cc).
void VisitGroupKernels(void (*visit)(const TargetGroup&, void* ctx), void* ctx);
extern const TargetGroup kAvx3Bf16GroupKernels;

struct GroupProblem {
  GroupArgs args;  // gamma and beta are null here: the driver makes them
  size_t n;
  int layout, x_type, y_type, param_type;
  const void* gamma;
  const void* beta;
};

// SIMDNORM_OK with *p filled, or the status of the first problem found, in
// the order of simdnorm.h. With n == 0 only p->n is set.
simdnorm_status ValidateGroup(const simdnorm_group_desc* d, GroupProblem* p);

// The entry points over a whole descriptor (group_norm.cc,
// reference_group.cc).
Status GroupNorm(const simdnorm_group_desc& d);
Status GroupNormReference(const simdnorm_group_desc& d);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_GROUP_NORM_H_

// BatchNorm's backward pass (simdnorm_batch_norm_backward): the validated
// problem, the kernels' signature and table, and the entry points, as
// batch_norm.h for the forward.
#ifndef SIMDNORM_LIB_BATCH_BACKWARD_H_
#define SIMDNORM_LIB_BATCH_BACKWARD_H_

#include <cstddef>
#include <cstdint>

#include "lib/batch_norm.h"
#include "lib/kernel_table.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// One call's operands, validated. gamma is fp32 (c floats, 1 where the
// caller gave none), made by the driver.
struct BatchBackwardArgs {
  size_t n, c, hw;
  const void* x;
  const void* dy;
  void* dx;  // may be dy
  const float* gamma;
  // Inference: the running statistics the forward normalized by.
  const float* running_mean;
  const float* running_var;
  // Training: the forward's saved statistics (save_mean, save_invstd of
  // simdnorm_batch_backward_desc), c floats each, or null (both).
  const float* save_mean = nullptr;
  const float* save_invstd = nullptr;
  float eps;
  bool training;
  // c floats each or null: each channel's sum(dy * xhat) and sum(dy),
  // written by the unit that owns the channel.
  float* dgamma;
  float* dbeta;
};

// NHWC units: blocks of this many channels (the last may be shorter),
// wider than the forward's kBatchBlock: a pass over a block walks
// columns c elements apart, and 64 f32 channels make whole 256-byte runs
// per position (16 made 64-byte runs: 4-6x memcpy's time in training).
// A channel's results never depend on its block.
inline constexpr size_t kBatchGradBlock = 64;

// Units [begin, end): channels (NCHW) or blocks of kBatchGradBlock
// channels (NHWC). A channel's results depend only on its own elements.
using BatchBackwardFn = void (*)(const BatchBackwardArgs& args, size_t begin,
                                 size_t end);

// [layout][x_type][dy_type][dx_type]
using BatchBackwardTable =
    BatchBackwardFn[kNumLayouts][kNumInTypes][kNumInTypes][kNumInTypes];

struct TargetBatchBackward {
  int64_t target;
  const char* name;
  const BatchBackwardTable* table;
};

// Calls `visit` for each target the kernels were compiled for
// (kernels_batch_backward.cc); AVX3_BF16 uses AVX3's (isa.cc).
void VisitBatchBackwardKernels(void (*visit)(const TargetBatchBackward&,
                                             void* ctx),
                               void* ctx);

struct BatchBackwardProblem {
  BatchBackwardArgs args;  // gamma is null here: the driver makes it
  int layout, x_type, dy_type, dx_type, param_type;
  const void* gamma;
};

// SIMDNORM_OK with *p filled, or the status of the first problem found, in
// the order of simdnorm.h. With n == 0 only p->args.n, c, dgamma and dbeta
// are set.
simdnorm_status ValidateBatchBackward(const simdnorm_batch_backward_desc* d,
                                      BatchBackwardProblem* p);

// The entry points over a whole descriptor (batch_backward.cc,
// reference_batch_backward.cc).
Status BatchBackward(const simdnorm_batch_backward_desc& d);
Status BatchBackwardReference(const simdnorm_batch_backward_desc& d);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_BATCH_BACKWARD_H_

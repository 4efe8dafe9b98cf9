// BatchNorm (simdnorm_batch_norm): the validated problem, the kernels'
// signature and table, and the entry points, as group_norm.h for
// GroupNorm.
#ifndef SIMDNORM_LIB_BATCH_NORM_H_
#define SIMDNORM_LIB_BATCH_NORM_H_

#include <cstddef>
#include <cstdint>

#include "lib/group_norm.h"
#include "lib/kernel_table.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// NHWC kernels take channels in blocks of this many (the last may be
// shorter): a channel's results never depend on its block, so any split
// gives the same bits.
inline constexpr size_t kBatchBlock = 16;
// NHWC inference's unit: positions (rows of c elements) in memory order.
inline constexpr size_t kBatchInferenceRows = 256;

// One call's operands, validated. The weights are fp32, made by the
// driver as for GroupNorm (1 and -0 where absent).
struct BatchArgs {
  size_t n, c, hw;
  const void* x;
  void* y;
  const float* gamma;
  const float* beta;
  // Inference: the running statistics the channels are normalized by.
  const float* running_mean;
  const float* running_var;
  float eps;
  bool training;
  // Training: each channel's mean and population variance (c each),
  // written by the kernels for the driver's updates.
  double* mean;
  double* var;
  // bf16 and f16 y correctly rounded (not SIMDNORM_FAST_ROUNDING).
  bool correct_rounding = false;
};

// Units [begin, end): channels (NCHW training), planes of hw elements in
// memory order (NCHW inference: n * c of them), blocks of kBatchBlock
// channels (NHWC training) or of kBatchInferenceRows positions (NHWC
// inference).
using BatchFn = void (*)(const BatchArgs& args, size_t begin, size_t end);

// [layout][x_type][y_type]
using BatchTable = BatchFn[kNumLayouts][kNumInTypes][kNumInTypes];

struct TargetBatch {
  int64_t target;
  const char* name;
  const BatchTable* table;
};

// Calls `visit` for each target the batch kernels were compiled for
// (kernels_batch.cc); AVX3_BF16's are kAvx3Bf16BatchKernels
// (kernels_channel_avx3_bf16.cc).
void VisitBatchKernels(void (*visit)(const TargetBatch&, void* ctx), void* ctx);
extern const TargetBatch kAvx3Bf16BatchKernels;

struct BatchProblem {
  BatchArgs args;  // gamma, beta, mean and var are null here
  int layout, x_type, y_type, param_type;
  const void* gamma;
  const void* beta;
  float* running_mean;  // null or c floats (both or neither)
  float* running_var;
  float* save_mean;  // training only: null or c floats
  float* save_invstd;
  float momentum;
};

// SIMDNORM_OK with *p filled, or the status of the first problem found, in
// the order of simdnorm.h. With n == 0 only p->args.n is set.
simdnorm_status ValidateBatch(const simdnorm_batch_desc* d, BatchProblem* p);

// Training, after the kernels: the channel's statistics normalized (a
// non-finite mean or var makes both NaN), then save_* and the running
// statistics from them in double, each rounded once (shared by the
// kernels' driver and the reference).
void BatchUpdate(const BatchProblem& p, size_t ch, double mean, double var);

// The entry points over a whole descriptor (batch_norm.cc,
// reference_batch.cc).
Status BatchNorm(const simdnorm_batch_desc& d);
Status BatchNormReference(const simdnorm_batch_desc& d);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_BATCH_NORM_H_

// The backward pass (simdnorm_backward): the validated problem, the row
// kernels' signature and table, and the entry points. Plain C++ (no SIMD
// types), shared by the per-target kernels (backward_rows-inl.h), dispatch
// (isa.cc) and the driver (backward.cc).
#ifndef SIMDNORM_LIB_BACKWARD_H_
#define SIMDNORM_LIB_BACKWARD_H_

#include <cstddef>
#include <cstdint>

#include "lib/kernel_table.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// One call's operands, validated; strides resolved (never 0).
struct BackwardArgs {
  int kind;
  const void* x;
  size_t x_stride;
  const void* dy;
  size_t dy_stride;
  void* dx;
  size_t dx_stride;
  // cols floats of the scale gamma_offset + gamma (fp32 sum), or null: the
  // constant scale_const (1 + gamma_offset) for every element.
  const float* scale;
  float scale_const;
  size_t cols;
  float eps;
  // The forward's saved statistics, rows floats indexed by row, or null
  // (LayerNorm: both or neither; RMSNorm: rstd; mean null otherwise).
  const float* mean;
  const float* rstd;
  // Pass 3 two rows at a time (dgamma or dbeta wanted and the call's x, dy
  // and dx in the caches: backward.cc); the same bits either way.
  bool pair_rows = false;
  // The call moves more than the caches keep (backward.cc): pass 3 asks
  // for the next row and streams f32 dx (backward_rows-inl.h: Far).
  bool far = false;
};

// dx of rows [row_begin, row_end); with dgamma (dbeta) not null, also the
// sums over these rows, in row order, of dy * xhat (of dy), written (not
// added) to its cols floats. Rows never share state.
using BackwardRowsFn = void (*)(const BackwardArgs& args, size_t row_begin,
                                size_t row_end, float* dgamma, float* dbeta);

// [x_type][dy_type][dx_type]; every kind (the kind is BackwardArgs::kind).
using BackwardTable = BackwardRowsFn[kNumInTypes][kNumInTypes][kNumInTypes];

struct TargetBackward {
  int64_t target;
  const char* name;
  const BackwardTable* table;
};

// Calls `visit` for each target the backward kernels were compiled for
// (kernels_backward.cc); a target may come twice.
void VisitBackwardKernels(void (*visit)(const TargetBackward&, void* ctx),
                          void* ctx);
// simdnorm's own AVX3_BF16 target's (kernels_backward_avx3_bf16.cc).
extern const TargetBackward kAvx3Bf16BackwardKernels;

struct BackwardProblem {
  BackwardArgs args;  // args.scale is null here: the driver makes it
  size_t rows;
  int x_type, dy_type, dx_type, param_type;
  const void* gamma;
  float gamma_offset;  // -0.0f when the caller's is 0: g + -0 == g always
  float* dgamma;
  float* dbeta;
  unsigned flags;  // SIMDNORM_Y_STREAM, SIMDNORM_Y_CACHED (for dx) or 0
};

// SIMDNORM_OK with *p filled, or the status of the first problem found, in
// this order: enums (I8 anywhere: UNSUPPORTED), eps, gamma_offset, flags;
// NULL pointers; shapes and sizes; overlaps. With rows == 0, x, dy and dx
// are not looked at.
simdnorm_status ValidateBackward(const simdnorm_backward_desc* d,
                                 BackwardProblem* p);

// The entry points over a whole descriptor (backward.cc,
// reference_backward.cc).
Status Backward(const simdnorm_backward_desc& d);
Status BackwardReference(const simdnorm_backward_desc& d);

// Rows per block of the sums dgamma and dbeta: each block's rows are added
// in row order in fp32, the blocks' sums in block order in double, so the
// result does not depend on the threads.
inline constexpr size_t kGradBlockRows = 32;

// out[j] = the blocks' partial sums of column j (num_blocks rows of n
// floats) added in block order in double, rounded once: the same bits for
// any split of the work that made the blocks.
void AddBlocks(const float* blocks, size_t num_blocks, size_t n, float* out);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_BACKWARD_H_

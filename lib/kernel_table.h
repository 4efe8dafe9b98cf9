// The kernel table: what each compiled ISA provides, and how it registers.
// Plain C++ (no SIMD types), shared by the per-target kernels and dispatch.
#ifndef SIMDNORM_LIB_KERNEL_TABLE_H_
#define SIMDNORM_LIB_KERNEL_TABLE_H_

#include <cstddef>
#include <cstdint>

#include "lib/ops.h"

// The namespace of the per-target code (lib/*-inl.h, lib/kernels_*.cc):
// Highway's, except in a file that compiles a target Highway does not know
// under one of its own (kernels_avx3_bf16.cc: Highway's AVX3 plus
// AVX512_BF16), so that its functions never share a mangled name, and so
// the linker's choice, with those of the target it extends.
#ifndef SIMDNORM_NAMESPACE
#define SIMDNORM_NAMESPACE HWY_NAMESPACE
#endif

namespace simdnorm {
namespace internal {

inline constexpr int kNumInTypes = 3;   // x and weights: F32, BF16, F16
inline constexpr int kNumOutTypes = 4;  // y: also I8

// One call's operands, validated. Strides are in elements; gamma and beta
// may be null (= 1 and 0).
struct RowArgs {
  int kind;  // simdnorm_kind: the uncentered kernels serve several
  const void* x;
  size_t x_stride;
  void* y;
  size_t y_stride;
  const void* gamma;
  const void* beta;
  size_t cols;
  float eps;
  // Fused residual add (null: none); strides resolved. h = x + residual
  // goes to sum_out when not null.
  const void* residual;
  size_t residual_stride;
  void* sum_out;
  size_t sum_out_stride;
  float gamma_offset;  // -0.0f when the caller's is 0: x + -0 == x always
  bool round_normalized;
  // bf16 and f16 y correctly rounded (not SIMDNORM_FAST_ROUNDING).
  bool correct_rounding;
  float* y_scale;      // I8 output: scales_per_row floats per row
  size_t quant_group;  // I8 output: resolved (never 0)
  size_t scales_per_row;
  // Write y with non-temporal stores where its rows are vector-aligned: the
  // call moves more data than the caches keep (normalize.cc decides).
  bool stream_y;
  // Saved statistics (simdnorm_desc's mean_out, rstd_out): null or rows
  // floats, indexed by row.
  float* mean_out;
  float* rstd_out;
};

// Normalizes rows [row_begin, row_end). Each row's result depends only on
// that row (never on the range), so any partition gives the same bits.
using RowsFn = void (*)(const RowArgs& args, size_t row_begin, size_t row_end);

// [x_type][y_type][param_type]
using KindTable = RowsFn[kNumInTypes][kNumOutTypes][kNumInTypes];

// The kernels come in two families: centered kinds' (LayerNorm's) and
// uncentered kinds' (RMSNorm's, also L2's: they differ only in the row's
// multiplier, UncenteredMul, taken per row from RowArgs::kind). A kind
// uses its family's table (Op::info.centered).
inline constexpr int kCenteredFamily = 0;
inline constexpr int kUncenteredFamily = 1;
inline int FamilyOf(int kind) {
  return IsCentered(kind) ? kCenteredFamily : kUncenteredFamily;
}

// One target's kernels of one family; `name` is hwy::TargetName() or, for
// simdnorm's own target, its name.
struct TargetKernels {
  int64_t target;
  const char* name;
  const KindTable* table;
};

// simdnorm's own target AVX3_BF16 (lib/kernels_avx3_bf16.cc): Highway's
// AVX3 plus AVX512_BF16 for the bf16 stores, for Highway versions without
// AVX3_ZEN4 (whose bit it takes: a lower bit is a better target). Highway's
// dispatch does not know it: isa.cc lists it after its own CPU check.
inline constexpr int64_t kTargetAvx3Bf16 = int64_t{1} << 6;

// Its kernels of each family; data only, so that nothing compiled for it
// runs before that check.
extern const TargetKernels kAvx3Bf16LayerNormKernels;
extern const TargetKernels kAvx3Bf16RMSNormKernels;

// Calls `visit` for each target the kernels of a family were compiled for
// (kernels_layernorm.cc, kernels_rmsnorm.cc); a target may come twice.
void VisitLayerNormKernels(void (*visit)(const TargetKernels&, void* ctx),
                           void* ctx);
void VisitRMSNormKernels(void (*visit)(const TargetKernels&, void* ctx),
                         void* ctx);

// The target Highway's own dynamic dispatch picks on this CPU.
int64_t BestTarget();

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_KERNEL_TABLE_H_

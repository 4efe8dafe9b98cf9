// The backward entry point: validate, make the fp32 scale, run the active
// ISA's kernel over blocks of rows, add the blocks' sums of dgamma and dbeta.
#include "lib/backward.h"

#include <cstddef>
#include <cstring>
#include <memory>

#include "lib/cache_size.h"
#include "lib/correct_rounding.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {
namespace {

// What the workers share.
struct BackwardCall {
  BackwardRowsFn fn;
  const BackwardArgs& args;
  size_t rows;
  float* dgamma_blocks;  // blocks * cols partial sums, or null
  float* dbeta_blocks;
};

// Rows [begin, end), no sums wanted: any split gives the same bits.
void RunRows(void* ctx, size_t begin, size_t end) {
  const BackwardCall& c = *static_cast<const BackwardCall*>(ctx);
  c.fn(c.args, begin, end, nullptr, nullptr);
}

// Blocks [begin, end) of kGradBlockRows rows, each with its own sums.
void RunBlocks(void* ctx, size_t begin, size_t end) {
  const BackwardCall& c = *static_cast<const BackwardCall*>(ctx);
  const size_t n = c.args.cols;
  for (size_t b = begin; b < end; ++b) {
    const size_t row_end = c.rows - b * kGradBlockRows > kGradBlockRows
                               ? (b + 1) * kGradBlockRows
                               : c.rows;
    c.fn(c.args, b * kGradBlockRows, row_end,
         c.dgamma_blocks ? c.dgamma_blocks + b * n : nullptr,
         c.dbeta_blocks ? c.dbeta_blocks + b * n : nullptr);
  }
}

}  // namespace

void AddBlocks(const float* blocks, size_t num_blocks, size_t n, float* out) {
  // Each column's sum in block order, as a loop over the blocks for each
  // column would add it (the same bits), but kColumns columns at a time,
  // block by block: contiguous, vectorized, where the column-by-column loop
  // read one float per cache line (~10 % of a LayerNorm backward of 64 or
  // 4096 rows of 896).
  constexpr size_t kColumns = 256;
  double sums[kColumns];
  for (size_t j0 = 0; j0 < n; j0 += kColumns) {
    const size_t m = n - j0 < kColumns ? n - j0 : kColumns;
    for (size_t j = 0; j < m; ++j) sums[j] = 0.0;
    for (size_t b = 0; b < num_blocks; ++b) {
      const float* row = blocks + b * n + j0;
      for (size_t j = 0; j < m; ++j) sums[j] += row[j];
    }
    for (size_t j = 0; j < m; ++j) out[j0 + j] = static_cast<float>(sums[j]);
  }
}

Status Backward(const simdnorm_backward_desc& d) {
  BackwardProblem p;
  const simdnorm_status s = ValidateBackward(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  BackwardArgs& a = p.args;
  const size_t n = a.cols;
  if (p.rows == 0) {  // the sums over no rows
    if (p.dgamma) std::memset(p.dgamma, 0, n * sizeof(float));
    if (p.dbeta) std::memset(p.dbeta, 0, n * sizeof(float));
    return Status::kOk;
  }
  // One allocation at most: the fp32 scale unless gamma is usable as it is
  // (F32 with no offset: gamma + -0 == gamma), then the blocks' sums.
  const bool make_scale = p.gamma != nullptr &&
                          (p.param_type != SIMDNORM_F32 || p.gamma_offset != 0);
  const size_t blocks = (p.rows - 1) / kGradBlockRows + 1;
  const size_t num_sums = (p.dgamma ? 1 : 0) + (p.dbeta ? 1 : 0);
  const size_t floats = (make_scale ? n : 0) + num_sums * blocks * n;
  std::unique_ptr<float[]> buffer(floats ? new float[floats] : nullptr);
  float* next = buffer.get();
  if (make_scale) {
    const auto pt = static_cast<simdnorm_dtype>(p.param_type);
    for (size_t j = 0; j < n; ++j) {
      next[j] = p.gamma_offset + LoadAsFloat(p.gamma, pt, j);  // fp32 sum
    }
    a.scale = next;
    next += n;
  } else {
    a.scale = static_cast<const float*>(p.gamma);
  }
  // Pass 3 by row pairs halves the loads and stores of dgamma and dbeta,
  // but out of the caches it loses the overlap of one row's arithmetic
  // with the next row's reads (LayerNorm f32 896, one thread, Zen 5: 1.1-
  // 1.2x faster up to 1024 rows, 1.3x slower from 2048).
  const size_t bytes = ElementSize(static_cast<simdnorm_dtype>(p.x_type)) +
                       ElementSize(static_cast<simdnorm_dtype>(p.dy_type)) +
                       ElementSize(static_cast<simdnorm_dtype>(p.dx_type));
  a.far = AroundCaches(p.flags, p.rows * n * bytes);
  a.pair_rows = num_sums > 0 && !a.far;
  BackwardCall call{ActiveIsa().backward[p.x_type][p.dy_type][p.dx_type], a,
                    p.rows, nullptr, nullptr};
  if (num_sums == 0) {
    ParallelRanges(p.rows, n, d.max_threads, RunRows, &call);
    return Status::kOk;
  }
  if (p.dgamma) {
    call.dgamma_blocks = next;
    next += blocks * n;
  }
  if (p.dbeta) call.dbeta_blocks = next;
  ParallelRanges(blocks, kGradBlockRows * n, d.max_threads, RunBlocks, &call);
  if (p.dgamma) AddBlocks(call.dgamma_blocks, blocks, n, p.dgamma);
  if (p.dbeta) AddBlocks(call.dbeta_blocks, blocks, n, p.dbeta);
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

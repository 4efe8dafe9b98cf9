// The unfused peers' row loops and the consumer of y (unfused_loops.cc,
// compiled like naive_loops.cc: -O3 -march=native, no -ffast-math). Internal
// to simdnorm_peers; unfused.cc threads the row loops.
#ifndef SIMDNORM_BENCH_PEERS_UNFUSED_LOOPS_H_
#define SIMDNORM_BENCH_PEERS_UNFUSED_LOOPS_H_

#include <cstddef>

#include "simdnorm/simdnorm.h"

namespace simdnorm_peers {
namespace detail {

// Rows [r0, r1): d.sum_out = d.x + d.residual, added in float and rounded
// once to d.x_type (exact for f32; for bf16 the float sum rounded to bf16
// equals the once-rounded exact sum). sum_out may be residual or x. False
// when x_type is neither F32 nor BF16.
bool add_rows(const simdnorm_desc& d, size_t r0, size_t r1);

// Rows [r0, r1) of y (dense f32 rows of d.cols) quantized into d.y (int8,
// d.y_stride apart) and d.y_scale, per group of d.quant_group elements (0 =
// the row): m = max|y|, scale = m / 127, q = round-to-nearest-even(y * (127
// / m)) clamped to [-127, 127]; m == 0 gives scale 0 and q 0, a non-finite
// m gives scale m and q 0.
void quantize_rows(const simdnorm_desc& d, const float* y, size_t r0,
                   size_t r1);

// The next layer reading y: the sum over the rows of dot(y row, w), w
// being d.cols floats; f32 and bf16 y (d.y_stride apart), else NaN.
float dot_rows(const simdnorm_desc& d, const float* w);

}  // namespace detail
}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_UNFUSED_LOOPS_H_

// The fp32 weights of the channel kinds' drivers (group_norm.cc,
// batch_norm.cc), made once per call.
#ifndef SIMDNORM_LIB_CHANNEL_WEIGHTS_H_
#define SIMDNORM_LIB_CHANNEL_WEIGHTS_H_

#include <algorithm>
#include <cstddef>

#include "lib/correct_rounding.h"
#include "lib/scratch.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

// The problem's gamma and beta as fp32 (exact), 1 and -0 where absent, in
// scratch that a.gamma and a.beta then point into (c floats each).
template <class Problem, class Args>
void SetChannelWeights(const Problem& p, Args& a, Scratch& scratch) {
  float* weights = scratch.Take<float>(2 * a.c);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  // fp32 weights copied as they are (a call per element was 2 us of a
  // 1x1280x8x8 GroupNorm's 22).
  const auto set = [&](const void* w, float absent, float* out) {
    if (w == nullptr) {
      std::fill(out, out + a.c, absent);
    } else if (pt == SIMDNORM_F32) {
      std::copy_n(static_cast<const float*>(w), a.c, out);
    } else {
      for (size_t j = 0; j < a.c; ++j) out[j] = LoadAsFloat(w, pt, j);
    }
  };
  set(p.gamma, 1.0f, weights);
  set(p.beta, -0.0f, weights + a.c);
  a.gamma = weights;
  a.beta = weights + a.c;
}

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_CHANNEL_WEIGHTS_H_

// The fp32 weights of the channel kinds' drivers (group_norm.cc,
// batch_norm.cc), made once per call.
#ifndef SIMDNORM_LIB_CHANNEL_WEIGHTS_H_
#define SIMDNORM_LIB_CHANNEL_WEIGHTS_H_

#include <cstddef>
#include <memory>

#include "lib/correct_rounding.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

// The problem's gamma and beta as fp32 (exact), 1 and -0 where absent, in
// one allocation that a.gamma and a.beta then point into (c floats each).
template <class Problem, class Args>
std::unique_ptr<float[]> SetChannelWeights(const Problem& p, Args& a) {
  std::unique_ptr<float[]> weights(new float[2 * a.c]);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < a.c; ++j) {
    weights[j] = p.gamma ? LoadAsFloat(p.gamma, pt, j) : 1.0f;
    weights[a.c + j] = p.beta ? LoadAsFloat(p.beta, pt, j) : -0.0f;
  }
  a.gamma = weights.get();
  a.beta = weights.get() + a.c;
  return weights;
}

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_CHANNEL_WEIGHTS_H_

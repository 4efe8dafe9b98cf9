// The GroupNorm backward entry point: validate, make the fp32 gamma, run
// the active ISA's kernel over (sample, group) units (NCHW) or samples
// (NHWC), add the samples' partial sums of dgamma and dbeta (in sample
// order, in double: AddBlocks).
#include "lib/group_backward.h"

#include <cstring>
#include <memory>

#include "lib/backward.h"
#include "lib/correct_rounding.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"

namespace simdnorm {
namespace internal {
Status GroupBackward(const simdnorm_group_backward_desc& d) {
  GroupBackwardProblem p;
  const simdnorm_status s = ValidateGroupBackward(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  GroupBackwardArgs& a = p.args;
  const size_t c = a.stats.c;
  if (p.n == 0) {  // the sums over no samples
    if (p.dgamma) std::memset(p.dgamma, 0, c * sizeof(float));
    if (p.dbeta) std::memset(p.dbeta, 0, c * sizeof(float));
    return Status::kOk;
  }
  // One allocation: the fp32 gamma, then the samples' partial sums.
  const size_t parts = (p.dgamma ? 1 : 0) + (p.dbeta ? 1 : 0);
  std::unique_ptr<float[]> buffer(new float[c + parts * p.n * c]);
  float* gamma = buffer.get();
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < c; ++j) {
    gamma[j] = p.gamma ? LoadAsFloat(p.gamma, pt, j) : 1.0f;
  }
  a.gamma = gamma;
  float* next = gamma + c;
  if (p.dgamma) {
    a.dgamma_part = next;
    next += p.n * c;
  }
  if (p.dbeta) a.dbeta_part = next;
  const bool nchw = p.layout == SIMDNORM_NCHW;
  ParallelUnits(ActiveIsa().group_backward[p.layout][p.x_type], a,
                nchw ? p.n * a.stats.groups : p.n,
                nchw ? a.stats.cg * a.stats.hw : c * a.stats.hw, d.max_threads);
  if (p.dgamma) AddBlocks(a.dgamma_part, p.n, c, p.dgamma);
  if (p.dbeta) AddBlocks(a.dbeta_part, p.n, c, p.dbeta);
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

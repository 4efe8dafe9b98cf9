// The GroupNorm entry point: validate, make the fp32 weights, run the
// active ISA's kernel over (sample, group) units (NCHW) or samples (NHWC).
#include "lib/group_norm.h"

#include "lib/channel_weights.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"

namespace simdnorm {
namespace internal {
Status GroupNorm(const simdnorm_group_desc& d) {
  GroupProblem p;
  const simdnorm_status s = ValidateGroup(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  if (p.n == 0) return Status::kOk;
  GroupArgs& a = p.args;
  Scratch scratch;
  SetChannelWeights(p, a, scratch);
  const bool nchw = p.layout == SIMDNORM_NCHW;
  ParallelUnits(ActiveIsa().group[p.layout][p.x_type][p.y_type], a,
                nchw ? p.n * a.groups : p.n, nchw ? a.cg * a.hw : a.c * a.hw,
                d.max_threads);
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

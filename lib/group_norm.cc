// The GroupNorm entry point: validate, make the fp32 weights, run the
// active ISA's kernel over (sample, group) units (NCHW) or samples (NHWC).
#include "lib/group_norm.h"

#include <memory>

#include "lib/correct_rounding.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"

namespace simdnorm {
namespace internal {
namespace {

struct GroupCall {
  GroupFn fn;
  const GroupArgs& args;
};

void RunUnits(void* ctx, size_t begin, size_t end) {
  const GroupCall& c = *static_cast<const GroupCall*>(ctx);
  c.fn(c.args, begin, end);
}

}  // namespace

Status GroupNorm(const simdnorm_group_desc& d) {
  GroupProblem p;
  const simdnorm_status s = ValidateGroup(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  if (p.n == 0) return Status::kOk;
  GroupArgs& a = p.args;
  // The weights as fp32 (exact), 1 and -0 where absent: one allocation.
  std::unique_ptr<float[]> weights(new float[2 * a.c]);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < a.c; ++j) {
    weights[j] = p.gamma ? LoadAsFloat(p.gamma, pt, j) : 1.0f;
    weights[a.c + j] = p.beta ? LoadAsFloat(p.beta, pt, j) : -0.0f;
  }
  a.gamma = weights.get();
  a.beta = weights.get() + a.c;
  const GroupCall call{ActiveIsa().group[p.layout][p.x_type][p.y_type], a};
  const bool nchw = p.layout == SIMDNORM_NCHW;
  ParallelRanges(nchw ? p.n * a.groups : p.n, nchw ? a.cg * a.hw : a.c * a.hw,
                 d.max_threads, RunUnits, const_cast<GroupCall*>(&call));
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

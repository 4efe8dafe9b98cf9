// The BatchNorm backward entry point: validate, make the fp32 gamma, run
// the active ISA's kernel over channels (NCHW) or channel blocks (NHWC).
// Each unit holds whole channels and writes their dgamma and dbeta itself:
// no sums cross units, so nothing depends on the threads.
#include "lib/batch_backward.h"

#include <cstring>
#include <memory>

#include "lib/correct_rounding.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"

namespace simdnorm {
namespace internal {

Status BatchBackward(const simdnorm_batch_backward_desc& d) {
  BatchBackwardProblem p;
  const simdnorm_status s = ValidateBatchBackward(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  BatchBackwardArgs& a = p.args;
  if (a.n == 0) {  // the sums over no elements
    if (a.dgamma) std::memset(a.dgamma, 0, a.c * sizeof(float));
    if (a.dbeta) std::memset(a.dbeta, 0, a.c * sizeof(float));
    return Status::kOk;
  }
  // The one allocation: gamma as fp32 (exact), 1 where absent.
  const std::unique_ptr<float[]> gamma(new float[a.c]);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < a.c; ++j) {
    gamma[j] = p.gamma ? LoadAsFloat(p.gamma, pt, j) : 1.0f;
  }
  a.gamma = gamma.get();
  const bool nchw = p.layout == SIMDNORM_NCHW;
  const size_t units =
      nchw ? a.c : (a.c + kBatchGradBlock - 1) / kBatchGradBlock;
  // Work per unit: training reads x three times (or five) and dy twice.
  ParallelUnits(
      ActiveIsa().batch_backward[p.layout][p.x_type][p.dy_type][p.dx_type], a,
      units, a.n * a.hw * (nchw ? 1 : kBatchGradBlock) * 4, d.max_threads);
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

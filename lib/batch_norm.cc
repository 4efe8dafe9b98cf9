// The BatchNorm entry point: validate, make the fp32 weights, run the
// active ISA's kernel over channels (NCHW) or channel blocks (NHWC), then
// (training) the running statistics and save_* per channel.
#include "lib/batch_norm.h"

#include <cmath>
#include <limits>

#include "lib/channel_weights.h"
#include "lib/isa.h"
#include "lib/parallel_rows.h"

namespace simdnorm {
namespace internal {
void BatchUpdate(const BatchProblem& p, size_t ch, double mean, double var) {
  if (!std::isfinite(mean) || !std::isfinite(var)) {
    mean = var = std::numeric_limits<double>::quiet_NaN();
  }
  const double m = static_cast<double>(p.args.n) * p.args.hw;
  if (p.save_mean) p.save_mean[ch] = static_cast<float>(mean);
  if (p.save_invstd) {
    p.save_invstd[ch] = static_cast<float>(
        1.0 / std::sqrt(var + static_cast<double>(p.args.eps)));
  }
  if (p.running_mean) {
    const double mom = p.momentum;
    p.running_mean[ch] =
        static_cast<float>((1.0 - mom) * p.running_mean[ch] + mom * mean);
    p.running_var[ch] = static_cast<float>((1.0 - mom) * p.running_var[ch] +
                                           mom * (var * m / (m - 1.0)));
  }
}

Status BatchNorm(const simdnorm_batch_desc& d) {
  BatchProblem p;
  const simdnorm_status s = ValidateBatch(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  BatchArgs& a = p.args;
  if (a.n == 0) return Status::kOk;
  // The fp32 weights, and the training statistics the kernels write.
  Scratch scratch;
  SetChannelWeights(p, a, scratch);
  double* stats = a.training ? scratch.Take<double>(2 * a.c) : nullptr;
  a.mean = stats;
  a.var = a.training ? stats + a.c : nullptr;
  const bool nchw = p.layout == SIMDNORM_NCHW;
  // Units (batch_norm.h): NCHW training a channel, NCHW inference a plane,
  // NHWC training kBatchBlock channels, NHWC inference kBatchInferenceRows
  // positions.
  size_t units, per_unit;
  if (a.training) {
    units = nchw ? a.c : (a.c + kBatchBlock - 1) / kBatchBlock;
    per_unit = a.n * a.hw * (nchw ? 1 : kBatchBlock);
  } else {
    const size_t rows = a.n * a.hw;
    units = nchw ? a.n * a.c
                 : (rows + kBatchInferenceRows - 1) / kBatchInferenceRows;
    per_unit = nchw ? a.hw : kBatchInferenceRows * a.c;
  }
  // Work per unit: training reads x twice (or four times) and writes y.
  ParallelUnits(ActiveIsa().batch[p.layout][p.x_type][p.y_type], a, units,
                per_unit * 2, d.max_threads);
  if (a.training) {
    for (size_t ch = 0; ch < a.c; ++ch)
      BatchUpdate(p, ch, a.mean[ch], a.var[ch]);
  }
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

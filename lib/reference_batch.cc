// The float64 reference of BatchNorm: the formulas of simdnorm.h computed
// directly in double (training: each channel's mean, then the variance
// about it), each output rounded once to its type. It defines what is
// right.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "lib/batch_norm.h"
#include "lib/correct_rounding.h"
#include "lib/reference.h"

namespace simdnorm {
namespace internal {

namespace {

// 16-bit y of one channel (its elements v, at index), correctly rounded:
// the exact result rounded once (lib/correct_rounding.h). Training: a
// LayerNorm row of the channel's elements; inference: GivenMoments' row.
void StoreCorrectlyRounded(const BatchProblem& p, size_t ch,
                           const std::vector<double>& v,
                           const std::vector<size_t>& index) {
  const BatchArgs& a = p.args;
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  const std::vector<float> h(v.begin(), v.end());  // exact: floats
  const size_t m = h.size();
  CrRow cr = LayerNormRow(h.data(), SIMDNORM_F32, yt, m, a.eps, RowStats{});
  CrCache cache;
  Moments mo = Moments::kFinite;
  if (a.training) {
    cr.st =
        RowStatsScalar(SIMDNORM_LAYERNORM, h.data(), SIMDNORM_F32, m, a.eps);
    if (NaNStats(cr.st)) mo = Moments::kNaN;
  } else {
    mo = GivenMoments(a.running_mean[ch], a.running_var[ch], a.eps, &cr.st,
                      &cache);
    cr.n = 1;
  }
  const float g = p.gamma ? LoadAsFloat(p.gamma, pt, ch) : 1.0f;
  const float b = p.beta ? LoadAsFloat(p.beta, pt, ch) : -0.0f;
  for (size_t e = 0; e < m; ++e) {
    uint16_t bits;
    if (mo == Moments::kNaN) {
      bits = RoundExactValue(yt, NAN);
    } else if (mo == Moments::kInfinite) {
      bits = RoundExactValue(
          yt, InferenceInDouble(h[e], a.running_mean[ch], a.running_var[ch],
                                a.eps, g, b));
    } else {
      bits = CorrectlyRoundedBits(cr, e, g, b, cache);
    }
    static_cast<uint16_t*>(a.y)[index[e]] = bits;
  }
}

}  // namespace

Status BatchNormReference(const simdnorm_batch_desc& d) {
  BatchProblem p;
  const simdnorm_status s = ValidateBatch(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  const BatchArgs& a = p.args;
  if (a.n == 0) return Status::kOk;
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  const size_t m = a.n * a.hw;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<size_t> index(m);  // the channel's elements, sample by sample
  std::vector<double> v(m);
  for (size_t ch = 0; ch < a.c; ++ch) {
    for (size_t e = 0; e < m; ++e) {
      const size_t i = e / a.hw, pos = e % a.hw;
      index[e] = p.layout == SIMDNORM_NCHW ? (i * a.c + ch) * a.hw + pos
                                           : (i * a.hw + pos) * a.c + ch;
      v[e] = LoadAsFloat(a.x, xt, index[e]);  // all read before writing
    }
    double mean, var;
    if (a.training) {
      mean = 0.0;
      for (double x : v) mean += x;
      mean /= static_cast<double>(m);
      double second = 0.0;
      for (double x : v) second += (x - mean) * (x - mean);
      var = second / static_cast<double>(m);
    } else {
      mean = a.running_mean[ch];
      var = a.running_var[ch];
    }
    const double denom = std::sqrt(var + static_cast<double>(a.eps));
    // Training: an inf or NaN in the channel, or var + eps = 0: NaN
    // throughout. Inference: running_var + eps not positive.
    const bool nan_channel =
        (a.training && (!std::isfinite(mean) || !std::isfinite(var))) ||
        !(denom > 0.0) || std::isnan(mean);
    const double gamma = p.gamma ? LoadAsFloat(p.gamma, pt, ch) : 1.0;
    const double beta = p.beta ? LoadAsFloat(p.beta, pt, ch) : -0.0;
    if (yt != SIMDNORM_F32 && p.args.correct_rounding) {
      StoreCorrectlyRounded(p, ch, v, index);
    } else {
      for (size_t e = 0; e < m; ++e) {
        const double y =
            nan_channel ? nan : (v[e] - mean) / denom * gamma + beta;
        StoreRounded(a.y, yt, index[e], y);
      }
    }
    if (a.training) BatchUpdate(p, ch, mean, var);
  }
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

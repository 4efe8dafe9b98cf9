// The float64 reference of GroupNorm: the formula of simdnorm.h computed
// directly in double (mean, then the variance about it), each output
// rounded once to y_type. It defines what is right.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "lib/correct_rounding.h"
#include "lib/group_norm.h"
#include "lib/reference.h"

namespace simdnorm {
namespace internal {

namespace {

// 16-bit y of one group (its elements v, channel by channel from c0, at
// index), correctly rounded: the exact result rounded once
// (lib/correct_rounding.h), NaN throughout where the kernels' rows are.
void StoreCorrectlyRounded(const GroupProblem& p, const std::vector<double>& v,
                           const std::vector<size_t>& index, size_t c0) {
  const GroupArgs& a = p.args;
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  const std::vector<float> h(v.begin(), v.end());  // exact: floats
  const size_t m = h.size();
  const CrRow cr = LayerNormRow(
      h.data(), SIMDNORM_F32, yt, m, a.eps,
      RowStatsScalar(SIMDNORM_LAYERNORM, h.data(), SIMDNORM_F32, m, a.eps));
  const bool nan = NaNStats(cr.st);
  CrCache cache;
  for (size_t e = 0; e < m; ++e) {
    const size_t ch = c0 + e / a.hw;
    const float g = p.gamma ? LoadAsFloat(p.gamma, pt, ch) : 1.0f;
    const float b = p.beta ? LoadAsFloat(p.beta, pt, ch) : -0.0f;
    const uint16_t bits = nan ? RoundExactValue(yt, NAN)
                              : CorrectlyRoundedBits(cr, e, g, b, cache);
    static_cast<uint16_t*>(a.y)[index[e]] = bits;
  }
}

}  // namespace

Status GroupNormReference(const simdnorm_group_desc& d) {
  GroupProblem p;
  const simdnorm_status s = ValidateGroup(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  const GroupArgs& a = p.args;
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  const size_t m = a.cg * a.hw;
  std::vector<size_t> index(m);  // the group's elements, channel by channel
  std::vector<double> v(m);
  for (size_t i = 0; i < p.n; ++i) {
    for (size_t g = 0; g < a.groups; ++g) {
      for (size_t e = 0; e < m; ++e) {
        const size_t ch = g * a.cg + e / a.hw, pos = e % a.hw;
        index[e] = p.layout == SIMDNORM_NCHW ? (i * a.c + ch) * a.hw + pos
                                             : (i * a.hw + pos) * a.c + ch;
        v[e] = LoadAsFloat(a.x, xt, index[e]);  // all read before writing
      }
      double mean = 0.0, second = 0.0;
      for (double x : v) mean += x;
      mean /= static_cast<double>(m);
      for (double x : v) second += (x - mean) * (x - mean);
      SaveGroupStats(a, i * a.groups + g, mean, second);  // when wanted
      const double denom = std::sqrt(second / static_cast<double>(m) +
                                     static_cast<double>(a.eps));
      // An inf or NaN in the group, or var + eps = 0: NaN throughout.
      const bool nan =
          !std::isfinite(mean) || !std::isfinite(second) || !(denom > 0.0);
      if (yt != SIMDNORM_F32 && p.args.correct_rounding) {
        StoreCorrectlyRounded(p, v, index, g * a.cg);
        continue;
      }
      for (size_t e = 0; e < m; ++e) {
        const size_t ch = g * a.cg + e / a.hw;
        const double gamma = p.gamma ? LoadAsFloat(p.gamma, pt, ch) : 1.0;
        const double beta = p.beta ? LoadAsFloat(p.beta, pt, ch) : -0.0;
        const double y = nan ? std::numeric_limits<double>::quiet_NaN()
                             : (v[e] - mean) / denom * gamma + beta;
        StoreRounded(a.y, yt, index[e], y);
      }
    }
  }
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

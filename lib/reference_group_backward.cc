// The float64 reference of GroupNorm's backward pass: the formulas of
// simdnorm.h (simdnorm_group_norm_backward) computed directly in double,
// each output rounded once. Written from the formulas, not from the
// kernels: per (sample, group) the mean, then the variance about it, xhat
// = (x - mean) / sqrt(var + eps), g = dy * gamma[ch], and
// dx = (g - mean(g) - xhat * mean(g * xhat)) / sqrt(var + eps).
#include <cmath>
#include <vector>

#include "lib/correct_rounding.h"
#include "lib/group_backward.h"
#include "lib/reference.h"

namespace simdnorm {
namespace internal {

Status GroupBackwardReference(const simdnorm_group_backward_desc& d) {
  GroupBackwardProblem p;
  const simdnorm_status s = ValidateGroupBackward(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  const GroupBackwardArgs& a = p.args;
  const GroupArgs& st = a.stats;
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const auto dyt = static_cast<simdnorm_dtype>(a.dy_type);
  const auto dxt = static_cast<simdnorm_dtype>(a.dx_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  const size_t c = st.c, m = st.cg * st.hw;
  const double md = static_cast<double>(m);
  std::vector<double> dgamma(c, 0.0), dbeta(c, 0.0);
  std::vector<size_t> index(m);  // the group's elements, channel by channel
  std::vector<double> x(m), dy(m), g(m), xhat(m);
  for (size_t i = 0; i < p.n; ++i) {
    for (size_t grp = 0; grp < st.groups; ++grp) {
      bool finite = true;
      double mean = 0.0;
      for (size_t e = 0; e < m; ++e) {
        const size_t ch = grp * st.cg + e / st.hw, pos = e % st.hw;
        index[e] = p.layout == SIMDNORM_NCHW ? (i * c + ch) * st.hw + pos
                                             : (i * st.hw + pos) * c + ch;
        // All read before dx (which may be dy) is written.
        x[e] = LoadAsFloat(st.x, xt, index[e]);
        dy[e] = LoadAsFloat(a.dy, dyt, index[e]);
        g[e] = dy[e] * (p.gamma ? LoadAsFloat(p.gamma, pt, ch) : 1.0);
        finite = finite && std::isfinite(x[e]) && std::isfinite(dy[e]);
        mean += x[e];
      }
      mean /= md;
      double second = 0.0;
      for (size_t e = 0; e < m; ++e) second += (x[e] - mean) * (x[e] - mean);
      const double denom = std::sqrt(second / md + static_cast<double>(st.eps));
      double mean_g = 0.0, mean_gx = 0.0;
      for (size_t e = 0; e < m; ++e) {
        xhat[e] = (x[e] - mean) / denom;
        mean_g += g[e];
        mean_gx += g[e] * xhat[e];
      }
      mean_g /= md;
      mean_gx /= md;
      // An inf or NaN in x or dy, or var + eps = 0: NaN dx throughout and
      // NaN terms of dgamma; dbeta's terms are dy as given.
      const bool ok = finite && denom > 0.0 && std::isfinite(denom) &&
                      std::isfinite(mean_g) && std::isfinite(mean_gx);
      for (size_t e = 0; e < m; ++e) {
        const size_t ch = grp * st.cg + e / st.hw;
        dgamma[ch] += ok ? dy[e] * xhat[e] : NAN;
        dbeta[ch] += dy[e];
        const double dx = (g[e] - mean_g - xhat[e] * mean_gx) / denom;
        StoreRounded(a.dx, dxt, index[e], ok ? dx : NAN);
      }
    }
  }
  for (size_t j = 0; j < c; ++j) {
    if (p.dgamma) p.dgamma[j] = static_cast<float>(dgamma[j]);
    if (p.dbeta) p.dbeta[j] = static_cast<float>(dbeta[j]);
  }
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

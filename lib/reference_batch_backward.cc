// The float64 reference of BatchNorm's backward pass: simdnorm.h's
// formulas computed directly in double per channel (training: the mean,
// then the variance about it; g = dy * gamma, its means, then dx), each
// output rounded once. Written from the formulas, not from the kernels.
#include <cmath>
#include <limits>
#include <vector>

#include "lib/batch_backward.h"
#include "lib/correct_rounding.h"
#include "lib/reference.h"

namespace simdnorm {
namespace internal {

Status BatchBackwardReference(const simdnorm_batch_backward_desc& d) {
  BatchBackwardProblem p;
  const simdnorm_status s = ValidateBatchBackward(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  const BatchBackwardArgs& a = p.args;
  if (a.n == 0) {
    for (size_t ch = 0; ch < a.c; ++ch) {
      if (a.dgamma) a.dgamma[ch] = 0.0f;
      if (a.dbeta) a.dbeta[ch] = 0.0f;
    }
    return Status::kOk;
  }
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const auto dyt = static_cast<simdnorm_dtype>(p.dy_type);
  const auto dxt = static_cast<simdnorm_dtype>(p.dx_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  const size_t m = a.n * a.hw;
  const double md = static_cast<double>(m);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<size_t> index(m);  // the channel's elements, sample by sample
  std::vector<double> x(m), dy(m), xhat(m);
  for (size_t ch = 0; ch < a.c; ++ch) {
    bool finite = true;
    for (size_t e = 0; e < m; ++e) {
      const size_t i = e / a.hw, pos = e % a.hw;
      index[e] = p.layout == SIMDNORM_NCHW ? (i * a.c + ch) * a.hw + pos
                                           : (i * a.hw + pos) * a.c + ch;
      x[e] = LoadAsFloat(a.x, xt, index[e]);  // all read before writing
      dy[e] = LoadAsFloat(a.dy, dyt, index[e]);
      finite = finite && std::isfinite(x[e]) && std::isfinite(dy[e]);
    }
    double mean, var;
    if (a.training) {
      mean = 0.0;
      for (double v : x) mean += v;
      mean /= md;
      var = 0.0;
      for (double v : x) var += (v - mean) * (v - mean);
      var /= md;
    } else {
      mean = a.running_mean[ch];
      var = a.running_var[ch];
    }
    const double r = 1.0 / std::sqrt(var + static_cast<double>(a.eps));
    const double gamma = p.gamma ? LoadAsFloat(p.gamma, pt, ch) : 1.0;
    double sum_g = 0.0, sum_gx = 0.0, dgamma = 0.0, dbeta = 0.0;
    for (size_t e = 0; e < m; ++e) {
      xhat[e] = (x[e] - mean) * r;
      sum_g += dy[e] * gamma;
      sum_gx += dy[e] * gamma * xhat[e];
      dgamma += dy[e] * xhat[e];
      dbeta += dy[e];
    }
    // Training: an inf or NaN in x or dy, or var + eps = 0. Inference: no
    // finite r (running_var + eps 0, negative or NaN) or a NaN mean.
    const bool nan_channel =
        !std::isfinite(r) || std::isnan(mean) || (a.training && !finite);
    for (size_t e = 0; e < m; ++e) {
      const double g = dy[e] * gamma;
      const double dx =
          a.training ? r * (g - sum_g / md - xhat[e] * (sum_gx / md)) : g * r;
      StoreRounded(a.dx, dxt, index[e], nan_channel ? nan : dx);
    }
    if (a.dgamma) a.dgamma[ch] = static_cast<float>(nan_channel ? nan : dgamma);
    if (a.dbeta) a.dbeta[ch] = static_cast<float>(dbeta);
  }
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

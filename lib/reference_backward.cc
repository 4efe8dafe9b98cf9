// The float64 reference of the backward pass: the formulas of simdnorm.h
// ("Backward"; derived in docs/accuracy.md) computed directly in double,
// each output rounded once. Written from the formulas, not from the
// kernels: the statistics are plain sums over the row, xhat = (x - center)
// / denominator, and the kind enters through its registry entry (ops.h:
// denominator, sum_weight, centered).
#include <cmath>
#include <cstring>
#include <vector>

#include "lib/backward.h"
#include "lib/correct_rounding.h"
#include "lib/ops.h"
#include "lib/reference.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {
namespace {

// One row's dx (before rounding) and xhat; false when dx is NaN
// throughout (x or dy not finite, or an infinite r or sum).
bool BackwardRow(const Op& op, const std::vector<double>& x,
                 const std::vector<double>& dy,
                 const std::vector<double>& scale, double eps,
                 std::vector<double>& xhat, std::vector<double>& dx) {
  const size_t n = x.size();
  const double nd = static_cast<double>(n);
  bool finite = true;
  for (size_t j = 0; j < n; ++j) {
    finite = finite && std::isfinite(x[j]) && std::isfinite(dy[j]);
  }
  double center = 0.0;
  if (op.info.centered) {
    for (size_t j = 0; j < n; ++j) center += x[j];
    center /= nd;
  }
  double second = 0.0;
  for (size_t j = 0; j < n; ++j) second += (x[j] - center) * (x[j] - center);
  const double denominator = op.denominator(second, nd, eps);
  double sum_g = 0.0, sum_gx = 0.0;
  for (size_t j = 0; j < n; ++j) {
    xhat[j] = (x[j] - center) / denominator;
    const double g = dy[j] * scale[j];
    sum_g += g;
    sum_gx += g * xhat[j];
  }
  // dx = r * (g - a - xhat * c): a = mean(g) for centered kinds, c = w *
  // sum(g * xhat) with w = 2 den den'(second) (ops.h).
  const double a = op.info.centered ? sum_g / nd : 0.0;
  const double c = op.sum_weight(second, nd, eps) * sum_gx;
  for (size_t j = 0; j < n; ++j) {
    dx[j] = (dy[j] * scale[j] - a - xhat[j] * c) / denominator;
  }
  return finite && denominator > 0.0 && std::isfinite(denominator) &&
         std::isfinite(a) && std::isfinite(c);
}

}  // namespace

Status BackwardReference(const simdnorm_backward_desc& d) {
  BackwardProblem p;
  const simdnorm_status s = ValidateBackward(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  const BackwardArgs& a = p.args;
  const size_t n = a.cols;
  const Op& op = *OpOf(a.kind);
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const auto dyt = static_cast<simdnorm_dtype>(p.dy_type);
  const auto dxt = static_cast<simdnorm_dtype>(p.dx_type);
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  // The scale as the forward forms it: gamma_offset + gamma in fp32.
  std::vector<double> scale(n, static_cast<double>(a.scale_const));
  if (p.gamma != nullptr) {
    for (size_t j = 0; j < n; ++j)
      scale[j] = p.gamma_offset + LoadAsFloat(p.gamma, pt, j);
  }
  std::vector<double> x(n), dy(n), xhat(n), dx(n), dgamma(n), dbeta(n);
  for (size_t r = 0; r < p.rows; ++r) {
    for (size_t j = 0; j < n; ++j) {
      x[j] = LoadAsFloat(a.x, xt, r * a.x_stride + j);
      dy[j] = LoadAsFloat(a.dy, dyt, r * a.dy_stride + j);
    }
    const bool ok = BackwardRow(op, x, dy, scale, a.eps, xhat, dx);
    for (size_t j = 0; j < n; ++j) {
      dgamma[j] += dy[j] * xhat[j];
      dbeta[j] += dy[j];
      StoreRounded(a.dx, dxt, r * a.dx_stride + j, ok ? dx[j] : NAN);
    }
  }
  for (size_t j = 0; j < n; ++j) {
    if (p.dgamma) p.dgamma[j] = static_cast<float>(dgamma[j]);
    if (p.dbeta) p.dbeta[j] = static_cast<float>(dbeta[j]);
  }
  return Status::kOk;
}

}  // namespace internal
}  // namespace simdnorm

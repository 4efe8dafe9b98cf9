// The float64 reference: the contract computed in the most direct way, in
// double, rounded once to the output type. It defines what is right.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace {

double Load(const void* base, simdnorm_dtype t, size_t i) {
  if (t == SIMDNORM_F32) return static_cast<const float*>(base)[i];
  return bf16::from_bits(static_cast<const uint16_t*>(base)[i]).to_float();
}

// Rounds a double to the nearest bf16, ties to even, in one step (going
// through float would round twice).
uint16_t RoundToBF16(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFFC0 : 0x7FC0;
  if (std::isinf(v)) return std::signbit(v) ? 0xFF80 : 0x7F80;
  const double a = std::fabs(v);
  double r;
  if (a >= 0x1p-126) {
    const double ulp =
        std::ldexp(1.0, std::ilogb(a) - 7);  // 8 significant bits
    r = std::nearbyint(a / ulp) * ulp;
  } else {
    r = std::nearbyint(a / 0x1p-133) * 0x1p-133;  // subnormal bf16 spacing
  }
  const double kMax = 0x1.FEp127;                         // largest finite bf16
  float f = r > kMax ? INFINITY : static_cast<float>(r);  // exact: r fits
  if (std::signbit(v)) f = -f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return static_cast<uint16_t>(u >> 16);
}

void Store(void* base, simdnorm_dtype t, size_t i, double v) {
  if (t == SIMDNORM_F32) {
    static_cast<float*>(base)[i] = static_cast<float>(v);
  } else {
    static_cast<uint16_t*>(base)[i] = RoundToBF16(v);
  }
}

// One row: out[j] = xhat[j] * gamma[j] + beta[j], all in double.
void ReferenceRow(const simdnorm_desc& d, const internal::Problem& p,
                  size_t row, double* xhat, double* out) {
  const size_t n = p.args.cols;
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const size_t x0 = row * p.args.x_stride;
  for (size_t j = 0; j < n; ++j) xhat[j] = Load(d.x, xt, x0 + j);
  double mean = 0.0, second = 0.0;
  if (p.kind == SIMDNORM_LAYERNORM) {
    for (size_t j = 0; j < n; ++j) mean += xhat[j];
    mean /= static_cast<double>(n);
    for (size_t j = 0; j < n; ++j)
      second += (xhat[j] - mean) * (xhat[j] - mean);
  } else {
    for (size_t j = 0; j < n; ++j) second += xhat[j] * xhat[j];
  }
  const double denom =
      std::sqrt(second / static_cast<double>(n) + static_cast<double>(d.eps));
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < n; ++j) {
    xhat[j] = (xhat[j] - mean) / denom;
    const double g = d.gamma ? Load(d.gamma, pt, j) : 1.0;
    const double b = d.beta ? Load(d.beta, pt, j) : 0.0;
    out[j] = xhat[j] * g + b;
  }
}

}  // namespace

Status reference_f64(const simdnorm_desc& d, double* out, double* xhat) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  if (p.rows == 0) return Status::kOk;
  if (out == nullptr) return Status::kInvalidArgument;
  const size_t n = p.args.cols;
  std::vector<double> row_xhat(n);
  for (size_t r = 0; r < p.rows; ++r) {
    ReferenceRow(d, p, r, row_xhat.data(), out + r * n);
    if (xhat) std::memcpy(xhat + r * n, row_xhat.data(), n * sizeof(double));
  }
  return Status::kOk;
}

Status normalize_reference(const simdnorm_desc& d) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK || p.rows == 0) return static_cast<Status>(s);
  const size_t n = p.args.cols;
  std::vector<double> xhat(n), out(n);
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  for (size_t r = 0; r < p.rows; ++r) {
    // The whole row is read before any of it is written: in place works.
    ReferenceRow(d, p, r, xhat.data(), out.data());
    for (size_t j = 0; j < n; ++j)
      Store(d.y, yt, r * p.args.y_stride + j, out[j]);
  }
  return Status::kOk;
}

}  // namespace simdnorm

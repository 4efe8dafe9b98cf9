// The float64 reference: the contract computed in the most direct way, in
// double, rounded once to the output type. It defines what is right.
#include "lib/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/correct_rounding.h"
#include "lib/descriptor.h"
#include "lib/ops.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace internal {

// Element i of a row of type t (not I8): v rounded once, to nearest-even.
void StoreRounded(void* base, simdnorm_dtype t, size_t i, double v) {
  switch (t) {
    case SIMDNORM_F32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case SIMDNORM_BF16:
      static_cast<uint16_t*>(base)[i] = internal::RoundToBF16Bits(v);
      break;
    case SIMDNORM_F16:
      static_cast<uint16_t*>(base)[i] = internal::RoundToF16Bits(v);
      break;
    case SIMDNORM_I8:
      break;  // quantized per group: StoreI8Row
  }
}

}  // namespace internal

namespace {

using internal::StoreRounded;

double Load(const void* base, simdnorm_dtype t, size_t i) {
  return internal::LoadAsFloat(base, t, i);  // never I8: an output only
}

// The row h (of x_type, as floats: exact) for the correct-rounding code.
internal::CrRow CrRowOf(const internal::Problem& p, const std::vector<float>& h,
                        simdnorm_dtype y_type) {
  const size_t n = p.args.cols;
  return internal::CrRow{p.args.kind,
                         h.data(),
                         SIMDNORM_F32,
                         static_cast<simdnorm_dtype>(p.x_type),
                         p.args.round_normalized,
                         y_type,
                         n,
                         p.args.eps,
                         internal::RowStatsScalar(p.args.kind, h.data(),
                                                  SIMDNORM_F32, n, p.args.eps)};
}

// v rounded once to a floating-point dtype, as a double.
double RoundTo(simdnorm_dtype t, double v) {
  switch (t) {
    case SIMDNORM_F32:
      return static_cast<float>(v);
    case SIMDNORM_BF16:
      return bf16::from_bits(internal::RoundToBF16Bits(v)).to_float();
    case SIMDNORM_F16:
      return internal::F16BitsToDouble(internal::RoundToF16Bits(v));
    case SIMDNORM_I8:
      break;  // never an input
  }
  return NAN;
}

// One row, read in full before anything is written (sum_out may be x or
// residual and y may be x): h = x (+ residual, rounded once to x_type),
// xhat = the normalized h (rounded to x_type with ROUND_NORMALIZED), and
// out = xhat * (gamma_offset + gamma, summed in fp32) + beta, in double.
void ReferenceRow(const simdnorm_desc& d, const internal::Problem& p,
                  size_t row, double* h, double* xhat, double* out) {
  const internal::RowArgs& a = p.args;
  const size_t n = a.cols;
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  for (size_t j = 0; j < n; ++j) {
    h[j] = Load(d.x, xt, row * a.x_stride + j);
    if (d.residual) {
      // Exact in double for bf16 and f16; for f32 the double rounding is
      // harmless (53 >= 2 * 24 + 2), so h is the sum rounded once.
      h[j] =
          RoundTo(xt, h[j] + Load(d.residual, xt, row * a.residual_stride + j));
    }
  }
  // The kind's statistics (lib/ops.cc): of h - mean or of h itself.
  const internal::Op& op = *internal::OpOf(p.args.kind);
  double mean = 0.0, second = 0.0;
  if (op.info.centered) {
    for (size_t j = 0; j < n; ++j) mean += h[j];
    mean /= static_cast<double>(n);
    for (size_t j = 0; j < n; ++j) second += (h[j] - mean) * (h[j] - mean);
  } else {
    for (size_t j = 0; j < n; ++j) second += h[j] * h[j];
  }
  const double denom = op.denominator(second, static_cast<double>(n),
                                      static_cast<double>(d.eps));
  // Saved statistics (simdnorm_desc's mean_out, rstd_out), rounded once.
  if (a.mean_out)
    a.mean_out[row] = std::isfinite(mean) ? static_cast<float>(mean) : NAN;
  if (a.rstd_out) {
    a.rstd_out[row] =
        std::isfinite(mean) ? static_cast<float>(1.0 / denom) : NAN;
  }
  // With ROUND_NORMALIZED and 16-bit x: the exact xhat rounded once.
  const bool round16 = a.round_normalized && xt != SIMDNORM_F32;
  std::vector<float> h32;
  internal::CrRow cr{};
  if (round16) {
    h32.assign(h, h + n);  // exact: h is of x_type
    cr = CrRowOf(p, h32, SIMDNORM_BF16);
  }
  const bool exact16 = round16 && std::isfinite(denom) && denom > 0.0 &&
                       std::isfinite(cr.st.r) && std::isfinite(cr.st.v);
  internal::CrCache cache;
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < n; ++j) {
    xhat[j] = (h[j] - mean) / denom;
    if (exact16) {
      xhat[j] = internal::RoundedXhat(cr, j, cache);
    } else if (a.round_normalized && xt != SIMDNORM_F32) {
      xhat[j] = RoundTo(xt, xhat[j]);  // a row with a NaN or inf
    }
    const float g = d.gamma ? static_cast<float>(Load(d.gamma, pt, j)) : 1.0f;
    const float scale = a.gamma_offset + g;  // fp32 sum, as specified
    const double b = d.beta ? Load(d.beta, pt, j) : -0.0;  // -0: y = xhat * g
    out[j] = xhat[j] * scale + b;
  }
}

// Quantizes one row's out to int8 per group of a.quant_group elements:
// scale = max|y| / 127 (0 for a zero group, max|y| when that is inf or NaN,
// with q = 0 then), q = round-half-even(y / scale) clamped to [-127, 127].
void StoreI8Row(const internal::RowArgs& a, size_t row, const double* out) {
  int8_t* q = static_cast<int8_t*>(a.y) + row * a.y_stride;
  float* scales = a.y_scale + row * a.scales_per_row;
  for (size_t g = 0; g < a.scales_per_row; ++g) {
    const size_t begin = g * a.quant_group;
    const size_t end = std::min(a.cols, begin + a.quant_group);
    double m = 0.0;
    for (size_t j = begin; j < end; ++j) {
      const double mag = std::fabs(out[j]);
      if (std::isnan(mag) || mag > m) m = mag;
      if (std::isnan(m)) break;
    }
    const bool usable = m > 0.0 && std::isfinite(m);
    const double scale = usable ? m / 127.0 : m;
    scales[g] = static_cast<float>(scale);
    for (size_t j = begin; j < end; ++j) {
      const double v = usable ? std::nearbyint(out[j] / scale) : 0.0;
      q[j] = static_cast<int8_t>(std::fmin(127.0, std::fmax(-127.0, v)));
    }
  }
}

// Row r of a bf16, f16 or int8 y from the exact result
// (lib/correct_rounding.h). 1/sqrt is infinite, are NaN throughout: out's
// values as they are.
void StoreCorrectlyRounded(const simdnorm_desc& d, const internal::Problem& p,
                           size_t r, const double* h, const double* out) {
  const internal::RowArgs& a = p.args;
  const size_t n = a.cols;
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  const std::vector<float> row(h, h + n);  // exact: h is of x_type
  const bool finite = std::all_of(row.begin(), row.end(),
                                  [](float v) { return std::isfinite(v); });
  const internal::CrRow cr = CrRowOf(p, row, yt);
  if (!finite || !std::isfinite(cr.st.r)) {
    // NaN rows; RMSNorm with an inf: xhat = +-0 (NaN at the inf), so out is
    // exact.
    if (yt == SIMDNORM_I8) {
      int8_t* q = static_cast<int8_t*>(a.y) + r * a.y_stride;
      float* scales = a.y_scale + r * a.scales_per_row;
      for (size_t g0 = 0; g0 < n; g0 += a.quant_group, ++scales) {
        internal::Int8FromExactValues(
            out + g0, std::min(n, g0 + a.quant_group) - g0, q + g0, scales);
      }
    } else {
      uint16_t* y = static_cast<uint16_t*>(a.y) + r * a.y_stride;
      for (size_t j = 0; j < n; ++j)
        y[j] = internal::RoundExactValue(yt, out[j]);
    }
    return;
  }
  const internal::CrWeights w{d.gamma,
                              d.beta,
                              static_cast<simdnorm_dtype>(p.param_type),
                              a.gamma_offset,
                              1.0f + a.gamma_offset,
                              a.gamma_offset != 0.0f};
  internal::CrCache cache;
  if (yt == SIMDNORM_I8) {
    int8_t* q = static_cast<int8_t*>(a.y) + r * a.y_stride;
    float* scales = a.y_scale + r * a.scales_per_row;
    for (size_t g0 = 0; g0 < n; g0 += a.quant_group, ++scales) {
      const size_t g1 = std::min(n, g0 + a.quant_group);
      internal::CorrectlyRoundedInt8(cr, w, g0, g1, q + g0, scales, cache);
    }
    return;
  }
  uint16_t* y = static_cast<uint16_t*>(a.y) + r * a.y_stride;
  for (size_t j = 0; j < n; ++j) {
    y[j] = internal::CorrectlyRoundedBits(cr, j, w.G(j), w.B(j), cache);
  }
}

}  // namespace

namespace internal {

Status ReferenceF64(const simdnorm_desc& d, double* out, double* xhat) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK) return static_cast<Status>(s);
  if (p.rows == 0) return Status::kOk;
  if (out == nullptr) return Status::kInvalidArgument;
  const size_t n = p.args.cols;
  std::vector<double> h(n), row_xhat(n);
  for (size_t r = 0; r < p.rows; ++r) {
    ReferenceRow(d, p, r, h.data(), row_xhat.data(), out + r * n);
    if (xhat) std::memcpy(xhat + r * n, row_xhat.data(), n * sizeof(double));
  }
  return Status::kOk;
}

Status NormalizeReference(const simdnorm_desc& d) {
  internal::Problem p;
  const simdnorm_status s = internal::Validate(&d, &p);
  if (s != SIMDNORM_OK || p.rows == 0) return static_cast<Status>(s);
  const internal::RowArgs& a = p.args;
  const size_t n = a.cols;
  std::vector<double> h(n), xhat(n), out(n);
  const auto xt = static_cast<simdnorm_dtype>(p.x_type);
  const auto yt = static_cast<simdnorm_dtype>(p.y_type);
  for (size_t r = 0; r < p.rows; ++r) {
    ReferenceRow(d, p, r, h.data(), xhat.data(), out.data());
    if (a.sum_out) {
      for (size_t j = 0; j < n; ++j)
        StoreRounded(a.sum_out, xt, r * a.sum_out_stride + j, h[j]);
    }
    if (yt == SIMDNORM_I8 && a.correct_rounding) {
      StoreCorrectlyRounded(d, p, r, h.data(), out.data());
    } else if (yt == SIMDNORM_I8) {
      StoreI8Row(a, r, out.data());
    } else if (yt != SIMDNORM_F32 && a.correct_rounding) {
      StoreCorrectlyRounded(d, p, r, h.data(), out.data());
    } else {
      for (size_t j = 0; j < n; ++j)
        StoreRounded(a.y, yt, r * a.y_stride + j, out[j]);
    }
  }
  return Status::kOk;
}

}  // namespace internal

Status reference_f64(const simdnorm_desc* d, size_t desc_size, double* out,
                     double* xhat) {
  return internal::WithWholeDescriptor(
      d, desc_size, [out, xhat](const simdnorm_desc& whole) {
        return internal::ReferenceF64(whole, out, xhat);
      });
}

}  // namespace simdnorm

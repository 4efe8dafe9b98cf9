// The float64 reference: the contract computed in the most direct way, in
// double, rounded once to the output type. It defines what is right.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/descriptor.h"
#include "lib/validate.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm {
namespace {

// IEEE binary16 to double, from the definition (exact).
double DecodeF16(uint16_t b) {
  const int exp = (b >> 10) & 0x1F;
  const int mant = b & 0x3FF;
  double v;
  if (exp == 0x1F) {
    v = mant ? NAN : INFINITY;
  } else if (exp == 0) {
    v = std::ldexp(mant, -24);  // subnormal (or zero)
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return (b & 0x8000) ? -v : v;
}

double Load(const void* base, simdnorm_dtype t, size_t i) {
  switch (t) {
    case SIMDNORM_F32:
      return static_cast<const float*>(base)[i];
    case SIMDNORM_BF16:
      return bf16::from_bits(static_cast<const uint16_t*>(base)[i]).to_float();
    case SIMDNORM_F16:
      return DecodeF16(static_cast<const uint16_t*>(base)[i]);
    case SIMDNORM_I8:
      break;  // never an input
  }
  return NAN;
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

// Rounds a double to the nearest binary16, ties to even, in one step.
// Finite magnitudes from 65520 (halfway between the largest, 65504, and
// 2^16) round to infinity.
uint16_t RoundToF16(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7E00;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7C00;
  // r: a rounded to a multiple of the binade's ulp (11 significant bits),
  // or of 2^-24 below 2^-14 (subnormals). Scaling by a power of 2 is exact.
  const double ulp =
      a >= 0x1p-14 ? std::ldexp(1.0, std::ilogb(a) - 10) : 0x1p-24;
  const double r = std::nearbyint(a / ulp) * ulp;  // <= 65504
  if (r < 0x1p-14) return sign | static_cast<uint16_t>(r / 0x1p-24);
  const int e = std::ilogb(r);
  const int mant = static_cast<int>(std::ldexp(r, 10 - e)) - 1024;
  return sign | static_cast<uint16_t>(((e + 15) << 10) | mant);
}

void Store(void* base, simdnorm_dtype t, size_t i, double v) {
  switch (t) {
    case SIMDNORM_F32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case SIMDNORM_BF16:
      static_cast<uint16_t*>(base)[i] = RoundToBF16(v);
      break;
    case SIMDNORM_F16:
      static_cast<uint16_t*>(base)[i] = RoundToF16(v);
      break;
    case SIMDNORM_I8:
      break;  // quantized per group: StoreI8Row
  }
}

// v rounded once to a floating-point dtype, as a double.
double RoundTo(simdnorm_dtype t, double v) {
  switch (t) {
    case SIMDNORM_F32:
      return static_cast<float>(v);
    case SIMDNORM_BF16:
      return bf16::from_bits(RoundToBF16(v)).to_float();
    case SIMDNORM_F16:
      return DecodeF16(RoundToF16(v));
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
  double mean = 0.0, second = 0.0;
  if (p.kind == SIMDNORM_LAYERNORM) {
    for (size_t j = 0; j < n; ++j) mean += h[j];
    mean /= static_cast<double>(n);
    for (size_t j = 0; j < n; ++j) second += (h[j] - mean) * (h[j] - mean);
  } else {
    for (size_t j = 0; j < n; ++j) second += h[j] * h[j];
  }
  const double denom =
      std::sqrt(second / static_cast<double>(n) + static_cast<double>(d.eps));
  const auto pt = static_cast<simdnorm_dtype>(p.param_type);
  for (size_t j = 0; j < n; ++j) {
    xhat[j] = (h[j] - mean) / denom;
    if (a.round_normalized) xhat[j] = RoundTo(xt, xhat[j]);
    const float g = d.gamma ? static_cast<float>(Load(d.gamma, pt, j)) : 1.0f;
    const float scale = a.gamma_offset + g;  // fp32 sum, as specified
    const double b = d.beta ? Load(d.beta, pt, j) : 0.0;
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
        Store(a.sum_out, xt, r * a.sum_out_stride + j, h[j]);
    }
    if (yt == SIMDNORM_I8) {
      StoreI8Row(a, r, out.data());
    } else {
      for (size_t j = 0; j < n; ++j) Store(a.y, yt, r * a.y_stride + j, out[j]);
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

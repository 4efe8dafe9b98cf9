#include "operands.h"

#include <cmath>
#include <limits>

#include "inputs.h"

namespace simdnorm_accuracy {

size_t dtype_size(simdnorm_dtype t) {
  return t == SIMDNORM_F32 ? 4 : (t == SIMDNORM_I8 ? 1 : 2);
}

Operand quantize(const std::vector<float>& v, simdnorm_dtype t, bool bf16q) {
  Operand o;
  o.type = t;
  o.f = v;
  if (bf16q) {
    for (float& e : o.f) e = bf16_to_float(bf16_round(e));
  }
  if (is_half(t)) {
    o.bits.resize(o.f.size());
    for (size_t i = 0; i < o.f.size(); ++i) {
      o.bits[i] = half_round_once(t, o.f[i]);
      o.f[i] = half_to_float(t, o.bits[i]);
    }
  }
  return o;
}

Operand rounded_sum(const Operand& a, const Operand& b) {
  Operand h;
  h.type = a.type;
  h.f.resize(a.f.size());
  if (is_half(a.type)) h.bits.resize(a.f.size());
  for (size_t i = 0; i < a.f.size(); ++i) {
    const double s = static_cast<double>(a.f[i]) + static_cast<double>(b.f[i]);
    if (is_half(a.type)) {
      h.bits[i] = half_round_once(a.type, s);
      h.f[i] = half_to_float(a.type, h.bits[i]);
    } else {
      h.f[i] = static_cast<float>(s);
    }
  }
  return h;
}

Weights make_weights_for(simdnorm_dtype w, size_t cols, uint64_t seed,
                         float gamma_offset) {
  std::vector<float> g, b;
  make_weights(cols, seed, &g, &b);
  // Gemma stores w with the model computing (1 + w): weights around 0.
  if (gamma_offset != 0) {
    for (float& e : g) e -= 1.0f;
  }
  Weights wt;
  wt.gamma = quantize(g, w, false);
  wt.beta = quantize(b, w, false);
  wt.scale = wt.gamma.f;
  // The fp32 sum, rounded once (as the library and the reference do).
  if (gamma_offset != 0) {
    for (float& e : wt.scale) e = gamma_offset + e;
  }
  return wt;
}

void hf_round_truth(simdnorm_dtype x_type, const double* xhat,
                    const float* scale, const float* beta, size_t rows,
                    size_t cols, double* truth, std::vector<double>* lo,
                    std::vector<double>* hi) {
  const size_t n = rows * cols;
  const bool interval = x_type != SIMDNORM_F32;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (interval) {
    lo->assign(n, nan);
    hi->assign(n, nan);
  } else {
    lo->clear();
    hi->clear();
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t c = i % cols;
    const double g = scale[c];
    const double b = beta ? beta[c] : 0.0;
    // No rounding for f32 x (xhat is not rounded to fp32 first).
    const double v0 = interval ? round_to(x_type, xhat[i]) : xhat[i];
    truth[i] = v0 * g + b;
    if (!interval || !std::isfinite(xhat[i])) continue;
    const double bound =
        kF32MaxScaledUlps * 0x1.0p-23 * std::max(1.0, std::fabs(xhat[i]));
    const double a = round_to(x_type, xhat[i] - bound);
    const double z = round_to(x_type, xhat[i] + bound);
    if (a == z) continue;
    const double ta = a * g + b, tz = z * g + b;
    (*lo)[i] = std::min(ta, tz);
    (*hi)[i] = std::max(ta, tz);
  }
}

size_t count_differences(simdnorm_dtype t, const void* a, const void* b,
                         size_t n) {
  size_t diff = 0;
  if (t == SIMDNORM_F32) {
    const float* x = static_cast<const float*>(a);
    const float* y = static_cast<const float*>(b);
    for (size_t i = 0; i < n; ++i) {
      uint32_t u, v;
      std::memcpy(&u, &x[i], 4);
      std::memcpy(&v, &y[i], 4);
      if (u != v && !(std::isnan(x[i]) && std::isnan(y[i]))) ++diff;
    }
  } else if (is_half(t)) {
    const uint16_t* x = static_cast<const uint16_t*>(a);
    const uint16_t* y = static_cast<const uint16_t*>(b);
    for (size_t i = 0; i < n; ++i) {
      if (x[i] != y[i] && !(half_is_nan(t, x[i]) && half_is_nan(t, y[i]))) {
        ++diff;
      }
    }
  } else {
    const int8_t* x = static_cast<const int8_t*>(a);
    const int8_t* y = static_cast<const int8_t*>(b);
    for (size_t i = 0; i < n; ++i) diff += x[i] != y[i];
  }
  return diff;
}

}  // namespace simdnorm_accuracy

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "accuracy.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_accuracy {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The values value(i), i < n, rounded once to t.
template <class F>
Operand rounded(simdnorm_dtype t, size_t n, F value) {
  Operand o;
  o.type = t;
  o.f.resize(n);
  if (Is16(t)) o.bits.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const double v = value(i);
    if (Is16(t)) {
      o.bits[i] = half_round_once(t, v);
      o.f[i] = half_to_float(t, o.bits[i]);
    } else {
      o.f[i] = static_cast<float>(v);
    }
  }
  return o;
}

}  // namespace

std::string dtypes_label(const Dtypes& d) {
  return fmt::format("{}/{}/{}", dtype_name(d.x), dtype_name(d.y),
                     dtype_name(d.param));
}

double round_to(simdnorm_dtype t, double v) {
  if (t == SIMDNORM_F32) return static_cast<float>(v);
  return half_to_float(t, half_round_once(t, v));
}

std::string shortest_float(float v) {
  std::string s;
  for (int digits = 1; digits <= 9; ++digits) {
    s = fmt::format("{:.{}g}", static_cast<double>(v), digits);
    if (std::strtof(s.c_str(), nullptr) == v) break;
  }
  return s;
}

Operand quantize(const std::vector<float>& v, simdnorm_dtype t, bool bf16q) {
  if (t == SIMDNORM_F32 && !bf16q) return Operand{t, v, {}};
  return rounded(t, v.size(), [&](size_t i) {
    return bf16q ? simdnorm::bf16::from_float(v[i]).to_float() : v[i];
  });
}

Operand rounded_sum(const Operand& a, const Operand& b) {
  return rounded(a.type, a.f.size(), [&](size_t i) {
    return static_cast<double>(a.f[i]) + static_cast<double>(b.f[i]);
  });
}

Weights make_weights_for(simdnorm_dtype w, size_t cols, uint64_t seed,
                         float gamma_offset) {
  std::vector<float> g, b;
  make_weights(cols, seed, &g, &b);
  // Gemma stores w with the model computing (1 + w): weights around 0.
  if (gamma_offset != 0) {
    for (float& e : g) e -= 1.0f;
  }
  Weights wt{quantize(g, w, false), quantize(b, w, false), {}};
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
  lo->assign(interval ? n : 0, kNaN);
  hi->assign(interval ? n : 0, kNaN);
  for (size_t i = 0; i < n; ++i) {
    const double g = scale[i % cols], b = beta ? beta[i % cols] : 0.0;
    // No rounding for f32 x (xhat is not rounded to fp32 first).
    truth[i] = (interval ? round_to(x_type, xhat[i]) : xhat[i]) * g + b;
    if (!interval || !std::isfinite(xhat[i])) continue;
    const double bound = simdnorm_test::F32Bound(xhat[i], 1.0, 0.0);
    const double a = round_to(x_type, xhat[i] - bound);
    const double z = round_to(x_type, xhat[i] + bound);
    if (a == z) continue;
    (*lo)[i] = std::min(a * g + b, z * g + b);
    (*hi)[i] = std::max(a * g + b, z * g + b);
  }
}

I8Truth quantize_truth(const double* truth, const double* lo, const double* hi,
                       size_t rows, size_t cols, size_t group) {
  I8Truth t;
  t.group = group ? group : cols;
  t.groups_per_row = (cols + t.group - 1) / t.group;
  const size_t ng = rows * t.groups_per_row;
  t.scale.assign(ng, kNaN);
  t.scale_lo.assign(ng, kNaN);
  t.scale_hi.assign(ng, kNaN);
  t.q.assign(rows * cols, 0);
  t.q_lo.assign(rows * cols, 0);
  t.q_hi.assign(rows * cols, 0);
  // RNE(v / s) clamped to [-127, 127]; 0 when s is 0 (then v is 0 too).
  auto quant = [](double v, double s) -> int16_t {
    if (!(s > 0)) return 0;
    const double q = std::nearbyint(v / s);
    return static_cast<int16_t>(std::max(-127.0, std::min(127.0, q)));
  };
  for (size_t r = 0; r < rows; ++r) {
    for (size_t g = 0; g < t.groups_per_row; ++g) {
      const size_t c0 = r * cols + g * t.group;
      const size_t c1 = r * cols + std::min(cols, (g + 1) * t.group);
      double m = 0, m_lo = 0, m_hi = 0;
      bool finite = true;
      for (size_t i = c0; i < c1; ++i) {
        finite = finite && std::isfinite(truth[i]);
        m = std::max(m, std::fabs(truth[i]));
        // The smallest and largest magnitude the interval admits.
        const double a = has_interval(lo, i) ? lo[i] : truth[i];
        const double z = has_interval(lo, i) ? hi[i] : truth[i];
        const bool zero = a <= 0 && z >= 0;
        m_lo =
            std::max(m_lo, zero ? 0.0 : std::min(std::fabs(a), std::fabs(z)));
        m_hi = std::max(m_hi, std::max(std::fabs(a), std::fabs(z)));
      }
      if (!finite) continue;  // the group is outside the contract
      const size_t gi = r * t.groups_per_row + g;
      t.scale[gi] = m / 127.0;
      t.scale_lo[gi] = m_lo / 127.0;
      t.scale_hi[gi] = m_hi / 127.0;
      for (size_t i = c0; i < c1; ++i) {
        t.q[i] = quant(truth[i], t.scale[gi]);
        t.q_lo[i] = has_interval(lo, i) ? quant(lo[i], t.scale[gi]) : t.q[i];
        t.q_hi[i] = has_interval(lo, i) ? quant(hi[i], t.scale[gi]) : t.q[i];
      }
    }
  }
  return t;
}

size_t count_differences(simdnorm_dtype t, const void* a, const void* b,
                         size_t n) {
  size_t diff = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += !simdnorm_tools::same_element(t, a, i, b, i);
  }
  return diff;
}

}  // namespace simdnorm_accuracy

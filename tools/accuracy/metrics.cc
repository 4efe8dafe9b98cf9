#include "metrics.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

namespace simdnorm_accuracy {

uint16_t bf16_round_once(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  const int biased = static_cast<int>((u >> 52) & 0x7FF);
  if (biased >= 1023 - 126 && biased <= 1023 + 127) {
    // Normal bf16 range: keep 7 of the 52 fraction bits, ties to even, in
    // the double's own bits (a carry into the exponent is right, too).
    u += (uint64_t{1} << 44) - 1 + ((u >> 45) & 1);
    u &= ~((uint64_t{1} << 45) - 1);
    double r;
    std::memcpy(&r, &u, sizeof(r));
    if (std::fabs(r) > 0x1.FEp127) return std::signbit(r) ? 0xFF80u : 0x7F80u;
    const float f = static_cast<float>(r);  // exact: r is a bf16 value
    uint32_t v;
    std::memcpy(&v, &f, sizeof(v));
    return static_cast<uint16_t>(v >> 16);
  }
  if (std::isnan(d)) return 0x7FC0u;
  if (std::isinf(d)) return d > 0 ? 0x7F80u : 0xFF80u;
  if (biased > 1023) return std::signbit(d) ? 0xFF80u : 0x7F80u;  // >= 2^128
  // Below 2^-126: bf16's subnormal step 2^-133. Scaling by a power of two is
  // exact here, so nearbyint (ties to even by default) rounds once.
  const double q = 0x1.0p-133;
  const double r = std::nearbyint(d / q) * q;  // keeps the sign of zero
  const float f = static_cast<float>(r);
  uint32_t v;
  std::memcpy(&v, &f, sizeof(v));
  return static_cast<uint16_t>(v >> 16);
}

float f16_to_float(uint16_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x8000u) << 16;
  const uint32_t exp = (b >> 10) & 0x1Fu;
  const uint32_t man = b & 0x3FFu;
  uint32_t u;
  if (exp == 0) {
    // Subnormal (or zero): man * 2^-24, exact in float.
    const float v = static_cast<float>(man) * 0x1.0p-24f;
    std::memcpy(&u, &v, sizeof(u));
    u |= sign;
  } else if (exp == 31) {
    u = sign | 0x7F800000u | (man << 13) | (man ? 0x00400000u : 0);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);  // rebias
  }
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

uint16_t f16_round_once(double d) {
  if (std::isnan(d)) return 0x7E00u;
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  const uint16_t sign = static_cast<uint16_t>((u >> 48) & 0x8000u);
  u &= ~(uint64_t{1} << 63);  // |d|
  const int biased = static_cast<int>(u >> 52);
  if (biased >= 1023 - 14) {
    if (biased > 1023 + 15) return sign | 0x7C00u;  // >= 2^16 (or inf)
    // Normal f16 range: keep 10 of the 52 fraction bits, ties to even, in
    // the double's own bits; a carry into the exponent is right, and 65520
    // and above carry to 2^16, which is infinity.
    u += (uint64_t{1} << 41) - 1 + ((u >> 42) & 1);
    const int e = static_cast<int>(u >> 52) - 1023 + 15;
    if (e >= 31) return sign | 0x7C00u;
    return sign | static_cast<uint16_t>((e << 10) | ((u >> 42) & 0x3FFu));
  }
  // Below 2^-14: the subnormal step 2^-24. The scaling is exact, so
  // nearbyint (ties to even by default) rounds once; 1024 steps is 2^-14,
  // whose bits are 0x0400.
  double a;
  std::memcpy(&a, &u, sizeof(a));
  return sign | static_cast<uint16_t>(std::nearbyint(a * 0x1.0p24));
}

std::string unit_name(simdnorm_dtype y) {
  switch (y) {
    case SIMDNORM_BF16:
      return "bf16_ulp";
    case SIMDNORM_F16:
      return "f16_ulp";
    case SIMDNORM_I8:
      return "int8_q";
    default:
      return "scaled_ulp";
  }
}

const char* unit_label(simdnorm_dtype y) {
  switch (y) {
    case SIMDNORM_BF16:
      return "bf16";
    case SIMDNORM_F16:
      return "f16";
    case SIMDNORM_I8:
      return "q";
    default:
      return "scaled";
  }
}

namespace {

// |got - truth| in units of ulp * (|gamma| * max(1, |xhat|) + |beta|).
inline double scaled_error(double got, double truth, double xhat, double gamma,
                           double beta, double ulp) {
  const double unit = ulp * (std::fabs(gamma) * std::max(1.0, std::fabs(xhat)) +
                             std::fabs(beta));
  const double diff = std::fabs(got - truth);
  const double err = diff / unit;
  if (err <= DBL_MAX) return err;                   // the common case
  if (std::isfinite(got) && diff == 0) return 0.0;  // 0 / 0
  return std::numeric_limits<double>::infinity();
}

// The value of [lo, hi] nearest to v (v itself when inside; NaN stays).
// Branch-free: v < lo is a coin toss when lo == hi is the truth.
inline double nearest_in(double v, double lo, double hi) {
  return std::min(std::max(v, lo), hi);
}

// Whether element i has an interval of admissible truths.
inline bool has_interval(const double* lo, size_t i) {
  return lo != nullptr && !std::isnan(lo[i]);
}

// The fp32 bound as an absolute error: 32 scaled ulps.
inline double f32_bound(double xhat, double gamma, double beta) {
  return kF32MaxScaledUlps * 0x1.0p-23 *
         (std::fabs(gamma) * std::max(1.0, std::fabs(xhat)) + std::fabs(beta));
}

// Non-negative floats order like their bits: the top 12 bits (sign,
// exponent, 3 fraction bits) make a monotonic histogram bin.
inline uint32_t bin_of(float e) {
  uint32_t u;
  std::memcpy(&u, &e, sizeof(u));
  return u >> 20;
}

}  // namespace

I8Truth quantize_truth(const double* truth, const double* lo, const double* hi,
                       size_t rows, size_t cols, size_t group) {
  I8Truth t;
  t.group = group ? group : cols;
  t.groups_per_row = (cols + t.group - 1) / t.group;
  const size_t ng = rows * t.groups_per_row;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  t.scale.assign(ng, nan);
  t.scale_lo.assign(ng, nan);
  t.scale_hi.assign(ng, nan);
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
      const size_t c0 = g * t.group, c1 = std::min(cols, c0 + t.group);
      double m = 0, m_lo = 0, m_hi = 0;
      bool finite = true;
      for (size_t c = c0; c < c1; ++c) {
        const size_t i = r * cols + c;
        const double v = truth[i];
        if (!std::isfinite(v)) finite = false;
        m = std::max(m, std::fabs(v));
        if (has_interval(lo, i)) {
          // The smallest and largest magnitude the interval admits.
          const double small =
              (lo[i] <= 0 && hi[i] >= 0)
                  ? 0.0
                  : std::min(std::fabs(lo[i]), std::fabs(hi[i]));
          m_lo = std::max(m_lo, small);
          m_hi = std::max(m_hi, std::max(std::fabs(lo[i]), std::fabs(hi[i])));
        } else {
          m_lo = std::max(m_lo, std::fabs(v));
          m_hi = std::max(m_hi, std::fabs(v));
        }
      }
      if (!finite) continue;  // the group is outside the contract
      const size_t gi = r * t.groups_per_row + g;
      const double s = m / 127.0;
      t.scale[gi] = s;
      t.scale_lo[gi] = m_lo / 127.0;
      t.scale_hi[gi] = m_hi / 127.0;
      for (size_t c = c0; c < c1; ++c) {
        const size_t i = r * cols + c;
        t.q[i] = quant(truth[i], s);
        if (has_interval(lo, i)) {
          t.q_lo[i] = quant(lo[i], s);
          t.q_hi[i] = quant(hi[i], s);
        } else {
          t.q_lo[i] = t.q_hi[i] = t.q[i];
        }
      }
    }
  }
  return t;
}

void Accumulator::new_worst(double err, double scaled, size_t cols, size_t row,
                            size_t col, double input, double got, double want,
                            double xhat) {
  s_.max = err;
  s_.worst.valid = true;
  s_.worst.cols = cols;
  s_.worst.row = row;
  s_.worst.col = col;
  s_.worst.input = input;
  s_.worst.got = got;
  s_.worst.want = want;
  s_.worst.xhat = xhat;
  s_.worst.scaled = scaled;
}

// The hot loops keep their counters in locals (no stores through `this` in
// the dependency chain) and compute a division only where it is needed.
void Accumulator::add_f32(const float* got, const double* want,
                          const double* xhat, const float* x,
                          const float* gamma, const float* beta, size_t rows,
                          size_t cols, const double* lo, const double* hi) {
  size_t m = errs_.size();
  errs_.resize(m + rows * cols);
  float* errs = errs_.data();
  uint32_t* hist = hist_.data();
  uint64_t count = 0, exact = 0, excluded = 0, zeros = 0, over = 0;
  double sum = 0, max = s_.max;
  std::vector<double>& row_err = row_err_;
  row_err.resize(cols);
  for (size_t r = 0; r < rows; ++r) {
    const size_t o = r * cols;
    const float* g = got + o;
    const double* w = want + o;
    const double* xh = xhat + o;
    // Branch-free, so the divisions pipeline (and vectorize).
    for (size_t c = 0; c < cols; ++c) {
      const double unit =
          0x1.0p-23 * (std::fabs(static_cast<double>(gamma[c])) *
                           std::max(1.0, std::fabs(xh[c])) +
                       (beta ? std::fabs(static_cast<double>(beta[c])) : 0.0));
      row_err[c] = std::fabs(static_cast<double>(g[c]) - w[c]) / unit;
    }
    for (size_t c = 0; c < cols; ++c) {
      if (!std::isfinite(w[c])) {
        ++excluded;
        continue;
      }
      double err = row_err[c];
      const double b = beta ? beta[c] : 0.0;
      if (has_interval(lo, o + c)) {
        const double t = nearest_in(g[c], lo[o + c], hi[o + c]);
        err = scaled_error(g[c], t, xh[c], gamma[c], b, 0x1.0p-23);
      } else if (!(err <= DBL_MAX)) {  // infinite or 0/0: the rare cases
        err = scaled_error(g[c], w[c], xh[c], gamma[c], b, 0x1.0p-23);
      }
      ++count;
      if (err == 0) {
        ++zeros;
      } else {
        const float e = static_cast<float>(err);
        errs[m++] = e;
        ++hist[bin_of(e)];
        sum += err;
      }
      if (g[c] == static_cast<float>(w[c])) ++exact;
      if (!(err <= kF32MaxScaledUlps)) ++over;
      if (!(err <= max)) {
        new_worst(err, err, cols, r, c, x[o + c], g[c], w[c], xh[c]);
        max = err;
      }
    }
  }
  errs_.resize(m);
  merge(count, exact, excluded, zeros, over, sum);
  if (s_.max > s_.max_scaled) s_.max_scaled = s_.max;
}

void Accumulator::merge(uint64_t count, uint64_t exact, uint64_t excluded,
                        uint64_t zeros, uint64_t over, double sum) {
  s_.over += over;
  s_.count += count;
  s_.exact += exact;
  s_.excluded += excluded;
  zeros_ += zeros;
  sum_ += sum;
}

void Accumulator::add_half(simdnorm_dtype y, const uint16_t* got,
                           const uint16_t* want, const double* truth,
                           const double* xhat, const float* x,
                           const float* gamma, const float* beta, size_t rows,
                           size_t cols, const double* lo, const double* hi) {
  if (y == SIMDNORM_F16) {
    add_half_t<true>(got, want, truth, xhat, x, gamma, beta, rows, cols, lo,
                     hi);
  } else {
    add_half_t<false>(got, want, truth, xhat, x, gamma, beta, rows, cols, lo,
                      hi);
  }
}

// A bf16/f16 result more than one ulp from the once-rounded truth still
// meets the contract when it is the rounding of a value within the fp32
// bound of the truth (of the interval [lo, hi] of admissible truths): where
// y = xhat * gamma + beta nearly cancels, that bound spans many ulps of the
// tiny y, and no fp32 computation can do better.
template <bool kF16>
void Accumulator::add_half_t(const uint16_t* got, const uint16_t* want,
                             const double* truth, const double* xhat,
                             const float* x, const float* gamma,
                             const float* beta, size_t rows, size_t cols,
                             const double* lo, const double* hi) {
  constexpr simdnorm_dtype kT = kF16 ? SIMDNORM_F16 : SIMDNORM_BF16;
  constexpr double kUlp1 = kF16 ? 0x1.0p-10 : 0x1.0p-7;
  constexpr double kMaxUlps = kF16 ? kF16MaxUlps : kBf16MaxUlps;
  uint32_t* hist = hist_.data();
  uint64_t count = 0, exact = 0, excluded = 0, over = 0, zeros = 0;
  double sum = 0, max = s_.max, max_scaled = s_.max_scaled;
  for (size_t r = 0; r < rows; ++r) {
    const size_t o = r * cols;
    for (size_t c = 0; c < cols; ++c) {
      const size_t i = o + c;
      if (!std::isfinite(truth[i])) {
        ++excluded;
        continue;
      }
      ++count;
      const bool interval = has_interval(lo, i);
      const double t_lo = interval ? lo[i] : truth[i];
      const double t_hi = interval ? hi[i] : truth[i];
      const bool nan = half_is_nan(kT, got[i]) || half_is_nan(kT, want[i]);
      const int32_t og = bf16_order(got[i]);
      double err;
      if (nan) {
        err = std::numeric_limits<double>::infinity();
      } else if (!interval) {
        err = std::abs(static_cast<double>(og - bf16_order(want[i])));
      } else {
        const int32_t a = bf16_order(half_round_once(kT, t_lo));
        const int32_t b = bf16_order(half_round_once(kT, t_hi));
        err = og < a ? a - og : (og > b ? og - b : 0);
      }
      if (!nan && og == bf16_order(want[i])) ++exact;
      const double g = std::fabs(static_cast<double>(gamma[c]));
      const double bt = beta ? std::fabs(static_cast<double>(beta[c])) : 0.0;
      if (err == 0) {
        ++zeros;
      } else {
        if (!(err <= kMaxUlps)) {
          const double bound = f32_bound(xhat[i], g, bt);
          const bool in_window =
              !nan && og >= bf16_order(half_round_once(kT, t_lo - bound)) &&
              og <= bf16_order(half_round_once(kT, t_hi + bound));
          if (!in_window) ++over;
        }
        const float e = static_cast<float>(err);
        errs_.push_back(e);
        ++hist[bin_of(e)];
        sum += err;
      }
      // The scaled error: divide only when it may be a new largest. The
      // unit without max(1, |xhat|) is a lower bound, cheaper to test.
      const double got_f = half_to_float(kT, got[i]);
      const double near = interval ? nearest_in(got_f, t_lo, t_hi) : truth[i];
      const double diff = std::fabs(got_f - near);
      if (!(diff <= max_scaled * kUlp1 * (g + bt)) &&
          !(diff <= max_scaled * kUlp1 *
                        (g * std::max(1.0, std::fabs(xhat[i])) + bt))) {
        const double scaled = scaled_error(got_f, near, xhat[i], g, bt, kUlp1);
        if (!(scaled <= max_scaled)) max_scaled = scaled;
      }
      if (!(err <= max)) {
        new_worst(err, scaled_error(got_f, near, xhat[i], g, bt, kUlp1), cols,
                  r, c, x[i], got_f, half_to_float(kT, want[i]), xhat[i]);
        max = err;
      }
    }
  }
  merge(count, exact, excluded, zeros, over, sum);
  s_.max_scaled = max_scaled;
}

void Accumulator::add_i8(const int8_t* q, const float* scales, const I8Truth& t,
                         const double* xhat, const float* x, size_t rows,
                         size_t cols) {
  uint32_t* hist = hist_.data();
  uint64_t count = 0, exact = 0, excluded = 0, over = 0, zeros = 0;
  double sum = 0, max = s_.max;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      const size_t i = r * cols + c;
      const size_t gi = r * t.groups_per_row + c / t.group;
      if (std::isnan(t.scale[gi])) {
        ++excluded;
        continue;
      }
      ++count;
      const int v = q[i];
      const double err = v < t.q_lo[i]   ? t.q_lo[i] - v
                         : v > t.q_hi[i] ? v - t.q_hi[i]
                                         : 0;
      if (v == t.q[i]) ++exact;
      if (err == 0) {
        ++zeros;
      } else {
        if (!(err <= kI8MaxQDiff)) ++over;
        const float e = static_cast<float>(err);
        errs_.push_back(e);
        ++hist[bin_of(e)];
        sum += err;
      }
      if (!(err <= max)) {
        new_worst(err, err, cols, r, c, x[i], v, t.q[i], xhat[i]);
        max = err;
      }
    }
  }
  // The scales: relative distance to the admissible interval.
  double max_rel = s_.max_scale_rel;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t g = 0; g < t.groups_per_row; ++g) {
      const size_t gi = r * t.groups_per_row + g;
      const double want = t.scale[gi];
      if (std::isnan(want)) continue;
      ++s_.groups;
      const double s = scales[gi];
      double rel;
      if (std::isnan(s)) {
        rel = std::numeric_limits<double>::infinity();
      } else {
        const double d =
            std::fabs(s - nearest_in(s, t.scale_lo[gi], t.scale_hi[gi]));
        rel = d == 0 ? 0.0
                     : (want > 0 ? d / want
                                 : std::numeric_limits<double>::infinity());
      }
      if (!(rel <= kI8MaxScaleRelErr)) ++s_.scale_over;
      if (!(rel <= max_rel)) {
        max_rel = rel;
        s_.scale_worst = ScaleWorst{true, cols, r, g, s, want};
      }
    }
  }
  s_.max_scale_rel = max_rel;
  merge(count, exact, excluded, zeros, over, sum);
  if (s_.max > s_.max_scaled) s_.max_scaled = s_.max;
}

void Accumulator::add_sum_out(simdnorm_dtype x_type, const void* got,
                              const void* want, size_t n, size_t cols) {
  s_.fused = true;
  s_.sum_count += n;
  for (size_t i = 0; i < n; ++i) {
    uint32_t a, b;
    bool nan_a, nan_b;
    if (x_type == SIMDNORM_F32) {
      float fa, fb;
      std::memcpy(&fa, static_cast<const char*>(got) + 4 * i, 4);
      std::memcpy(&fb, static_cast<const char*>(want) + 4 * i, 4);
      std::memcpy(&a, &fa, 4);
      std::memcpy(&b, &fb, 4);
      nan_a = std::isnan(fa);
      nan_b = std::isnan(fb);
    } else {
      const uint16_t ha = static_cast<const uint16_t*>(got)[i];
      const uint16_t hb = static_cast<const uint16_t*>(want)[i];
      a = ha;
      b = hb;
      nan_a = half_is_nan(x_type, ha);
      nan_b = half_is_nan(x_type, hb);
    }
    if (a == b || (nan_a && nan_b)) continue;
    if (s_.sum_mismatch++ == 0) {
      s_.sum_worst = SumWorst{true, cols, i / cols, i % cols, a, b};
    }
  }
}

Stats Accumulator::finish() {
  Stats s = s_;
  if (s.count) {
    s.mean = sum_ / static_cast<double>(s.count);
    const size_t rank =
        static_cast<size_t>(std::ceil(0.999 * static_cast<double>(s.count)));
    const size_t k = rank > 0 ? rank - 1 : 0;
    // Sorted, the errors are zeros_ zeros followed by errs_; the histogram
    // tells which bin holds the k-th, and only that bin is sorted.
    if (k < zeros_) {
      s.p999 = 0;
    } else {
      size_t j = k - zeros_;
      uint32_t bin = 0;
      while (j >= hist_[bin]) j -= hist_[bin++];
      std::vector<float> in_bin;
      in_bin.reserve(hist_[bin]);
      for (float e : errs_) {
        if (bin_of(e) == bin) in_bin.push_back(e);
      }
      std::nth_element(in_bin.begin(), in_bin.begin() + static_cast<long>(j),
                       in_bin.end());
      s.p999 = in_bin[j];
    }
  }
  if (s.max < 0) s.max = 0;
  if (s.max_scale_rel < 0) s.max_scale_rel = 0;
  errs_.clear();
  errs_.shrink_to_fit();
  std::fill(hist_.begin(), hist_.end(), 0u);
  sum_ = 0;
  zeros_ = 0;
  s_ = initial();
  return s;
}

namespace {

std::string worst_text(const Worst& w) {
  if (!w.valid) return "";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "cols %zu row %zu col %zu: x=%.9g got=%.9g want=%.17g", w.cols,
                w.row, w.col, w.input, w.got, w.want);
  return buf;
}

}  // namespace

void check_bounds(ResultRow* row) {
  row->violations.clear();
  if (!row->checked) return;
  const Stats& s = row->s;
  char buf[320];
  const simdnorm_dtype y = row->dt.y;
  if (is_half(y)) {
    const bool f16 = y == SIMDNORM_F16;
    const double min_share = f16 ? kF16MinExactShare : kBf16MinExactShare;
    const char* name = dtype_name(y);
    if (s.exact_share() < min_share) {
      std::snprintf(buf, sizeof(buf),
                    "only %.4f%% of elements correctly rounded "
                    "(bound %.1f%%)",
                    100.0 * s.exact_share(), 100.0 * min_share);
      row->violations.push_back(buf);
    }
    if (s.over > 0) {
      std::snprintf(buf, sizeof(buf),
                    "%llu of %llu elements beyond %g %s ulp and outside the "
                    "fp32 bound's window, max %g at ",
                    static_cast<unsigned long long>(s.over),
                    static_cast<unsigned long long>(s.count),
                    f16 ? kF16MaxUlps : kBf16MaxUlps, name, s.max);
      char tail[160];
      std::snprintf(tail, sizeof(tail),
                    " (%.3g scaled %s ulps; largest in the row group %.3g)",
                    s.worst.scaled, name, s.max_scaled);
      row->violations.push_back(buf + worst_text(s.worst) + tail);
    }
  } else if (y == SIMDNORM_I8) {
    if (s.over > 0) {
      std::snprintf(buf, sizeof(buf),
                    "%llu of %llu elements with |q - q64| beyond %g, max %g "
                    "at ",
                    static_cast<unsigned long long>(s.over),
                    static_cast<unsigned long long>(s.count), kI8MaxQDiff,
                    s.max);
      row->violations.push_back(buf + worst_text(s.worst));
    }
    if (s.scale_over > 0) {
      const ScaleWorst& w = s.scale_worst;
      std::snprintf(buf, sizeof(buf),
                    "%llu of %llu group scales beyond %g relative of the "
                    "float64 scale, max %.3g at cols %zu row %zu group %zu: "
                    "got %.9g want %.17g",
                    static_cast<unsigned long long>(s.scale_over),
                    static_cast<unsigned long long>(s.groups),
                    kI8MaxScaleRelErr, s.max_scale_rel, w.cols, w.row, w.group,
                    w.got, w.want);
      row->violations.push_back(buf);
    }
  } else if (s.over > 0) {
    std::snprintf(buf, sizeof(buf),
                  "%llu of %llu elements beyond %g scaled ulps, max %g at ",
                  static_cast<unsigned long long>(s.over),
                  static_cast<unsigned long long>(s.count), kF32MaxScaledUlps,
                  s.max);
    row->violations.push_back(buf + worst_text(s.worst));
  }
  if (s.sum_mismatch > 0) {
    const SumWorst& w = s.sum_worst;
    const int digits = row->dt.x == SIMDNORM_F32 ? 8 : 4;
    std::snprintf(buf, sizeof(buf),
                  "sum_out differs from h = x + residual rounded once to %s "
                  "at %llu of %llu elements; first at cols %zu row %zu col "
                  "%zu: got 0x%0*x want 0x%0*x",
                  dtype_name(row->dt.x),
                  static_cast<unsigned long long>(s.sum_mismatch),
                  static_cast<unsigned long long>(s.sum_count), w.cols, w.row,
                  w.col, digits, w.got_bits, digits, w.want_bits);
    row->violations.push_back(buf);
  }
  if (s.inplace_mismatch > 0) {
    std::snprintf(buf, sizeof(buf),
                  "the in-place form (sum_out = residual, y = x where the "
                  "types allow) differs from the out-of-place call at %llu "
                  "elements of y, sum_out and y_scale",
                  static_cast<unsigned long long>(s.inplace_mismatch));
    row->violations.push_back(buf);
  }
}

bool summary_exceeds(const SummaryRow& s) {
  if (s.sum_mismatch > 0 || s.inplace_mismatch > 0) return true;
  if (s.half_out()) {
    const double min_share =
        s.dt.y == SIMDNORM_F16 ? kF16MinExactShare : kBf16MinExactShare;
    return s.min_exact_share < min_share || s.over > 0;
  }
  if (s.dt.y == SIMDNORM_I8) return s.over > 0 || s.scale_over > 0;
  return s.over > 0 || !(s.max <= kF32MaxScaledUlps);
}

std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows) {
  using Key =
      std::tuple<std::string, std::string, int, std::string, int, int, int>;
  std::map<Key, size_t> index;
  std::vector<SummaryRow> out;
  std::vector<double> sums, worst_share;
  for (const ResultRow& r : rows) {
    const Key key{r.isa, r.method, r.kind, r.variant, r.dt.x, r.dt.y, r.dt.w};
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      SummaryRow s;
      s.isa = r.isa;
      s.method = r.method;
      s.kind = r.kind;
      s.variant = r.variant;
      s.dt = r.dt;
      s.checked = r.checked;
      s.max = -1;
      out.push_back(s);
      sums.push_back(0);
      worst_share.push_back(1);
    }
    SummaryRow& s = out[it->second];
    ++s.families;
    if (!r.pass()) ++s.failing;
    s.count += r.s.count;
    s.excluded += r.s.excluded;
    s.over += r.s.over;
    s.groups += r.s.groups;
    s.scale_over += r.s.scale_over;
    s.max_scale_rel = std::max(s.max_scale_rel, r.s.max_scale_rel);
    s.fused = s.fused || r.s.fused;
    s.sum_count += r.s.sum_count;
    s.sum_mismatch += r.s.sum_mismatch;
    s.inplace_mismatch += r.s.inplace_mismatch;
    sums[it->second] += r.s.mean * static_cast<double>(r.s.count);
    s.p999 = std::max(s.p999, r.s.p999);
    if (!(r.s.max_scaled <= s.max_scaled)) s.max_scaled = r.s.max_scaled;
    if (r.s.count == 0) continue;
    const double share = r.s.exact_share();
    // The family holding the largest error; on ties the lowest exact share.
    const bool worse = r.s.max > s.max ||
                       (r.s.max == s.max && share < worst_share[it->second]);
    s.min_exact_share = std::min(s.min_exact_share, share);
    if (worse || s.worst_family.empty()) {
      s.worst_family = r.family;
      s.worst = r.s.worst;
      worst_share[it->second] = share;
    }
    s.max = std::max(s.max, r.s.max);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].max < 0) out[i].max = 0;
    out[i].mean =
        out[i].count ? sums[i] / static_cast<double>(out[i].count) : 0;
  }
  return out;
}

}  // namespace simdnorm_accuracy

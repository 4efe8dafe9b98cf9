#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "accuracy.h"

namespace simdnorm_accuracy {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// |got - truth| in units of ulp * (|gamma| * max(1, |xhat|) + |beta|).
inline double scaled_error(double got, double truth, double xhat, double gamma,
                           double beta, double ulp) {
  const double unit = ulp * simdnorm_test::Terms(xhat, gamma, beta);
  const double diff = std::fabs(got - truth);
  const double err = diff / unit;
  if (err <= DBL_MAX) return err;                   // the common case
  if (std::isfinite(got) && diff == 0) return 0.0;  // 0 / 0
  return kInf;
}

// The value of [lo, hi] nearest to v (v itself when inside; NaN stays).
// Branch-free: v < lo is a coin toss when lo == hi is the truth.
inline double nearest_in(double v, double lo, double hi) {
  return std::min(std::max(v, lo), hi);
}

// Non-negative floats order like their bits: the top 12 bits (sign,
// exponent, 3 fraction bits) make a monotonic histogram bin.
inline uint32_t bin_of(float e) {
  uint32_t u;
  std::memcpy(&u, &e, sizeof(u));
  return u >> 20;
}

// The bits of element i of p (type F32, BF16 or F16; little-endian).
uint32_t bits(simdnorm_dtype t, const void* p, size_t i) {
  uint32_t u = 0;
  const size_t n = simdnorm_tools::ElemSize(t);
  std::memcpy(&u, static_cast<const char*>(p) + i * n, n);
  return u;
}

}  // namespace

void Accumulator::add_error(Tally* t, double err) {
  ++t->count;
  if (err == 0) {
    ++t->zeros;
    return;
  }
  const float e = static_cast<float>(err);
  errs_.push_back(e);
  ++hist_[bin_of(e)];
  t->sum += err;
}

void Accumulator::merge(const Tally& t) {
  s_.count += t.count;
  s_.exact += t.exact;
  s_.excluded += t.excluded;
  s_.over += t.over;
  s_.max = t.max;
  zeros_ += t.zeros;
  sum_ += t.sum;
}

// The hot loops keep their counters in locals (no stores through `this` in
// the dependency chain) and compute a division only where it is needed.
void Accumulator::add_f32(const float* got, const Truth& t) {
  errs_.reserve(errs_.size() + t.rows * t.cols);
  Tally n = start();
  row_err_.resize(t.cols);
  for (size_t r = 0; r < t.rows; ++r) {
    const size_t o = r * t.cols;
    const float* g = got + o;
    const double* w = t.want + o;
    const double* xh = t.xhat + o;
    // Branch-free, so the divisions pipeline (and vectorize).
    for (size_t c = 0; c < t.cols; ++c) {
      const double unit =
          0x1.0p-23 *
          (std::fabs(static_cast<double>(t.gamma[c])) *
               std::max(1.0, std::fabs(xh[c])) +
           (t.beta ? std::fabs(static_cast<double>(t.beta[c])) : 0.0));
      row_err_[c] = std::fabs(static_cast<double>(g[c]) - w[c]) / unit;
    }
    for (size_t c = 0; c < t.cols; ++c) {
      if (!std::isfinite(w[c])) {
        ++n.excluded;
        continue;
      }
      double err = row_err_[c];
      const double b = t.beta ? t.beta[c] : 0.0;
      if (has_interval(t.lo, o + c)) {
        const double near = nearest_in(g[c], t.lo[o + c], t.hi[o + c]);
        err = scaled_error(g[c], near, xh[c], t.gamma[c], b, 0x1.0p-23);
      } else if (!(err <= DBL_MAX)) {  // infinite or 0/0: the rare cases
        err = scaled_error(g[c], w[c], xh[c], t.gamma[c], b, 0x1.0p-23);
      }
      add_error(&n, err);
      if (g[c] == static_cast<float>(w[c])) ++n.exact;
      if (!(err <= kF32MaxScaledUlps)) ++n.over;
      if (!(err <= n.max)) {
        n.max = err;
        s_.worst = {true, t.cols, r, c, t.x[o + c], g[c], w[c], xh[c], err};
      }
    }
  }
  merge(n);
  s_.max_scaled = std::max(s_.max_scaled, s_.max);
}

void Accumulator::add_half(simdnorm_dtype y, const uint16_t* got,
                           const uint16_t* want, const Truth& t) {
  if (y == SIMDNORM_F16) {
    add_half_t<true>(got, want, t);
  } else {
    add_half_t<false>(got, want, t);
  }
}

// A bf16/f16 result more than one ulp from the once-rounded truth still
// meets the contract when it is the rounding of a value within the fp32
// bound of the truth (of the interval [lo, hi] of admissible truths): where
// y = xhat * gamma + beta nearly cancels, that bound spans many ulps of the
// tiny y, and no fp32 computation can do better.
template <bool kF16>
void Accumulator::add_half_t(const uint16_t* got, const uint16_t* want,
                             const Truth& t) {
  constexpr simdnorm_dtype kT = kF16 ? SIMDNORM_F16 : SIMDNORM_BF16;
  constexpr simdnorm_test::Half kH =
      kF16 ? simdnorm_test::Half::kF16 : simdnorm_test::Half::kBf16;
  constexpr double kUlp1 = kF16 ? 0x1.0p-10 : 0x1.0p-7;
  auto order = [](double v) { return HalfOrdered(half_round_once(kT, v)); };
  Tally n = start();
  double max_scaled = s_.max_scaled;
  for (size_t r = 0, i = 0; r < t.rows; ++r) {
    for (size_t c = 0; c < t.cols; ++c, ++i) {
      if (!std::isfinite(t.want[i])) {
        ++n.excluded;
        continue;
      }
      const bool interval = has_interval(t.lo, i);
      const double t_lo = interval ? t.lo[i] : t.want[i];
      const double t_hi = interval ? t.hi[i] : t.want[i];
      const bool nan = simdnorm_test::HalfIsNaN(kH, got[i]) ||
                       simdnorm_test::HalfIsNaN(kH, want[i]);
      const int32_t og = HalfOrdered(got[i]);
      double err;
      if (nan) {
        err = kInf;
      } else if (!interval) {
        err = std::abs(static_cast<double>(og - HalfOrdered(want[i])));
      } else {
        const int32_t a = order(t_lo), b = order(t_hi);
        err = og < a ? a - og : (og > b ? og - b : 0);
      }
      if (!nan && og == HalfOrdered(want[i])) ++n.exact;
      const double g = std::fabs(static_cast<double>(t.gamma[c]));
      const double bt =
          t.beta ? std::fabs(static_cast<double>(t.beta[c])) : 0.0;
      add_error(&n, err);
      if (!(err <= kHalfMaxUlps)) {
        const double bound = simdnorm_test::F32Bound(t.xhat[i], g, bt);
        n.over += nan || og < order(t_lo - bound) || og > order(t_hi + bound);
      }
      // The scaled error: divide only when it may be a new largest. The unit
      // without max(1, |xhat|) is a lower bound, cheaper to test.
      const double got_f = half_to_float(kT, got[i]);
      const double near = interval ? nearest_in(got_f, t_lo, t_hi) : t.want[i];
      const double diff = std::fabs(got_f - near);
      if (!(diff <= max_scaled * kUlp1 * (g + bt)) &&
          !(diff <= max_scaled * kUlp1 *
                        (g * std::max(1.0, std::fabs(t.xhat[i])) + bt))) {
        const double scaled =
            scaled_error(got_f, near, t.xhat[i], g, bt, kUlp1);
        if (!(scaled <= max_scaled)) max_scaled = scaled;
      }
      if (!(err <= n.max)) {
        n.max = err;
        const double want_f = half_to_float(kT, want[i]);
        const double scaled =
            scaled_error(got_f, near, t.xhat[i], g, bt, kUlp1);
        s_.worst = {true,  t.cols, r,         c,     t.x[i],
                    got_f, want_f, t.xhat[i], scaled};
      }
    }
  }
  merge(n);
  s_.max_scaled = max_scaled;
}

void Accumulator::add_i8(const int8_t* q, const float* scales,
                         const I8Truth& i8, const Truth& t) {
  Tally n = start();
  for (size_t r = 0, i = 0; r < t.rows; ++r) {
    for (size_t c = 0; c < t.cols; ++c, ++i) {
      if (std::isnan(i8.scale[r * i8.groups_per_row + c / i8.group])) {
        ++n.excluded;
        continue;
      }
      const int v = q[i];
      const double err = v < i8.q_lo[i]   ? i8.q_lo[i] - v
                         : v > i8.q_hi[i] ? v - i8.q_hi[i]
                                          : 0;
      add_error(&n, err);
      if (v == i8.q[i]) ++n.exact;
      if (!(err <= kI8MaxQDiff)) ++n.over;
      if (!(err <= n.max)) {
        n.max = err;
        const double got = v, want = i8.q[i];
        s_.worst = {true, t.cols, r, c, t.x[i], got, want, t.xhat[i], err};
      }
    }
  }
  // The scales: relative distance to the admissible interval.
  for (size_t gi = 0; gi < t.rows * i8.groups_per_row; ++gi) {
    const double want = i8.scale[gi], s = scales[gi];
    if (std::isnan(want)) continue;
    ++s_.groups;
    const double d =
        std::fabs(s - nearest_in(s, i8.scale_lo[gi], i8.scale_hi[gi]));
    const double rel =
        std::isnan(s) ? kInf : (d == 0 ? 0.0 : (want > 0 ? d / want : kInf));
    if (!(rel <= kI8MaxScaleRelErr)) ++s_.scale_over;
    if (!(rel <= s_.max_scale_rel)) {
      s_.max_scale_rel = rel;
      const size_t r = gi / i8.groups_per_row, g = gi % i8.groups_per_row;
      s_.scale_worst = {true, t.cols, r, g, s, want};
    }
  }
  merge(n);
  s_.max_scaled = std::max(s_.max_scaled, s_.max);
}

void Accumulator::add_sum_out(simdnorm_dtype x_type, const void* got,
                              const void* want, size_t n, size_t cols) {
  s_.fused = true;
  s_.sum_count += n;
  for (size_t i = 0; i < n; ++i) {
    if (simdnorm_tools::same_element(x_type, got, i, want, i)) continue;
    if (s_.sum_mismatch++ == 0) {
      const uint32_t a = bits(x_type, got, i), b = bits(x_type, want, i);
      s_.sum_worst = {true, cols, i / cols, i % cols, a, b};
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
    if (k >= zeros_) {
      size_t j = k - zeros_;
      uint32_t bin = 0;
      while (j >= hist_[bin]) j -= hist_[bin++];
      std::vector<float> in_bin;
      for (float e : errs_) {
        if (bin_of(e) == bin) in_bin.push_back(e);
      }
      std::nth_element(in_bin.begin(), in_bin.begin() + static_cast<long>(j),
                       in_bin.end());
      s.p999 = in_bin[j];
    }
  }
  s.max = std::max(s.max, 0.0);
  s.max_scale_rel = std::max(s.max_scale_rel, 0.0);
  *this = Accumulator();
  return s;
}

namespace {

std::string worst_text(const Worst& w) {
  if (!w.valid) return "";
  return fmt::format("cols {} row {} col {}: x={:.9g} got={:.9g} want={:.17g}",
                     w.cols, w.row, w.col, w.input, w.got, w.want);
}

}  // namespace

void check_bounds(ResultRow* row) {
  const Stats& s = row->s;
  const simdnorm_dtype y = row->dt.y;
  std::vector<std::string> v;
  if (Is16(y)) {
    const char* name = dtype_name(y);
    if (s.exact_share() < kHalfMinExactShare) {
      v.push_back(fmt::format(
          "only {:.4f}% of elements correctly rounded (bound {:.1f}%)",
          100.0 * s.exact_share(), 100.0 * kHalfMinExactShare));
    }
    if (s.over > 0) {
      v.push_back(fmt::format(
          "{} of {} elements beyond {:g} {} ulp and outside the fp32 bound's "
          "window, max {:g} at {} ({:.3g} scaled {} ulps; largest in the row "
          "group {:.3g})",
          s.over, s.count, kHalfMaxUlps, name, s.max, worst_text(s.worst),
          s.worst.scaled, name, s.max_scaled));
    }
  } else if (y == SIMDNORM_I8) {
    if (s.over > 0) {
      v.push_back(fmt::format(
          "{} of {} elements with |q - q64| beyond {:g}, max {:g} at {}",
          s.over, s.count, kI8MaxQDiff, s.max, worst_text(s.worst)));
    }
    if (s.scale_over > 0) {
      const ScaleWorst& w = s.scale_worst;
      v.push_back(fmt::format(
          "{} of {} group scales beyond {:g} relative of the float64 scale, "
          "max {:.3g} at cols {} row {} group {}: got {:.9g} want {:.17g}",
          s.scale_over, s.groups, kI8MaxScaleRelErr, s.max_scale_rel, w.cols,
          w.row, w.group, w.got, w.want));
    }
  } else if (s.over > 0) {
    v.push_back(fmt::format(
        "{} of {} elements beyond {:g} scaled ulps, max "
        "{:g} at {}",
        s.over, s.count, kF32MaxScaledUlps, s.max, worst_text(s.worst)));
  }
  if (s.sum_mismatch > 0) {
    const SumWorst& w = s.sum_worst;
    const int digits = row->dt.x == SIMDNORM_F32 ? 8 : 4;
    v.push_back(fmt::format(
        "sum_out differs from h = x + residual rounded once to {} at {} of "
        "{} "
        "elements; first at cols {} row {} col {}: got 0x{:0{}x} want "
        "0x{:0{}x}",
        dtype_name(row->dt.x), s.sum_mismatch, s.sum_count, w.cols, w.row,
        w.col, w.got_bits, digits, w.want_bits, digits));
  }
  if (s.inplace_mismatch > 0) {
    v.push_back(fmt::format(
        "the in-place form (sum_out = residual, y = x where the types allow) "
        "differs from the out-of-place call at {} elements of y, sum_out and "
        "y_scale",
        s.inplace_mismatch));
  }
  row->exceeds = !v.empty();
  if (row->checked) row->violations = v;
}

std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows) {
  std::vector<SummaryRow> out;
  std::vector<double> sums, worst_share;
  for (const ResultRow& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const SummaryRow& s) {
      return s.isa == r.isa && s.method == r.method && s.kind == r.kind &&
             s.variant == r.variant && s.dt == r.dt;
    });
    if (it == out.end()) {
      it = out.emplace(out.end());
      static_cast<RowKey&>(*it) = r;
      it->s.max = -1;
      sums.push_back(0);
      worst_share.push_back(1);
    }
    SummaryRow& s = *it;
    const size_t k = static_cast<size_t>(it - out.begin());
    ++s.families;
    s.failing += !r.pass();
    s.exceeds = s.exceeds || r.exceeds;
    s.s.count += r.s.count;
    s.s.excluded += r.s.excluded;
    s.s.over += r.s.over;
    s.s.groups += r.s.groups;
    s.s.scale_over += r.s.scale_over;
    s.s.max_scale_rel = std::max(s.s.max_scale_rel, r.s.max_scale_rel);
    s.s.fused = s.s.fused || r.s.fused;
    s.s.sum_count += r.s.sum_count;
    s.s.sum_mismatch += r.s.sum_mismatch;
    s.s.inplace_mismatch += r.s.inplace_mismatch;
    sums[k] += r.s.mean * static_cast<double>(r.s.count);
    s.s.p999 = std::max(s.s.p999, r.s.p999);
    if (!(r.s.max_scaled <= s.s.max_scaled)) s.s.max_scaled = r.s.max_scaled;
    if (r.s.count == 0) continue;
    const double share = r.s.exact_share();
    // The family holding the largest error; on ties the lowest exact share.
    if (r.s.max > s.s.max || (r.s.max == s.s.max && share < worst_share[k]) ||
        s.worst_family.empty()) {
      s.worst_family = r.family;
      s.s.worst = r.s.worst;
      worst_share[k] = share;
    }
    s.min_exact_share = std::min(s.min_exact_share, share);
    s.s.max = std::max(s.s.max, r.s.max);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].s.max = std::max(out[i].s.max, 0.0);
    out[i].s.mean = out[i].s.count ? sums[i] / out[i].s.count : 0;
  }
  return out;
}

std::string unit_name(simdnorm_dtype y) {
  return y == SIMDNORM_I8
             ? "int8_q"
             : (Is16(y) ? std::string(dtype_name(y)) + "_ulp" : "scaled_ulp");
}

std::string unit_label(simdnorm_dtype y) {
  return y == SIMDNORM_I8 ? "q" : (Is16(y) ? dtype_name(y) : "scaled");
}

}  // namespace simdnorm_accuracy

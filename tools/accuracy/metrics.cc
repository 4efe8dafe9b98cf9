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

std::string unit_name(simdnorm_dtype y) {
  return y == SIMDNORM_BF16 ? "bf16_ulp" : "scaled_ulp";
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

// A bf16 result more than one ulp from the once-rounded truth still meets
// the contract when it is the rounding of a value within the fp32 bound of
// the truth: where y = xhat * gamma + beta nearly cancels, that bound spans
// many bf16 ulps of the tiny y, and no fp32 computation can do better.
bool within_f32_window(uint16_t got, double truth, double xhat, double gamma,
                       double beta) {
  if (bf16_is_nan(got)) return false;
  const double bound =
      kF32MaxScaledUlps * 0x1.0p-23 *
      (std::fabs(gamma) * std::max(1.0, std::fabs(xhat)) + std::fabs(beta));
  const int32_t o = bf16_order(got);
  return o >= bf16_order(bf16_round_once(truth - bound)) &&
         o <= bf16_order(bf16_round_once(truth + bound));
}

}  // namespace

namespace {

// Non-negative floats order like their bits: the top 12 bits (sign,
// exponent, 3 fraction bits) make a monotonic histogram bin.
inline uint32_t bin_of(float e) {
  uint32_t u;
  std::memcpy(&u, &e, sizeof(u));
  return u >> 20;
}

}  // namespace

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
                          size_t cols) {
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
      if (!(err <= DBL_MAX)) {  // infinite or 0/0: the rare cases
        err = scaled_error(g[c], w[c], xh[c], gamma[c], beta ? beta[c] : 0.0,
                           0x1.0p-23);
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
  s_.over += over;
  s_.count += count;
  s_.exact += exact;
  s_.excluded += excluded;
  zeros_ += zeros;
  sum_ += sum;
  if (s_.max > s_.max_scaled) s_.max_scaled = s_.max;
}

void Accumulator::add_bf16(const uint16_t* got, const uint16_t* want,
                           const double* truth, const double* xhat,
                           const float* x, const float* gamma,
                           const float* beta, size_t rows, size_t cols) {
  uint32_t* hist = hist_.data();
  uint64_t count = 0, exact = 0, excluded = 0, over = 0;
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
      double err;
      if (bf16_is_nan(got[i]) || bf16_is_nan(want[i])) {
        err = std::numeric_limits<double>::infinity();
      } else {
        err = std::abs(
            static_cast<double>(bf16_order(got[i]) - bf16_order(want[i])));
      }
      if (err == 0) {
        ++exact;
      } else {
        if (!(err <= kBf16MaxUlps) &&
            !within_f32_window(got[i], truth[i], xhat[i], gamma[c],
                               beta ? beta[c] : 0.0)) {
          ++over;
        }
        const float e = static_cast<float>(err);
        errs_.push_back(e);
        ++hist[bin_of(e)];
        sum += err;
      }
      // The scaled error: divide only when it may be a new largest.
      const double got_f = bf16_to_float(got[i]);
      const double g = std::fabs(static_cast<double>(gamma[c]));
      const double b = beta ? std::fabs(static_cast<double>(beta[c])) : 0.0;
      const double unit =
          0x1.0p-7 * (g * std::max(1.0, std::fabs(xhat[i])) + b);
      const double diff = std::fabs(got_f - truth[i]);
      if (!(diff <= max_scaled * unit)) {
        const double scaled = scaled_error(got_f, truth[i], xhat[i], gamma[c],
                                           beta ? beta[c] : 0.0, 0x1.0p-7);
        if (!(scaled <= max_scaled)) max_scaled = scaled;
      }
      if (!(err <= max)) {
        new_worst(err,
                  scaled_error(got_f, truth[i], xhat[i], gamma[c],
                               beta ? beta[c] : 0.0, 0x1.0p-7),
                  cols, r, c, x[i], got_f, bf16_to_float(want[i]), xhat[i]);
        max = err;
      }
    }
  }
  s_.over += over;
  s_.count += count;
  s_.exact += exact;
  s_.excluded += excluded;
  zeros_ += exact;
  sum_ += sum;
  s_.max_scaled = max_scaled;
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
  char buf[256];
  if (row->bf16_out()) {
    if (s.exact_share() < kBf16MinExactShare) {
      std::snprintf(buf, sizeof(buf),
                    "only %.4f%% of elements equal the once-rounded reference "
                    "(bound >= %.1f%%)",
                    100.0 * s.exact_share(), 100.0 * kBf16MinExactShare);
      row->violations.push_back(buf);
    }
    if (s.over > 0) {
      std::snprintf(buf, sizeof(buf),
                    "%llu of %llu elements beyond %g bf16 ulp and outside the "
                    "fp32 bound's window, max %g at ",
                    static_cast<unsigned long long>(s.over),
                    static_cast<unsigned long long>(s.count), kBf16MaxUlps,
                    s.max);
      char tail[160];
      std::snprintf(tail, sizeof(tail),
                    " (%.3g scaled bf16 ulps; largest in the row group %.3g)",
                    s.worst.scaled, s.max_scaled);
      row->violations.push_back(buf + worst_text(s.worst) + tail);
    }
  } else if (!(s.max <= kF32MaxScaledUlps)) {
    std::snprintf(buf, sizeof(buf),
                  "%llu of %llu elements beyond %g scaled ulps, max %g at ",
                  static_cast<unsigned long long>(s.over),
                  static_cast<unsigned long long>(s.count), kF32MaxScaledUlps,
                  s.max);
    row->violations.push_back(buf + worst_text(s.worst));
  }
}

std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows) {
  using Key = std::tuple<std::string, std::string, int, int, int, int>;
  std::map<Key, size_t> index;
  std::vector<SummaryRow> out;
  std::vector<double> sums, worst_share;
  for (const ResultRow& r : rows) {
    const Key key{r.isa, r.method, r.kind, r.dt.x, r.dt.y, r.dt.w};
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, out.size()).first;
      SummaryRow s;
      s.isa = r.isa;
      s.method = r.method;
      s.kind = r.kind;
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

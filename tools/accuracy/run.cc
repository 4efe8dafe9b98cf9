// The measurement: the operands of a call with what the variants make of
// the truth, the textbook shortcuts, the error metrics and the loop that
// runs every plan against the float64 reference.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include "accuracy.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_accuracy {

std::vector<std::string> Config::all_variants() const {
  std::vector<std::string> out;
  for (const Plan& p : plans) AddUnique(&out, p.variant.name());
  return out;
}

std::vector<Dtypes> Config::all_dtypes(const std::string& variant) const {
  std::vector<Dtypes> out;
  for (const Plan& p : plans) {
    for (const Dtypes& d : p.dtypes) {
      if (variant.empty() || p.variant.name() == variant) AddUnique(&out, d);
    }
  }
  return out;
}

std::vector<std::string> Config::all_families() const {
  std::vector<std::string> out;
  for (const Plan& p : plans) {
    for (const Family& f : p.families) AddUnique(&out, f.name);
  }
  return out;
}

std::vector<size_t> Config::all_cols() const {
  std::vector<size_t> out;
  for (const Plan& p : plans) {
    for (size_t c : p.cols) AddUnique(&out, c);
  }
  return out;
}

bool RunOutput::pass() const {
  return errors.empty() &&
         std::all_of(rows.begin(), rows.end(),
                     [](const ResultRow& r) { return r.pass(); });
}

std::string row_name(const std::string& isa, simdnorm_kind kind,
                     const std::string& variant, const Dtypes& dt,
                     const std::string& family) {
  return fmt::format("{} {} {}{} {}", isa, kind_name(kind),
                     variant == "plain" ? "" : variant + " ", dtypes_label(dt),
                     family);
}

size_t count_differences(simdnorm_dtype t, const void* a, const void* b,
                         size_t n) {
  size_t diff = 0;
  for (size_t i = 0; i < n; ++i) {
    diff += !simdnorm_tools::same_element(t, a, i, b, i);
  }
  return diff;
}

namespace {

using simdnorm_test::HalfOrdered;  // a 16-bit float's place: ulps apart

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A float64 value rounded ONCE to t (BF16 or F16), to nearest-even, with
// the format's own subnormals and overflow to infinity; NaN to the
// (positive) quiet NaN.
uint16_t half_round_once(simdnorm_dtype t, double d) {
  return simdnorm_test::RoundToHalf(simdnorm_test::HalfOf(t), d, false);
}

// v rounded once to t (F32, BF16 or F16), as a double.
double round_to(simdnorm_dtype t, double v) {
  if (t == SIMDNORM_F32) return static_cast<float>(v);
  return half_to_float(t, half_round_once(t, v));
}

// Values of one dtype (F32, BF16 or F16): f holds them widened to float,
// bits the stored 16-bit values of the half types.
struct Operand {
  simdnorm_dtype type = SIMDNORM_F32;
  std::vector<float> f;
  std::vector<uint16_t> bits;
  const void* data() const {
    return Is16(type) ? static_cast<const void*>(bits.data()) : f.data();
  }
};

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

// v rounded to t (first to bf16 when bf16q: the quantized copies).
Operand quantize(const std::vector<float>& v, simdnorm_dtype t, bool bf16q) {
  if (t == SIMDNORM_F32 && !bf16q) return Operand{t, v, {}};
  return rounded(t, v.size(), [&](size_t i) {
    return bf16q ? simdnorm::bf16::from_float(v[i]).to_float() : v[i];
  });
}

// h = a + b computed exactly and rounded once to a.type (through double:
// double rounding is innocuous for sums of floats of at most 24 bits).
Operand rounded_sum(const Operand& a, const Operand& b) {
  return rounded(a.type, a.f.size(), [&](size_t i) {
    return static_cast<double>(a.f[i]) + static_cast<double>(b.f[i]);
  });
}

// Weights after quantization to their dtype. Gemma's are drawn around 0
// (gamma - 1 of the plain ones), and scale = fl32(gamma_offset + gamma).
struct Weights {
  Operand gamma, beta;
  std::vector<float> scale;  // what multiplies xhat: the metrics' gamma
};

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

// Hugging Face's order: truth[i] = round_x(xhat[i]) * scale + beta, exact
// products in float64. Where x is bf16 or f16 and the fp32 bound around
// xhat (32 * 2^-23 * max(1, |xhat|)) contains a rounding boundary of x,
// [lo, hi] is the interval of admissible results, else lo = hi = NaN.
// For f32 x no interval (lo, hi left empty).
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

// Whether element i has an interval [lo[i], hi[i]] of admissible truths.
bool has_interval(const double* lo, size_t i) {
  return lo != nullptr && !std::isnan(lo[i]);
}

// The float64 truth of an int8 output: per group (rows x groups, row-major)
// the scale and its admissible interval, per element q64 and its interval.
struct I8Truth {
  size_t group = 0, groups_per_row = 0;
  std::vector<double> scale, scale_lo, scale_hi;  // NaN: group excluded
  std::vector<int16_t> q, q_lo, q_hi;
  size_t group_of(size_t i, size_t cols) const {
    return (i / cols) * groups_per_row + (i % cols) / group;
  }
};

// Quantizes the truth as the contract says (interval bounds lo/hi may be
// null; where given and not NaN, they widen the admissible q and scales).
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

// Textbook normalization shortcuts, measured beside the library to show why
// its design matters. They live here, in the tool, never in the library.
enum class Shortcut {
  // Centered kinds (LayerNorm): mean and E[x^2] - mean^2 from one pass of
  // plain fp32 sums. The others (RMSNorm): the fp32 sum of x^2, their only
  // pass.
  kOnePassF32,
  // Centered kinds only: fp32 mean, then fp32 sum of (x - mean)^2.
  kTwoPassF32,
  // Exact (float64) statistics, but eps added outside the square root:
  // (x - mean) / (sqrt(var) + eps), x / (sqrt(mean(x^2)) + eps).
  kEpsOutside,
  // bf16 output by truncating the library's fp32 output (bits >> 16)
  // instead of rounding the truth once.
  kTruncBf16,
};
constexpr Shortcut kShortcuts[] = {Shortcut::kOnePassF32, Shortcut::kTwoPassF32,
                                   Shortcut::kEpsOutside, Shortcut::kTruncBf16};

const char* shortcut_name(Shortcut s) {
  static const char* const kNames[] = {"onepass-f32", "twopass-f32",
                                       "eps-outside", "trunc-bf16"};
  return kNames[static_cast<int>(s)];
}

// Whether the shortcut is a distinct method for this kind and output dtype.
bool shortcut_applies(Shortcut s, simdnorm_kind kind, simdnorm_dtype y) {
  if (s == Shortcut::kTruncBf16) return y == SIMDNORM_BF16;
  if (y != SIMDNORM_F32) return false;
  // Without a mean, the one pass is the whole textbook method.
  return s != Shortcut::kTwoPassF32 ||
         simdnorm_tools::op_of(kind).centered != 0;
}

// fp32 shortcuts (all but kTruncBf16) on rows x cols dense, gamma required,
// beta may be null. Plain loops: without -ffast-math the compiler keeps these
// sums sequential in fp32, as a hand-written kernel would compute them.
void run_shortcut(Shortcut s, bool centered, const float* x, size_t rows,
                  size_t n, const float* gamma, const float* beta, float eps,
                  float* y) {
  for (size_t r = 0; r < rows; ++r, x += n, y += n) {
    if (s == Shortcut::kEpsOutside) {
      double mean = 0.0;
      if (centered) {
        for (size_t i = 0; i < n; ++i) mean += x[i];
        mean /= static_cast<double>(n);
      }
      double sum_sq = 0.0;
      for (size_t i = 0; i < n; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
      const double denom = std::sqrt(sum_sq / static_cast<double>(n)) + eps;
      for (size_t i = 0; i < n; ++i) {
        const double v =
            (x[i] - mean) / denom * gamma[i] + (beta ? beta[i] : 0.0);
        y[i] = static_cast<float>(v);
      }
      continue;
    }
    float sum = 0.0f, sum_sq = 0.0f, mean, var;
    if (s == Shortcut::kOnePassF32) {
      for (size_t i = 0; i < n; ++i) {
        sum += x[i];
        sum_sq += x[i] * x[i];
      }
      const float inv_n = 1.0f / static_cast<float>(n);
      mean = centered ? sum * inv_n : 0.0f;
      var = sum_sq * inv_n - mean * mean;  // may go negative
    } else {
      for (size_t i = 0; i < n; ++i) sum += x[i];
      mean = sum / static_cast<float>(n);
      for (size_t i = 0; i < n; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
      var = sum_sq / static_cast<float>(n);
    }
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (size_t i = 0; i < n; ++i) {
      y[i] = (x[i] - mean) * rstd * gamma[i] + (beta ? beta[i] : 0.0f);
    }
  }
}

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

// The float64 truth of one call (rows x cols) and what the errors are
// measured against.
struct Truth {
  size_t rows = 0, cols = 0;
  const double* want = nullptr;  // y64
  const double* xhat = nullptr;  // y64's normalized value before gamma/beta
  const float* x = nullptr;      // the values normalized (h: fused add)
  const float* gamma = nullptr;  // the scale applied (Gemma: fl32(1 + w))
  const float* beta = nullptr;   // null: none
  const double* lo = nullptr;    // intervals of admissible truths, or null
  const double* hi = nullptr;
};

// Collects the errors of one report row, over several calls (hidden sizes).
class Accumulator {
 public:
  // The hot loops keep their counters in locals (no stores through `this` in
  // the dependency chain) and compute a division only where it is needed.
  void add_f32(const float* got, const Truth& t) {
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
  // bf16 or f16 output (y) against want = half_round_once(y, truth).
  void add_half(simdnorm_dtype y, const uint16_t* got, const uint16_t* want,
                const Truth& t) {
    if (y == SIMDNORM_F16) {
      add_half_t<true>(got, want, t);
    } else {
      add_half_t<false>(got, want, t);
    }
  }
  // int8 output: q and scales against the quantized truth.
  void add_i8(const int8_t* q, const float* scales, const I8Truth& i8,
              const Truth& t) {
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
  // Fused add: n elements of sum_out (x_type) against h, rows of cols.
  void add_sum_out(simdnorm_dtype x_type, const void* got, const void* want,
                   size_t n, size_t cols) {
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
  void add_inplace_mismatches(uint64_t n) {
    s_.fused = true;
    s_.inplace_mismatch += n;
  }
  // The statistics so far; clears the accumulator.
  Stats finish() {
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

 private:
  // A bf16/f16 result more than one ulp from the once-rounded truth still
  // meets the contract when it is the rounding of a value within the fp32
  // bound of the truth (of the interval [lo, hi] of admissible truths): where
  // y = xhat * gamma + beta nearly cancels, that bound spans many ulps of the
  // tiny y, and no fp32 computation can do better.
  template <bool kF16>
  void add_half_t(const uint16_t* got, const uint16_t* want, const Truth& t) {
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
        const double near =
            interval ? nearest_in(got_f, t_lo, t_hi) : t.want[i];
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
  // One call's counters, kept in locals by the hot loops.
  struct Tally {
    uint64_t count = 0, exact = 0, excluded = 0, over = 0, zeros = 0;
    double sum = 0, max;
  };
  Tally start() const { return Tally{0, 0, 0, 0, 0, 0, s_.max}; }
  // The error of an element whose truth is finite.
  void add_error(Tally* t, double err) {
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
  void merge(const Tally& t) {
    s_.count += t.count;
    s_.exact += t.exact;
    s_.excluded += t.excluded;
    s_.over += t.over;
    s_.max = t.max;
    zeros_ += t.zeros;
    sum_ += t.sum;
  }
  std::vector<float> errs_;  // the non-zero errors
  std::vector<uint32_t> hist_ = std::vector<uint32_t>(4096);  // of errs_
  uint64_t zeros_ = 0;  // and how many were zero
  std::vector<double> row_err_;
  double sum_ = 0;
  Stats s_ = initial();
  static Stats initial() {
    Stats s;
    s.max = -1;  // below any error: the first element becomes the worst
    s.max_scale_rel = -1;
    return s;
  }
};

constexpr size_t kMaxSelfCheckMessages = 20;

// The (x, w) dtypes of a plan sharing one reference, with the y dtypes
// wanted (f32 first).
std::vector<std::pair<Dtypes, std::vector<simdnorm_dtype>>> pairs_of(
    const Plan& plan) {
  std::vector<std::pair<Dtypes, std::vector<simdnorm_dtype>>> pairs;
  for (const Dtypes& d : plan.dtypes) {
    auto it = std::find_if(pairs.begin(), pairs.end(), [&](const auto& p) {
      return p.first.x == d.x && p.first.param == d.param;
    });
    if (it == pairs.end()) it = pairs.insert(pairs.end(), {d, {}});
    AddUnique(&it->second, d.y);
  }
  for (auto& p : pairs) std::sort(p.second.begin(), p.second.end());
  return pairs;
}

// Output buffers of one call, reused across calls (no page faults per call).
struct Outputs {
  std::vector<float> y;      // room for rows * cols elements of any type
  std::vector<float> sum;    // sum_out, x_type
  std::vector<float> scale;  // y_scale
  void resize(size_t n, size_t groups) {
    y.resize(n);
    sum.resize(n);
    scale.resize(std::max<size_t>(groups, 1));
  }
  // Points d's outputs here for y type y (and the variant's sum_out).
  void point(simdnorm_desc* d, simdnorm_dtype y_type, const Variant& v) {
    d->y_type = y_type;
    d->y = y.data();
    d->sum_out = v.fused_add ? sum.data() : nullptr;
    d->y_scale = y_type == SIMDNORM_I8 ? scale.data() : nullptr;
    d->quant_group = y_type == SIMDNORM_I8 ? v.quant_group : 0;
  }
};

class Runner {
 public:
  explicit Runner(const Config& cfg) : cfg_(cfg) {
    for (const Plan& plan : cfg_.plans) {
      for (const auto& [xw, ys] : pairs_of(plan)) {
        for (const Family& f : plan.families) {
          if (f.runs_with(xw.x)) total_ += plan.cols.size() * cfg_.kinds.size();
        }
      }
    }
    progress_ = !cfg_.quiet && isatty(2);
  }

  RunOutput run() {
    for (simdnorm_kind kind : cfg_.kinds) {
      for (const Plan& plan : cfg_.plans) {
        for (const auto& [xw, ys] : pairs_of(plan)) {
          for (const Family& fam : plan.families) {
            if (fam.runs_with(xw.x)) run_family(kind, plan, xw, ys, fam);
          }
        }
      }
    }
    if (progress_) fmt::print(stderr, "\r{:100}\r", "");
    simdnorm_set_isa("auto");
    order_rows();
    return std::move(out_);
  }

 private:
  // The family's values (residual: the second stream of the fused add; for
  // --input the rows rotated by one).
  const std::vector<float>& base_data(const Family& fam, size_t cols,
                                      bool residual) {
    const auto key = std::make_tuple(static_cast<int>(fam.gen), cols, residual);
    const std::vector<float>& u = cfg_.user_data;
    if (fam.gen == Gen::kUser && !residual) return u;
    auto [it, added] = cache_.try_emplace(key);
    if (!added) return it->second;
    if (fam.gen != Gen::kUser) {
      return it->second =
                 generate(fam.gen, cfg_.rows, cols, cfg_.seed, residual);
    }
    for (size_t i = 0; i < u.size(); ++i) {
      it->second.push_back(u[(i + cols) % u.size()]);
    }
    return it->second;
  }

  void error(const std::string& what) {
    if (out_.errors.size() < 1000) out_.errors.push_back(what);
  }

  // One family on one (x, w) pair of a plan: every hidden size, y dtype and
  // ISA, plus the shortcuts; adds its rows.
  void run_family(simdnorm_kind kind, const Plan& plan, const Dtypes& xw,
                  const std::vector<simdnorm_dtype>& ys, const Family& fam) {
    const Variant& v = plan.variant;
    const size_t n_isa = cfg_.isas.size();
    // Per y dtype: an accumulator per ISA then per shortcut, and the
    // messages of failed calls per ISA.
    std::vector<std::vector<Accumulator>> acc(
        ys.size(), std::vector<Accumulator>(n_isa + std::size(kShortcuts)));
    std::vector<std::vector<std::string>> failed(ys.size() * n_isa);
    const float eps = fam.eps_zero ? 0.0f : cfg_.eps;
    const bool with_beta = simdnorm_tools::op_of(kind).centered != 0;
    auto where = [&](const std::string& isa, const Dtypes& dt, size_t cols) {
      return fmt::format("{} cols {}",
                         row_name(isa, kind, v.name(), dt, fam.name), cols);
    };
    for (size_t cols : plan.cols) {
      if (progress_) {
        fmt::print(stderr,
                   "\r[{:4}/{}] {:<9} {:<10} x={:<4} w={:<4} {:<22} cols {:<6}",
                   ++done_, total_, kind_name(kind), v.name(), dtype_name(xw.x),
                   dtype_name(xw.param), fam.name, cols);
        std::fflush(stderr);
      }
      const size_t rows = fam.gen == Gen::kUser ? cfg_.user_rows : cfg_.rows;
      const size_t n = rows * cols;
      const Operand x = quantize(base_data(fam, cols, false), xw.x, fam.bf16q);
      Operand residual, h;
      if (v.fused_add) {
        residual = quantize(base_data(fam, cols, true), xw.x, fam.bf16q);
        h = rounded_sum(x, residual);
      }
      const Operand& xn = v.fused_add ? h : x;  // what gets normalized
      const Weights wt =
          make_weights_for(xw.param, cols, cfg_.seed, v.gemma ? 1.0f : 0.0f);
      const float* beta_f = with_beta ? wt.beta.f.data() : nullptr;
      const size_t group = v.quant_group ? v.quant_group : cols;
      const size_t groups = v.int8 ? rows * ((cols + group - 1) / group) : 0;
      out_a_.resize(n, groups);
      out_b_.resize(n, groups);

      // The call under test.
      simdnorm_desc d{};
      d.kind = kind;
      d.rows = rows;
      d.cols = cols;
      d.x_type = xw.x;
      d.x = x.data();
      d.param_type = xw.param;
      d.gamma = wt.gamma.data();
      d.beta = with_beta ? wt.beta.data() : nullptr;
      d.eps = eps;
      d.max_threads = cfg_.threads;
      d.residual = v.fused_add ? residual.data() : nullptr;
      d.gamma_offset = v.gemma ? 1.0f : 0.0f;
      d.flags = v.hf_round ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u;

      // The float64 truth from the plain reference on the values the call
      // normalizes (h for the fused add) and the scale it applies (fl32(1 +
      // gamma) for Gemma), all exact in f32 storage.
      simdnorm_desc t{};
      t.kind = kind;
      t.rows = rows;
      t.cols = cols;
      t.x = xn.f.data();
      t.gamma = wt.scale.data();
      t.beta = beta_f;
      t.eps = eps;
      t.y = out_a_.y.data();
      truth_.resize(n);
      xhat_.resize(n);
      const simdnorm::Status rs =
          simdnorm::reference_f64(t, truth_.data(), xhat_.data());
      if (rs != simdnorm::Status::kOk) {
        error(where("reference", {xw.x, SIMDNORM_F32, xw.param}, cols) +
              ": reference_f64 returned " + simdnorm::to_string(rs));
        continue;
      }
      lo_.clear();
      hi_.clear();
      if (v.hf_round) {
        hf_round_truth(xw.x, xhat_.data(), wt.scale.data(), beta_f, rows, cols,
                       truth_.data(), &lo_, &hi_);
      }
      const double* lo = lo_.empty() ? nullptr : lo_.data();
      const Truth tr{rows,         cols,        truth_.data(),
                     xhat_.data(), xn.f.data(), wt.scale.data(),
                     beta_f,       lo,          lo ? hi_.data() : nullptr};

      for (size_t yi = 0; yi < ys.size(); ++yi) {
        const simdnorm_dtype y = ys[yi];
        const Dtypes dt{xw.x, y, xw.param};
        out_a_.point(&d, y, v);
        if (Is16(y)) {
          want_.resize(n);
          for (size_t i = 0; i < n; ++i) {
            want_[i] = half_round_once(y, truth_[i]);
          }
        }
        const I8Truth i8 = y == SIMDNORM_I8
                               ? quantize_truth(truth_.data(), tr.lo, tr.hi,
                                                rows, cols, v.quant_group)
                               : I8Truth();
        if (!v.plain() || y != SIMDNORM_F32) {
          self_check(d, v, y, i8, xn, where("reference", dt, cols));
        }
        for (size_t ii = 0; ii < n_isa; ++ii) {
          const char* isa = cfg_.isas[ii].c_str();
          const simdnorm_status ss = simdnorm_set_isa(isa);
          const simdnorm_status st =
              ss == SIMDNORM_OK ? simdnorm_normalize(&d) : ss;
          if (st != SIMDNORM_OK) {
            const std::string msg = fmt::format(
                "{}: {} returned {}", where(isa, dt, cols),
                ss != SIMDNORM_OK ? "simdnorm_set_isa" : "simdnorm_normalize",
                simdnorm_status_string(st));
            error(msg);
            failed[yi * n_isa + ii].push_back(msg);
            continue;
          }
          Accumulator& a = acc[yi][ii];
          if (y == SIMDNORM_F32) {
            a.add_f32(out_a_.y.data(), tr);
          } else if (Is16(y)) {
            a.add_half(y, reinterpret_cast<const uint16_t*>(d.y), want_.data(),
                       tr);
          } else {
            a.add_i8(static_cast<const int8_t*>(d.y), d.y_scale, i8, tr);
          }
          if (v.fused_add) {
            a.add_sum_out(xw.x, d.sum_out, h.data(), n, cols);
            a.add_inplace_mismatches(
                in_place_differences(d, x, residual, y, groups));
          }
        }
        if (with_shortcuts(v, dt)) {
          run_shortcuts(kind, d, tr, &acc[yi][n_isa]);
        }
      }
    }
    // The rows of this family.
    for (size_t yi = 0; yi < ys.size(); ++yi) {
      const Dtypes dt{xw.x, ys[yi], xw.param};
      auto add_row = [&](const std::string& isa, const std::string& method,
                         Accumulator* a, bool checked) {
        ResultRow& r = out_.rows.emplace_back();
        static_cast<RowKey&>(r) = {isa, method, kind, v.name(), dt, checked};
        r.family = fam.name;
        r.eps = eps;
        r.s = a->finish();
        check_bounds(&r);
      };
      for (size_t ii = 0; ii < n_isa; ++ii) {
        add_row(cfg_.isas[ii], "simdnorm", &acc[yi][ii], true);
        for (const std::string& m : failed[yi * n_isa + ii]) {
          out_.rows.back().violations.push_back(m);
        }
      }
      if (!with_shortcuts(v, dt)) continue;
      for (size_t s = 0; s < std::size(kShortcuts); ++s) {
        if (shortcut_applies(kShortcuts[s], kind, dt.y) &&
            (kShortcuts[s] != Shortcut::kTruncBf16 || n_isa > 0)) {
          add_row("shortcut", shortcut_name(kShortcuts[s]), &acc[yi][n_isa + s],
                  false);
        }
      }
    }
  }

  // The shortcuts run on the plain calls without f16 (f32 and bf16 y).
  bool with_shortcuts(const Variant& v, const Dtypes& dt) const {
    return cfg_.shortcuts && v.plain() && dt.x != SIMDNORM_F16 &&
           dt.y != SIMDNORM_F16 && dt.param != SIMDNORM_F16;
  }

  // The textbook shortcuts on the plain call d's inputs, into sc[shortcut].
  void run_shortcuts(simdnorm_kind kind, const simdnorm_desc& d,
                     const Truth& tr, Accumulator* sc) {
    const size_t n = d.rows * d.cols;
    ys_.resize(n);
    if (d.y_type == SIMDNORM_F32) {
      for (size_t s = 0; s < std::size(kShortcuts); ++s) {
        if (kShortcuts[s] == Shortcut::kTruncBf16 ||
            !shortcut_applies(kShortcuts[s], kind, d.y_type)) {
          continue;
        }
        run_shortcut(kShortcuts[s], simdnorm_tools::op_of(kind).centered != 0,
                     tr.x, d.rows, d.cols, tr.gamma, tr.beta, d.eps,
                     ys_.data());
        sc[s].add_f32(ys_.data(), tr);
      }
      return;
    }
    // bf16: the best ISA's fp32 output with the low 16 bits dropped (the
    // shortcut the library avoids).
    simdnorm_desc df = d;
    df.y_type = SIMDNORM_F32;
    df.y = ys_.data();
    if (d.y_type != SIMDNORM_BF16 || cfg_.isas.empty() ||
        simdnorm_set_isa(cfg_.isas[0].c_str()) != SIMDNORM_OK ||
        simdnorm_normalize(&df) != SIMDNORM_OK) {
      return;
    }
    tb_.resize(n);
    for (size_t i = 0; i < n; ++i) tb_[i] = simdnorm_test::Bf16Truncate(ys_[i]);
    sc[static_cast<int>(Shortcut::kTruncBf16)].add_half(
        SIMDNORM_BF16, tb_.data(), want_.data(), tr);
  }

  // vLLM's form of the same call, on copies: residual = sum_out, and y = x
  // when the types allow. The number of elements of y, sum_out and y_scale
  // that differ from the out-of-place call just made (on the same ISA).
  uint64_t in_place_differences(const simdnorm_desc& d, const Operand& x,
                                const Operand& residual, simdnorm_dtype y,
                                size_t groups) {
    const size_t n = d.rows * d.cols;
    const size_t bytes = n * simdnorm_tools::ElemSize(d.x_type);
    xw_.resize(n);
    rw_.resize(n);
    std::memcpy(xw_.data(), x.data(), bytes);
    std::memcpy(rw_.data(), residual.data(), bytes);
    simdnorm_desc e = d;
    e.x = xw_.data();
    e.residual = e.sum_out = rw_.data();
    e.y = y == d.x_type ? static_cast<void*>(xw_.data()) : out_b_.y.data();
    if (y == SIMDNORM_I8) e.y_scale = out_b_.scale.data();
    if (simdnorm_normalize(&e) != SIMDNORM_OK) return n;  // all of it differs
    return count_differences(y, d.y, e.y, n) +
           count_differences(d.x_type, d.sum_out, rw_.data(), n) +
           count_differences(SIMDNORM_F32, d.y_scale, e.y_scale,
                             y == SIMDNORM_I8 ? groups : 0);
  }

  // simdnorm_normalize_reference on the real descriptor (every field of the
  // variant) must give exactly the truth derived here, rounded once: a
  // disagreement would make the figures meaningless. For bf16 and f16 the
  // reference's bytes become want_, what every ISA must give.
  void self_check(const simdnorm_desc& d, const Variant& v, simdnorm_dtype y,
                  const I8Truth& i8, const Operand& h,
                  const std::string& label) {
    const size_t n = d.rows * d.cols;
    simdnorm_desc dr = d;
    out_b_.point(&dr, y, v);
    const simdnorm_status st = simdnorm_normalize_reference(&dr);
    if (st != SIMDNORM_OK) {
      error(label + ": simdnorm_normalize_reference returned " +
            simdnorm_status_string(st));
      return;
    }
    const float* r = out_b_.y.data();
    const uint16_t* rh = reinterpret_cast<const uint16_t*>(r);
    const int8_t* q = reinterpret_cast<const int8_t*>(r);
    const float* s = out_b_.scale.data();
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; ++i) {
      bool ok = true;
      if (y == SIMDNORM_I8) {
        // The scale is the float64 one rounded to fp32, q within 1 of q64
        // (the reference may divide by the fp32 scale).
        const size_t gi = i8.group_of(i, d.cols);
        const double want = i8.scale[gi];
        ok = std::isnan(want) || (std::fabs(s[gi] - want) <= 0x1.0p-23 * want &&
                                  std::abs(q[i] - i8.q[i]) <= 1);
      } else if (!std::isfinite(truth_[i])) {
        continue;
      } else if (y == SIMDNORM_F32) {
        ok = r[i] == static_cast<float>(truth_[i]);
      } else {
        // The reference rounds the exact result, which the float64 truth may
        // not resolve next to a midpoint: the once-rounded truth or a
        // neighbour.
        ok = std::abs(HalfOrdered(rh[i]) - HalfOrdered(want_[i])) <= 1;
        want_[i] = rh[i];
      }
      if (!ok && bad++ == 0) first = i;
    }
    const double t = truth_[first];
    const size_t gi = y == SIMDNORM_I8 ? i8.group_of(first, d.cols) : 0;
    if (bad && messages_++ < kMaxSelfCheckMessages) {
      error(fmt::format(
          "{}: simdnorm_normalize_reference ({}) differs from the float64 "
          "truth rounded once at {} elements; first row {} col {}: {}",
          label, dtype_name(y), bad, first / d.cols, first % d.cols,
          y == SIMDNORM_F32
              ? fmt::format("truth {:.17g}, once-rounded {:.9g}, reference "
                            "{:.9g}",
                            t, double{static_cast<float>(t)}, double{r[first]})
          : Is16(y)
              ? fmt::format("truth {:.17g}, once-rounded 0x{:04x}, reference "
                            "0x{:04x}",
                            t, half_round_once(y, t), rh[first])
              : fmt::format("truth {:.17g}: q64 {} scale64 {:.17g}, reference "
                            "q {} scale {:.9g}",
                            t, i8.q[first], i8.scale[gi], q[first],
                            double{s[gi]})));
    }
    const size_t diff =
        v.fused_add ? count_differences(d.x_type, dr.sum_out, h.data(), n) : 0;
    if (diff && messages_++ < kMaxSelfCheckMessages) {
      error(fmt::format(
          "{}: simdnorm_normalize_reference's sum_out differs from h = x + "
          "residual rounded once at {} elements",
          label, diff));
    }
  }

  // Library rows by ISA (best first), then shortcuts by method; within each,
  // by variant, kind, dtype combination and family as configured.
  void order_rows() {
    const std::vector<std::string> variants = cfg_.all_variants();
    const std::vector<std::string> families = cfg_.all_families();
    std::map<std::string, std::vector<Dtypes>> dtypes;
    for (const std::string& v : variants) dtypes[v] = cfg_.all_dtypes(v);
    auto index = [](const auto& list, const auto& value) {
      return std::find(list.begin(), list.end(), value) - list.begin();
    };
    auto rank = [&](const ResultRow& r) {
      long group = index(cfg_.isas, r.isa);
      for (Shortcut s : kShortcuts) {
        if (r.method == shortcut_name(s)) group = 1000 + static_cast<int>(s);
      }
      return std::make_tuple(
          group, index(variants, r.variant), index(cfg_.kinds, r.kind),
          index(dtypes[r.variant], r.dt), index(families, r.family));
    };
    std::stable_sort(out_.rows.begin(), out_.rows.end(),
                     [&](const ResultRow& a, const ResultRow& b) {
                       return rank(a) < rank(b);
                     });
  }

  const Config& cfg_;
  Outputs out_a_, out_b_;       // the call under test; the reference and copies
  std::vector<float> ys_;       // a shortcut's output
  std::vector<float> xw_, rw_;  // in-place copies of x and residual
  std::vector<uint16_t> want_, tb_;
  std::vector<double> truth_, xhat_, lo_, hi_;
  std::map<std::tuple<int, size_t, bool>, std::vector<float>> cache_;
  RunOutput out_;
  size_t total_ = 0, done_ = 0, messages_ = 0;
  bool progress_ = false;
};

}  // namespace

RunOutput run_all(const Config& cfg) { return Runner(cfg).run(); }

}  // namespace simdnorm_accuracy

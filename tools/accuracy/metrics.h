// Error metrics of simdnorm-accuracy.
//
// fp32 output, "scaled ulps": |got - want| / (2^-23 * (|gamma| * max(1,
// |xhat|) + |beta|)), want the float64 truth and xhat the truth's normalized
// value before gamma/beta: the unit the core's bound is stated in.
// bf16 and f16 output, "bf16 ulps" / "f16 ulps": the distance, in the
// ordering of the format's values, from the float64 truth rounded once.
// For them the same scaled measure is also kept, in units of 2^-7 (bf16) or
// 2^-10 (f16) times (|gamma| * max(1, |xhat|) + |beta|) ("scaled bf16/f16
// ulps"; a correctly rounded result is within 0.5 of them): information only.
// int8 output, "int8 q": |q - q64| per element, q64 = RNE(y64 / scale64)
// with scale64 = max|y64| / 127 over the group, plus the relative error of
// each group's scale.
// Only elements whose float64 truth is finite count (for int8: whose group's
// truth is finite); the others are counted as excluded. A non-finite result
// where the truth is finite is an infinite error.
//
// Hugging Face's order (SIMDNORM_ROUND_NORMALIZED) rounds xhat to x_type
// before the scale: where the float64 xhat lies within the fp32 bound of a
// rounding boundary of x_type, either rounding is right. The truth is then
// an interval [lo, hi] of admissible values, and the error is the distance
// to it (exact still means equal to the once-rounded primary truth).
#ifndef SIMDNORM_TOOLS_ACCURACY_METRICS_H_
#define SIMDNORM_TOOLS_ACCURACY_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "numerics.h"

namespace simdnorm_accuracy {

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

// The element with the largest error (the first one on ties).
struct Worst {
  bool valid = false;
  size_t cols = 0, row = 0, col = 0;
  double input = 0, got = 0, want = 0, xhat = 0;
  double scaled = 0;  // its error in scaled (fp32, bf16 or f16) ulps
};

// int8 output: the group whose scale is furthest from the float64 one.
struct ScaleWorst {
  bool valid = false;
  size_t cols = 0, row = 0, group = 0;
  double got = 0, want = 0;
};

// Fused add: the first element of sum_out that differs from h.
struct SumWorst {
  bool valid = false;
  size_t cols = 0, row = 0, col = 0;
  uint32_t got_bits = 0, want_bits = 0;
};

struct Stats {
  uint64_t count = 0;     // elements whose truth is finite
  uint64_t excluded = 0;  // elements whose truth is NaN or infinite
  uint64_t exact = 0;     // equal to the truth rounded once to y's dtype
  uint64_t over = 0;      // beyond the bound on the error of one element
  double max = 0, mean = 0;
  double p999 = 0;        // nearest rank: the ceil(0.999 * count)-th smallest
  double max_scaled = 0;  // largest scaled error (= max for fp32 output)
  Worst worst;
  // int8 output (y = i8): the scales of the groups whose truth is finite.
  uint64_t groups = 0;
  uint64_t scale_over = 0;  // scales beyond kI8MaxScaleRelErr
  double max_scale_rel = 0;
  ScaleWorst scale_worst;
  // Fused add: sum_out against h (bit-exact, any NaN equal to any NaN), and
  // the in-place form (sum_out = residual, y = x) against the out-of-place
  // one, every element of y, sum_out and the scales.
  bool fused = false;
  uint64_t sum_count = 0, sum_mismatch = 0;
  SumWorst sum_worst;
  uint64_t inplace_mismatch = 0;
  double exact_share() const {
    return count ? static_cast<double>(exact) / static_cast<double>(count)
                 : 1.0;
  }
};

// Collects the errors of one report row, over several calls (hidden sizes).
class Accumulator {
 public:
  void add_f32(const float* got, const Truth& t);
  // bf16 or f16 output (y) against want = half_round_once(y, truth).
  void add_half(simdnorm_dtype y, const uint16_t* got, const uint16_t* want,
                const Truth& t);
  // int8 output: q and scales against the quantized truth.
  void add_i8(const int8_t* q, const float* scales, const I8Truth& i8,
              const Truth& t);
  // Fused add: n elements of sum_out (x_type) against h, rows of cols.
  void add_sum_out(simdnorm_dtype x_type, const void* got, const void* want,
                   size_t n, size_t cols);
  void add_inplace_mismatches(uint64_t n) {
    s_.fused = true;
    s_.inplace_mismatch += n;
  }
  // The statistics so far; clears the accumulator.
  Stats finish();

 private:
  template <bool kF16>
  void add_half_t(const uint16_t* got, const uint16_t* want, const Truth& t);
  // One call's counters, kept in locals by the hot loops.
  struct Tally {
    uint64_t count = 0, exact = 0, excluded = 0, over = 0, zeros = 0;
    double sum = 0, max;
  };
  Tally start() const { return Tally{0, 0, 0, 0, 0, 0, s_.max}; }
  // The error of an element whose truth is finite.
  void add_error(Tally* t, double err);
  void merge(const Tally& t);
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

// What identifies a report row, and a summary row.
struct RowKey {
  std::string isa;     // ISA name, or "shortcut"
  std::string method;  // "simdnorm" or the shortcut's name
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  std::string variant = "plain";  // Variant::name()
  Dtypes dt;
  bool checked = false;  // library rows are held to the bounds
  bool exceeds = false;  // the figures exceed a bound (checked or not)
};

// One report row: a method (the library on one ISA, or a shortcut) on one
// kind, variant, dtype combination and input family, over every hidden size
// run.
struct ResultRow : RowKey {
  std::string family;
  float eps = 0;
  Stats s;
  std::vector<std::string> violations;  // empty = within the bounds
  bool pass() const { return violations.empty(); }
};

// Sets row->exceeds and, for a checked row, the bounds' violations.
void check_bounds(ResultRow* row);

// Rows of one RowKey merged over families: counts summed, the largest
// errors and p99.9, the mean over all elements, the lowest exact share.
struct SummaryRow : RowKey {
  size_t families = 0, failing = 0;
  Stats s;
  double min_exact_share = 1;
  std::string worst_family;  // the largest max (ties: the lowest share)
};

// Groups consecutive rows of the same RowKey, keeping their order of first
// appearance.
std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows);

// "scaled_ulp", "bf16_ulp", "f16_ulp" or "int8_q", by y's dtype.
std::string unit_name(simdnorm_dtype y);
// The short form for the text table: "scaled", "bf16", "f16", "q".
std::string unit_label(simdnorm_dtype y);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_METRICS_H_

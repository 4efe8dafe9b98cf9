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

#include "common.h"

namespace simdnorm_accuracy {

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

// The float64 truth of an int8 output: per group (rows x groups, row-major)
// the scale and its admissible interval, per element q64 and its interval.
struct I8Truth {
  size_t group = 0, groups_per_row = 0;
  std::vector<double> scale, scale_lo, scale_hi;  // NaN: group excluded
  std::vector<int16_t> q, q_lo, q_hi;
};

// Quantizes the truth as the contract says (interval bounds lo/hi may be
// null; where given and not NaN, they widen the admissible q and scales).
I8Truth quantize_truth(const double* truth, const double* lo, const double* hi,
                       size_t rows, size_t cols, size_t group);

// Collects the errors of one report row, over several calls (hidden sizes).
class Accumulator {
 public:
  // fp32 output. gamma is required (the scale actually used, widened),
  // beta may be null (0). lo and hi may be null: no interval.
  void add_f32(const float* got, const double* want, const double* xhat,
               const float* x, const float* gamma, const float* beta,
               size_t rows, size_t cols, const double* lo = nullptr,
               const double* hi = nullptr);
  // bf16 or f16 output (y) against want = half_round_once(y, truth).
  void add_half(simdnorm_dtype y, const uint16_t* got, const uint16_t* want,
                const double* truth, const double* xhat, const float* x,
                const float* gamma, const float* beta, size_t rows, size_t cols,
                const double* lo = nullptr, const double* hi = nullptr);
  // int8 output: q (rows x cols) and scales against the quantized truth.
  void add_i8(const int8_t* q, const float* scales, const I8Truth& t,
              const double* xhat, const float* x, size_t rows, size_t cols);
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
  void add_half_t(const uint16_t* got, const uint16_t* want,
                  const double* truth, const double* xhat, const float* x,
                  const float* gamma, const float* beta, size_t rows,
                  size_t cols, const double* lo, const double* hi);
  // Adds one call's element counts and error sum to the totals.
  void merge(uint64_t count, uint64_t exact, uint64_t excluded, uint64_t zeros,
             uint64_t over, double sum);
  void new_worst(double err, double scaled, size_t cols, size_t row, size_t col,
                 double input, double got, double want, double xhat);
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

// One report row: a method (the library on one ISA, or a shortcut) on one
// kind, variant, dtype combination and input family, over every hidden size
// run.
struct ResultRow {
  std::string isa;     // ISA name, or "shortcut"
  std::string method;  // "simdnorm" or the shortcut's name
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  std::string variant = "plain";  // Variant::name()
  Dtypes dt;
  std::string family;
  float eps = 0;
  Stats s;
  bool checked = false;                 // library rows are held to the bounds
  std::vector<std::string> violations;  // empty = within the bounds
  bool half_out() const { return is_half(dt.y); }
  bool pass() const { return violations.empty(); }
};

// The bound checks of a library row; fills row->violations.
void check_bounds(ResultRow* row);

// Rows of one (isa, method, kind, variant, dtypes) merged over families.
struct SummaryRow {
  std::string isa, method;
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  std::string variant = "plain";
  Dtypes dt;
  size_t families = 0, failing = 0;
  uint64_t count = 0, excluded = 0;
  uint64_t over = 0;  // elements beyond the per-element bound
  double max = 0, mean = 0;
  double p999 = 0;             // the largest of the families' p99.9
  double max_scaled = 0;       // the largest scaled error
  double min_exact_share = 1;  // the smallest of the families' shares
  std::string worst_family;    // the largest max (ties: the lowest share)
  Worst worst;                 // the worst family's worst element
  // int8 and fused add, summed (largest) over the families.
  uint64_t groups = 0, scale_over = 0;
  double max_scale_rel = 0;
  bool fused = false;
  uint64_t sum_count = 0, sum_mismatch = 0, inplace_mismatch = 0;
  bool checked = false;
  bool half_out() const { return is_half(dt.y); }
};

// Groups consecutive rows of the same (isa, method, kind, variant, dtypes),
// keeping their order of first appearance.
std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows);

// "scaled_ulp", "bf16_ulp", "f16_ulp" or "int8_q", by y's dtype.
std::string unit_name(simdnorm_dtype y);
// The short form for the text table: "scaled", "bf16", "f16", "q".
const char* unit_label(simdnorm_dtype y);

// Whether a summary row's figures exceed the bounds (for shortcut rows,
// which are not held to them, the table says "(exceeds)").
bool summary_exceeds(const SummaryRow& s);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_METRICS_H_

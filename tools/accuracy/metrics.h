// Error metrics of simdnorm-accuracy.
//
// fp32 output, "scaled ulps": |got - want| / (2^-23 * (|gamma| * max(1,
// |xhat|) + |beta|)), want the float64 truth and xhat the truth's normalized
// value before gamma/beta: the unit the core's bound is stated in.
// bf16 output, "bf16 ulps": the distance, in the ordering of bf16 values,
// from the float64 truth rounded once to bf16.
// For bf16 output the same scaled measure is also kept, in units of
// 2^-7 * (|gamma| * max(1, |xhat|) + |beta|) ("scaled bf16 ulps"; a correctly
// rounded bf16 result is within 0.5 of them): information only.
// Only elements whose float64 truth is finite count; the others are counted
// as excluded. A non-finite result where the truth is finite is an infinite
// error.
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
  double scaled = 0;  // its error in scaled (fp32 or bf16) ulps
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
  double exact_share() const {
    return count ? static_cast<double>(exact) / static_cast<double>(count)
                 : 1.0;
  }
};

// Collects the errors of one report row, over several calls (hidden sizes).
class Accumulator {
 public:
  // fp32 output. gamma is required (the weights actually used, widened),
  // beta may be null (0).
  void add_f32(const float* got, const double* want, const double* xhat,
               const float* x, const float* gamma, const float* beta,
               size_t rows, size_t cols);
  // bf16 output against want = bf16_round_once(truth).
  void add_bf16(const uint16_t* got, const uint16_t* want, const double* truth,
                const double* xhat, const float* x, const float* gamma,
                const float* beta, size_t rows, size_t cols);
  // The statistics so far; clears the accumulator.
  Stats finish();

 private:
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
    return s;
  }
};

// One report row: a method (the library on one ISA, or a shortcut) on one
// kind, dtype combination and input family, over every hidden size run.
struct ResultRow {
  std::string isa;     // ISA name, or "shortcut"
  std::string method;  // "simdnorm" or the shortcut's name
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
  Dtypes dt;
  std::string family;
  float eps = 0;
  Stats s;
  bool checked = false;                 // library rows are held to the bounds
  std::vector<std::string> violations;  // empty = within the bounds
  bool bf16_out() const { return dt.y == SIMDNORM_BF16; }
  bool pass() const { return violations.empty(); }
};

// The bound checks of a library row; fills row->violations.
void check_bounds(ResultRow* row);

// Rows of one (isa, method, kind, dtypes) merged over families.
struct SummaryRow {
  std::string isa, method;
  simdnorm_kind kind = SIMDNORM_LAYERNORM;
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
  bool checked = false;
  bool bf16_out() const { return dt.y == SIMDNORM_BF16; }
};

// Groups consecutive rows of the same (isa, method, kind, dtypes), keeping
// their order of first appearance.
std::vector<SummaryRow> summarize(const std::vector<ResultRow>& rows);

std::string unit_name(simdnorm_dtype y);  // "scaled_ulp" or "bf16_ulp"

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_METRICS_H_

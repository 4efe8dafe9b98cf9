// simdnorm-accuracy's parts: the bounds, the input families (inputs.cc),
// the command line and the plans (main.cc), the measurement: operands,
// truths, shortcuts, error metrics and the loop (run.cc), --op's run
// (family_run.cc), and the outputs: text tables, JSON, CSV and the SVG
// chart (report.cc).
#ifndef SIMDNORM_TOOLS_ACCURACY_ACCURACY_H_
#define SIMDNORM_TOOLS_ACCURACY_ACCURACY_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/vocabulary.h"
#include "family_problem.h"

namespace simdnorm_accuracy {

using simdnorm_tools::dtype_name;
using simdnorm_tools::Dtypes;
using simdnorm_tools::half_to_float;
using simdnorm_tools::Is16;
using simdnorm_tools::kind_name;
using simdnorm_tools::Variant;

// The core's contract, checked on every library row (never loosened here):
// the registry's fp32 bound (the same for every kind).
inline const double kF32MaxScaledUlps = simdnorm_op_at(0)->f32_bound;
// bf16 and f16 output: correctly rounded (the default), so every element
// equals the exact result rounded once, on every ISA.
constexpr double kHalfMinExactShare = 1.0;
constexpr double kHalfMaxUlps = 1.0;
// int8 output: each group's scale within 1e-6 relative of the float64 one,
// each q within 1 of the float64 q = RNE(y64 / scale64).
constexpr double kI8MaxScaleRelErr = 1e-6;
constexpr double kI8MaxQDiff = 1.0;

std::string dtypes_label(const Dtypes& d);  // "x/y/w", e.g. "bf16/f32/f32"
// The shortest decimal that reads back as the same float ("1e-05").
std::string shortest_float(float v);

// Input families: seeded, reproducible rows that stress the statistics
// (large offsets, heavy tails, extreme magnitudes) plus the weights, and
// raw rows read from a user's file.

// How a family's values are drawn (see inputs.cc for each formula).
enum class Gen {
  kNormal,        // N(0,1)
  kOffset1e3,     // 1e3 + s*N(0,1), s log-uniform in [1e-2, 1] per row
  kOffset1e4,     // 1e4 + s*N(0,1), likewise
  kLlmHidden,     // log-normal channel scales + a few channels of +-1e3..1e4
  kFirstOutlier,  // N(0,1) with x[0] = +-1e3..1e4 (a poor shift K = x[0])
  kStudentT2,     // Student-t, 2 degrees of freedom
  kCauchy,        // Cauchy, clipped to +-1e30
  kNearConstant,  // c * (1 + k*2^-22), k in -2..2: a few fp32 ulps apart
  kConstant,      // c: every element of the row equal
  kHuge1e25,      // 1e25 * N(0,1)
  kHuge1e36,      // 1e36 * N(0,1)
  kTiny1e25,      // 1e-25 * N(0,1)
  kSubnormal,     // 1e-40 * N(0,1): fp32 subnormals
  kUser,          // rows from --input FILE
};

struct Family {
  std::string name;  // e.g. "offset1e4", "bf16q:huge1e36-eps0"
  Gen gen = Gen::kNormal;
  bool eps_zero = false;  // the family uses eps = 0 instead of the default
  bool bf16q = false;     // values rounded to bf16 even when x is fp32
  // Whether it runs with x of type t: the bf16q copies only with fp32 x
  // (bf16 and f16 x quantize anyway); with f16 x only the families that fit
  // f16 (not huge, tiny, subnormal, which would become infinities, zeros).
  bool runs_with(simdnorm_dtype t) const;
};

// The generated families, in report order: the plain ones, then their
// bf16-quantized copies.
std::vector<Family> default_families();

// The generated families of these names, in their order (unknown names
// left out).
std::vector<Family> families_named(const std::vector<std::string>& names);

// rows x cols values of a generator, reproducible from (seed, gen, cols);
// the residual stream of the fused add is an independent second draw.
std::vector<float> generate(Gen gen, size_t rows, size_t cols, uint64_t seed,
                            bool residual = false);

// gamma ~ 1 + 0.1*N(0,1), beta ~ 0.1*N(0,1), reproducible from (seed, cols).
void make_weights(size_t cols, uint64_t seed, std::vector<float>* gamma,
                  std::vector<float>* beta);

// Reads raw little-endian rows of fp32, bf16 or f16 (cols elements each) and
// widens them to float. On failure returns false with a message in *error.
bool read_rows(const std::string& path, simdnorm_dtype type, size_t cols,
               std::vector<float>* out, std::string* error);

// Error metrics.
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

// What identifies a report row, and a summary row.
struct RowKey {
  std::string isa;     // ISA name, or "shortcut"
  std::string method;  // "simdnorm" or the shortcut's name
  simdnorm_kind kind{};
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

// The configuration and the measurement loop: for every kind, plan
// (variant, dtype combinations, families, hidden sizes), one float64
// reference per (family, hidden size), then the library on every selected
// ISA and the shortcuts, all against it.

// One variant on its dtype combinations (int8 variants: y = i8), families
// and hidden sizes.
struct Plan {
  Variant variant;
  std::vector<Dtypes> dtypes;
  std::vector<Family> families;
  std::vector<size_t> cols;
};

struct Config {
  // The command line's selection (empty: the defaults, see --help).
  std::vector<std::string> isas;  // as the library lists them, best first
  std::vector<simdnorm_kind> kinds;
  std::vector<simdnorm_peers::FamilyOp> ops;  // --op: only these run
  std::vector<Variant> variants;
  std::vector<Dtypes> dtypes;
  std::vector<std::string> families;
  std::vector<size_t> cols;
  size_t rows = 0;  // per family and hidden size (0: 64, or all of --input)
  uint64_t seed = 1;
  float eps = 1e-5f;   // for families that do not use eps = 0
  size_t threads = 0;  // simdnorm_desc::max_threads
  bool shortcuts = true, quiet = false, detail = false;
  std::string input;  // --input FILE: one family ("input", Gen::kUser)
  simdnorm_dtype input_dtype = SIMDNORM_F32;
  bool json = false, csv = false;
  std::string json_path, csv_path, svg_path;  // "" or "-": stdout (no svg)
  // What runs: the plans, and --input's rows.
  std::vector<Plan> plans;
  std::vector<float> user_data;
  size_t user_rows = 0;

  // The unions over the plans, in order of first appearance.
  std::vector<std::string> all_variants() const;
  std::vector<Dtypes> all_dtypes(const std::string& variant = "") const;
  std::vector<std::string> all_families() const;
  std::vector<size_t> all_cols() const;
};

using simdnorm_test::DTypeCombinations;

struct RunOutput {
  // Library rows (per ISA, best first) then shortcut rows, each ordered by
  // variant, kind, dtype combination and family.
  std::vector<ResultRow> rows;
  // Calls that failed and reference self-check disagreements: each makes
  // the run fail.
  std::vector<std::string> errors;
  double seconds = 0;  // wall time of the measurement
  bool pass() const;
};

RunOutput run_all(const Config& cfg);

// Elements i < n of a and b (type t) that differ (any NaN equals any NaN).
size_t count_differences(simdnorm_dtype t, const void* a, const void* b,
                         size_t n);

// --op's run on the families (shapes, dtypes and ISAs of cfg), its text
// table on stdout or its JSON and CSV rows; the exit status.
int run_family_ops(const Config& cfg, const std::vector<Family>& families,
                   std::FILE* json, std::FILE* csv);

// "AVX2 rmsnorm fused-add bf16/bf16/bf16 normal": a row in messages.
std::string row_name(const std::string& isa, simdnorm_kind kind,
                     const std::string& variant, const Dtypes& dt,
                     const std::string& family);

using simdnorm_tools::AddUnique;
using simdnorm_tools::unique;

// The outputs.

// What was run and measured.
struct Report {
  const Config& cfg;
  const RunOutput& out;
  std::string command;  // the command line
};

// The library rows exceeding a bound, one line each with the row's key.
std::vector<std::string> failure_lines(const RunOutput& out);

// Default text report: the per (ISA, kind, dtypes) summary, the per-family
// comparison with the shortcuts and the verdict. With detail, also one line
// per (ISA or shortcut, kind, dtypes, family).
void write_table(std::FILE* f, const Report& r);
void write_json(std::FILE* f, const Report& r);
void write_csv(std::FILE* f, const Report& r);
void write_svg(std::FILE* f, const Report& r);

// Number formatting shared by the writers.
std::string format_error(double v);  // compact: 0, 0.123, 31.9, 1.2e+07, inf

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_ACCURACY_H_

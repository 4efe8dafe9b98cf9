// The configuration and measurement loop of simdnorm-accuracy: for every
// kind, plan (variant, dtype combinations, families, hidden sizes), one
// float64 reference per (family, hidden size), then the library on every
// selected ISA and the shortcuts, all against it.
#ifndef SIMDNORM_TOOLS_ACCURACY_RUN_H_
#define SIMDNORM_TOOLS_ACCURACY_RUN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "inputs.h"
#include "metrics.h"
#include "numerics.h"

namespace simdnorm_accuracy {

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

// Parses argv into *cfg: 0 to go on, -1 after printing the help, 2 with the
// message of a usage error in *error. --isa takes the names in `isas` (any
// case; stored as spelled there).
int parse_options(int argc, char** argv, const std::vector<std::string>& isas,
                  Config* cfg, std::string* error);

// The combinations x/y/w of `types`, x major (f32/f32/f32, f32/f32/bf16,
// ...); with need_f16 only those with an f16.
std::vector<Dtypes> combinations(const std::vector<simdnorm_dtype>& types,
                                 bool need_f16 = false);

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

// "AVX2 rmsnorm fused-add bf16/bf16/bf16 normal": a row in messages.
std::string row_name(const std::string& isa, simdnorm_kind kind,
                     const std::string& variant, const Dtypes& dt,
                     const std::string& family);

// The values in their first order, repeats dropped.
template <class T>
std::vector<T> unique(const std::vector<T>& v) {
  std::vector<T> out;
  for (const T& e : v) {
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
  return out;
}

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_RUN_H_

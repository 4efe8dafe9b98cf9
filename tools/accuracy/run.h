// The measurement loop of simdnorm-accuracy: for every kind, plan (variant,
// dtype combinations, families, hidden sizes), one float64 reference per
// (family, hidden size), then the library on every selected ISA and the
// shortcuts, all against it.
#ifndef SIMDNORM_TOOLS_ACCURACY_RUN_H_
#define SIMDNORM_TOOLS_ACCURACY_RUN_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "inputs.h"
#include "metrics.h"

namespace simdnorm_accuracy {

// One variant on its dtype combinations (int8 variants: y = i8), families
// and hidden sizes.
struct Plan {
  Variant variant;
  std::vector<Dtypes> dtypes;
  std::vector<Family> families;
  std::vector<size_t> cols;
};

struct RunConfig {
  std::vector<std::string> isas;  // as the library lists them, best first
  std::vector<simdnorm_kind> kinds;
  std::vector<Plan> plans;
  size_t rows = 0;
  uint64_t seed = 0;
  float eps = 1e-5f;  // for families that do not use eps = 0
  // --input: one family ("input", Gen::kUser) with these rows x cols.
  std::string input;
  simdnorm_dtype input_dtype = SIMDNORM_F32;
  std::vector<float> user_data;
  size_t user_rows = 0;
  bool shortcuts = true;
  bool progress = true;
  size_t threads = 0;  // simdnorm_desc::max_threads

  // The unions over the plans, in order of first appearance.
  std::vector<std::string> variants() const;
  std::vector<Dtypes> dtypes(const std::string& variant = "") const;  // all
  std::vector<std::string> families() const;
  std::vector<size_t> cols() const;
};

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

RunOutput run_all(const RunConfig& cfg);

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

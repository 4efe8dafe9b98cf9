// The measurement loop of simdnorm-accuracy: for every kind, plan (variant,
// dtype combinations, families, hidden sizes), one float64 reference per
// (family, hidden size), then the library on every selected ISA and the
// shortcuts, all against it.
#ifndef SIMDNORM_TOOLS_ACCURACY_RUN_H_
#define SIMDNORM_TOOLS_ACCURACY_RUN_H_

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
  std::vector<float> user_data;
  size_t user_rows = 0;
  bool shortcuts = true;
  bool progress = true;
  size_t threads = 0;  // simdnorm_desc::max_threads
};

struct RunOutput {
  // Library rows (per ISA, best first) then shortcut rows, each ordered by
  // variant, kind, dtype combination and family.
  std::vector<ResultRow> rows;
  // Calls that failed and reference self-check disagreements: each makes
  // the run fail.
  std::vector<std::string> errors;
};

RunOutput run_all(const RunConfig& cfg);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_RUN_H_

// The measurement loop of simdnorm-accuracy: for every kind, dtype
// combination, family and hidden size, one float64 reference, then the
// library on every selected ISA and the shortcuts, all against it.
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

struct RunConfig {
  std::vector<std::string> isas;  // as the library lists them, best first
  std::vector<simdnorm_kind> kinds;
  std::vector<Dtypes> dtypes;
  std::vector<size_t> cols;
  size_t rows = 0;
  uint64_t seed = 0;
  float eps = 1e-5f;  // for families that do not use eps = 0
  std::vector<Family> families;
  // --input: one family ("input", Gen::kUser) with these rows x cols[0].
  std::vector<float> user_data;
  size_t user_rows = 0;
  bool shortcuts = true;
  bool progress = true;
  size_t threads = 0;  // simdnorm_desc::max_threads
};

struct RunOutput {
  // Library rows (per ISA, best first) then shortcut rows, each ordered by
  // kind, dtype combination and family.
  std::vector<ResultRow> rows;
  // Calls that failed and reference self-check disagreements: each makes
  // the run fail.
  std::vector<std::string> errors;
};

RunOutput run_all(const RunConfig& cfg);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_RUN_H_

// Output of simdnorm-accuracy: the aligned text tables (table.cc), JSON
// (json.cc), CSV (csv.cc) and a handwritten SVG chart (svg.cc).
#ifndef SIMDNORM_TOOLS_ACCURACY_REPORT_H_
#define SIMDNORM_TOOLS_ACCURACY_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "metrics.h"
#include "run.h"

namespace simdnorm_accuracy {

// What was run, for the report headers.
struct ReportMeta {
  std::string command;  // the command line
  uint64_t seed = 0;
  size_t rows = 0;           // rows per generated family and hidden size
  std::vector<size_t> cols;  // the union over the plans
  float eps = 0;
  std::vector<std::string> isas;
  std::vector<simdnorm_kind> kinds;
  std::vector<Plan> plans;            // what was run, variant by variant
  std::vector<std::string> variants;  // their names, in order
  // The union over the plans, in order of first appearance.
  std::vector<Dtypes> dtypes;
  std::vector<std::string> families;
  std::string input_path;  // empty unless --input
  simdnorm_dtype input_dtype = SIMDNORM_F32;
  size_t input_rows = 0;
  double seconds = 0;  // wall time of the measurement
};

// The library rows exceeding a bound, one line each with the row's key.
std::vector<std::string> failure_lines(const RunOutput& out);

// Default text report: the per (ISA, kind, dtypes) summary, the per-family
// comparison with the shortcuts and the verdict. With detail, also one line
// per (ISA or shortcut, kind, dtypes, family).
void write_table(std::ostream& os, const RunOutput& out, const ReportMeta& meta,
                 bool detail);
void write_json(std::ostream& os, const RunOutput& out, const ReportMeta& meta);
void write_csv(std::ostream& os, const RunOutput& out);
void write_svg(std::ostream& os, const RunOutput& out, const ReportMeta& meta);

// Number formatting shared by the writers.
std::string format_error(double v);  // compact: 0, 0.123, 31.9, 1.2e+07, inf
std::string format_share(double s);  // percent, 3 decimals
std::string format_worst(const Worst& w);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_REPORT_H_

// Output of simdnorm-accuracy: the aligned text tables (table.cc), JSON and
// CSV (json.cc) and a handwritten SVG chart (svg.cc).
#ifndef SIMDNORM_TOOLS_ACCURACY_REPORT_H_
#define SIMDNORM_TOOLS_ACCURACY_REPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "metrics.h"
#include "run.h"

namespace simdnorm_accuracy {

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

#endif  // SIMDNORM_TOOLS_ACCURACY_REPORT_H_

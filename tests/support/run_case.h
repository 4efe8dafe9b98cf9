// Running a Case under GoogleTest: the call checked against the reference
// (every output element, the guards, the inputs left alone), and the
// verdict at the end of a test.
#ifndef SIMDNORM_TESTS_SUPPORT_RUN_CASE_H_
#define SIMDNORM_TESTS_SUPPORT_RUN_CASE_H_

#include <vector>

#include "support/cases.h"
#include "support/checks.h"

namespace simdnorm_test {

// Runs c on the given rows * cols values (and residual values; NULL =
// ResidualData) and checks every output element (y, and sum_out bit for
// bit against the reference's h, NaN for NaN), the untouched padding and
// guards of every output, and that the inputs are unchanged. The reference
// runs on dense copies of the inputs with outputs of its own, so aliasing
// is the library's alone. outputs (optional) receives Call::OutputBytes().
// Failures are GoogleTest failures of the running test.
void RunCaseOn(const Case& c, const std::vector<float>& values, Stats* st,
               const std::vector<float>* residual_values = nullptr,
               std::vector<unsigned char>* outputs = nullptr);

// RunCaseOn on RowData(c.family, c.rows, c.cols).
void RunCase(const Case& c, Stats* st);

// The end-of-test verdict: no element out of spec, and the bf16 and f16
// rates (GoogleTest expectations); prints the test's statistics.
void ExpectClean(const Stats& st);

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_RUN_CASE_H_

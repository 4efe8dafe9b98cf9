// A sanity check of what a benchmark times: the implementation on a copy of
// the problem's first rows against simdnorm's float64 reference.
#ifndef SIMDNORM_BENCH_REFERENCE_CHECK_H_
#define SIMDNORM_BENCH_REFERENCE_CHECK_H_

#include <functional>
#include <string>

#include "simdnorm/simdnorm.h"

namespace simdnorm_bench {

// Runs the implementation on a descriptor, with f32 scratch rows (rows *
// cols floats, for the unfused peer); false with *why when it cannot.
using RunFn = std::function<bool(const simdnorm_desc& d, float* scratch,
                                 std::string* why)>;

// Copies the first (up to 4) rows of d's inputs into dense buffers, runs
// `run` and simdnorm_normalize_reference on them with separate outputs, and
// compares: sum_out bit for bit; f32 / bf16 / f16 y within a loose bound
// (2^-7, 2^-10 relative for bf16, f16, plus 1e-4; 1e-4 for f32) that
// catches wrong results, not last-bit differences (the tests do those);
// int8 y within 1 and its scales within 1e-5 relative. Returns "" when they
// agree, else what differs.
std::string CheckAgainstReference(const simdnorm_desc& d, const RunFn& run);

}  // namespace simdnorm_bench

#endif  // SIMDNORM_BENCH_REFERENCE_CHECK_H_

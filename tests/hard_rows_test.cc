// Rows that defeat naive kernels, on every ISA, against the float64
// reference: a large mean with a tiny spread, outlier channels, magnitudes
// whose squares overflow or underflow fp32, constant rows, subnormal inputs.
#include <cstddef>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/cases.h"
#include "support/checks.h"
#include "support/dtypes.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/run_case.h"

namespace simdnorm_test {
namespace {

SIMDNORM_ISA_FIXTURE(LayerNormHardRowsTest);
SIMDNORM_ISA_FIXTURE(RMSNormHardRowsTest);

// 4 rows of each length, every dtype combination (bf16 x holds the data
// rounded to bf16), without and with gamma/beta, each eps.
void RunFamily(simdnorm_kind kind, Family family,
               std::initializer_list<float> eps_values) {
  Stats st;
  // RMSNorm of a constant or large-mean row has xhat = +-1 to within 1e-13,
  // so y = +-gamma + beta: with bf16 weights that sum is often exactly a
  // bf16 tie, the truth 1e-14 off it on a side fp32 cannot see.
  st.ties_expected =
      kind == SIMDNORM_RMSNORM &&
      (family == Family::kLargeMean || family == Family::kConstant);
  for (size_t cols : {1u, 3u, 17u, 33u, 896u, 4097u}) {
    for (const DTypes& t : AllDTypes()) {
      for (bool params : {false, true}) {
        for (float eps : eps_values) {
          Case c;
          c.kind = kind;
          c.t = t;
          c.rows = 4;
          c.cols = cols;
          c.gamma = params;
          c.beta = params;
          c.eps = eps;
          c.family = family;
          RunCase(c, &st);
        }
      }
    }
  }
  ExpectClean(st);
}

#define SIMDNORM_HARD_ROWS_TESTS(Fixture, kind)                          \
  TEST_P(Fixture, LargeMean) {                                           \
    RunFamily(kind, Family::kLargeMean, {0.0f, 1e-5f});                  \
  }                                                                      \
  TEST_P(Fixture, Outliers) {                                            \
    RunFamily(kind, Family::kOutliers, {0.0f, 1e-5f});                   \
  }                                                                      \
  TEST_P(Fixture, Huge) { RunFamily(kind, Family::kHuge, {0.0f}); }      \
  TEST_P(Fixture, Tiny) { RunFamily(kind, Family::kTiny, {0.0f}); }      \
  TEST_P(Fixture, ConstantRows) {                                        \
    RunFamily(kind, Family::kConstant, {1e-5f, 1.0f});                   \
  }                                                                      \
  /* eps = 0: where the reference is 0/0 = NaN the output must be NaN */ \
  TEST_P(Fixture, ConstantRowsEpsZero) {                                 \
    RunFamily(kind, Family::kConstant, {0.0f});                          \
  }                                                                      \
  TEST_P(Fixture, Subnormal) { RunFamily(kind, Family::kSubnormal, {0.0f}); }

SIMDNORM_HARD_ROWS_TESTS(LayerNormHardRowsTest, SIMDNORM_LAYERNORM)
SIMDNORM_HARD_ROWS_TESTS(RMSNormHardRowsTest, SIMDNORM_RMSNORM)

SIMDNORM_INSTANTIATE_PER_ISA(LayerNormHardRowsTest);
SIMDNORM_INSTANTIATE_PER_ISA(RMSNormHardRowsTest);

}  // namespace
}  // namespace simdnorm_test

// Numerical faults not covered by nonfinite_test.cc (NaN/inf in x) and
// hard_rows_test.cc (huge, tiny, subnormal, constant rows; eps 0 on
// non-zero constant rows), on every ISA:
// - eps = 0 and an all-zero row (+0 or -0): the formula is 0/0, so both
//   kinds give a NaN row, exactly as the float64 reference; the other rows
//   are bitwise what they are alone. With eps > 0 (even the smallest
//   subnormal) the row is beta (0 without beta).
// - +-FLT_MAX and FLT_MAX beside the smallest subnormal in one row: row
//   differences and squares overflow fp32; checked against the reference.
// - NaN in gamma or beta poisons its column in every row and nothing else;
//   +-inf in beta makes its column +-inf.
// - Regressions of three fuzzer findings (at the end of the file).
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/cases.h"
#include "support/checks.h"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/isas.h"
#include "support/matrix.h"
#include "support/run_case.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

SIMDNORM_ISA_FIXTURE(NumericalFaultsTest);

struct Out {
  Matrix y;
  simdnorm_status status;
};

// rows x cols of `values` (stored as t.x) normalized with eps; weights from
// ParamData unless given.
Out Normalize(simdnorm_kind kind, const DTypes& t, size_t rows, size_t cols,
              const std::vector<float>& values, float eps, bool weights,
              const Matrix* gamma_in = nullptr,
              const Matrix* beta_in = nullptr) {
  Matrix x(t.x, rows, cols);
  x.Fill(values);
  Matrix gamma(t.param, 1, cols), beta(t.param, 1, cols);
  gamma.Fill(ParamData(true, cols));
  beta.Fill(ParamData(false, cols));
  Out out{Matrix(t.y, rows, cols), SIMDNORM_OK};
  simdnorm_desc d{};
  d.kind = kind;
  d.rows = rows;
  d.cols = cols;
  d.x = x.data();
  d.x_type = t.x;
  d.y = out.y.data();
  d.y_type = t.y;
  d.gamma = weights ? (gamma_in ? gamma_in : &gamma)->data() : nullptr;
  d.beta = weights ? (beta_in ? beta_in : &beta)->data() : nullptr;
  d.param_type = t.param;
  d.eps = eps;
  out.status = simdnorm_normalize(&d);
  return out;
}

std::string What(simdnorm_kind kind, const DTypes& t, size_t cols, bool weights,
                 float eps) {
  std::ostringstream os;
  os << "[ISA " << simdnorm_active_isa() << "] " << KindName(kind)
     << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y)
     << " param=" << DTypeName(t.param) << " cols=" << cols
     << (weights ? " gamma+beta" : " no weights") << " eps=" << Num(eps);
  return os.str();
}

// Rows 1 (+0) and 3 (-0) are all zero, rows 0, 2, 4 typical data.
std::vector<float> WithZeroRows(size_t cols) {
  std::vector<float> v = RowData(Family::kTypical, 5, cols);
  for (size_t c = 0; c < cols; ++c) {
    v[1 * cols + c] = 0.0f;
    v[3 * cols + c] = -0.0f;
  }
  return v;
}

TEST_P(NumericalFaultsTest, EpsZeroAllZeroRowIsNaNAndIsolated) {
  size_t failures = 0;
  for (size_t cols : {1u, 17u, 896u, 4097u}) {
    const std::vector<float> values = WithZeroRows(cols);
    for (const DTypes& t : AllDTypes()) {
      for (simdnorm_kind kind : AllKinds()) {
        for (bool weights : {false, true}) {
          const std::string what = What(kind, t, cols, weights, 0.0f);
          const Out all = Normalize(kind, t, 5, cols, values, 0.0f, weights);
          ASSERT_EQ(all.status, SIMDNORM_OK) << what;
          // The reference agrees: 0/0 is NaN.
          Matrix x(t.x, 5, cols), scratch(t.y, 5, cols);
          x.Fill(values);
          simdnorm_desc rd{};
          rd.kind = kind;
          rd.rows = 5;
          rd.cols = cols;
          rd.x = x.data();
          rd.x_type = t.x;
          rd.y = scratch.data();  // not written by reference_f64
          rd.y_type = t.y;
          rd.param_type = t.param;
          std::vector<double> ref(5 * cols);
          ASSERT_EQ(simdnorm::reference_f64(rd, ref.data(), nullptr),
                    simdnorm::Status::kOk);
          for (size_t r : {1u, 3u}) {
            for (size_t c = 0; c < cols; ++c) {
              if (!std::isnan(ref[r * cols + c]) && failures++ < 8) {
                ADD_FAILURE()
                    << what << ": the reference of zero row " << r << " col "
                    << c << " is " << Num(ref[r * cols + c]) << ", not NaN";
              }
              if (!all.y.IsNaN(r, c) && failures++ < 8) {
                ADD_FAILURE()
                    << what << ": zero row " << r << " col " << c << " is "
                    << Num(all.y.GetF(r, c)) << ", want NaN (0/0)";
              }
            }
          }
          // Each other row gives the bits it gives alone.
          for (size_t r : {0u, 2u, 4u}) {
            const std::vector<float> row(values.begin() + r * cols,
                                         values.begin() + (r + 1) * cols);
            const Out alone = Normalize(kind, t, 1, cols, row, 0.0f, weights);
            ASSERT_EQ(alone.status, SIMDNORM_OK);
            if (!all.y.RowBytesEqual(alone.y, r, 0) && failures++ < 8) {
              ADD_FAILURE() << what << ": row " << r
                            << " differs from the same row normalized alone";
            }
          }
          std::string where;
          EXPECT_TRUE(all.y.PaddingIntact(&where)) << what << ": " << where;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0u);
}

// eps > 0 turns the zero row into xhat = 0: y is beta (or 0), rounded once.
TEST_P(NumericalFaultsTest, PositiveEpsAllZeroRowIsBeta) {
  size_t failures = 0;
  for (size_t cols : {1u, 17u, 896u, 4097u}) {
    const std::vector<float> values = WithZeroRows(cols);
    for (const DTypes& t : AllDTypes()) {
      Matrix beta(t.param, 1, cols);
      beta.Fill(ParamData(false, cols));
      for (simdnorm_kind kind : AllKinds()) {
        for (float eps : {FLT_TRUE_MIN, 1e-5f}) {
          for (bool weights : {false, true}) {
            const std::string what = What(kind, t, cols, weights, eps);
            const Out out = Normalize(kind, t, 5, cols, values, eps, weights);
            ASSERT_EQ(out.status, SIMDNORM_OK) << what;
            for (size_t r : {1u, 3u}) {
              for (size_t c = 0; c < cols; ++c) {
                const float want = weights ? out.y.Stored(beta.GetF(0, c)) : 0;
                if (out.y.GetF(r, c) != want && failures++ < 8) {
                  ADD_FAILURE() << what << ": zero row " << r << " col " << c
                                << " is " << Num(out.y.GetF(r, c)) << ", want "
                                << Num(want) << " (xhat = 0)";
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0u);
}

// Rows at the ends of the float range, against the reference: every
// difference x - x[0] and every square overflows fp32 in some of them.
TEST_P(NumericalFaultsTest, ExtremeMagnitudesWithinOneRow) {
  Stats st;
  // Rows 0 and 3 have xhat = +-1 (to 1e-13): y = +-gamma + beta, often a
  // bf16 tie with bf16 weights (see Stats::ties_expected).
  st.ties_expected = true;
  // In bf16 x, FLT_MAX rounds to infinity; the largest finite bf16 is
  // 0x1.FEp127 (3.39e38), used instead there so that the row stays finite.
  for (const DTypes& t : AllDTypes()) {
    const float big = t.x == SIMDNORM_BF16 ? 0x1.FEp127f : FLT_MAX;
    for (size_t cols : {2u, 17u, 896u, 4097u}) {
      std::vector<float> v(6 * cols);
      for (size_t c = 0; c < cols; ++c) {
        const bool odd = c % 2 == 1;
        v[0 * cols + c] = odd ? -big : big;             // +-max alternating
        v[1 * cols + c] = c == 0 ? big : FLT_TRUE_MIN;  // max beside 2^-149
        v[2 * cols + c] = c == cols - 1 ? -big : 0.0f;  // one -max
        v[3 * cols + c] = odd ? big : big / 2;          // all huge, positive
        v[4 * cols + c] = odd ? FLT_TRUE_MIN : -FLT_TRUE_MIN;  // +-2^-149
        v[5 * cols + c] = c == 0 ? FLT_MIN : (odd ? 1e-30f : -3e-38f);
      }
      for (simdnorm_kind kind : AllKinds()) {
        for (bool weights : {false, true}) {
          for (float eps : {0.0f, 1e-5f}) {
            Case c;
            c.kind = kind;
            c.t = t;
            c.rows = 6;
            c.cols = cols;
            c.gamma = c.beta = weights;
            c.eps = eps;
            RunCaseOn(c, v, &st);
          }
        }
      }
    }
  }
  ExpectClean(st);
}

// A NaN in gamma or beta makes its column NaN (16-bit y: the default quiet
// NaN) in every row and changes no other element; +-inf in beta makes its
// column +-inf. In calls of one row and of several (LayerNorm's lean loop sees
// such weights by its bounds in the first, by its table of weight terms in the
// others).
TEST_P(NumericalFaultsTest, NonFiniteWeightsPoisonOnlyTheirColumn) {
  size_t failures = 0;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const auto& [rows, cols] : {std::pair<size_t, size_t>{4, 1},
                                   {4, 17},
                                   {1, 896},
                                   {4, 896},
                                   {1, 4097},
                                   {4, 4097}}) {
    const std::vector<float>& values = RowData(Family::kTypical, rows, cols);
    for (const DTypes& t : AllDTypes()) {
      for (simdnorm_kind kind : AllKinds()) {
        const Out base = Normalize(kind, t, rows, cols, values, 1e-5f, true);
        ASSERT_EQ(base.status, SIMDNORM_OK);
        const size_t col = cols / 2;
        // full_payload: every payload bit set (a NaN that a careless
        // rounding to bf16 would carry into infinity or zero).
        struct Poison {
          bool in_gamma;
          float value;
          const char* name;
          bool full_payload;
        };
        for (const Poison& p :
             {Poison{true, nan, "NaN gamma", false},
              Poison{false, nan, "NaN beta", false},
              Poison{true, nan, "NaN gamma with a full payload", true},
              Poison{false, nan, "-NaN beta with a full payload", true},
              Poison{false, inf, "+inf beta", false},
              Poison{false, -inf, "-inf beta", false}}) {
          Matrix gamma(t.param, 1, cols), beta(t.param, 1, cols);
          gamma.Fill(ParamData(true, cols));
          beta.Fill(ParamData(false, cols));
          Matrix& poisoned = p.in_gamma ? gamma : beta;
          poisoned.Set(0, col, p.value);
          if (p.full_payload) {
            const bool negative = !p.in_gamma;
            if (Is16(t.param)) {
              poisoned.SetBits16(0, col, negative ? 0xFFFFu : 0x7FFFu);
            } else {
              const uint32_t bits = negative ? 0xFFFFFFFFu : 0x7FFFFFFFu;
              std::memcpy(poisoned.At(0, col), &bits, 4);
            }
          }
          const Out out = Normalize(kind, t, rows, cols, values, 1e-5f, true,
                                    &gamma, &beta);
          ASSERT_EQ(out.status, SIMDNORM_OK);
          const std::string what = What(kind, t, cols, true, 1e-5f) + ": " +
                                   p.name + " at col " + std::to_string(col);
          for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < cols; ++c) {
              bool ok;
              if (c != col) {
                ok = std::memcmp(out.y.At(r, c), base.y.At(r, c),
                                 ElemSize(t.y)) == 0;
              } else if (std::isnan(p.value)) {
                // 16-bit results are the default quiet NaN, whatever the
                // payload of the weight (the rounding contract).
                ok = !Is16(t.y)
                         ? out.y.IsNaN(r, c)
                         : out.y.Bits16(r, c) ==
                               (t.y == SIMDNORM_BF16 ? 0x7FC0u : 0x7E00u);
              } else {
                ok = out.y.GetF(r, c) == p.value;
              }
              if (!ok && failures++ < 8) {
                ADD_FAILURE()
                    << what << ": row " << r << " col " << c << " is "
                    << Num(out.y.GetF(r, c)) << " (without the poison "
                    << Num(base.y.GetF(r, c)) << ")";
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(failures, 0u);
}

SIMDNORM_INSTANTIATE_PER_ISA(NumericalFaultsTest);

// Regression (found by simdnorm_fuzz, fixed in lib/norm_rows-inl.h,
// MulToFloat): a LayerNorm row whose elements are all equal has var = 0, so
// with eps > 0 the truth is xhat = 0 and y = beta (0 without beta). Such a
// row takes the general path (its one-pass sum of squares is 0), whose scale
// s brings max|x| to [1, 2), and mul = 1 / (sqrt(var + eps) * s) exceeds
// FLT_MAX when sqrt(eps) * s < 2^-128, i.e. |x| > ~3.4e38 * sqrt(eps): 1e37
// with eps 1e-5, 1e33 with eps 1e-12 (BERT's eps), 1.3e16 with eps 2^-149.
// Stored as an infinite float, it made the row 0 * inf = NaN on every ISA.
TEST(LayerNormConstantRows, LargeMagnitudeWithPositiveEpsGivesBeta) {
  struct Row {
    float value, eps;
  };
  const Row cases[] = {{1e37f, 1e-5f},
                       {1e33f, 1e-12f},
                       {-2.53118843e24f, FLT_TRUE_MIN},  // the fuzzer's case
                       {1e20f, FLT_MIN}};
  size_t failures = 0;
  for (const std::string& isa : SupportedIsas()) {
    ASSERT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK);
    for (const Row& row : cases) {
      for (size_t cols : {1u, 4u, 17u}) {
        for (const DTypes& t : AllDTypes()) {
          const std::vector<float> values(2 * cols, row.value);
          Matrix beta(t.param, 1, cols);
          beta.Fill(ParamData(false, cols));
          for (bool weights : {false, true}) {
            const Out out = Normalize(SIMDNORM_LAYERNORM, t, 2, cols, values,
                                      row.eps, weights);
            ASSERT_EQ(out.status, SIMDNORM_OK);
            for (size_t r = 0; r < 2; ++r) {
              for (size_t c = 0; c < cols; ++c) {
                const float want =
                    weights ? out.y.Stored(beta.GetF(0, c)) : 0.0f;
                if (out.y.GetF(r, c) != want && failures++ < 8) {
                  ADD_FAILURE()
                      << What(SIMDNORM_LAYERNORM, t, cols, weights, row.eps)
                      << ": constant row of " << Num(row.value) << ": col " << c
                      << " is " << Num(out.y.GetF(r, c)) << ", want "
                      << Num(want) << " (var = 0, xhat = 0: y = beta)";
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
  EXPECT_EQ(failures, 0u);
}

// Regression (found by simdnorm_fuzz, fixed in lib/reference.cc):
// simdnorm_normalize_reference with a bf16 output rounded an infinite
// float64 result (e.g. beta = +-inf) to NaN instead of +-inf (RoundToBF16:
// ulp = ldexp(1, ilogb(inf) - 7) = inf, nearbyint(inf / inf) * inf = NaN);
// the kernels give +-inf.
TEST(ReferenceBf16, InfiniteTruthRoundsToInfinity) {
  const float x[2] = {1.0f, 2.0f};
  const float inf = std::numeric_limits<float>::infinity();
  const float beta[2] = {inf, -inf};
  for (simdnorm_kind kind : AllKinds()) {
    uint16_t y[2] = {0, 0}, y_ref[2] = {0, 0};
    simdnorm_desc d{};
    d.kind = kind;
    d.rows = 1;
    d.cols = 2;
    d.x = x;
    d.x_type = SIMDNORM_F32;
    d.y = y;
    d.y_type = SIMDNORM_BF16;
    d.beta = beta;
    d.param_type = SIMDNORM_F32;
    d.eps = 1e-5f;
    ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
    d.y = y_ref;
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    EXPECT_EQ(y[0], 0x7F80u) << KindName(kind) << ": kernel, +inf beta";
    EXPECT_EQ(y[1], 0xFF80u) << KindName(kind) << ": kernel, -inf beta";
    EXPECT_EQ(y_ref[0], 0x7F80u)
        << KindName(kind) << ": reference, +inf beta, got " << Hex(y_ref[0], 4);
    EXPECT_EQ(y_ref[1], 0xFF80u)
        << KindName(kind) << ": reference, -inf beta, got " << Hex(y_ref[1], 4);
  }
}

// Regression (found by simdnorm_fuzz, fixed in lib/norm_rows-inl.h,
// GammaBeta): on ISAs without FMA (x86 SSE4, SCALAR; EMU128 in clang
// builds) y = xhat * gamma + beta is a multiply and an add, and xhat * gamma
// overflowed to infinity although y is finite: LayerNorm of {-9, 1 x 9}
// (xhat[0] = -3) with gamma = beta = -1.5e38 gives y[0] = 3e38, not +inf.
TEST(AffineOverflow, GammaTimesXhatBeyondFltMaxWithFiniteY) {
  std::vector<float> values(10, 1.0f);
  values[0] = -9.0f;
  size_t failures = 0;
  for (const std::string& isa : SupportedIsas()) {
    ASSERT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK);
    for (simdnorm_dtype yt : {SIMDNORM_F32, SIMDNORM_BF16}) {
      const DTypes t{SIMDNORM_F32, yt, SIMDNORM_F32};
      Matrix weights(SIMDNORM_F32, 1, 10);
      weights.Fill(std::vector<float>(10, -1.5e38f));
      const Out out = Normalize(SIMDNORM_LAYERNORM, t, 1, 10, values, 0.0f,
                                true, &weights, &weights);
      ASSERT_EQ(out.status, SIMDNORM_OK);
      const float want = out.y.Stored(3e38f);  // xhat[0] = -3 exactly
      const float got = out.y.GetF(0, 0);
      if (!(std::fabs(got - want) <= 1e-5f * want) && failures++ < 8) {
        ADD_FAILURE() << "[ISA " << isa << "] y=" << DTypeName(yt)
                      << ": y[0] is " << Num(got) << ", want " << Num(want)
                      << " (xhat * gamma = 4.5e38 overflows before + beta)";
      }
    }
  }
  EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
  EXPECT_EQ(failures, 0u);
}

// Found by simdnorm_fuzz: identical rows holding NaNs with different
// payloads gave NaN outputs with different payloads depending on the row's
// place in its block (the first row's statistics were computed by another
// inlined copy, whose adds took their operands in another order; x86
// propagates the first operand's NaN). So NaN bits depended on the TBB
// partition. Rows with NaN statistics are now written as the default NaN.
TEST(NaNPayload, IdenticalRowsGiveIdenticalBits) {
  constexpr size_t kRows = 3, kCols = 64;
  std::vector<float> row(kCols);
  for (size_t c = 0; c < kCols; ++c) row[c] = static_cast<float>(c % 7) - 3;
  row[5] = FloatFromBits(0x7FC01234u);
  row[17] = FloatFromBits(0x7FC02AAAu);
  row[40] = FloatFromBits(0x7FC00777u);
  std::vector<float> values;
  for (size_t r = 0; r < kRows; ++r) {
    values.insert(values.end(), row.begin(), row.end());
  }
  size_t failures = 0;
  for (const std::string& isa : SupportedIsas()) {
    ASSERT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK);
    for (simdnorm_kind kind : AllKinds()) {
      for (simdnorm_dtype yt : {SIMDNORM_F32, SIMDNORM_BF16}) {
        const DTypes t{SIMDNORM_F32, yt, SIMDNORM_F32};
        Matrix x(t.x, kRows, kCols);
        x.Fill(values);  // fp32 x: the payloads are stored as they are
        Matrix y(t.y, kRows, kCols);
        simdnorm_desc d{};
        d.kind = kind;
        d.rows = kRows;
        d.cols = kCols;
        d.x = x.data();
        d.x_type = t.x;
        d.y = y.data();
        d.y_type = t.y;
        d.eps = 1e-5f;
        d.max_threads = 1;
        ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
        for (size_t r = 1; r < kRows; ++r) {
          if (!y.RowBytesEqual(y, r, 0) && failures++ < 8) {
            ADD_FAILURE() << "[ISA " << isa << "] " << KindName(kind)
                          << " y=" << DTypeName(yt) << ": row " << r
                          << " differs from the identical row 0 (y[0] "
                          << Hex(yt == SIMDNORM_F32 ? FloatBits(y.GetF(r, 0))
                                                    : y.Bits16(r, 0),
                                 yt == SIMDNORM_F32 ? 8 : 4)
                          << " vs "
                          << Hex(yt == SIMDNORM_F32 ? FloatBits(y.GetF(0, 0))
                                                    : y.Bits16(0, 0),
                                 yt == SIMDNORM_F32 ? 8 : 4)
                          << ")";
          }
        }
      }
    }
  }
  EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
  EXPECT_EQ(failures, 0u);
}

}  // namespace
}  // namespace simdnorm_test

// NaN and infinity in the input, on every ISA: a NaN makes its whole row
// NaN and leaves the other rows bitwise unchanged; an infinity makes the
// output non-finite wherever the reference is non-finite.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/matrix.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

SIMDNORM_ISA_FIXTURE(NonFiniteTest);

constexpr size_t kRows = 8;

struct Run {
  Matrix y;
  simdnorm_status status;
};

// Normalizes x (kRows x cols, dense) with gamma and beta, eps 1e-5.
Run Normalize(simdnorm_kind kind, const DTypes& t, const Matrix& x,
              const Matrix& gamma, const Matrix& beta) {
  Run run{Matrix(t.y, kRows, x.cols()), SIMDNORM_OK};
  simdnorm_desc d{};
  d.kind = kind;
  d.rows = kRows;
  d.cols = x.cols();
  d.x = x.data();
  d.x_type = t.x;
  d.y = run.y.data();
  d.y_type = t.y;
  d.gamma = gamma.data();
  d.beta = beta.data();
  d.param_type = t.param;
  d.eps = 1e-5f;
  run.status = simdnorm_normalize(&d);
  return run;
}

// The positions of the poisoned element in a row: first, middle, last.
std::vector<size_t> Positions(size_t cols) {
  std::vector<size_t> p = {0, cols / 2, cols - 1};
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

std::vector<DTypes> IoTypes() {
  std::vector<DTypes> v;
  for (simdnorm_dtype x : {SIMDNORM_F32, SIMDNORM_BF16}) {
    for (simdnorm_dtype y : {SIMDNORM_F32, SIMDNORM_BF16}) {
      v.push_back({x, y, SIMDNORM_F32});
    }
  }
  return v;
}

std::string What(simdnorm_kind kind, const DTypes& t, size_t cols, size_t row,
                 size_t pos, const char* value) {
  std::ostringstream os;
  os << "[ISA " << simdnorm_active_isa() << "] " << KindName(kind)
     << " x=" << DTypeName(t.x) << " y=" << DTypeName(t.y)
     << " param=F32 rows=" << kRows << " cols=" << cols
     << " eps=1e-5: " << value << " at row " << row << " col " << pos;
  return os.str();
}

// Puts a NaN (quiet, negative quiet, or signaling by position) at each
// position of one row and compares with the run without it.
void NaNPoisonsOnlyItsRow(simdnorm_kind kind) {
  size_t failures = 0;
  for (size_t cols : {1u, 17u, 896u, 4097u}) {
    const std::vector<float>& values = RowData(Family::kTypical, kRows, cols);
    for (const DTypes& t : IoTypes()) {
      Matrix gamma(t.param, 1, cols), beta(t.param, 1, cols);
      gamma.Fill(ParamData(true, cols));
      beta.Fill(ParamData(false, cols));
      Matrix x(t.x, kRows, cols);
      x.Fill(values);
      const Run base = Normalize(kind, t, x, gamma, beta);
      ASSERT_EQ(base.status, SIMDNORM_OK);
      const std::vector<size_t> positions = Positions(cols);
      for (size_t k = 0; k < positions.size(); ++k) {
        const size_t pos = positions[k];
        const size_t row = (3 + 2 * k) % kRows;
        static const uint32_t kNaN32[] = {0x7FC00000u, 0xFFC00000u,
                                          0x7F800001u};
        static const uint16_t kNaN16[] = {0x7FC0u, 0xFFC0u, 0x7F81u};
        if (t.x == SIMDNORM_F32) {
          const float nan = FloatFromBits(kNaN32[k % 3]);
          std::memcpy(x.At(row, pos), &nan, 4);
        } else {
          x.SetBits16(row, pos, kNaN16[k % 3]);
        }
        const Run run = Normalize(kind, t, x, gamma, beta);
        ASSERT_EQ(run.status, SIMDNORM_OK);
        const std::string what = What(kind, t, cols, row, pos, "NaN");
        for (size_t r = 0; r < kRows; ++r) {
          if (r == row) {
            for (size_t c = 0; c < cols; ++c) {
              if (!run.y.IsNaN(r, c) && failures++ < 8) {
                ADD_FAILURE() << what << ": output col " << c << " is "
                              << Num(run.y.GetF(r, c)) << ", want NaN";
              }
            }
          } else if (!run.y.RowBytesEqual(base.y, r, r) && failures++ < 8) {
            ADD_FAILURE() << what << ": row " << r
                          << " differs from the run without the NaN";
          }
        }
        std::string where;
        EXPECT_TRUE(run.y.PaddingIntact(&where)) << what << ": " << where;
        x.Set(row, pos, values[row * cols + pos]);  // restore
      }
    }
  }
  EXPECT_EQ(failures, 0u);
}

// +inf / -inf at each position of one row: the output is non-finite where
// the reference is non-finite; the other rows are unchanged.
void InfRowIsNotFinite(simdnorm_kind kind) {
  size_t failures = 0;
  size_t nonfinite_refs = 0;
  for (size_t cols : {1u, 17u, 896u, 4097u}) {
    const std::vector<float>& values = RowData(Family::kTypical, kRows, cols);
    for (const DTypes& t : IoTypes()) {
      Matrix gamma(t.param, 1, cols), beta(t.param, 1, cols);
      gamma.Fill(ParamData(true, cols));
      beta.Fill(ParamData(false, cols));
      Matrix x(t.x, kRows, cols);
      x.Fill(values);
      const Run base = Normalize(kind, t, x, gamma, beta);
      ASSERT_EQ(base.status, SIMDNORM_OK);
      const std::vector<size_t> positions = Positions(cols);
      for (size_t k = 0; k < positions.size(); ++k) {
        for (float inf : {std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()}) {
          const size_t pos = positions[k];
          const size_t row = (2 + 3 * k) % kRows;
          x.Set(row, pos, inf);
          const Run run = Normalize(kind, t, x, gamma, beta);
          ASSERT_EQ(run.status, SIMDNORM_OK);
          // The reference of the same descriptor.
          Matrix scratch(t.y, kRows, cols);
          simdnorm_desc rd{};
          rd.kind = kind;
          rd.rows = kRows;
          rd.cols = cols;
          rd.x = x.data();
          rd.x_type = t.x;
          rd.y = scratch.data();
          rd.y_type = t.y;
          rd.gamma = gamma.data();
          rd.beta = beta.data();
          rd.param_type = t.param;
          rd.eps = 1e-5f;
          std::vector<double> ref(kRows * cols);
          ASSERT_EQ(simdnorm::reference_f64(rd, ref.data(), nullptr),
                    simdnorm::Status::kOk);
          const std::string what =
              What(kind, t, cols, row, pos, inf > 0 ? "+inf" : "-inf");
          for (size_t r = 0; r < kRows; ++r) {
            if (r == row) {
              for (size_t c = 0; c < cols; ++c) {
                if (std::isfinite(ref[r * cols + c])) continue;
                ++nonfinite_refs;
                if (run.y.IsFinite(r, c) && failures++ < 8) {
                  ADD_FAILURE() << what << ": output col " << c << " is "
                                << Num(run.y.GetF(r, c))
                                << ", want non-finite (reference "
                                << Num(ref[r * cols + c]) << ")";
                }
              }
            } else if (!run.y.RowBytesEqual(base.y, r, r) && failures++ < 8) {
              ADD_FAILURE() << what << ": row " << r
                            << " differs from the run without the inf";
            }
          }
          x.Set(row, pos, values[row * cols + pos]);  // restore
        }
      }
    }
  }
  EXPECT_EQ(failures, 0u);
  EXPECT_GT(nonfinite_refs, 0u) << "the reference never went non-finite";
}

TEST_P(NonFiniteTest, LayerNormNaNPoisonsOnlyItsRow) {
  NaNPoisonsOnlyItsRow(SIMDNORM_LAYERNORM);
}
TEST_P(NonFiniteTest, RMSNormNaNPoisonsOnlyItsRow) {
  NaNPoisonsOnlyItsRow(SIMDNORM_RMSNORM);
}
TEST_P(NonFiniteTest, LayerNormInfRowIsNotFinite) {
  InfRowIsNotFinite(SIMDNORM_LAYERNORM);
}
TEST_P(NonFiniteTest, RMSNormInfRowIsNotFinite) {
  InfRowIsNotFinite(SIMDNORM_RMSNORM);
}

SIMDNORM_INSTANTIATE_PER_ISA(NonFiniteTest);

}  // namespace
}  // namespace simdnorm_test

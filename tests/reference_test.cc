// The float64 reference itself: hand-computed values, geometry of the
// normalized rows, shift invariance, constant rows, rounding once to the
// output dtype, exact widening of bf16 and f16 inputs; and the issue #7
// semantics on hand-computed cases: f16 rounding, the fused residual add,
// gamma_offset, SIMDNORM_ROUND_NORMALIZED, int8 output per group.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/matrix.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

struct RefOut {
  std::vector<double> out, xhat;
};

simdnorm_desc Desc(simdnorm_kind kind, const void* x, simdnorm_dtype x_type,
                   size_t rows, size_t cols, void* y, simdnorm_dtype y_type,
                   float eps, const float* gamma = nullptr,
                   const float* beta = nullptr) {
  simdnorm_desc d{};
  d.kind = kind;
  d.rows = rows;
  d.cols = cols;
  d.x = x;
  d.x_type = x_type;
  d.y = y;
  d.y_type = y_type;
  d.gamma = gamma;
  d.beta = beta;
  d.param_type = SIMDNORM_F32;
  d.eps = eps;
  return d;
}

// reference_f64 of float rows.
RefOut Ref(simdnorm_kind kind, const std::vector<float>& x, size_t cols,
           float eps, const float* gamma = nullptr,
           const float* beta = nullptr) {
  const size_t rows = x.size() / cols;
  std::vector<float> y(x.size());
  const simdnorm_desc d = Desc(kind, x.data(), SIMDNORM_F32, rows, cols,
                               y.data(), SIMDNORM_F32, eps, gamma, beta);
  RefOut r{std::vector<double>(x.size()), std::vector<double>(x.size())};
  EXPECT_EQ(simdnorm::reference_f64(d, r.out.data(), r.xhat.data()),
            simdnorm::Status::kOk);
  return r;
}

// |got - want| <= rel * max(|want|, 1e-300)
void ExpectClose(double got, double want, double rel, const std::string& what) {
  EXPECT_LE(std::fabs(got - want), rel * std::max(std::fabs(want), 1e-300))
      << what << ": got " << Num(got) << " want " << Num(want);
}

TEST(Reference, LayerNormOneTwoThreeFour) {
  const std::vector<float> x = {1, 2, 3, 4};
  // mean 2.5, population variance 1.25
  RefOut r = Ref(SIMDNORM_LAYERNORM, x, 4, 0.0f);
  for (size_t i = 0; i < 4; ++i) {
    const double want = (x[i] - 2.5) / std::sqrt(1.25);
    ExpectClose(r.out[i], want, 4e-16, "out " + std::to_string(i));
    ExpectClose(r.xhat[i], want, 4e-16, "xhat " + std::to_string(i));
  }
  // eps inside the square root: sqrt(1.25 + 1) = 1.5
  r = Ref(SIMDNORM_LAYERNORM, x, 4, 1.0f);
  const double want_eps1[] = {-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0};
  for (size_t i = 0; i < 4; ++i) {
    ExpectClose(r.out[i], want_eps1[i], 4e-16, "eps 1, " + std::to_string(i));
  }
  // gamma and beta apply after normalization; xhat does not include them.
  const float gamma[] = {2.0f, -1.0f, 0.5f, 3.0f};
  const float beta[] = {0.125f, 0.25f, -0.5f, 4.0f};
  r = Ref(SIMDNORM_LAYERNORM, x, 4, 0.0f, gamma, beta);
  for (size_t i = 0; i < 4; ++i) {
    const double xh = (x[i] - 2.5) / std::sqrt(1.25);
    ExpectClose(r.xhat[i], xh, 4e-16, "xhat with params");
    ExpectClose(r.out[i], xh * gamma[i] + beta[i], 4e-16, "out with params");
  }
}

TEST(Reference, AlternatingSignsHaveMeanZeroVarianceOne) {
  const std::vector<float> x = {1, -1, 1, -1, 1, -1, 1, -1};
  // The kinds whose xhat has unit variance (L2's has unit norm).
  for (simdnorm_kind kind : {SIMDNORM_LAYERNORM, SIMDNORM_RMSNORM}) {
    RefOut r = Ref(kind, x, 8, 0.0f);
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(r.out[i], x[i]) << KindName(kind);
    r = Ref(kind, x, 8, 1.0f);
    for (size_t i = 0; i < 8; ++i) {
      ExpectClose(r.out[i], x[i] / std::sqrt(2.0), 4e-16, KindName(kind));
    }
    // Rounded once: exactly +-1 in both output types.
    std::vector<float> yf(8);
    simdnorm_desc d =
        Desc(kind, x.data(), SIMDNORM_F32, 1, 8, yf.data(), SIMDNORM_F32, 0.0f);
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(yf[i], x[i]);
    std::vector<uint16_t> yb(8);
    d.y = yb.data();
    d.y_type = SIMDNORM_BF16;
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(yb[i], x[i] > 0 ? 0x3F80u : 0xBF80u);
    }
  }
}

TEST(Reference, RMSNormThreeFour) {
  const std::vector<float> x = {3, 4};
  const double rms = std::sqrt(12.5);  // mean of 9 and 16
  RefOut r = Ref(SIMDNORM_RMSNORM, x, 2, 0.0f);
  ExpectClose(r.out[0], 3.0 / rms, 4e-16, "out 0");
  ExpectClose(r.out[1], 4.0 / rms, 4e-16, "out 1");
  ExpectClose(r.xhat[0], 3.0 / rms, 4e-16, "xhat 0");
  // RMSNorm adds beta when given.
  const float gamma[] = {2.0f, 0.5f};
  const float beta[] = {1.0f, -1.0f};
  r = Ref(SIMDNORM_RMSNORM, x, 2, 0.5f, gamma, beta);
  const double rms_eps = std::sqrt(12.5 + 0.5);
  ExpectClose(r.out[0], 3.0 / rms_eps * 2.0 + 1.0, 4e-16, "with params 0");
  ExpectClose(r.out[1], 4.0 / rms_eps * 0.5 - 1.0, 4e-16, "with params 1");
}

// Statistics of float rows computed independently: a shifted two-pass sum
// in long double.
struct RowStats {
  long double mean, var, ms;
};
RowStats Stats64(const float* x, size_t n) {
  const long double k = x[0];
  long double s = 0, ss = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<long double>(x[i]) - k;
  const long double mean_d = s / static_cast<long double>(n);
  long double ms = 0;
  for (size_t i = 0; i < n; ++i) {
    const long double d = static_cast<long double>(x[i]) - k - mean_d;
    ss += d * d;
    ms += static_cast<long double>(x[i]) * static_cast<long double>(x[i]);
  }
  return {k + mean_d, ss / static_cast<long double>(n),
          ms / static_cast<long double>(n)};
}

// RMSNorm output (no gamma) has norm sqrt(n) sqrt(ms / (ms + eps));
// LayerNorm output has mean 0 and norm sqrt(n var / (var + eps)). Also on
// the rows that defeat naive float kernels: the reference must not fail
// there. The tolerances (1e-8 for LayerNorm, whose large-mean rows cost a
// plain float64 sum a few 1e-9; 1e-10 for RMSNorm) are far below the 32
// fp32 ulps (3.8e-6) the kernels are allowed.
TEST(Reference, Geometry) {
  const Family families[] = {Family::kStdNormal, Family::kTypical,
                             Family::kLargeMean, Family::kOutliers,
                             Family::kHuge,      Family::kTiny,
                             Family::kSubnormal};
  for (Family f : families) {
    for (size_t n : {2u, 17u, 896u, 4097u}) {
      const size_t rows = 3;
      const std::vector<float>& x = RowData(f, rows, n);
      for (float eps : {0.0f, 1e-5f, 1.0f}) {
        for (simdnorm_kind kind : AllKinds()) {
          const RefOut r = Ref(kind, x, n, eps);
          for (size_t row = 0; row < rows; ++row) {
            const std::string what = std::string(KindName(kind)) + " " +
                                     FamilyName(f) + " n=" + std::to_string(n) +
                                     " eps=" + Num(eps) + " row " +
                                     std::to_string(row);
            const RowStats st = Stats64(&x[row * n], n);
            long double sum = 0, sq = 0;
            bool finite = true;
            for (size_t i = 0; i < n; ++i) {
              const double v = r.out[row * n + i];
              finite &= std::isfinite(v);
              sum += v;
              sq += static_cast<long double>(v) * v;
            }
            if (kind == SIMDNORM_LAYERNORM && st.var == 0 && eps == 0) {
              EXPECT_FALSE(finite) << what << ": 0/0 must be NaN";
              continue;
            }
            ASSERT_TRUE(finite) << what;
            const long double e = eps;
            const long double nn = static_cast<long double>(n);
            if (kind == SIMDNORM_RMSNORM) {
              const long double want = std::sqrt(nn * st.ms / (st.ms + e));
              ExpectClose(static_cast<double>(std::sqrt(sq)),
                          static_cast<double>(want), 1e-10, what + " norm");
            } else if (kind == SIMDNORM_L2NORM) {  // ||x|| / max(||x||, eps)
              const long double norm = std::sqrt(nn * st.ms);
              const long double want = norm / std::max(norm, e);
              ExpectClose(static_cast<double>(std::sqrt(sq)),
                          static_cast<double>(want), 1e-10, what + " norm");
            } else {
              EXPECT_LE(std::fabs(static_cast<double>(sum / nn)), 1e-8)
                  << what << ": mean of the output";
              const long double want = std::sqrt(nn * st.var / (st.var + e));
              ExpectClose(static_cast<double>(std::sqrt(sq)),
                          static_cast<double>(want), 1e-8, what + " norm");
            }
          }
        }
      }
    }
  }
}

TEST(Reference, ShiftInvariance) {
  const RefOut a = Ref(SIMDNORM_LAYERNORM, {1, 2, 4}, 3, 0.0f);
  const RefOut b = Ref(SIMDNORM_LAYERNORM, {11, 12, 14}, 3, 0.0f);
  const double s = std::sqrt(14.0);  // deviations (-4, -1, 5)/3, var 14/9
  const double want[] = {-4.0 / s, -1.0 / s, 5.0 / s};
  for (size_t i = 0; i < 3; ++i) {
    // A float64 mean of 37/3 is off by up to half an ulp of 12.3.
    ExpectClose(a.out[i], want[i], 1e-14, "x");
    ExpectClose(b.out[i], want[i], 1e-14, "x + 10");
  }
}

TEST(Reference, ConstantRows) {
  const std::vector<float> x = {3,     3,     3, 3, 3, -0.1f, -0.1f, -0.1f,
                                -0.1f, -0.1f, 0, 0, 0, 0,     0};
  const float beta[] = {0.5f, -0.25f, 0.0f, 1.0f, 2.0f};
  // eps > 0: LayerNorm gives exactly beta (xhat exactly 0).
  RefOut r = Ref(SIMDNORM_LAYERNORM, x, 5, 1e-5f, nullptr, beta);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(r.xhat[i], 0.0) << i;
    EXPECT_EQ(r.out[i], beta[i % 5]) << i;
  }
  // eps = 0: 0/0 is NaN for LayerNorm, and for RMSNorm of a zero row.
  r = Ref(SIMDNORM_LAYERNORM, x, 5, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(std::isnan(r.out[i])) << i;
  r = Ref(SIMDNORM_RMSNORM, x, 5, 0.0f);
  for (size_t i = 0; i < 10; ++i) {
    ExpectClose(r.out[i], x[i] > 0 ? 1.0 : -1.0, 4e-16, std::to_string(i));
  }
  for (size_t i = 10; i < 15; ++i) EXPECT_TRUE(std::isnan(r.out[i])) << i;
  // eps > 0: RMSNorm of a zero row is 0.
  r = Ref(SIMDNORM_RMSNORM, x, 5, 1e-5f);
  for (size_t i = 10; i < 15; ++i) EXPECT_EQ(r.out[i], 0.0) << i;
}

// normalize_reference rounds reference_f64 ONCE to y_type, for every dtype
// combination, with strided x and y; out == xhat * gamma + beta.
TEST(Reference, RoundsOnceToTheOutputType) {
  const size_t rows = 6, cols = 333;
  size_t bf16_elements = 0;
  for (simdnorm_kind kind : AllKinds()) {
    for (const DTypes& t : AllDTypes()) {
      if (t.y != SIMDNORM_F32 && t.y != SIMDNORM_BF16) continue;  // below
      Matrix x(t.x, rows, cols, cols + 3);
      x.Fill(RowData(Family::kTypical, rows, cols));
      Matrix g(t.param, 1, cols), b(t.param, 1, cols);
      g.Fill(ParamData(true, cols));
      b.Fill(ParamData(false, cols));
      Matrix y(t.y, rows, cols, cols + 1);
      simdnorm_desc d{};
      d.kind = kind;
      d.rows = rows;
      d.cols = cols;
      d.x = x.data();
      d.x_type = t.x;
      d.x_stride = cols + 3;
      d.y = y.data();
      d.y_type = t.y;
      d.y_stride = cols + 1;
      d.gamma = g.data();
      d.beta = b.data();
      d.param_type = t.param;
      d.eps = 1e-5f;
      std::vector<double> out(rows * cols), xhat(rows * cols);
      ASSERT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()),
                simdnorm::Status::kOk);
      ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
      std::string where;
      EXPECT_TRUE(y.PaddingIntact(&where)) << where;
      for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < cols; ++c) {
          const double o = out[r * cols + c];
          const double gc = g.Get(0, c), bc = b.Get(0, c);
          const double xh = xhat[r * cols + c];
          ASSERT_LE(std::fabs(o - (xh * gc + bc)),
                    1e-15 * (std::fabs(xh * gc) + std::fabs(bc)))
              << KindName(kind) << " " << r << "," << c;
          if (t.y == SIMDNORM_F32) {
            ASSERT_EQ(FloatBits(y.GetF(r, c)), FloatBits(static_cast<float>(o)))
                << KindName(kind) << " " << r << "," << c << ": " << Num(o);
          } else {
            ++bf16_elements;
            ASSERT_EQ(y.Bits16(r, c), RoundToBf16(o))
                << KindName(kind) << " " << r << "," << c << ": " << Num(o);
          }
        }
      }
    }
  }
  EXPECT_GT(bf16_elements, 0u);
}

// bf16 inputs widen exactly: the reference of bf16-stored values equals
// the reference of the same values stored as f32.
TEST(Reference, Bf16InputsWidenExactly) {
  const size_t rows = 4, cols = 129;
  std::vector<float> values = RowData(Family::kTypical, rows, cols);
  for (float& v : values) v = Bf16ToFloat(Bf16Bits(v));
  Matrix xb(SIMDNORM_BF16, rows, cols);
  xb.Fill(values);
  std::vector<float> y(rows * cols);
  for (simdnorm_kind kind : AllKinds()) {
    const simdnorm_desc d = Desc(kind, xb.data(), SIMDNORM_BF16, rows, cols,
                                 y.data(), SIMDNORM_F32, 1e-5f);
    std::vector<double> out(rows * cols);
    ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
              simdnorm::Status::kOk);
    const RefOut f = Ref(kind, values, cols, 1e-5f);
    EXPECT_EQ(std::memcmp(out.data(), f.out.data(), out.size() * 8), 0)
        << KindName(kind);
  }
}

// ------------------------------------------------------------ issue #7

// An RMSNorm of one row of ones with eps 0 has xhat exactly 1, so out is
// exactly scale + beta: the descriptor of such a row, float parameters.
struct OnesRow {
  std::vector<float> x, gamma, beta;
  simdnorm_desc d{};

  OnesRow(std::vector<float> g, std::vector<float> b, void* y,
          simdnorm_dtype y_type)
      : x(g.size(), 1.0f), gamma(std::move(g)), beta(std::move(b)) {
    d.kind = SIMDNORM_RMSNORM;
    d.rows = 1;
    d.cols = x.size();
    d.x = x.data();
    d.y = y;
    d.y_type = y_type;
    d.gamma = gamma.data();
    d.beta = beta.empty() ? nullptr : beta.data();
  }
};

// out = g + b, exact in double, rounded once to f16 (not through float).
TEST(Reference, F16RoundsOnceToNearestEven) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const struct {
    float g, b;
    uint16_t want;
    const char* what;
  } cases[] = {
      {1.0f, 0x1p-11f, 0x3C00, "1 + half an ulp: tie, even stays"},
      {1.0f, 3 * 0x1p-11f, 0x3C02, "tie, odd rounds up"},
      {1.0f, 0x1p-11f + 0x1p-30f, 0x3C01,
       "just above the tie (through float it would be the tie)"},
      {1.0f, 0x1p-11f - 0x1p-30f, 0x3C00, "just below the tie"},
      {-1.0f, -0x1p-11f, 0xBC00, "negative tie, even stays"},
      {-1.0f, -3 * 0x1p-11f, 0xBC02, "negative tie, odd rounds up"},
      {2049.0f, 0.0f, 0x6800, "2049: tie at ulp 2, to 2048"},
      {2051.0f, 0.0f, 0x6802, "2051: tie at ulp 2, to 2052"},
      {65504.0f, 0.0f, 0x7BFF, "largest finite"},
      {65504.0f, 15.75f, 0x7BFF, "65519.75 rounds down to the largest"},
      {65504.0f, 16.0f, 0x7C00, "65520: tie, rounds to infinity"},
      {-65504.0f, -16.0f, 0xFC00, "-65520 rounds to -infinity"},
      {1e30f, 0.0f, 0x7C00, "1e30 overflows"},
      {inf, 0.0f, 0x7C00, "infinity"},
      {-inf, 0.0f, 0xFC00, "-infinity"},
      {0x1p-14f, 0.0f, 0x0400, "smallest normal"},
      {0x1p-14f, -0x1p-24f, 0x03FF, "largest subnormal"},
      {0x1p-14f, -0x1p-25f, 0x0400, "tie below the smallest normal, up"},
      {0x1p-24f, 0.0f, 0x0001, "smallest subnormal"},
      {0x1p-25f, 0.0f, 0x0000, "half the smallest subnormal: to 0"},
      {0x1p-25f, 0x1p-50f, 0x0001, "just above half the smallest"},
      {3 * 0x1p-25f, 0.0f, 0x0002, "1.5 subnormal ulps: tie, to 2"},
      {5 * 0x1p-25f, 0.0f, 0x0002, "2.5 subnormal ulps: tie, to 2"},
      {-0x1p-25f, 0.0f, 0x8000, "negative tiny: -0"},
      {-0x1p-24f, 0.0f, 0x8001, "negative smallest subnormal"},
      {1e-10f, 0.0f, 0x0000, "1e-10 underflows"},
      {0.0f, 0.0f, 0x0000, "zero"},
      {0.333333343f, 0.0f, 0x3555, "float 1/3"},
  };
  std::vector<float> g, b;
  for (const auto& c : cases) {
    g.push_back(c.g);
    b.push_back(c.b);
  }
  g.push_back(nan);
  b.push_back(0.0f);
  std::vector<uint16_t> y(g.size(), 0x1234);
  OnesRow row(g, b, y.data(), SIMDNORM_F16);
  std::vector<double> out(g.size());
  ASSERT_EQ(simdnorm::reference_f64(row.d, out.data(), nullptr),
            simdnorm::Status::kOk);
  ASSERT_EQ(simdnorm_normalize_reference(&row.d), SIMDNORM_OK);
  for (size_t i = 0; i + 1 < g.size(); ++i) {
    const auto& c = cases[i];
    if (std::isfinite(c.g)) {
      EXPECT_EQ(out[i], static_cast<double>(c.g) + c.b) << c.what;
    }
    EXPECT_EQ(y[i], c.want) << c.what << ": got " << Hex(y[i], 4);
  }
  EXPECT_TRUE(std::isnan(out.back()));
  EXPECT_EQ(y.back() & 0x7FFFu, 0x7E00u) << "NaN: " << Hex(y.back(), 4);
}

// f16 from the definition, written differently from the library's.
double F16Value(uint16_t b) {
  const int e = (b >> 10) & 31, m = b & 1023;
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  if (e == 31)
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  if (e == 0) return sign * (m / 1024.0) * std::pow(2.0, -14);
  return sign * (1.0 + m / 1024.0) * std::pow(2.0, e - 15);
}

// Every f16 bit pattern, as gamma (beta -0 so that out == gamma exactly,
// -0 included): loads are exact and stores give the same bits back.
TEST(Reference, F16EveryValueLoadsAndStoresExactly) {
  const size_t n = 65536;
  std::vector<uint16_t> gamma(n), beta(n, 0x8000), y(n);
  for (size_t i = 0; i < n; ++i) gamma[i] = static_cast<uint16_t>(i);
  std::vector<float> ones(n, 1.0f);
  simdnorm_desc d{};
  d.kind = SIMDNORM_RMSNORM;
  d.rows = 1;
  d.cols = n;
  d.x = ones.data();
  d.y = y.data();
  d.y_type = SIMDNORM_F16;
  d.gamma = gamma.data();
  d.beta = beta.data();
  d.param_type = SIMDNORM_F16;
  std::vector<double> out(n);
  ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
            simdnorm::Status::kOk);
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t i = 0; i < n; ++i) {
    const double want = F16Value(gamma[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(out[i])) << Hex(i, 4);
      // Correctly rounded outputs make every NaN the default one.
      ASSERT_EQ(y[i], 0x7E00u) << Hex(i, 4);
    } else {
      ASSERT_EQ(out[i], want) << Hex(i, 4);
      ASSERT_EQ(std::signbit(out[i]), std::signbit(want)) << Hex(i, 4);
      ASSERT_EQ(y[i], gamma[i]) << Hex(i, 4);
    }
  }
}

// f16 inputs widen exactly: the reference of f16-stored values equals the
// reference of the same values stored as f32.
TEST(Reference, F16InputsWidenExactly) {
  const size_t rows = 4, cols = 129;
  std::vector<float> values = RowData(Family::kTypical, rows, cols);
  std::vector<uint16_t> xh(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    xh[i] = simdnorm::f16::from_float(values[i]).bits;
    values[i] = static_cast<float>(F16Value(xh[i]));
  }
  values[5] = 0x1p-20f;  // a subnormal f16
  xh[5] = 0x0010;
  std::vector<float> y(rows * cols);
  for (simdnorm_kind kind : AllKinds()) {
    const simdnorm_desc d = Desc(kind, xh.data(), SIMDNORM_F16, rows, cols,
                                 y.data(), SIMDNORM_F32, 1e-5f);
    std::vector<double> out(rows * cols);
    ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
              simdnorm::Status::kOk);
    const RefOut f = Ref(kind, values, cols, 1e-5f);
    EXPECT_EQ(std::memcmp(out.data(), f.out.data(), out.size() * 8), 0)
        << KindName(kind);
  }
}

// h = x + residual rounded once to x_type goes to sum_out, and the row is
// normalized from h as stored.
TEST(Reference, ResidualSumIsRoundedOnceToXType) {
  const struct {
    simdnorm_dtype type;
    std::vector<uint32_t> x, r, h;  // bits (f32) or 16-bit patterns
    std::vector<double> h_value;
  } cases[] = {
      // bf16: 1 + 2^-8 is a tie (to 1); 1 + 3*2^-8 a tie to 1 + 2^-6;
      // (1 + 2^-7) + 2^-8 a tie to 1 + 2^-6; 256 + 1 a tie (ulp 2) to 256.
      {SIMDNORM_BF16,
       {0x3F80, 0x3F80, 0x3F81, 0x4380},
       {0x3B80, 0x3C40, 0x3B80, 0x3F80},
       {0x3F80, 0x3F82, 0x3F82, 0x4380},
       {1.0, 1.015625, 1.015625, 256.0}},
      // f16: 2048 + 1 (ulp 2) to 2048, 2048 + 3 to 2052, -2048 - 1 to
      // -2048, 1 + 2^-11 to 1.
      {SIMDNORM_F16,
       {0x6800, 0x6800, 0xE800, 0x3C00},
       {0x3C00, 0x4200, 0xBC00, 0x1000},
       {0x6800, 0x6802, 0xE800, 0x3C00},
       {2048.0, 2052.0, -2048.0, 1.0}},
      // f32: 1 + 2^-24 to 1, 1 + 3*2^-24 to 1 + 2^-22.
      {SIMDNORM_F32,
       {0x3F800000, 0x3F800000, 0x40400000, 0xC0000000},
       {0x33800000, 0x34400000, 0x3F800000, 0x3F800000},
       {0x3F800000, 0x3F800002, 0x40800000, 0xBF800000},
       {1.0, 1.0 + 0x1p-22, 4.0, -1.0}},
  };
  for (const auto& c : cases) {
    const bool f32 = c.type == SIMDNORM_F32;
    const size_t es = f32 ? 4 : 2, n = c.x.size();
    auto pack = [&](const std::vector<uint32_t>& v) {
      std::vector<unsigned char> bytes(n * es);
      for (size_t i = 0; i < n; ++i) {
        if (f32) {
          std::memcpy(&bytes[4 * i], &v[i], 4);
        } else {
          const uint16_t b = static_cast<uint16_t>(v[i]);
          std::memcpy(&bytes[2 * i], &b, 2);
        }
      }
      return bytes;
    };
    const std::vector<unsigned char> x = pack(c.x), r = pack(c.r);
    std::vector<unsigned char> sum(n * es, kSentinel);
    std::vector<float> y(n), y_direct(n);
    for (simdnorm_kind kind : AllKinds()) {
      const std::string what =
          std::string(DTypeName(c.type)) + " " + KindName(kind);
      simdnorm_desc d =
          Desc(kind, x.data(), c.type, 1, n, y.data(), SIMDNORM_F32, 0.0f);
      d.residual = r.data();
      d.sum_out = sum.data();
      ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK) << what;
      EXPECT_TRUE(sum == pack(c.h)) << what << ": sum_out";
      std::vector<double> out(n), xhat(n);
      ASSERT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()),
                simdnorm::Status::kOk);
      // The statistics of the rounded h, by hand.
      double mean = 0, second = 0;
      if (kind == SIMDNORM_LAYERNORM) {
        for (double v : c.h_value) mean += v;
        mean /= static_cast<double>(n);
      }
      for (double v : c.h_value) second += (v - mean) * (v - mean);
      const double denom = kind == SIMDNORM_L2NORM
                               ? std::sqrt(second)
                               : std::sqrt(second / static_cast<double>(n));
      for (size_t i = 0; i < n; ++i) {
        ExpectClose(out[i], (c.h_value[i] - mean) / denom, 1e-15,
                    what + " out " + std::to_string(i));
      }
      // Same bits as normalizing h itself.
      const std::vector<unsigned char> h = pack(c.h);
      simdnorm_desc direct = Desc(kind, h.data(), c.type, 1, n, y_direct.data(),
                                  SIMDNORM_F32, 0.0f);
      ASSERT_EQ(simdnorm_normalize_reference(&direct), SIMDNORM_OK);
      EXPECT_EQ(std::memcmp(y.data(), y_direct.data(), n * 4), 0) << what;
    }
    // No residual: sum_out is a copy of x.
    std::fill(sum.begin(), sum.end(), kSentinel);
    simdnorm_desc d = Desc(SIMDNORM_RMSNORM, x.data(), c.type, 1, n, y.data(),
                           SIMDNORM_F32, 0.0f);
    d.sum_out = sum.data();
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    EXPECT_TRUE(sum == x) << DTypeName(c.type) << ": sum_out without residual";
  }
}

// The aliasings the contract allows give the bits of separate buffers:
// vLLM's {residual = sum_out, y = x} and {sum_out = x}, strided.
TEST(Reference, FusedAddInPlaceMatchesSeparateBuffers) {
  const size_t rows = 3, cols = 37, stride = 40;
  const std::vector<float>& xv = RowData(Family::kTypical, rows, cols);
  const std::vector<float>& rv = RowData(Family::kStdNormal, rows, cols);
  for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
    const size_t es = t == SIMDNORM_F32 ? 4 : 2;
    auto make = [&](const std::vector<float>& v) {
      std::vector<unsigned char> m(rows * stride * es, kSentinel);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < cols; ++c) {
          const float f = v[r * cols + c];
          unsigned char* p = &m[(r * stride + c) * es];
          if (t == SIMDNORM_F32) std::memcpy(p, &f, 4);
          const uint16_t b = t == SIMDNORM_BF16
                                 ? simdnorm::bf16::from_float(f).bits
                                 : simdnorm::f16::from_float(f).bits;
          if (t != SIMDNORM_F32) std::memcpy(p, &b, 2);
        }
      }
      return m;
    };
    const std::vector<float> gamma = ParamData(true, cols);
    for (simdnorm_kind kind : AllKinds()) {
      const std::string what = std::string(DTypeName(t)) + " " + KindName(kind);
      auto desc = [&](const void* x, const void* res, void* y, void* sum) {
        simdnorm_desc d =
            Desc(kind, x, t, rows, cols, y, t, 1e-5f, gamma.data());
        d.x_stride = d.y_stride = d.residual_stride = d.sum_out_stride = stride;
        d.residual = res;
        d.sum_out = sum;
        d.gamma_offset = 0.5f;
        return d;
      };
      const std::vector<unsigned char> x = make(xv), r = make(rv);
      std::vector<unsigned char> y(x.size(), kSentinel), sum = y;
      simdnorm_desc d = desc(x.data(), r.data(), y.data(), sum.data());
      ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK) << what;
      // Padding between rows untouched.
      EXPECT_EQ(y[cols * es], kSentinel) << what;
      EXPECT_EQ(sum[cols * es], kSentinel) << what;

      std::vector<unsigned char> xi = x, ri = r;  // vLLM: both in place
      d = desc(xi.data(), ri.data(), xi.data(), ri.data());
      ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK) << what;
      EXPECT_TRUE(xi == y) << what << ": y in place on x";
      EXPECT_TRUE(ri == sum) << what << ": sum_out in place on residual";

      std::vector<unsigned char> xs = x, y2(x.size(), kSentinel);
      d = desc(xs.data(), r.data(), y2.data(), xs.data());
      ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK) << what;
      EXPECT_TRUE(xs == sum) << what << ": sum_out in place on x";
      EXPECT_TRUE(y2 == y) << what << ": y with sum_out on x";
    }
  }
}

// scale = fl32(gamma_offset + gamma): out of a row of ones is the scale.
TEST(Reference, GammaOffsetIsAddedInFp32) {
  const struct {
    float offset;
    std::vector<float> gamma;
    std::vector<double> want;
  } cases[] = {
      {1.0f, {0.5f, -1.0f, 0x1p-30f, -2.5f}, {1.5, 0.0, 1.0, -1.5}},
      // 2^24 + 1 is a tie in fp32 (to 2^24), 2^24 + 3 one to 2^24 + 4.
      {0x1p24f, {1.0f, 3.0f}, {0x1p24, 0x1p24 + 4}},
      {-1.0f, {1.0f, 3.0f}, {0.0, 2.0}},
      {0.0f, {0.75f, -3.0f}, {0.75, -3.0}},
  };
  for (const auto& c : cases) {
    std::vector<float> y(c.gamma.size());
    OnesRow row(c.gamma, {}, y.data(), SIMDNORM_F32);
    row.d.gamma_offset = c.offset;
    std::vector<double> out(c.gamma.size());
    ASSERT_EQ(simdnorm::reference_f64(row.d, out.data(), nullptr),
              simdnorm::Status::kOk);
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i], c.want[i])
          << "offset " << Num(c.offset) << " gamma " << Num(c.gamma[i]);
    }
  }
  // NULL gamma is 1: the scale is offset + 1; beta still adds.
  std::vector<float> y(3);
  OnesRow row({0.0f, 0.0f, 0.0f}, {0.25f, 0.0f, -1.0f}, y.data(), SIMDNORM_F32);
  row.d.gamma = nullptr;
  row.d.gamma_offset = 1.0f;
  std::vector<double> out(3);
  ASSERT_EQ(simdnorm::reference_f64(row.d, out.data(), nullptr),
            simdnorm::Status::kOk);
  EXPECT_EQ(out[0], 2.25);
  EXPECT_EQ(out[1], 2.0);
  EXPECT_EQ(out[2], 1.0);
  // Offset 0 (either sign) changes nothing: gamma -0 stays -0, visible
  // with beta -0 (1 * -0 + -0 = -0; a +0 scale would give +0).
  for (float zero : {0.0f, -0.0f}) {
    OnesRow neg({-0.0f}, {-0.0f}, y.data(), SIMDNORM_F32);
    neg.d.gamma_offset = zero;
    ASSERT_EQ(simdnorm::reference_f64(neg.d, out.data(), nullptr),
              simdnorm::Status::kOk);
    EXPECT_TRUE(out[0] == 0.0 && std::signbit(out[0])) << Num(zero);
    y[0] = 1.0f;
    ASSERT_EQ(simdnorm_normalize_reference(&neg.d), SIMDNORM_OK);
    EXPECT_EQ(FloatBits(y[0]), 0x80000000u) << Num(zero);
  }
  // With LayerNorm and 16-bit parameters: xhat * (offset + gamma).
  const std::vector<float> x = {1, 2, 3, 4};
  const uint16_t gamma_f16[] = {0x3C00, 0x0000, 0xBC00, 0x3800};  // 1 0 -1 .5
  simdnorm_desc d = Desc(SIMDNORM_LAYERNORM, x.data(), SIMDNORM_F32, 1, 4,
                         y.data(), SIMDNORM_F32, 0.0f);
  d.gamma = gamma_f16;
  d.param_type = SIMDNORM_F16;
  d.gamma_offset = 1.0f;
  std::vector<double> out4(4);
  ASSERT_EQ(simdnorm::reference_f64(d, out4.data(), nullptr),
            simdnorm::Status::kOk);
  const double scale[] = {2.0, 1.0, 0.0, 1.5};
  for (size_t i = 0; i < 4; ++i) {
    ExpectClose(out4[i], (x[i] - 2.5) / std::sqrt(1.25) * scale[i], 4e-16,
                "LayerNorm, f16 gamma, offset 1, " + std::to_string(i));
  }
}

// SIMDNORM_ROUND_NORMALIZED rounds xhat to x_type before the scale.
TEST(Reference, RoundNormalizedRoundsXhatToXType) {
  // RMSNorm of (3, 4): xhat = (3, 4) / sqrt(12.5) = (0.84852..., 1.13137...):
  // bf16 (0.84765625, 1.1328125), f16 (1738 / 2048, 1159 / 1024).
  const double rms = std::sqrt(12.5);
  const struct {
    simdnorm_dtype type;
    std::vector<uint16_t> x;  // 3 and 4
    double xhat0, xhat1;
  } cases[] = {
      {SIMDNORM_BF16, {0x4040, 0x4080}, 0.84765625, 1.1328125},
      {SIMDNORM_F16, {0x4200, 0x4400}, 1738.0 / 2048, 1159.0 / 1024},
  };
  const float gamma[] = {3.0f, 0.5f}, beta[] = {0.25f, 0.0f};
  for (const auto& c : cases) {
    std::vector<float> y(2);
    simdnorm_desc d = Desc(SIMDNORM_RMSNORM, c.x.data(), c.type, 1, 2, y.data(),
                           SIMDNORM_F32, 0.0f, gamma, beta);
    std::vector<double> out(2), xhat(2);
    ASSERT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()),
              simdnorm::Status::kOk);
    ExpectClose(xhat[0], 3 / rms, 1e-16, "unrounded xhat");
    ExpectClose(xhat[1], 4 / rms, 1e-16, "unrounded xhat");
    d.flags = SIMDNORM_ROUND_NORMALIZED;
    ASSERT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()),
              simdnorm::Status::kOk);
    EXPECT_EQ(xhat[0], c.xhat0) << DTypeName(c.type);
    EXPECT_EQ(xhat[1], c.xhat1) << DTypeName(c.type);
    EXPECT_EQ(out[0], c.xhat0 * 3 + 0.25) << DTypeName(c.type);  // exact
    EXPECT_EQ(out[1], c.xhat1 * 0.5) << DTypeName(c.type);
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    EXPECT_EQ(y[0], static_cast<float>(out[0]));
    EXPECT_EQ(y[1], static_cast<float>(out[1]));
  }
  // f32 x: xhat not rounded (the flag is for 16-bit x).
  const std::vector<float> xf = {3, 4};
  std::vector<float> y(2);
  simdnorm_desc d = Desc(SIMDNORM_RMSNORM, xf.data(), SIMDNORM_F32, 1, 2,
                         y.data(), SIMDNORM_F32, 0.0f);
  d.flags = SIMDNORM_ROUND_NORMALIZED;
  std::vector<double> out(2), xhat(2);
  ASSERT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()),
            simdnorm::Status::kOk);
  ExpectClose(xhat[0], 3 / rms, 1e-16, "f32 x, unrounded xhat");
  ExpectClose(xhat[1], 4 / rms, 1e-16, "f32 x, unrounded xhat");
  // LayerNorm of f16 (1, 2, 3, 4): xhat = (+-1.34164..., +-0.44721...)
  // rounds to +-1374 / 1024 and +-1832 / 4096.
  const uint16_t x4[] = {0x3C00, 0x4000, 0x4200, 0x4400};
  std::vector<float> y4(4);
  d = Desc(SIMDNORM_LAYERNORM, x4, SIMDNORM_F16, 1, 4, y4.data(), SIMDNORM_F32,
           0.0f);
  d.flags = SIMDNORM_ROUND_NORMALIZED;
  std::vector<double> out4(4), xhat4(4);
  ASSERT_EQ(simdnorm::reference_f64(d, out4.data(), xhat4.data()),
            simdnorm::Status::kOk);
  const double want4[] = {-1374.0 / 1024, -1832.0 / 4096, 1832.0 / 4096,
                          1374.0 / 1024};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(xhat4[i], want4[i]) << i;
    EXPECT_EQ(out4[i], want4[i]) << i;
  }
}

// int8 output of a row of ones, so y = gamma (+ beta): groups of 4 in a
// row of 10 (the last group has 2), zeros, a NaN row, an infinite group.
TEST(Reference, Int8PerGroup) {
  const size_t rows = 2, cols = 10, y_stride = 12;
  const std::vector<float> gamma = {63.5f, 0.25f, -0.75f, 1.25f,  0.0f,
                                    -0.0f, 0.0f,  0.0f,   -0.75f, 0.25f};
  // Group 0: max 63.5, scale 0.5, q = 127, round(0.5) = 0, round(-1.5) =
  // -2, round(2.5) = 2. Group 1: zeros. Group 2: max 0.75, q = -127,
  // round(42.33) = 42.
  const int8_t want_q[] = {127, 0, -2, 2, 0, 0, 0, 0, -127, 42};
  const float want_scale[] = {0.5f, 0.0f, static_cast<float>(0.75 / 127)};
  std::vector<float> x(rows * cols, 1.0f);
  for (size_t c = 0; c < cols; ++c) x[cols + c] = 2.0f;  // row 1: twos
  std::vector<int8_t> q(rows * y_stride, 0x5A);
  std::vector<float> scales(rows * 3 + 2, -7.0f);
  simdnorm_desc d = Desc(SIMDNORM_RMSNORM, x.data(), SIMDNORM_F32, rows, cols,
                         q.data(), SIMDNORM_I8, 0.0f, gamma.data());
  d.y_stride = y_stride;
  d.y_scale = scales.data();
  d.quant_group = 4;
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      EXPECT_EQ(q[r * y_stride + c], want_q[c]) << r << "," << c;
    }
    EXPECT_EQ(q[r * y_stride + 10], 0x5A) << "padding";
    EXPECT_EQ(q[r * y_stride + 11], 0x5A) << "padding";
    for (size_t g = 0; g < 3; ++g) {
      EXPECT_EQ(scales[r * 3 + g], want_scale[g]) << r << ", group " << g;
    }
  }
  EXPECT_EQ(scales[6], -7.0f) << "wrote past the scales";
  EXPECT_EQ(scales[7], -7.0f) << "wrote past the scales";
  // reference_f64 gives the unrounded y, as for float output.
  std::vector<double> out(rows * cols);
  ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
            simdnorm::Status::kOk);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], gamma[i % cols]);

  // Group 0 (the whole row) and groups longer than the row: one scale.
  for (size_t group : {0u, 10u, 11u, 1000u}) {
    std::fill(scales.begin(), scales.end(), -7.0f);
    d.quant_group = group;
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    const int8_t want_row[] = {127, 0, -2, 2, 0, 0, 0, 0, -2, 0};
    for (size_t c = 0; c < cols; ++c) {
      EXPECT_EQ(q[y_stride + c], want_row[c]) << "group " << group;
    }
    EXPECT_EQ(scales[0], 0.5f) << "group " << group;
    EXPECT_EQ(scales[1], 0.5f) << "group " << group << ": row 1 at [1]";
    EXPECT_EQ(scales[2], -7.0f) << "group " << group;
  }
  // Groups of 1: each nonzero element is +-127 with scale |y| / 127.
  std::fill(scales.begin(), scales.end(), -7.0f);
  std::vector<float> scales1(rows * cols);
  d.quant_group = 1;
  d.y_scale = scales1.data();
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t c = 0; c < cols; ++c) {
    const double g = gamma[c];
    EXPECT_EQ(q[c], g > 0 ? 127 : g < 0 ? -127 : 0) << c;
    EXPECT_EQ(scales1[c], static_cast<float>(std::fabs(g) / 127)) << c;
  }

  // A NaN in row 1: every scale of that row NaN, q 0; row 0 unchanged.
  x[cols + 3] = std::numeric_limits<float>::quiet_NaN();
  d.quant_group = 4;
  d.y_scale = scales.data();
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t c = 0; c < cols; ++c) {
    EXPECT_EQ(q[c], want_q[c]) << c;
    EXPECT_EQ(q[y_stride + c], 0) << "NaN row, " << c;
  }
  for (size_t g = 0; g < 3; ++g) {
    EXPECT_EQ(scales[g], want_scale[g]) << g;
    EXPECT_TRUE(std::isnan(scales[3 + g])) << "NaN row, group " << g;
  }
  x[cols + 3] = 2.0f;

  // An infinite y in group 2 (beta): that group's scale is inf, q 0.
  std::vector<float> beta(cols, 0.0f);
  beta[9] = -std::numeric_limits<float>::infinity();
  d.beta = beta.data();
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t r = 0; r < rows; ++r) {
    EXPECT_EQ(scales[r * 3], 0.5f);
    EXPECT_EQ(scales[r * 3 + 1], 0.0f);
    EXPECT_EQ(scales[r * 3 + 2], std::numeric_limits<float>::infinity());
    for (size_t c = 0; c < 8; ++c) EXPECT_EQ(q[r * y_stride + c], want_q[c]);
    EXPECT_EQ(q[r * y_stride + 8], 0);
    EXPECT_EQ(q[r * y_stride + 9], 0);
  }
}

// int8 q of LayerNorm with ROUND_NORMALIZED and a residual: the pieces
// compose (q from the out of reference_f64, which includes them all).
TEST(Reference, Int8ComposesWithTheOtherFeatures) {
  const size_t rows = 3, cols = 21, group = 8;
  const std::vector<float>& xv = RowData(Family::kTypical, rows, cols);
  const std::vector<float>& rv = RowData(Family::kStdNormal, rows, cols);
  std::vector<uint16_t> x(rows * cols), r(rows * cols), sum(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = simdnorm::bf16::from_float(xv[i]).bits;
    r[i] = simdnorm::bf16::from_float(rv[i]).bits;
  }
  const std::vector<float>& gamma = ParamData(true, cols);
  const std::vector<float>& beta = ParamData(false, cols);
  std::vector<int8_t> q(rows * cols);
  std::vector<float> scales(rows * 3);
  simdnorm_desc d =
      Desc(SIMDNORM_LAYERNORM, x.data(), SIMDNORM_BF16, rows, cols, q.data(),
           SIMDNORM_I8, 1e-5f, gamma.data(), beta.data());
  d.residual = r.data();
  d.sum_out = sum.data();
  d.gamma_offset = 1.0f;
  d.flags = SIMDNORM_ROUND_NORMALIZED;
  d.y_scale = scales.data();
  d.quant_group = group;
  std::vector<double> out(rows * cols);
  ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
            simdnorm::Status::kOk);
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t row = 0; row < rows; ++row) {
    for (size_t g = 0; g < 3; ++g) {
      double m = 0;
      const size_t end = std::min(cols, (g + 1) * group);
      for (size_t c = g * group; c < end; ++c)
        m = std::max(m, std::fabs(out[row * cols + c]));
      ASSERT_GT(m, 0.0);
      EXPECT_EQ(scales[row * 3 + g], static_cast<float>(m / 127));
      for (size_t c = g * group; c < end; ++c) {
        EXPECT_EQ(q[row * cols + c], static_cast<int8_t>(std::nearbyint(
                                         out[row * cols + c] / (m / 127))))
            << row << "," << c;
      }
    }
  }
}

}  // namespace
}  // namespace simdnorm_test

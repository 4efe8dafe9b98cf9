// The float64 reference itself: hand-computed values, geometry of the
// normalized rows, shift invariance, constant rows, rounding once to the
// output dtype, exact widening of bf16 inputs.
#include "test_util.h"

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
        for (simdnorm_kind kind : {SIMDNORM_LAYERNORM, SIMDNORM_RMSNORM}) {
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
  for (simdnorm_kind kind : {SIMDNORM_LAYERNORM, SIMDNORM_RMSNORM}) {
    for (const DTypes& t : AllDTypes()) {
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
  for (simdnorm_kind kind : {SIMDNORM_LAYERNORM, SIMDNORM_RMSNORM}) {
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

}  // namespace
}  // namespace simdnorm_test

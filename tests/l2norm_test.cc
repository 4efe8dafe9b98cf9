// L2 normalization (SIMDNORM_L2NORM, torch.nn.functional.normalize): the
// float64 reference on hand-computed rows, then every ISA's kernels against
// it on rows where the norm overflows or underflows fp32 and where it
// meets eps: fp32 output within the bound, 16-bit output correctly rounded
// (the reference's bits), NaN rows NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.hpp"

namespace {

simdnorm_desc L2Desc(const float* x, size_t rows, size_t cols, void* y,
                     simdnorm_dtype y_type, float eps) {
  simdnorm_desc d{};
  d.kind = SIMDNORM_L2NORM;
  d.rows = rows;
  d.cols = cols;
  d.x = x;
  d.x_type = SIMDNORM_F32;
  d.y = y;
  d.y_type = y_type;
  d.param_type = SIMDNORM_F32;
  d.eps = eps;
  return d;
}

std::vector<double> Reference(const simdnorm_desc& d) {
  std::vector<double> out(d.rows * d.cols);
  EXPECT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
            simdnorm::Status::kOk);
  return out;
}

TEST(L2Norm, RegistryEntry) {
  const simdnorm_op_info* op = simdnorm_op_of(SIMDNORM_L2NORM);
  ASSERT_NE(op, nullptr);
  EXPECT_STREQ(op->name, "l2norm");
  EXPECT_EQ(op->centered, 0);
  EXPECT_EQ(simdnorm_op_at(SIMDNORM_L2NORM), op);
  EXPECT_EQ(simdnorm_op_of(static_cast<simdnorm_kind>(simdnorm_op_count())),
            nullptr);
}

TEST(L2Norm, ReferenceByHand) {
  const float x[] = {3, 4, 0, -0.0f};
  float y[4];
  // ||x|| = 5.
  std::vector<double> r = Reference(L2Desc(x, 1, 4, y, SIMDNORM_F32, 0.0f));
  EXPECT_EQ(r[0], 0.6);
  EXPECT_EQ(r[1], 0.8);
  EXPECT_EQ(r[2], 0.0);
  EXPECT_TRUE(std::signbit(r[3]));
  // eps above the norm: x / eps.
  r = Reference(L2Desc(x, 1, 4, y, SIMDNORM_F32, 10.0f));
  EXPECT_EQ(r[0], 0.3);
  EXPECT_EQ(r[1], 0.4);
  // gamma and beta.
  const float g[] = {2, -1, 1, 1}, b[] = {1, 0, 0.5f, 0};
  simdnorm_desc d = L2Desc(x, 1, 4, y, SIMDNORM_F32, 0.0f);
  d.gamma = g;
  d.beta = b;
  r = Reference(d);
  EXPECT_EQ(r[0], 0.6 * 2 + 1);
  EXPECT_EQ(r[1], -0.8);
  EXPECT_EQ(r[2], 0.5);
  // A zero row: zeros with eps > 0 (torch's answer), 0/0 = NaN with eps 0.
  const float z[] = {0, 0, 0};
  r = Reference(L2Desc(z, 1, 3, y, SIMDNORM_F32, 1e-12f));
  EXPECT_EQ(r[0], 0.0);
  r = Reference(L2Desc(z, 1, 3, y, SIMDNORM_F32, 0.0f));
  EXPECT_TRUE(std::isnan(r[0]));
}

TEST(L2Norm, CppApiDefaultsToTorchEps) {
  const float x[] = {3e-13f, 4e-13f};
  float y[2];
  // ||x|| = 5e-13 < 1e-12 = torch's eps: x / 1e-12.
  ASSERT_EQ(simdnorm::l2_norm(simdnorm::Rows<const float>(x, 1, 2),
                              simdnorm::Rows<float>(y, 1, 2)),
            simdnorm::Status::kOk);
  EXPECT_NEAR(y[0], 0.3, 1e-6);
  EXPECT_NEAR(y[1], 0.4, 1e-6);
}

// Rows of every scale, including norms beyond fp32's range and norms next
// to eps; a NaN row among them.
struct Rows {
  std::vector<float> x;
  size_t rows, cols;
};

Rows MakeRows(size_t cols, double scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd;
  Rows r{std::vector<float>(5 * cols), 5, cols};
  for (size_t i = 0; i < r.x.size(); ++i) {
    r.x[i] = static_cast<float>(nd(rng) * scale);
  }
  std::fill(r.x.begin() + cols, r.x.begin() + 2 * cols, 0.0f);  // zero row
  r.x[2 * cols + cols / 2] = NAN;                               // NaN row
  r.x[3 * cols] = static_cast<float>(1e-12);  // norm ~ eps if alone
  for (size_t j = 1; j < cols; ++j) r.x[3 * cols + j] = 0.0f;
  return r;
}

std::string Where(const char* isa, size_t cols, double scale, float eps,
                  simdnorm_dtype yt, size_t e) {
  return std::string(isa) + " cols " + std::to_string(cols) + " scale " +
         std::to_string(scale) + " eps " + std::to_string(eps) + " y_type " +
         std::to_string(yt) + " element " + std::to_string(e);
}

TEST(L2Norm, EveryIsaMatchesTheReference) {
  const std::vector<float> gamma = {1.5f, -0.25f, 1.0f, 3.0f};
  for (size_t cols : {1, 7, 64, 896, 1001}) {
    std::vector<float> g(cols), b(cols);
    for (size_t j = 0; j < cols; ++j) {
      g[j] = gamma[j % 4];
      b[j] = 0.125f * static_cast<float>(j % 3);
    }
    for (double scale : {1.0, 1e25, 1e-25, 1e-13, 1e-40}) {
      const Rows rows = MakeRows(cols, scale, static_cast<uint32_t>(cols));
      for (float eps : {0.0f, 1e-12f, 1.0f}) {
        for (simdnorm_dtype yt : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
          for (bool weights : {false, true}) {
            const size_t es = yt == SIMDNORM_F32 ? 4 : 2;
            std::vector<unsigned char> want(rows.x.size() * es),
                got(want.size());
            simdnorm_desc d =
                L2Desc(rows.x.data(), rows.rows, cols, want.data(), yt, eps);
            if (weights) {
              d.gamma = g.data();
              d.beta = b.data();
            }
            const std::vector<double> ref = Reference(d);
            ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
            for (size_t i = 0; i < simdnorm_isa_count(); ++i) {
              const char* isa = simdnorm_isa_name(i);
              ASSERT_EQ(simdnorm_set_isa(isa), SIMDNORM_OK);
              d.y = got.data();
              ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
              for (size_t e = 0; e < ref.size(); ++e) {
                if (yt != SIMDNORM_F32) {
                  uint16_t a, w;
                  std::memcpy(&a, &got[2 * e], 2);
                  std::memcpy(&w, &want[2 * e], 2);
                  ASSERT_EQ(a, w) << Where(isa, cols, scale, eps, yt, e);
                  continue;
                }
                float v;
                std::memcpy(&v, &got[4 * e], 4);
                if (std::isnan(ref[e])) {
                  ASSERT_TRUE(std::isnan(v))
                      << Where(isa, cols, scale, eps, yt, e);
                  continue;
                }
                // fp32 bound: 32 scaled ulps of |gamma| + |beta| (|xhat| <= 1).
                const size_t j = e % cols;
                const double terms =
                    weights ? std::fabs(g[j]) + std::fabs(b[j]) : 1.0;
                ASSERT_LE(std::fabs(v - ref[e]), 32 * 0x1p-23 * terms)
                    << Where(isa, cols, scale, eps, yt, e) << " got " << v
                    << " want " << ref[e];
              }
            }
            ASSERT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
          }
        }
      }
    }
  }
}

}  // namespace

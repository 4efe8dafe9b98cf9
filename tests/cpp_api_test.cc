// The C++ API (simdnorm.hpp): typed views give the same bits as the C API,
// shape mismatches are reported, bf16 and f16 conversions round to
// nearest-even; the issue #7 entry points (fused add, in-place fused add,
// int8 output) fill the descriptor as the C API is called.
#include <algorithm>
#include <cfloat>
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
#include "support/isa_test.h"
#include "support/matrix.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

// Every row kind of the registry, through the C++ API's accessors.
std::vector<simdnorm::Kind> CppKinds() {
  std::vector<simdnorm::Kind> kinds;
  for (size_t i = 0; i < simdnorm::op_count(); ++i) {
    if (simdnorm::op_at(i)->descriptor != SIMDNORM_ROW_DESC) continue;
    kinds.push_back(static_cast<simdnorm::Kind>(simdnorm::op_at(i)->kind));
  }
  return kinds;
}

using simdnorm::Status;

SIMDNORM_ISA_FIXTURE(CppApiTest);

template <class T>
simdnorm_dtype CType() {
  return static_cast<simdnorm_dtype>(simdnorm::dtype_of<T>());
}

// layer_norm / rms_norm on typed views vs simdnorm_normalize on the same
// memory layout: bitwise equal outputs, nothing written outside y.
template <class X, class Y, class P>
void ExpectSameBitsAsC(simdnorm::Kind kind, size_t rows, size_t cols,
                       size_t x_stride, size_t y_stride, bool params,
                       float eps) {
  const DTypes t{CType<X>(), CType<Y>(), CType<P>()};
  const std::string what =
      std::string("[ISA ") + simdnorm_active_isa() + "] " +
      KindName(static_cast<simdnorm_kind>(kind)) + " x=" + DTypeName(t.x) +
      " y=" + DTypeName(t.y) + " param=" + DTypeName(t.param) +
      " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
      " strides=" + std::to_string(x_stride) + "/" + std::to_string(y_stride) +
      (params ? " gamma+beta" : "") + " eps=" + Num(eps);
  Matrix x(t.x, rows, cols, x_stride);
  x.Fill(RowData(Family::kTypical, rows, cols));
  Matrix gamma(t.param, 1, cols), beta(t.param, 1, cols);
  gamma.Fill(ParamData(true, cols));
  beta.Fill(ParamData(false, cols));
  Matrix y_cpp(t.y, rows, cols, y_stride), y_c(t.y, rows, cols, y_stride);

  const simdnorm::Rows<const X> xv(static_cast<const X*>(x.data()), rows, cols,
                                   x_stride);
  const simdnorm::Rows<Y> yv(static_cast<Y*>(y_cpp.data()), rows, cols,
                             y_stride);
  const P* g = params ? static_cast<const P*>(gamma.data()) : nullptr;
  const P* b = params ? static_cast<const P*>(beta.data()) : nullptr;
  simdnorm::Options opt;
  opt.eps = eps;
  // The named form where the kind has one, else the kind-generic one.
  Status s;
  switch (kind) {
    case simdnorm::Kind::kLayerNorm:
      s = simdnorm::layer_norm(xv, yv, g, b, opt);
      break;
    case simdnorm::Kind::kRMSNorm:
      s = simdnorm::rms_norm(xv, yv, g, b, opt);
      break;
    case simdnorm::Kind::kL2Norm:
      s = simdnorm::l2_norm(xv, yv, g, b, opt);
      break;
    default:
      s = simdnorm::norm(kind, xv, yv, g, b, opt);
  }
  ASSERT_EQ(s, Status::kOk) << what << ": " << simdnorm::to_string(s);

  simdnorm_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = rows;
  d.cols = cols;
  d.x = x.data();
  d.x_type = t.x;
  d.x_stride = x_stride;
  d.y = y_c.data();
  d.y_type = t.y;
  d.y_stride = y_stride;
  d.gamma = g;
  d.beta = b;
  d.param_type = t.param;
  d.eps = eps;
  ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK) << what;
  EXPECT_TRUE(y_cpp.ElementBytes() == y_c.ElementBytes())
      << what << ": C++ and C outputs differ";
  std::string where;
  EXPECT_TRUE(y_cpp.PaddingIntact(&where)) << what << ": " << where;
}

template <class X, class Y, class P>
void SameBitsAllShapes() {
  for (simdnorm::Kind kind : CppKinds()) {
    ExpectSameBitsAsC<X, Y, P>(kind, 5, 897, 0, 0, true, 1e-5f);
    ExpectSameBitsAsC<X, Y, P>(kind, 3, 33, 40, 35, false, 0.0f);
    ExpectSameBitsAsC<X, Y, P>(kind, 64, 128, 0, 130, true, 1.0f);
  }
}

TEST_P(CppApiTest, TypedViewsGiveTheBitsOfTheCApi) {
  using simdnorm::bf16;
  SameBitsAllShapes<float, float, float>();
  SameBitsAllShapes<float, float, bf16>();
  SameBitsAllShapes<float, bf16, float>();
  SameBitsAllShapes<float, bf16, bf16>();
  SameBitsAllShapes<bf16, float, float>();
  SameBitsAllShapes<bf16, float, bf16>();
  SameBitsAllShapes<bf16, bf16, float>();
  SameBitsAllShapes<bf16, bf16, bf16>();
}

TEST_P(CppApiTest, InPlaceThroughAMutableView) {
  const size_t rows = 7, cols = 65;
  Matrix a(SIMDNORM_BF16, rows, cols), b(SIMDNORM_BF16, rows, cols);
  a.Fill(RowData(Family::kTypical, rows, cols));
  b.Fill(RowData(Family::kTypical, rows, cols));
  simdnorm::Rows<simdnorm::bf16> view(static_cast<simdnorm::bf16*>(a.data()),
                                      rows, cols);
  const simdnorm::Rows<const simdnorm::bf16> input = view;  // conversion
  EXPECT_EQ(input.data, view.data);
  EXPECT_EQ(input.rows, rows);
  EXPECT_EQ(input.cols, cols);
  ASSERT_EQ(simdnorm::rms_norm(input, view), Status::kOk);

  simdnorm_desc d{};
  d.kind = SIMDNORM_RMSNORM;
  d.rows = rows;
  d.cols = cols;
  d.x = b.data();
  d.x_type = SIMDNORM_BF16;
  d.y = b.data();
  d.y_type = SIMDNORM_BF16;
  d.eps = 1e-5f;  // the default of Options
  ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
  EXPECT_TRUE(a.ElementBytes() == b.ElementBytes());
}

TEST_P(CppApiTest, ShapeMismatchIsInvalidShape) {
  Matrix x(SIMDNORM_F32, 4, 8);
  x.Fill(RowData(Family::kTypical, 4, 8));
  const simdnorm::Rows<const float> xv(static_cast<const float*>(x.data()), 4,
                                       8);
  for (const auto& shape : {std::make_pair(size_t{3}, size_t{8}),
                            std::make_pair(size_t{5}, size_t{8}),
                            std::make_pair(size_t{4}, size_t{7}),
                            std::make_pair(size_t{4}, size_t{9})}) {
    Matrix y(SIMDNORM_F32, shape.first, shape.second);
    const simdnorm::Rows<float> yv(static_cast<float*>(y.data()), shape.first,
                                   shape.second);
    const std::vector<unsigned char> before = y.bytes();
    EXPECT_EQ(simdnorm::layer_norm(xv, yv), Status::kInvalidShape)
        << "y " << shape.first << " x " << shape.second;
    EXPECT_EQ(simdnorm::rms_norm(xv, yv), Status::kInvalidShape)
        << "y " << shape.first << " x " << shape.second;
    EXPECT_TRUE(y.bytes() == before) << "y written on a shape mismatch";
  }
  // Same shape, different strides: fine.
  Matrix y(SIMDNORM_F32, 4, 8, 11);
  EXPECT_EQ(
      simdnorm::layer_norm(
          xv, simdnorm::Rows<float>(static_cast<float*>(y.data()), 4, 8, 11)),
      Status::kOk);
}

TEST(CppApi, MakeDescFillsEveryField) {
  float xs[12] = {};
  simdnorm::bf16 ys[16] = {};
  const simdnorm::bf16 g[4] = {};
  simdnorm::Options opt;
  EXPECT_EQ(opt.eps, 1e-5f);
  EXPECT_EQ(opt.max_threads, 0u);
  opt.eps = 0.25f;
  opt.max_threads = 3;
  const simdnorm_desc d = simdnorm::make_desc(
      simdnorm::Kind::kRMSNorm, simdnorm::Rows<const float>(xs, 3, 4, 4),
      simdnorm::Rows<simdnorm::bf16>(ys, 3, 4, 5), g,
      static_cast<const simdnorm::bf16*>(nullptr), opt);
  EXPECT_EQ(d.kind, SIMDNORM_RMSNORM);
  EXPECT_EQ(d.rows, 3u);
  EXPECT_EQ(d.cols, 4u);
  EXPECT_EQ(d.x, static_cast<const void*>(xs));
  EXPECT_EQ(d.x_type, SIMDNORM_F32);
  EXPECT_EQ(d.x_stride, 4u);
  EXPECT_EQ(d.y, static_cast<void*>(ys));
  EXPECT_EQ(d.y_type, SIMDNORM_BF16);
  EXPECT_EQ(d.y_stride, 5u);
  EXPECT_EQ(d.gamma, static_cast<const void*>(g));
  EXPECT_EQ(d.beta, nullptr);
  EXPECT_EQ(d.param_type, SIMDNORM_BF16);
  EXPECT_EQ(d.eps, 0.25f);
  EXPECT_EQ(d.max_threads, 3u);
}

TEST(CppApi, StatusesAndIsaWrappersMatchTheCApi) {
  for (int i = 0; i <= 4; ++i) {
    EXPECT_STREQ(simdnorm::to_string(static_cast<Status>(i)),
                 simdnorm_status_string(static_cast<simdnorm_status>(i)));
  }
  EXPECT_EQ(simdnorm::isa_count(), simdnorm_isa_count());
  for (size_t i = 0; i < simdnorm::isa_count(); ++i) {
    EXPECT_EQ(simdnorm::isa_name(i), std::string(simdnorm_isa_name(i)));
  }
  EXPECT_TRUE(simdnorm::isa_name(simdnorm::isa_count()).empty());
  const std::string last(simdnorm::isa_name(simdnorm::isa_count() - 1));
  EXPECT_EQ(simdnorm::set_isa(last.c_str()), Status::kOk);
  EXPECT_EQ(simdnorm::active_isa(), last);
  EXPECT_EQ(simdnorm::set_isa("nonsense"), Status::kUnsupported);
  EXPECT_EQ(simdnorm::active_isa(), last);
  EXPECT_EQ(simdnorm::set_isa(nullptr), Status::kOk);
  EXPECT_EQ(simdnorm::active_isa(), std::string(simdnorm_active_isa()));
  EXPECT_EQ(simdnorm::active_isa(), simdnorm::isa_name(0));
}

TEST(CppApi, NormalizeReferenceGivesTheBitsOfTheCApi) {
  const size_t rows = 6, cols = 129;
  Matrix x(SIMDNORM_F32, rows, cols);
  x.Fill(RowData(Family::kTypical, rows, cols));
  for (simdnorm_dtype yt : {SIMDNORM_F32, SIMDNORM_BF16}) {
    Matrix a(yt, rows, cols), b(yt, rows, cols);
    simdnorm_desc d{};
    d.kind = SIMDNORM_LAYERNORM;
    d.rows = rows;
    d.cols = cols;
    d.x = x.data();
    d.y = a.data();
    d.y_type = yt;
    d.eps = 1e-5f;
    ASSERT_EQ(simdnorm::normalize_reference(d), Status::kOk);
    d.y = b.data();
    ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
    EXPECT_TRUE(a.ElementBytes() == b.ElementBytes()) << DTypeName(yt);
  }
}

TEST(CppApi, ReferenceF64XhatIsOptionalAndBadDescriptorsFail) {
  const size_t rows = 3, cols = 17;
  Matrix x(SIMDNORM_F32, rows, cols), y(SIMDNORM_F32, rows, cols);
  x.Fill(RowData(Family::kTypical, rows, cols));
  simdnorm_desc d{};
  d.kind = SIMDNORM_LAYERNORM;
  d.rows = rows;
  d.cols = cols;
  d.x = x.data();
  d.y = y.data();
  d.eps = 1e-5f;
  std::vector<double> out1(rows * cols), out2(rows * cols), xhat(rows * cols);
  ASSERT_EQ(simdnorm::reference_f64(d, out1.data(), xhat.data()), Status::kOk);
  ASSERT_EQ(simdnorm::reference_f64(d, out2.data(), nullptr), Status::kOk);
  EXPECT_EQ(std::memcmp(out1.data(), out2.data(), out1.size() * 8), 0);

  std::vector<double> out(rows * cols, 42.0);
  simdnorm_desc bad = d;
  bad.cols = 0;
  EXPECT_EQ(simdnorm::reference_f64(bad, out.data(), nullptr),
            Status::kInvalidShape);
  bad = d;
  bad.x = nullptr;
  EXPECT_EQ(simdnorm::reference_f64(bad, out.data(), nullptr),
            Status::kInvalidArgument);
  bad = d;
  bad.eps = -1.0f;
  EXPECT_EQ(simdnorm::reference_f64(bad, out.data(), nullptr),
            Status::kInvalidArgument);
  for (double v : out) ASSERT_EQ(v, 42.0) << "out written on an error";
}

// ---------------------------------------------------------------- bf16

uint16_t FromFloatBits(uint32_t float_bits) {
  return simdnorm::bf16::from_float(FloatFromBits(float_bits)).bits;
}

TEST(Bf16, FromFloatRoundsToNearestEven) {
  const struct {
    uint32_t in;
    uint16_t out;
  } cases[] = {
      {0x3F800000u, 0x3F80u},  // 1
      {0x3F808000u, 0x3F80u},  // tie, even stays
      {0x3F818000u, 0x3F82u},  // tie, odd rounds up
      {0x3F808001u, 0x3F81u},  // above the tie
      {0x3F807FFFu, 0x3F80u},  // below the tie
      {0xBF808000u, 0xBF80u},  // negative ties
      {0xBF818000u, 0xBF82u},
      {0x3F80FFFFu, 0x3F81u},
      {0x3FFFFFFFu, 0x4000u},  // carry into the exponent
      {0x00000000u, 0x0000u},  // zeros keep their sign
      {0x80000000u, 0x8000u},
      {0x00008000u, 0x0000u},  // subnormal tie, even stays
      {0x00018000u, 0x0002u},  // subnormal tie, odd rounds up
      {0x007FFFFFu,
       0x0080u},  // largest subnormal rounds to the smallest normal
      {0x7F800000u, 0x7F80u},  // infinities
      {0xFF800000u, 0xFF80u},
      {0x7F7F7FFFu, 0x7F7Fu},  // below half an ulp above the bf16 max
      {0x7F7E8000u, 0x7F7Eu},  // tie below the max, even stays
      {0x7F7F8000u, 0x7F80u},  // tie above the max, rounds to inf
      {0x7F7FFFFFu, 0x7F80u},  // FLT_MAX rounds to inf
      {0xFF7FFFFFu, 0xFF80u},  // -FLT_MAX rounds to -inf
  };
  for (const auto& c : cases) {
    EXPECT_EQ(FromFloatBits(c.in), c.out) << Hex(c.in, 8);
  }
}

TEST(Bf16, NaNStaysNaN) {
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u,
                       0x7F80FFFFu, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FBFFFFFu}) {
    const uint16_t b = FromFloatBits(nan);
    EXPECT_TRUE(Bf16IsNaN(b)) << Hex(nan, 8) << " -> " << Hex(b, 4);
    EXPECT_EQ(b & 0x8000u, (nan >> 16) & 0x8000u) << Hex(nan, 8);
  }
}

TEST(Bf16, ToFloatIsExactAndRoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFFu; ++b) {
    const simdnorm::bf16 v =
        simdnorm::bf16::from_bits(static_cast<uint16_t>(b));
    const float f = v.to_float();
    ASSERT_EQ(FloatBits(f), b << 16) << Hex(b, 4);
    ASSERT_EQ(FloatBits(static_cast<float>(v)), b << 16) << Hex(b, 4);
    if (!Bf16IsNaN(static_cast<uint16_t>(b))) {
      ASSERT_EQ(simdnorm::bf16::from_float(f).bits, b) << Hex(b, 4);
    }
  }
}

// from_float agrees with the test's own once-rounding of the exact value.
TEST(Bf16, FromFloatMatchesExactRounding) {
  Rng rng(4242);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng.Uniform() * 4294967296.0);
    if (i % 4 == 0) u = (u & 0xFFFF0000u) | 0x8000u;  // many exact ties
    const float f = FloatFromBits(u);
    if (std::isnan(f)) continue;
    ASSERT_EQ(simdnorm::bf16::from_float(f).bits, RoundToBf16(f)) << Hex(u, 8);
  }
}

// ---------------------------------------------------------------- f16

uint16_t F16FromFloatBits(uint32_t float_bits) {
  return simdnorm::f16::from_float(FloatFromBits(float_bits)).bits;
}

TEST(F16, FromFloatRoundsToNearestEven) {
  const struct {
    uint32_t in;
    uint16_t out;
  } cases[] = {
      {0x3F800000u, 0x3C00u},  // 1
      {0x3F801000u, 0x3C00u},  // 1 + 2^-11: tie, even stays
      {0x3F803000u, 0x3C02u},  // 1 + 3 * 2^-11: tie, odd rounds up
      {0x3F801001u, 0x3C01u},  // above the tie
      {0x3F800FFFu, 0x3C00u},  // below the tie
      {0xBF801000u, 0xBC00u},  // negative ties
      {0xBF803000u, 0xBC02u},
      {0x3F7FF000u, 0x3C00u},  // 1 - 2^-12: tie, carries into the exponent
      {0x3EAAAAABu, 0x3555u},  // 1/3
      {0x477FE000u, 0x7BFFu},  // 65504, the largest finite
      {0x477FEFFFu, 0x7BFFu},  // just below 65520
      {0x477FF000u, 0x7C00u},  // 65520: tie above the max, to infinity
      {0xC77FF000u, 0xFC00u},
      {0x7F7FFFFFu, 0x7C00u},  // FLT_MAX
      {0xFF7FFFFFu, 0xFC00u},
      {0x7F800000u, 0x7C00u},  // infinities
      {0xFF800000u, 0xFC00u},
      {0x00000000u, 0x0000u},  // zeros keep their sign
      {0x80000000u, 0x8000u},
      {0x38800000u, 0x0400u},  // 2^-14, the smallest normal
      {0x387FE000u, 0x0400u},  // 2^-14 - 2^-25: tie, up to the normal
      {0x387FDFFFu, 0x03FFu},  // just below that tie
      {0x387FC000u, 0x03FFu},  // 2^-14 - 2^-24, the largest subnormal
      {0x33800000u, 0x0001u},  // 2^-24, the smallest subnormal
      {0x33000000u, 0x0000u},  // 2^-25: tie, even (0)
      {0x33000001u, 0x0001u},  // just above
      {0xB3000001u, 0x8001u},
      {0x33C00000u, 0x0002u},  // 3 * 2^-25: tie, to 2
      {0x34200000u, 0x0002u},  // 5 * 2^-25: tie, to 2
      {0x32FFFFFFu, 0x0000u},  // below 2^-25
      {0x00000001u, 0x0000u},  // float subnormals
      {0x80000001u, 0x8000u},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(F16FromFloatBits(c.in), c.out)
        << Hex(c.in, 8) << " -> " << Hex(F16FromFloatBits(c.in), 4);
  }
}

TEST(F16, NaNStaysQuietNaNWithItsSign) {
  for (uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u,
                       0x7F801FFFu, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7FBFFFFFu}) {
    const uint16_t b = F16FromFloatBits(nan);
    EXPECT_EQ(b & 0x7E00u, 0x7E00u) << Hex(nan, 8) << " -> " << Hex(b, 4);
    EXPECT_EQ(b & 0x8000u, (nan >> 16) & 0x8000u) << Hex(nan, 8);
  }
}

// binary16 from its definition.
double F16Definition(uint32_t b) {
  const int e = (b >> 10) & 31, m = b & 1023;
  const double sign = (b & 0x8000) ? -1.0 : 1.0;
  if (e == 31) {
    return m ? std::numeric_limits<double>::quiet_NaN()
             : sign * std::numeric_limits<double>::infinity();
  }
  return e == 0 ? sign * m * std::pow(2.0, -24)
                : sign * (1024 + m) * std::pow(2.0, e - 25);
}

TEST(F16, ToFloatIsExactAndRoundTrips) {
  for (uint32_t b = 0; b <= 0xFFFFu; ++b) {
    const simdnorm::f16 v = simdnorm::f16::from_bits(static_cast<uint16_t>(b));
    const float f = v.to_float();
    const double want = F16Definition(b);
    ASSERT_EQ(std::signbit(f), (b & 0x8000u) != 0) << Hex(b, 4);
    ASSERT_EQ(FloatBits(static_cast<float>(v)), FloatBits(f)) << Hex(b, 4);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f)) << Hex(b, 4);
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), want) << Hex(b, 4);
    ASSERT_EQ(simdnorm::f16::from_float(f).bits, b) << Hex(b, 4);
  }
}

// from_float agrees with the float64 reference's own f16 rounding: a row of
// ones with gamma = the floats and beta = -0 has out == gamma exactly.
TEST(F16, FromFloatMatchesTheReferenceRounding) {
  const size_t n = 1 << 18;
  Rng rng(1616);
  std::vector<float> values(n), ones(n, 1.0f), minus_zero(n, -0.0f);
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    do {
      u = static_cast<uint32_t>(rng.Uniform() * 4294967296.0);
      // Many in f16 range, many exact ties of the normal and subnormal
      // spacings.
      if (i % 2) u = (u & 0x8FFFFFFFu) | 0x30000000u;
      if (i % 4 == 1) u = (u & 0xFFFFE000u) | 0x1000u;
    } while (std::isnan(FloatFromBits(u)));
    values[i] = FloatFromBits(u);
  }
  std::vector<uint16_t> y(n);
  simdnorm_desc d{};
  d.kind = SIMDNORM_RMSNORM;
  d.rows = 1;
  d.cols = n;
  d.x = ones.data();
  d.y = y.data();
  d.y_type = SIMDNORM_F16;
  d.gamma = values.data();
  d.beta = minus_zero.data();
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(simdnorm::f16::from_float(values[i]).bits, y[i])
        << Hex(FloatBits(values[i]), 8);
  }
}

// ------------------------------------------------- issue #7 entry points

TEST(CppApi, NewDTypesAndOptions) {
  static_assert(simdnorm::dtype_of<simdnorm::f16>() == simdnorm::DType::kF16);
  static_assert(simdnorm::dtype_of<const simdnorm::f16>() ==
                simdnorm::DType::kF16);
  static_assert(simdnorm::dtype_of<int8_t>() == simdnorm::DType::kI8);
  static_assert(static_cast<int>(simdnorm::DType::kF16) == SIMDNORM_F16);
  static_assert(static_cast<int>(simdnorm::DType::kI8) == SIMDNORM_I8);
  static_assert(sizeof(simdnorm::f16) == 2);
  simdnorm::Options opt;
  EXPECT_EQ(opt.gamma_offset, 0.0f);
  EXPECT_FALSE(opt.round_normalized);
  float xs[8] = {};
  simdnorm::f16 ys[8] = {};
  simdnorm_desc d = simdnorm::make_desc(
      simdnorm::Kind::kLayerNorm, simdnorm::Rows<const float>(xs, 2, 4),
      simdnorm::Rows<simdnorm::f16>(ys, 2, 4),
      static_cast<const float*>(nullptr), nullptr, opt);
  EXPECT_EQ(d.y_type, SIMDNORM_F16);
  EXPECT_EQ(d.gamma_offset, 0.0f);
  EXPECT_EQ(d.flags, 0u);
  EXPECT_EQ(d.residual, nullptr);
  EXPECT_EQ(d.sum_out, nullptr);
  EXPECT_EQ(d.y_scale, nullptr);
  EXPECT_EQ(d.quant_group, 0u);
  opt.gamma_offset = 1.0f;
  opt.round_normalized = true;
  d = simdnorm::make_desc(
      simdnorm::Kind::kRMSNorm, simdnorm::Rows<const float>(xs, 2, 4),
      simdnorm::Rows<simdnorm::f16>(ys, 2, 4),
      static_cast<const simdnorm::f16*>(nullptr), nullptr, opt);
  EXPECT_EQ(d.gamma_offset, 1.0f);
  EXPECT_EQ(d.flags, static_cast<unsigned>(SIMDNORM_ROUND_NORMALIZED));
  EXPECT_EQ(d.param_type, SIMDNORM_F16);
}

TEST(CppApi, QuantScalesPerRow) {
  EXPECT_EQ(simdnorm::quant_scales_per_row(10, 4), 3u);
  EXPECT_EQ(simdnorm::quant_scales_per_row(8, 4), 2u);
  EXPECT_EQ(simdnorm::quant_scales_per_row(10, 0), 1u);
  EXPECT_EQ(simdnorm::quant_scales_per_row(10, 10), 1u);
  EXPECT_EQ(simdnorm::quant_scales_per_row(10, 11), 1u);
  EXPECT_EQ(simdnorm::quant_scales_per_row(10, 1), 10u);
  EXPECT_EQ(simdnorm::quant_scales_per_row(4096, 128), 32u);
  static_assert(simdnorm::quant_scales_per_row(9, 2) == 5);
}

// Typed rows of any element type in a plain vector, filled from floats
// (rounded to nearest-even), stride >= cols.
template <class T>
struct TypedRows {
  size_t rows, cols, stride;
  std::vector<T> v;

  TypedRows(size_t r, size_t c, size_t s, const std::vector<float>& values)
      : rows(r), cols(c), stride(s ? s : c), v(r * (s ? s : c)) {
    std::memset(static_cast<void*>(v.data()), kSentinel, v.size() * sizeof(T));
    if (values.empty()) return;
    for (size_t i = 0; i < r; ++i) {
      for (size_t j = 0; j < c; ++j)
        v[i * stride + j] = From(values[i * c + j]);
    }
  }
  static T From(float f) {
    if constexpr (std::is_same_v<T, float>) {
      return f;
    } else {
      return T::from_float(f);
    }
  }
  simdnorm::Rows<T> view() { return {v.data(), rows, cols, stride}; }
  simdnorm::Rows<const T> cview() const {
    return {v.data(), rows, cols, stride};
  }
  bool operator==(const TypedRows& o) const {
    return std::memcmp(v.data(), o.v.data(), v.size() * sizeof(T)) == 0;
  }
};

template <class X, class Y, class P>
void ExpectAddNormSameBitsAsC(simdnorm::Kind kind, bool with_sum,
                              simdnorm::Options opt) {
  const size_t rows = 9, cols = 67, xs = 70, ys = 0;
  const DTypes t{CType<X>(), CType<Y>(), CType<P>()};
  const std::string what =
      std::string("[ISA ") + simdnorm_active_isa() + "] " +
      KindName(static_cast<simdnorm_kind>(kind)) + " x=" + DTypeName(t.x) +
      " y=" + DTypeName(t.y) + " param=" + DTypeName(t.param) +
      (with_sum ? " sum_out" : "") + " offset=" + Num(opt.gamma_offset) +
      (opt.round_normalized ? " round_normalized" : "");
  const TypedRows<X> x(rows, cols, xs, RowData(Family::kTypical, rows, cols));
  const TypedRows<X> res(rows, cols, 0,
                         RowData(Family::kStdNormal, rows, cols));
  const TypedRows<P> gamma(1, cols, 0, ParamData(true, cols));
  const TypedRows<P> beta(1, cols, 0, ParamData(false, cols));
  TypedRows<Y> y_cpp(rows, cols, ys, {}), y_c = y_cpp;
  TypedRows<X> sum_cpp(rows, cols, cols + 1, {}), sum_c = sum_cpp;
  const simdnorm::Rows<X> sum_view =
      with_sum ? sum_cpp.view() : simdnorm::Rows<X>();
  const Status s =
      kind == simdnorm::Kind::kLayerNorm
          ? simdnorm::add_layer_norm(x.cview(), res.cview(), y_cpp.view(),
                                     sum_view, gamma.v.data(), beta.v.data(),
                                     opt)
      : kind == simdnorm::Kind::kRMSNorm
          ? simdnorm::add_rms_norm(x.cview(), res.cview(), y_cpp.view(),
                                   sum_view, gamma.v.data(), beta.v.data(), opt)
          : simdnorm::add_norm(kind, x.cview(), res.cview(), y_cpp.view(),
                               sum_view, gamma.v.data(), beta.v.data(), opt);
  ASSERT_EQ(s, Status::kOk) << what << ": " << simdnorm::to_string(s);

  simdnorm_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = rows;
  d.cols = cols;
  d.x = x.v.data();
  d.x_type = t.x;
  d.x_stride = xs;
  d.y = y_c.v.data();
  d.y_type = t.y;
  d.y_stride = ys;
  d.gamma = gamma.v.data();
  d.beta = beta.v.data();
  d.param_type = t.param;
  d.eps = opt.eps;
  d.residual = res.v.data();
  d.sum_out = with_sum ? sum_c.v.data() : nullptr;
  d.sum_out_stride = cols + 1;
  d.gamma_offset = opt.gamma_offset;
  d.flags = opt.round_normalized ? unsigned{SIMDNORM_ROUND_NORMALIZED} : 0u;
  ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK) << what;
  EXPECT_TRUE(y_cpp == y_c) << what << ": y of C++ and C differ";
  EXPECT_TRUE(sum_cpp == sum_c) << what << ": sum_out of C++ and C differ";

  // The fields reached the kernels: sum_out is h exactly, and y is near
  // the float64 truth (float output only; the accuracy suites do the rest).
  TypedRows<X> sum_ref = sum_c;
  TypedRows<Y> y_ref = y_c;
  d.y = y_ref.v.data();
  d.sum_out = with_sum ? sum_ref.v.data() : nullptr;
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK) << what;
  EXPECT_TRUE(sum_cpp == sum_ref) << what << ": sum_out is not x + residual";
  if constexpr (std::is_same_v<Y, float>) {
    std::vector<double> out(rows * cols), xhat(rows * cols);
    ASSERT_EQ(simdnorm::reference_f64(d, out.data(), xhat.data()), Status::kOk);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < cols; ++c) {
        const double ref = out[r * cols + c];
        const double b = static_cast<float>(beta.v[c]);
        const double terms = std::fabs(ref - b) + std::fabs(b);
        // With round_normalized, xhat may round to the neighbour of the
        // float64 one: one spacing of X.
        const double x_spacing = std::is_same_v<X, float>            ? 0x1p-23
                                 : std::is_same_v<X, simdnorm::bf16> ? 0x1p-7
                                                                     : 0x1p-10;
        const double rounding =
            opt.round_normalized ? x_spacing * std::fabs(ref - b) : 0.0;
        ASSERT_LE(std::fabs(y_cpp.v[r * cols + c] - ref),
                  1e-4 * (1 + terms) + rounding)
            << what << " at " << r << "," << c;
      }
    }
  }
}

template <class X, class Y, class P>
void AddNormAllOptions() {
  for (simdnorm::Kind kind : CppKinds()) {
    for (bool with_sum : {true, false}) {
      simdnorm::Options opt;
      ExpectAddNormSameBitsAsC<X, Y, P>(kind, with_sum, opt);
      opt.gamma_offset = 1.0f;
      opt.round_normalized = true;
      ExpectAddNormSameBitsAsC<X, Y, P>(kind, with_sum, opt);
    }
  }
}

TEST_P(CppApiTest, AddNormGivesTheBitsOfTheCApi) {
  using simdnorm::bf16;
  using simdnorm::f16;
  AddNormAllOptions<float, float, float>();
  AddNormAllOptions<bf16, float, bf16>();
  AddNormAllOptions<bf16, bf16, float>();
  AddNormAllOptions<f16, float, f16>();
  AddNormAllOptions<f16, f16, f16>();
  AddNormAllOptions<f16, bf16, float>();
  AddNormAllOptions<float, f16, bf16>();
}

template <class X>
void ExpectFusedAddInPlaceSameBitsAsC() {
  const size_t rows = 6, cols = 130, stride = 136;
  const std::string what = std::string("[ISA ") + simdnorm_active_isa() +
                           "] x=" + DTypeName(CType<X>());
  const std::vector<float>& g = ParamData(true, cols);
  TypedRows<X> x(rows, cols, stride, RowData(Family::kTypical, rows, cols));
  TypedRows<X> r(rows, cols, 0, RowData(Family::kStdNormal, rows, cols));
  TypedRows<X> x_c = x, r_c = r, x_ref = x, r_ref = r;
  simdnorm::Options opt;
  opt.gamma_offset = 1.0f;  // Gemma
  ASSERT_EQ(simdnorm::fused_add_rms_norm(x.view(), r.view(), g.data(), opt),
            Status::kOk)
      << what;
  simdnorm_desc d{};
  d.kind = SIMDNORM_RMSNORM;
  d.rows = rows;
  d.cols = cols;
  d.x = d.y = x_c.v.data();
  d.x_type = d.y_type = CType<X>();
  d.x_stride = d.y_stride = stride;
  d.residual = d.sum_out = r_c.v.data();
  d.gamma = g.data();
  d.eps = opt.eps;
  d.gamma_offset = 1.0f;
  ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK) << what;
  EXPECT_TRUE(x == x_c) << what << ": x of C++ and C differ";
  EXPECT_TRUE(r == r_c) << what << ": residual of C++ and C differ";
  d.x = d.y = x_ref.v.data();
  d.residual = d.sum_out = r_ref.v.data();
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK) << what;
  EXPECT_TRUE(r == r_ref) << what << ": residual is not x + residual";
}

TEST_P(CppApiTest, FusedAddRmsNormInPlaceGivesTheBitsOfTheCApi) {
  ExpectFusedAddInPlaceSameBitsAsC<float>();
  ExpectFusedAddInPlaceSameBitsAsC<simdnorm::bf16>();
  ExpectFusedAddInPlaceSameBitsAsC<simdnorm::f16>();
}

template <class X, class P>
void ExpectNormQuantSameBitsAsC(simdnorm::Kind kind, size_t group) {
  const size_t rows = 5, cols = 100, qs = 104;
  const std::string what = std::string("[ISA ") + simdnorm_active_isa() + "] " +
                           KindName(static_cast<simdnorm_kind>(kind)) +
                           " x=" + DTypeName(CType<X>()) +
                           " param=" + DTypeName(CType<P>()) +
                           " group=" + std::to_string(group);
  const size_t spr = simdnorm::quant_scales_per_row(cols, group);
  const TypedRows<X> x(rows, cols, 0, RowData(Family::kTypical, rows, cols));
  const TypedRows<P> gamma(1, cols, 0, ParamData(true, cols));
  const TypedRows<P> beta(1, cols, 0, ParamData(false, cols));
  std::vector<int8_t> q_cpp(rows * qs, 0x5A), q_c = q_cpp;
  std::vector<float> s_cpp(rows * spr + 1, -7.0f), s_c = s_cpp;
  const simdnorm::Rows<int8_t> qv(q_cpp.data(), rows, cols, qs);
  const Status st =
      kind == simdnorm::Kind::kLayerNorm
          ? simdnorm::layer_norm_quant(x.cview(), qv, s_cpp.data(), group,
                                       gamma.v.data(), beta.v.data())
      : kind == simdnorm::Kind::kRMSNorm
          ? simdnorm::rms_norm_quant(x.cview(), qv, s_cpp.data(), group,
                                     gamma.v.data(), beta.v.data())
          : simdnorm::norm_quant(kind, x.cview(), qv, s_cpp.data(), group,
                                 gamma.v.data(), beta.v.data());
  ASSERT_EQ(st, Status::kOk) << what << ": " << simdnorm::to_string(st);
  simdnorm_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = rows;
  d.cols = cols;
  d.x = x.v.data();
  d.x_type = CType<X>();
  d.y = q_c.data();
  d.y_type = SIMDNORM_I8;
  d.y_stride = qs;
  d.gamma = gamma.v.data();
  d.beta = beta.v.data();
  d.param_type = CType<P>();
  d.eps = 1e-5f;
  d.y_scale = s_c.data();
  d.quant_group = group;
  ASSERT_EQ(simdnorm_normalize(&d), SIMDNORM_OK) << what;
  EXPECT_TRUE(q_cpp == q_c) << what << ": q of C++ and C differ";
  EXPECT_EQ(std::memcmp(s_cpp.data(), s_c.data(), s_c.size() * 4), 0)
      << what << ": scales of C++ and C differ";
  EXPECT_EQ(s_cpp.back(), -7.0f) << what << ": wrote past the scales";

  // Against the float64 reference: scale within 1e-6 relative, q within 1.
  std::vector<double> out(rows * cols);
  ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr), Status::kOk);
  const size_t g_len = group == 0 || group > cols ? cols : group;
  for (size_t r = 0; r < rows; ++r) {
    for (size_t k = 0; k < spr; ++k) {
      double m = 0;
      const size_t end = std::min(cols, (k + 1) * g_len);
      for (size_t c = k * g_len; c < end; ++c)
        m = std::max(m, std::fabs(out[r * cols + c]));
      const double scale = m / 127;
      EXPECT_LE(std::fabs(s_cpp[r * spr + k] - scale), 1e-6 * scale)
          << what << " row " << r << " group " << k;
      for (size_t c = k * g_len; c < end; ++c) {
        const double want = std::nearbyint(out[r * cols + c] / scale);
        EXPECT_LE(std::fabs(q_cpp[r * qs + c] - want), 1.0)
            << what << " at " << r << "," << c;
      }
    }
    for (size_t c = cols; c < qs; ++c) {
      ASSERT_EQ(q_cpp[r * qs + c], 0x5A) << what << ": padding written";
    }
  }
}

TEST_P(CppApiTest, NormQuantGivesTheBitsOfTheCApi) {
  using simdnorm::bf16;
  using simdnorm::f16;
  for (size_t group : {0u, 32u, 7u, 100u, 1000u}) {
    for (simdnorm::Kind kind : CppKinds()) {
      ExpectNormQuantSameBitsAsC<float, float>(kind, group);
      ExpectNormQuantSameBitsAsC<bf16, bf16>(kind, group);
      ExpectNormQuantSameBitsAsC<f16, float>(kind, group);
    }
  }
}

TEST(CppApi, NewEntryPointsReportShapeMismatches) {
  const size_t rows = 4, cols = 8;
  const TypedRows<float> x(rows, cols, 0,
                           RowData(Family::kTypical, rows, cols));
  const TypedRows<float> res(rows, cols, 0,
                             RowData(Family::kStdNormal, rows, cols));
  const TypedRows<float> short_res(rows - 1, cols, 0,
                                   RowData(Family::kStdNormal, rows, cols));
  const TypedRows<float> narrow_res(rows, cols - 1, 0,
                                    RowData(Family::kStdNormal, rows, cols));
  TypedRows<float> y(rows, cols, 0, {}), sum(rows, cols, 0, {});
  TypedRows<float> wrong(rows + 1, cols, 0, {});
  const TypedRows<float> y0 = y, sum0 = sum, wrong0 = wrong;
  auto unchanged = [&] { return y == y0 && sum == sum0 && wrong == wrong0; };
  const float* none = nullptr;
  EXPECT_EQ(simdnorm::add_rms_norm(x.cview(), short_res.cview(), y.view(),
                                   sum.view(), none),
            Status::kInvalidShape);
  EXPECT_EQ(simdnorm::add_layer_norm(x.cview(), narrow_res.cview(), y.view(),
                                     sum.view(), none),
            Status::kInvalidShape);
  EXPECT_EQ(simdnorm::add_rms_norm(x.cview(), res.cview(), wrong.view(),
                                   sum.view(), none),
            Status::kInvalidShape);
  EXPECT_EQ(simdnorm::add_rms_norm(x.cview(), res.cview(), y.view(),
                                   wrong.view(), none),
            Status::kInvalidShape);
  EXPECT_TRUE(unchanged());
  TypedRows<float> xm = x, rm(rows + 1, cols, 0, {});
  const TypedRows<float> xm0 = xm, rm0 = rm;
  EXPECT_EQ(simdnorm::fused_add_rms_norm(xm.view(), rm.view(), none),
            Status::kInvalidShape);
  EXPECT_TRUE(xm == xm0 && rm == rm0);
  std::vector<int8_t> q((rows + 1) * cols, 0x5A);
  std::vector<float> scales(rows + 1, -7.0f);
  const std::vector<int8_t> q0 = q;
  const std::vector<float> s0 = scales;
  EXPECT_EQ(simdnorm::rms_norm_quant(
                x.cview(), simdnorm::Rows<int8_t>(q.data(), rows + 1, cols),
                scales.data(), 0, none),
            Status::kInvalidShape);
  EXPECT_EQ(simdnorm::layer_norm_quant(
                x.cview(), simdnorm::Rows<int8_t>(q.data(), rows, cols + 1),
                scales.data(), 0, none),
            Status::kInvalidShape);
  // NULL scales: the C API's INVALID_ARGUMENT.
  EXPECT_EQ(simdnorm::rms_norm_quant(
                x.cview(), simdnorm::Rows<int8_t>(q.data(), rows, cols),
                nullptr, 0, none),
            Status::kInvalidArgument);
  EXPECT_TRUE(q == q0 && scales == s0);
  // No sum_out (an empty view) is fine; a mutable residual view converts.
  TypedRows<float> rmut = res;
  EXPECT_EQ(simdnorm::add_rms_norm(x.cview(), rmut.view(), y.view(),
                                   simdnorm::Rows<float>(), none),
            Status::kOk);
}

SIMDNORM_INSTANTIATE_PER_ISA(CppApiTest);

}  // namespace
}  // namespace simdnorm_test

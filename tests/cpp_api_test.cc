// The C++ API (simdnorm.hpp): typed views give the same bits as the C API,
// shape mismatches are reported, bf16 conversions round to nearest-even.
#include <cfloat>

#include "test_util.h"

namespace simdnorm_test {
namespace {

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
  const Status s = kind == simdnorm::Kind::kLayerNorm
                       ? simdnorm::layer_norm(xv, yv, g, b, opt)
                       : simdnorm::rms_norm(xv, yv, g, b, opt);
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
  for (simdnorm::Kind kind :
       {simdnorm::Kind::kLayerNorm, simdnorm::Kind::kRMSNorm}) {
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

SIMDNORM_INSTANTIATE_PER_ISA(CppApiTest);

}  // namespace
}  // namespace simdnorm_test

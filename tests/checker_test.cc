// The test suite's own helpers: bf16 ulp distance, rounding once, and that
// the bf16 checker rejects a truncating conversion while accepting
// round-to-nearest-even of an fp32 result.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/checks.h"
#include "support/half.h"
#include "support/inputs.h"
#include "support/matrix.h"

namespace simdnorm_test {
namespace {

TEST(Checker, Bf16UlpDistance) {
  EXPECT_EQ(Bf16UlpDistance(0x3F80, 0x3F80), 0);
  EXPECT_EQ(Bf16UlpDistance(0x3F80, 0x3F81), 1);
  EXPECT_EQ(Bf16UlpDistance(0x3F81, 0x3F80), 1);
  EXPECT_EQ(Bf16UlpDistance(0x0000, 0x8000), 0);  // +0 and -0
  EXPECT_EQ(Bf16UlpDistance(0x0001, 0x8001), 2);  // across zero
  EXPECT_EQ(Bf16UlpDistance(0x0001, 0x8000), 1);
  EXPECT_EQ(Bf16UlpDistance(0x3F7F, 0x3F80), 1);  // across a binade
  EXPECT_EQ(Bf16UlpDistance(0x7F7F, 0x7F80), 1);  // max to inf
  EXPECT_EQ(Bf16UlpDistance(0xBF80, 0xBF82), 2);
}

TEST(Checker, RoundToBf16RoundsOnce) {
  const double one = 1.0;
  EXPECT_EQ(RoundToBf16(one), 0x3F80);
  EXPECT_EQ(RoundToBf16(1.0 + std::ldexp(1.0, -8)), 0x3F80);      // tie, even
  EXPECT_EQ(RoundToBf16(1.0 + 3 * std::ldexp(1.0, -8)), 0x3F82);  // tie, odd
  EXPECT_EQ(RoundToBf16(-1.0 - 3 * std::ldexp(1.0, -8)), 0xBF82);
  // Just above a tie: once-rounding goes up; through float it would tie
  // and go down to even.
  const double above = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(RoundToBf16(above), 0x3F81);
  EXPECT_EQ(Bf16Bits(static_cast<float>(above)), 0x3F80);
  // Overflow threshold: halfway between the bf16 max and 2^128.
  EXPECT_EQ(RoundToBf16(std::ldexp(511.0, 119)), 0x7F80);
  EXPECT_EQ(RoundToBf16(std::nextafter(std::ldexp(511.0, 119), 0.0)), 0x7F7F);
  EXPECT_EQ(RoundToBf16(-1e39), 0xFF80);
  // Subnormals: the smallest bf16 subnormal is 2^-133.
  EXPECT_EQ(RoundToBf16(std::ldexp(1.0, -134)), 0x0000);  // tie, even
  EXPECT_EQ(RoundToBf16(std::ldexp(3.0, -134)), 0x0002);  // tie, odd
  EXPECT_EQ(RoundToBf16(std::ldexp(1.0, -133)), 0x0001);
  EXPECT_EQ(RoundToBf16(std::ldexp(255.0, -134)), 0x0080);  // to normal
  EXPECT_EQ(RoundToBf16(1e-300), 0x0000);
  EXPECT_EQ(RoundToBf16(-1e-300), 0x8000);
  EXPECT_TRUE(Bf16IsNaN(RoundToBf16(std::nan(""))));
  EXPECT_EQ(RoundToBf16(HUGE_VAL), 0x7F80);
}

// N(0,1) LayerNorm outputs: a conversion that truncates fp32 to bf16 is
// never more than 1 ulp off, but it is exact in only about half of the
// elements, so the 99.9% rule must reject it; rounding the fp32 value to
// nearest-even (double rounding) must pass.
TEST(Checker, TruncationFailsTheBf16Checker) {
  const size_t rows = 64, cols = 256;
  const std::vector<float>& x = RowData(Family::kStdNormal, rows, cols);
  std::vector<uint16_t> want(rows * cols);
  simdnorm_desc d{};
  d.kind = SIMDNORM_LAYERNORM;
  d.rows = rows;
  d.cols = cols;
  d.x = x.data();
  d.y = want.data();
  d.y_type = SIMDNORM_BF16;
  d.eps = 1e-5f;
  std::vector<double> out(rows * cols);
  ASSERT_EQ(simdnorm::reference_f64(d, out.data(), nullptr),
            simdnorm::Status::kOk);
  ASSERT_EQ(simdnorm_normalize_reference(&d), SIMDNORM_OK);

  Stats truncated, rounded;
  std::string why;
  for (size_t i = 0; i < out.size(); ++i) {
    const float f = static_cast<float>(out[i]);
    const double bound = F32Bound(out[i], 1.0, 0.0);  // no gamma, no beta
    EXPECT_TRUE(
        CheckBf16(Bf16Truncate(f), want[i], out[i], bound, &truncated, &why))
        << why;
    EXPECT_TRUE(CheckBf16(Bf16Bits(f), want[i], out[i], bound, &rounded, &why))
        << why;
  }
  EXPECT_EQ(truncated.bf16_window_only, 0u);  // truncation is within 1 ulp
  EXPECT_FALSE(truncated.Bf16RateOk());
  EXPECT_LT(truncated.bf16_exact, rows * cols * 6 / 10);
  EXPECT_LT(truncated.bf16_conditioned_exact,
            truncated.bf16_conditioned * 6 / 10);
  EXPECT_GT(truncated.bf16_conditioned, rows * cols * 9 / 10);
  EXPECT_TRUE(rounded.Bf16RateOk());
  EXPECT_EQ(rounded.bf16_checked, rows * cols);
  EXPECT_EQ(rounded.bf16_conditioned, rounded.bf16_conditioned_exact);
}

// Where y = xhat gamma + beta cancels, values within the fp32 bound of the
// truth are many bf16 ulps apart: they pass, nothing further does.
TEST(Checker, Bf16CancellationWindow) {
  if (LiteralBf16Rule()) GTEST_SKIP() << "SIMDNORM_TEST_LITERAL_BF16 is set";
  const double xhat = 1.0, gamma = 1.5, beta = -1.5 + 3e-6;
  const double ref = xhat * gamma + beta;            // 3e-6
  const double bound = F32Bound(xhat, gamma, beta);  // ~1.1e-5
  const uint16_t want = RoundToBf16(ref);
  Stats st;
  std::string why;
  EXPECT_TRUE(
      CheckBf16(RoundToBf16(ref + 0.9 * bound), want, ref, bound, &st, &why))
      << why;
  EXPECT_TRUE(
      CheckBf16(RoundToBf16(ref - 0.9 * bound), want, ref, bound, &st, &why))
      << why;
  EXPECT_EQ(st.bf16_window_only, 2u);
  EXPECT_EQ(st.bf16_conditioned, 0u);  // the window straddles boundaries
  EXPECT_FALSE(
      CheckBf16(RoundToBf16(ref + 1.5 * bound), want, ref, bound, &st, &why));
  EXPECT_FALSE(CheckBf16(RoundToBf16(-ref), want, ref, 1e-9, &st, &why));
}

TEST(Checker, Bf16CheckerNonFinite) {
  Stats st;
  std::string why;
  const double nan = std::nan("");
  const double b = F32Bound(1.0, 1.0, 0.0);
  EXPECT_TRUE(CheckBf16(0x7FC0, 0x7FC0, nan, b, &st, &why));
  EXPECT_TRUE(CheckBf16(0xFFC1, 0x7FC0, nan, b, &st, &why));
  EXPECT_FALSE(CheckBf16(0x3F80, 0x7FC0, nan, b, &st, &why));     // not NaN
  EXPECT_FALSE(CheckBf16(0x7FC0, 0x3F80, 1.0, b, &st, &why));     // NaN
  EXPECT_FALSE(CheckBf16(0x7F80, 0x7F7F, 3.3e38, b, &st, &why));  // inf
  EXPECT_FALSE(CheckBf16(0x3F82, 0x3F80, 1.0, b, &st, &why));     // 2 ulps
  EXPECT_TRUE(CheckBf16(0x3F81, 0x3F80, 1.0, b, &st, &why));      // 1 ulp
}

TEST(Checker, F32Bound) {
  Stats st;
  std::string why;
  const double ulp = std::ldexp(1.0, -23);
  // |gamma| max(1, |xhat|) + |beta| = 2 * 3 + 1 = 7
  const double ref = 5.0;
  EXPECT_TRUE(CheckF32(static_cast<float>(ref + 31 * 7 * ulp), ref, 3.0, -2.0,
                       1.0, &st, &why))
      << why;
  EXPECT_FALSE(CheckF32(static_cast<float>(ref + 34 * 7 * ulp), ref, 3.0, -2.0,
                        1.0, &st, &why));
  // max(1, |xhat|): small xhat still allows 32 ulps of gamma.
  EXPECT_TRUE(
      CheckF32(static_cast<float>(30 * ulp), 0.0, 0.001, 1.0, 0.0, &st, &why))
      << why;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(CheckF32(nan, std::nan(""), 0.0, 1.0, 0.0, &st, &why));
  EXPECT_FALSE(CheckF32(0.0f, std::nan(""), 0.0, 1.0, 0.0, &st, &why));
  EXPECT_FALSE(CheckF32(nan, 1.0, 1.0, 1.0, 0.0, &st, &why));
  EXPECT_FALSE(CheckF32(std::numeric_limits<float>::infinity(), 1.0, 1.0, 1.0,
                        0.0, &st, &why));
}

TEST(Checker, MatrixDetectsWritesOutsideElements) {
  Matrix m(SIMDNORM_F32, 3, 5, 8, 1);
  std::string where;
  m.Fill(std::vector<float>(15, 1.0f));
  EXPECT_TRUE(m.PaddingIntact(&where)) << where;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 64, 4u);
  m.At(0, 5)[0] = 0;  // padding after row 0
  EXPECT_FALSE(m.PaddingIntact(&where));
  Matrix a(SIMDNORM_BF16, 2, 3);
  a.At(0, 0)[-1] = 0;  // before the first element
  EXPECT_FALSE(a.PaddingIntact(&where));
  Matrix b(SIMDNORM_BF16, 2, 3);
  b.At(1, 3)[0] = 0;  // after the last element
  EXPECT_FALSE(b.PaddingIntact(&where));
}

}  // namespace
}  // namespace simdnorm_test

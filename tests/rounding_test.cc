// The narrowing of results to bf16 and f16, on its own: with gamma = 0 and
// f32 beta, y = t * 0 + beta = beta exactly on every ISA, so each output is
// the kernel's rounding of a chosen float. Every 16-bit value's float, the
// midpoints to its neighbours and the floats next to them, subnormals,
// overflow, infinities and NaNs: every ISA must give the correctly rounded
// value (nearest, ties to even; NaN quiet), and all ISAs the same bits.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "simdnorm/simdnorm.h"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/isas.h"
#include "support/text.h"

namespace simdnorm_test {
namespace {

// The floats to round: for every 16-bit pattern h, its value and, where the
// value is finite, the midpoint to it and the floats either side.
std::vector<float> Inputs(Half h) {
  std::vector<float> v;
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const double d = HalfToDouble(h, bits);
    if (std::isnan(d)) {  // NaN payloads: the pattern's bits, shifted up
      uint32_t u = (h == Half::kBf16 ? b << 16
                                     : 0x7F800000u | ((b & 0x8000u) << 16) |
                                           ((b & 0x3FFu) << 13));
      if (h == Half::kBf16) u |= 0x1234u;  // low bits set too
      float f;
      std::memcpy(&f, &u, 4);
      v.push_back(f);
      continue;
    }
    // -0: t * 0 + -0 is +0 for t >= 0 (IEEE sums of opposite zeros).
    if (bits != 0x8000u) v.push_back(static_cast<float>(d));
    if (!HalfIsFinite(h, bits)) continue;
    // The next pattern's value; past the largest finite one, 2^(emax+1) (the
    // midpoint to it is where rounding overflows to infinity).
    const bool largest = (bits & 0x7FFFu) + 1u == FormatOf(h).inf;
    const double next =
        largest ? std::copysign(std::ldexp(1.0, FormatOf(h).emax + 1), d)
                : HalfToDouble(h, static_cast<uint16_t>(bits + 1));
    const float mid = static_cast<float>((d + next) / 2);  // exact in float
    v.push_back(mid);
    v.push_back(std::nextafter(mid, 0.0f));
    v.push_back(std::nextafter(mid, mid * 2));
  }
  return v;
}

std::vector<uint16_t> Round(simdnorm_dtype y_type, const std::vector<float>& b,
                            size_t cols) {
  const size_t rows = b.size() / cols;
  std::vector<float> x(rows * cols), gamma(cols, 0.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7);
  std::vector<uint16_t> y(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    simdnorm_desc d = {};
    d.kind = SIMDNORM_LAYERNORM;
    d.rows = 1;
    d.cols = cols;
    d.x = x.data() + r * cols;
    d.y = y.data() + r * cols;
    d.y_type = y_type;
    d.gamma = gamma.data();
    d.beta = b.data() + r * cols;
    d.eps = 1e-5f;
    d.max_threads = 1;
    EXPECT_EQ(simdnorm_normalize(&d), SIMDNORM_OK);
  }
  return y;
}

void EveryValueOnEveryIsa(simdnorm_dtype y_type) {
  const Half h = HalfOf(y_type);
  std::vector<float> in = Inputs(h);
  const size_t cols = 4096;
  while (in.size() % cols != 0) in.push_back(1.0f);
  std::vector<uint16_t> first;
  std::string first_isa;
  for (const std::string& isa : SupportedIsas()) {
    ASSERT_EQ(simdnorm_set_isa(isa.c_str()), SIMDNORM_OK);
    const std::vector<uint16_t> got = Round(y_type, in, cols);
    size_t bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const bool nan = std::isnan(in[i]);
      const bool ok =
          nan ? HalfIsNaN(h, got[i]) && (got[i] & 0x7FFFu) >= FormatOf(h).qnan
              : got[i] == RoundToHalf(h, in[i]);
      if (!ok && bad++ < 5) {
        ADD_FAILURE() << isa << " " << DTypeName(y_type) << ": " << in[i]
                      << " (" << Hex(FloatBits(in[i]), 8) << ") gave "
                      << Hex(got[i], 4) << ", want "
                      << Hex(RoundToHalf(h, in[i]), 4);
      }
    }
    EXPECT_EQ(bad, 0u) << isa;
    if (first.empty()) {
      first = got;
      first_isa = isa;
    } else {
      EXPECT_TRUE(first == got) << isa << " and " << first_isa << " differ";
    }
  }
  EXPECT_EQ(simdnorm_set_isa("auto"), SIMDNORM_OK);
}

TEST(Rounding, Bf16EveryValueOnEveryIsa) {
  EveryValueOnEveryIsa(SIMDNORM_BF16);
}
TEST(Rounding, F16EveryValueOnEveryIsa) { EveryValueOnEveryIsa(SIMDNORM_F16); }

}  // namespace
}  // namespace simdnorm_test

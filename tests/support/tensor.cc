#include "support/tensor.h"

#include <gtest/gtest.h>

#include "support/dtypes.h"

namespace simdnorm_test {

int CheckWithin(const Tensor& y, const std::vector<double>& exact,
                const std::vector<double>& bound, const char* what) {
  int failures = 0;
  for (size_t k = 0; k < y.size(); ++k) {
    bool ok;
    if (std::isnan(exact[k])) {
      const uint32_t qnan = y.t == SIMDNORM_F32    ? 0x7FC00000u
                            : y.t == SIMDNORM_BF16 ? 0x7FC0u
                                                   : 0x7E00u;
      ok = y.Bits(k) == qnan;
    } else if (y.t == SIMDNORM_F32) {
      ok = std::fabs(y.Get(k) - exact[k]) <= bound[k];
    } else {
      const Half h = HalfOf(y.t);
      const int32_t v = HalfOrdered(static_cast<uint16_t>(y.Bits(k)));
      ok = !y.IsNaN(k) &&
           HalfOrdered(RoundToHalf(h, exact[k] - bound[k])) <= v &&
           v <= HalfOrdered(RoundToHalf(h, exact[k] + bound[k]));
    }
    if (!ok && ++failures <= 3) {
      ADD_FAILURE() << what << ": element " << k << " is " << y.Get(k)
                    << ", exact " << exact[k] << " (bound " << bound[k] << ")";
    }
  }
  return failures;
}

void ExpectRoundedOnce(const Tensor& ref, const std::vector<double>& exact,
                       const char* what) {
  for (size_t k = 0; k < ref.size(); ++k) {
    Tensor one(ref.t, 1);
    one.Set(0, exact[k]);
    if (std::isnan(exact[k])) {
      EXPECT_TRUE(ref.IsNaN(k)) << what << " reference " << k;
    } else {
      ASSERT_EQ(ref.Bits(k), one.Bits(0)) << what << " reference " << k;
    }
  }
}

void ExpectNotARowKind(simdnorm_kind kind) {
  for (simdnorm_kind k : AllKinds()) EXPECT_NE(k, kind);
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  simdnorm_desc d{};
  d.kind = kind;
  d.rows = 1;
  d.cols = 4;
  d.x = x;
  d.y = y;
  EXPECT_EQ(simdnorm_normalize(&d), SIMDNORM_INVALID_ARGUMENT) << kind;
  EXPECT_EQ(y[0], 0.0f);
  simdnorm_backward_desc b{};
  b.kind = kind;
  EXPECT_EQ(simdnorm_backward(&b), SIMDNORM_INVALID_ARGUMENT) << kind;
}

}  // namespace simdnorm_test

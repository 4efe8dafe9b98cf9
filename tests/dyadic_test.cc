// The exact accumulator of the correct-rounding fallback (lib/dyadic.h):
// DyadicSum's value against Dyadic's own term-by-term sum, over double's
// whole range, signs mixed, and through cancellation to zero.
#include "lib/dyadic.h"

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace simdnorm {
namespace internal {
namespace {

Dyadic TermByTerm(const std::vector<double>& v) {
  Dyadic s;
  for (double t : v) s = s + Dyadic::FromDouble(t);
  return s;
}

Dyadic Accumulated(const std::vector<double>& v) {
  DyadicSum s;
  for (double t : v) s.Add(t);
  return s.Value();
}

TEST(DyadicSum, EmptyAndZerosAreZero) {
  EXPECT_EQ(Accumulated({}).Sign(), 0);
  EXPECT_EQ(Accumulated({0.0, -0.0, 0.0}).Sign(), 0);
}

TEST(DyadicSum, MatchesTermByTermOverTheWholeRange) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> exp(-1074, 1023);
  std::uniform_real_distribution<double> frac(1.0, 2.0);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> v;
    for (int i = 0; i < 200; ++i) {
      double t = std::ldexp(frac(rng), exp(rng));  // subnormals rounded
      if (rng() % 2) t = -t;
      if (trial % 2 && std::isfinite(t)) t = std::min(t, 0x1p1000);
      v.push_back(std::isfinite(t) ? t : 1.0);
    }
    v.push_back(std::numeric_limits<double>::max());
    v.push_back(-std::numeric_limits<double>::denorm_min());
    v.push_back(std::numeric_limits<double>::min());
    EXPECT_EQ(Accumulated(v).Compare(TermByTerm(v)), 0) << "trial " << trial;
  }
}

TEST(DyadicSum, FloatsAndTheirSquaresAsRowsHaveThem) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  std::vector<double> x, q;
  for (int i = 0; i < 5000; ++i) {
    const double t = 1e4f + normal(rng) * (i % 3 ? 1e-2f : 1e20f);
    x.push_back(t);
    q.push_back(t * t);  // exact: a float's square
  }
  EXPECT_EQ(Accumulated(x).Compare(TermByTerm(x)), 0);
  EXPECT_EQ(Accumulated(q).Compare(TermByTerm(q)), 0);
}

TEST(DyadicSum, CancelsToZeroAndToOneTerm) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> exp(-1074, 1023);
  std::vector<double> v;
  for (int i = 0; i < 300; ++i) {
    const double t = std::ldexp(1.0 + (rng() % 1000) / 1000.0, exp(rng));
    if (std::isfinite(t)) v.push_back(t);
  }
  std::vector<double> both = v;
  for (double t : v) both.push_back(-t);
  EXPECT_EQ(Accumulated(both).Sign(), 0);
  both.push_back(-0x1p-1074);
  EXPECT_EQ(Accumulated(both).Compare(Dyadic::FromDouble(-0x1p-1074)), 0);
}

TEST(DyadicSum, ValueLeavesTheSumGoing) {
  DyadicSum s;
  s.Add(-3.5);
  s.Add(0x1p-1000);
  EXPECT_EQ(s.Value().Compare(Dyadic::FromDouble(-3.5) +
                              Dyadic::FromDouble(0x1p-1000)),
            0);
  s.Add(3.5);
  EXPECT_EQ(s.Value().Compare(Dyadic::FromDouble(0x1p-1000)), 0);
}

}  // namespace
}  // namespace internal
}  // namespace simdnorm

// GroupNorm and InstanceNorm (simdnorm_group_norm) on every ISA: against a
// float64 computation of the formula (which the library's reference must
// match), in both layouts, every dtype triple, hard data (large means, huge
// and tiny values, groups whose first element is far from the mean), NaN
// and inf isolated to their group, in place, bitwise identity over thread
// counts, the saved statistics (mean_out, rstd_out), the C++ wrapper, the
// registry entry, and bad descriptors.
//
// The bound (docs/accuracy.md, "GroupNorm"): per element, with xhat the
// exact normalized value and g, b its channel's weights,
//   f32 y:    |y - exact| <= B = 32 * 2^-23 * (|g| * max(1, |xhat|) + |b|),
//   16-bit y: y is a rounding of some value within B of the exact one
//             (SIMDNORM_FAST_ROUNDING), i.e. between round(exact - B) and
//             round(exact + B).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/isa_test.h"
#include "support/tensor.h"

namespace simdnorm_test {
namespace {

constexpr double kBound = 32.0 * 0x1p-23;

struct Shape {
  size_t n, c, hw, groups;
};

// The flat index of (sample, channel, position) in a layout.
size_t Index(const Shape& s, simdnorm_layout l, size_t i, size_t ch, size_t p) {
  return ChannelIndex(s.c, s.hw, l, i, ch, p);
}

struct Problem {
  Shape s;
  simdnorm_layout layout;
  Tensor x, y, gamma, beta;
  bool has_gamma = true, has_beta = true;
  float eps = 1e-5f;

  Problem(Shape shape, simdnorm_layout l, simdnorm_dtype xt, simdnorm_dtype yt,
          simdnorm_dtype pt)
      : s(shape),
        layout(l),
        x(xt, shape.n * shape.c * shape.hw),
        y(yt, shape.n * shape.c * shape.hw),
        gamma(pt, shape.c),
        beta(pt, shape.c) {}

  simdnorm_group_desc Desc(size_t max_threads = 0) {
    simdnorm_group_desc d{};
    d.n = s.n;
    d.c = s.c;
    d.hw = s.hw;
    d.groups = s.groups;
    d.layout = layout;
    d.x = x.data();
    d.x_type = x.t;
    d.y = y.data();
    d.y_type = y.t;
    d.gamma = has_gamma ? gamma.data() : nullptr;
    d.beta = has_beta ? beta.data() : nullptr;
    d.param_type = gamma.t;
    d.eps = eps;
    d.max_threads = max_threads;
    d.flags = y.t == SIMDNORM_F32 ? 0u : unsigned{SIMDNORM_FAST_ROUNDING};
    return d;
  }
};

// Fills x with mean + sd * N(0, 1) and the weights with N(1, 0.5), N(0, 1).
void Fill(Problem& p, double mean, double sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  for (size_t i = 0; i < p.x.size(); ++i) p.x.Set(i, mean + sd * normal(rng));
  for (size_t j = 0; j < p.s.c; ++j) {
    p.gamma.Set(j, 1.0 + 0.5 * normal(rng));
    p.beta.Set(j, normal(rng));
  }
}

// The exact result (double) of every element, and its bound B; NaN for
// elements of groups whose result is NaN.
struct Exact {
  std::vector<double> y, bound;
};

Exact ExactOf(const Problem& p) {
  const Shape& s = p.s;
  const size_t cg = s.c / s.groups, m = cg * s.hw;
  Exact e{std::vector<double>(p.x.size()), std::vector<double>(p.x.size())};
  for (size_t i = 0; i < s.n; ++i) {
    for (size_t g = 0; g < s.groups; ++g) {
      double mean = 0.0, second = 0.0;
      for (size_t ch = g * cg; ch < (g + 1) * cg; ++ch)
        for (size_t q = 0; q < s.hw; ++q)
          mean += p.x.Get(Index(s, p.layout, i, ch, q));
      mean /= static_cast<double>(m);
      for (size_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
        for (size_t q = 0; q < s.hw; ++q) {
          const double d = p.x.Get(Index(s, p.layout, i, ch, q)) - mean;
          second += d * d;
        }
      }
      const double denom = std::sqrt(second / static_cast<double>(m) +
                                     static_cast<double>(p.eps));
      const bool nan =
          !std::isfinite(mean) || !std::isfinite(second) || !(denom > 0.0);
      for (size_t ch = g * cg; ch < (g + 1) * cg; ++ch) {
        const double gm = p.has_gamma ? p.gamma.Get(ch) : 1.0;
        const double bt = p.has_beta ? p.beta.Get(ch) : -0.0;
        for (size_t q = 0; q < s.hw; ++q) {
          const size_t k = Index(s, p.layout, i, ch, q);
          const double xhat = (p.x.Get(k) - mean) / denom;
          e.y[k] = nan ? NAN : xhat * gm + bt;
          e.bound[k] =
              kBound *
              (std::fabs(gm) * std::max(1.0, std::fabs(xhat)) + std::fabs(bt));
        }
      }
    }
  }
  return e;
}

// Runs the kernels and checks them; also the library's reference, which
// must be the exact values rounded once.
void RunAndCheck(Problem& p, const char* what) {
  simdnorm_group_desc d = p.Desc();
  ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK) << what;
  const Exact e = ExactOf(p);
  CheckWithin(p.y, e.y, e.bound, what);
  Tensor ref(p.y.t, p.y.size());
  d.y = ref.data();
  ASSERT_EQ(simdnorm_group_norm_reference(&d), SIMDNORM_OK) << what;
  ExpectRoundedOnce(ref, e.y, what);
}

const Shape kShapes[] = {
    {2, 64, 64, 32},  // (2, 64, 8, 8), 32 groups: SD's GroupNorm, smaller
    {1, 12, 15, 4},   // (1, 12, 5, 3), 4 groups
    {3, 6, 1, 6},     // InstanceNorm of (3, 6, 1)
    {2, 10, 7, 5},    // hw and c/g not multiples of any vector
    {1, 40, 1, 8},    // hw = 1
    {2, 3, 70, 1},    // one group: LayerNorm over each sample
};

const simdnorm_layout kLayouts[] = {SIMDNORM_NCHW, SIMDNORM_NHWC};
const simdnorm_dtype kTypes[] = {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16};

SIMDNORM_ISA_FIXTURE(GroupNormTest);

TEST_P(GroupNormTest, ShapesLayoutsAndDTypes) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype xt : kTypes) {
        for (simdnorm_dtype yt : kTypes) {
          for (simdnorm_dtype pt : {SIMDNORM_F32, SIMDNORM_BF16}) {
            Problem p(s, l, xt, yt, pt);
            Fill(p, 0.5, 2.0, seed++);
            p.has_beta = (seed % 3) != 0;
            p.has_gamma = (seed % 5) != 0;
            RunAndCheck(p, "random");
          }
        }
      }
    }
  }
}

// NHWC on the transposed data of an NCHW call: both within the bound of the
// same exact values (the summation orders differ, so the bits may).
TEST_P(GroupNormTest, NhwcMatchesNchwTransposed) {
  const Shape s{2, 24, 30, 6};
  Problem a(s, SIMDNORM_NCHW, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
  Problem b(s, SIMDNORM_NHWC, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
  Fill(a, 3.0, 1.5, 7);
  b.gamma = a.gamma;
  b.beta = a.beta;
  for (size_t i = 0; i < s.n; ++i)
    for (size_t ch = 0; ch < s.c; ++ch)
      for (size_t q = 0; q < s.hw; ++q)
        b.x.Set(Index(s, SIMDNORM_NHWC, i, ch, q),
                a.x.Get(Index(s, SIMDNORM_NCHW, i, ch, q)));
  simdnorm_group_desc da = a.Desc(), db = b.Desc();
  ASSERT_EQ(simdnorm_group_norm(&da), SIMDNORM_OK);
  ASSERT_EQ(simdnorm_group_norm(&db), SIMDNORM_OK);
  const Exact e = ExactOf(a);
  for (size_t i = 0; i < s.n; ++i) {
    for (size_t ch = 0; ch < s.c; ++ch) {
      for (size_t q = 0; q < s.hw; ++q) {
        const size_t ka = Index(s, SIMDNORM_NCHW, i, ch, q);
        const size_t kb = Index(s, SIMDNORM_NHWC, i, ch, q);
        ASSERT_LE(std::fabs(a.y.Get(ka) - e.y[ka]), e.bound[ka]);
        ASSERT_LE(std::fabs(b.y.Get(kb) - e.y[ka]), e.bound[ka]);
      }
    }
  }
}

// Data that defeats naive statistics: a large mean with a small spread,
// huge and tiny magnitudes (sums of squares overflow or vanish in fp32),
// and groups whose first element (the shift) is far from their mean (the
// general path).
TEST_P(GroupNormTest, HardData) {
  struct Data {
    const char* what;
    double mean, sd;
  };
  const Data kData[] = {{"mean 1e4, sd 1e-2", 1e4, 1e-2},
                        {"1e25", 0.0, 1e25},
                        {"1e-25", 0.0, 1e-25},
                        {"mean -3e20, sd 1e18", -3e20, 1e18}};
  const Shape shapes[] = {{2, 16, 40, 4}, {1, 6, 9, 6}};
  uint32_t seed = 100;
  for (const Data& data : kData) {
    for (const Shape& s : shapes) {
      for (simdnorm_layout l : kLayouts) {
        for (bool outlier : {false, true}) {
          Problem p(s, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
          Fill(p, data.mean, data.sd, seed++);
          p.eps = 0.0f;
          if (outlier) {  // each group's first element 20 sd off the mean
            const size_t cg = s.c / s.groups;
            for (size_t i = 0; i < s.n; ++i)
              for (size_t g = 0; g < s.groups; ++g)
                p.x.Set(Index(s, l, i, g * cg, 0), data.mean + 20 * data.sd);
          }
          RunAndCheck(p, data.what);
        }
      }
    }
  }
}

// A NaN in one group and an inf in another make those groups (and only
// those) the default quiet NaN; so does var + eps = 0.
TEST_P(GroupNormTest, NonFiniteGroupsAreIsolated) {
  const Shape s{2, 12, 10, 4};
  for (simdnorm_layout l : kLayouts) {
    for (simdnorm_dtype yt : kTypes) {
      Problem p(s, l, SIMDNORM_F32, yt, SIMDNORM_F32);
      Fill(p, 1.0, 1.0, 5);
      p.eps = 0.0f;
      p.x.Set(Index(s, l, 0, 4, 7), NAN);       // sample 0, group 1
      p.x.Set(Index(s, l, 1, 0, 3), INFINITY);  // sample 1, group 0
      for (size_t ch = 9; ch < 12; ++ch)        // sample 1, group 3 constant
        for (size_t q = 0; q < s.hw; ++q) p.x.Set(Index(s, l, 1, ch, q), 2.5);
      RunAndCheck(p, "non-finite");
      size_t nans = 0;
      for (size_t k = 0; k < p.y.size(); ++k) nans += p.y.IsNaN(k);
      EXPECT_EQ(nans, 3 * 3 * s.hw);
    }
  }
}

// y == x: the same bits as out of place.
TEST_P(GroupNormTest, InPlace) {
  for (simdnorm_layout l : kLayouts) {
    for (simdnorm_dtype t : kTypes) {
      Problem p(Shape{2, 20, 33, 5}, l, t, t, SIMDNORM_F32);
      Fill(p, -1.0, 3.0, 11);
      simdnorm_group_desc d = p.Desc();
      ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
      d.y = p.x.data();
      ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
      EXPECT_EQ(p.x.bytes, p.y.bytes);
    }
  }
}

// Bitwise the same for every thread count (units of work large enough to
// be split).
TEST_P(GroupNormTest, ThreadCountDoesNotChangeBits) {
  for (simdnorm_layout l : kLayouts) {
    Problem p(Shape{4, 32, 2048, 8}, l, SIMDNORM_BF16, SIMDNORM_F32,
              SIMDNORM_F32);
    Fill(p, 0.0, 1.0, 3);
    simdnorm_group_desc d = p.Desc(1);
    ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
    const std::vector<uint8_t> one = p.y.bytes;
    for (size_t threads : {2, 3, 0}) {
      std::fill(p.y.bytes.begin(), p.y.bytes.end(), 0);
      d = p.Desc(threads);
      ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
      EXPECT_EQ(p.y.bytes, one) << threads << " threads";
    }
  }
}

// ------------------------------------------------ saved statistics
//
// mean_out and rstd_out against the reference's (its float64 statistics
// rounded once), per (sample, group):
//   |rstd - want| <= kStatBound * want,
//   |mean - want| <= kStatBound * (|want| + sd),  sd = 1 / want rstd,
// i.e. both within 2^-20 of their scale: two roundings to fp32 (2^-23 in
// all) and the kernel's own statistics, which the fp32 paths sum in fp32
// blocks (docs/accuracy.md, "Saved statistics"). The test prints the worst
// seen in units of 2^-23 of that scale.
constexpr double kStatBound = 0x1p-20;

struct Saved {
  std::vector<float> mean, rstd;
};

// p's forward (kernels or reference; 16-bit y with `flags`) with its saved
// statistics; y into p.y.
Saved ForwardSaving(Problem& p, unsigned flags, bool reference = false,
                    size_t max_threads = 0) {
  const size_t units = p.s.n * p.s.groups;
  Saved st{std::vector<float>(units, -1.0f), std::vector<float>(units, -1.0f)};
  simdnorm_group_desc d = p.Desc(max_threads);
  d.flags = flags;
  d.mean_out = st.mean.data();
  d.rstd_out = st.rstd.data();
  EXPECT_EQ(
      reference ? simdnorm_group_norm_reference(&d) : simdnorm_group_norm(&d),
      SIMDNORM_OK);
  return st;
}

double g_worst_mean = 0.0, g_worst_rstd = 0.0;  // in 2^-23 of the scale

void ExpectStatsNear(const Saved& got, const Saved& want,
                     const std::string& what) {
  for (size_t u = 0; u < want.mean.size(); ++u) {
    const double wm = want.mean[u], wr = want.rstd[u];
    const double em = std::fabs(got.mean[u] - wm) / (std::fabs(wm) + 1.0 / wr);
    const double er = std::fabs(got.rstd[u] - wr) / wr;
    g_worst_mean = std::max(g_worst_mean, em / 0x1p-23);
    g_worst_rstd = std::max(g_worst_rstd, er / 0x1p-23);
    EXPECT_LE(em, kStatBound) << what << " mean of unit " << u << ": "
                              << got.mean[u] << " want " << wm;
    EXPECT_LE(er, kStatBound) << what << " rstd of unit " << u << ": "
                              << got.rstd[u] << " want " << wr;
  }
}

// Against the reference's on the fast path (f32 y, fast-rounded bf16 y)
// and the correctly rounded one (bf16 y); asking for them changes no bit
// of y; one thread gives the same statistics. Data of mean 1e4 and sd
// 1e-2 (the fp32 mean is 5 % of a deviation off), tiny values (the
// general path's rescaling), both layouts, InstanceNorm and one group.
TEST_P(GroupNormTest, SavedStatistics) {
  struct Data {
    double mean, sd;
  };
  const Data kData[] = {{0.5, 2.0}, {1e4, 1e-2}, {0.0, 1e-25}};
  const Shape shapes[] = {{2, 16, 40, 4}, {3, 6, 9, 6}, {2, 10, 33, 1}};
  struct Out {
    simdnorm_dtype y_type;
    unsigned flags;
  };
  const Out kOuts[] = {{SIMDNORM_F32, 0u},
                       {SIMDNORM_BF16, unsigned{SIMDNORM_FAST_ROUNDING}},
                       {SIMDNORM_BF16, 0u}};
  uint32_t seed = 300;
  for (const Data& data : kData) {
    for (const Shape& s : shapes) {
      for (simdnorm_layout l : kLayouts) {
        Problem p(s, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
        Fill(p, data.mean, data.sd, seed++);
        p.eps = seed % 2 ? 0.0f : 1e-5f;
        const Saved want = ForwardSaving(p, 0u, /*reference=*/true);
        for (const Out& o : kOuts) {
          Problem q = p;
          q.y = Tensor(o.y_type, p.y.size());
          simdnorm_group_desc d = q.Desc();
          d.flags = o.flags;
          ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
          const std::vector<uint8_t> plain = q.y.bytes;
          std::fill(q.y.bytes.begin(), q.y.bytes.end(), 0);
          const Saved got = ForwardSaving(q, o.flags);
          const std::string what = std::string(simdnorm_active_isa()) +
                                   (l == SIMDNORM_NCHW ? " NCHW" : " NHWC") +
                                   " groups " + std::to_string(s.groups) +
                                   " y " + DTypeName(o.y_type) + " flags " +
                                   std::to_string(o.flags) + " mean " +
                                   std::to_string(data.mean);
          EXPECT_EQ(q.y.bytes, plain) << what;
          ExpectStatsNear(got, want, what);
          const Saved one = ForwardSaving(q, o.flags, false, 1);
          EXPECT_EQ(0, std::memcmp(one.mean.data(), got.mean.data(),
                                   got.mean.size() * 4))
              << what;
          EXPECT_EQ(0, std::memcmp(one.rstd.data(), got.rstd.data(),
                                   got.rstd.size() * 4))
              << what;
        }
      }
    }
  }
  std::printf(
      "%s: saved mean within %.3g and rstd within %.3g * 2^-23 of their "
      "scale\n",
      simdnorm_active_isa(), g_worst_mean, g_worst_rstd);
  g_worst_mean = g_worst_rstd = 0.0;
}

// A group holding a NaN or an inf saves NaN for both; one of var + eps = 0
// its mean and rstd = inf; either statistic may be asked for alone.
TEST_P(GroupNormTest, SavedStatisticsOfNonFiniteGroups) {
  const Shape s{2, 12, 10, 4};
  for (simdnorm_layout l : kLayouts) {
    for (unsigned flags : {0u, unsigned{SIMDNORM_FAST_ROUNDING}}) {
      for (int reference = 0; reference < 2; ++reference) {
        Problem p(s, l, SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F32);
        Fill(p, 1.0, 1.0, 5);
        p.eps = 0.0f;
        p.x.Set(Index(s, l, 0, 4, 7), NAN);       // sample 0, group 1
        p.x.Set(Index(s, l, 1, 0, 3), INFINITY);  // sample 1, group 0
        for (size_t ch = 9; ch < 12; ++ch)        // sample 1, group 3
          for (size_t q = 0; q < s.hw; ++q) p.x.Set(Index(s, l, 1, ch, q), 2.5);
        const Saved st = ForwardSaving(p, flags, reference != 0);
        const std::string what = std::string(simdnorm_active_isa()) +
                                 (l == SIMDNORM_NCHW ? " NCHW" : " NHWC") +
                                 " flags " + std::to_string(flags) +
                                 (reference ? " reference" : "");
        for (size_t u = 0; u < 8; ++u) {
          const bool nan = u == 1 || u == 4;
          EXPECT_EQ(std::isnan(st.mean[u]), nan) << what << " unit " << u;
          EXPECT_EQ(std::isnan(st.rstd[u]), nan) << what << " unit " << u;
        }
        EXPECT_EQ(st.mean[7], 2.5f) << what;
        EXPECT_EQ(st.rstd[7], INFINITY) << what;
        // One at a time: the same values.
        std::vector<float> alone(8, -1.0f);
        simdnorm_group_desc d = p.Desc();
        d.flags = flags;
        d.rstd_out = alone.data();
        ASSERT_EQ(reference ? simdnorm_group_norm_reference(&d)
                            : simdnorm_group_norm(&d),
                  SIMDNORM_OK);
        EXPECT_EQ(0, std::memcmp(alone.data(), st.rstd.data(), 8 * 4)) << what;
      }
    }
  }
}

TEST_P(GroupNormTest, CppWrapper) {
  const Shape s{2, 8, 12, 8};
  Problem p(s, SIMDNORM_NHWC, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
  Fill(p, 0.0, 1.0, 9);
  simdnorm_group_desc d = p.Desc();
  ASSERT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
  std::vector<float> y(p.y.size());
  const auto* x = static_cast<const float*>(p.x.data());
  const auto* g = static_cast<const float*>(p.gamma.data());
  const auto* b = static_cast<const float*>(p.beta.data());
  simdnorm::Options opt;
  opt.eps = p.eps;
  ASSERT_EQ(simdnorm::instance_norm(x, y.data(), s.n, s.c, s.hw,
                                    simdnorm::Layout::kNHWC, g, b, opt),
            simdnorm::Status::kOk);
  EXPECT_EQ(std::memcmp(y.data(), p.y.data(), y.size() * 4), 0);
  std::vector<simdnorm::bf16> y16(y.size());
  EXPECT_EQ(simdnorm::group_norm(x, y16.data(), s.n, s.c, s.hw, 4,
                                 simdnorm::Layout::kNHWC, g, b, opt),
            simdnorm::Status::kOk);  // correctly rounded
  opt.fast_rounding = true;
  EXPECT_EQ(simdnorm::group_norm(x, y16.data(), s.n, s.c, s.hw, 4,
                                 simdnorm::Layout::kNHWC, g, b, opt),
            simdnorm::Status::kOk);
  // Options::stats: the descriptor's mean_out and rstd_out.
  std::vector<float> mean(s.n * 4), rstd(s.n * 4);
  opt.fast_rounding = false;
  opt.stats = {mean.data(), rstd.data()};
  ASSERT_EQ(simdnorm::group_norm(x, y.data(), s.n, s.c, s.hw, 4,
                                 simdnorm::Layout::kNHWC, g, b, opt),
            simdnorm::Status::kOk);
  const simdnorm_group_desc made = simdnorm::make_group_desc(
      x, y.data(), s.n, s.c, s.hw, 4, simdnorm::Layout::kNHWC, g, b, opt);
  EXPECT_EQ(made.mean_out, mean.data());
  EXPECT_EQ(made.rstd_out, rstd.data());
  p.s.groups = 4;
  const Saved st = ForwardSaving(p, 0u);
  EXPECT_EQ(mean, st.mean);
  EXPECT_EQ(rstd, st.rstd);
  opt.gamma_offset = 1.0f;
  EXPECT_EQ(simdnorm::group_norm(x, y.data(), s.n, s.c, s.hw, 4,
                                 simdnorm::Layout::kNHWC, g, b, opt),
            simdnorm::Status::kInvalidArgument);
}

SIMDNORM_INSTANTIATE_PER_ISA(GroupNormTest);

// ------------------------------------------------ registry and statuses

TEST(GroupNormRegistry, EntryAndRowEnumerators) {
  const simdnorm_op_info* op = simdnorm_op_of(SIMDNORM_GROUPNORM);
  ASSERT_NE(op, nullptr);
  EXPECT_STREQ(op->name, "groupnorm");
  EXPECT_EQ(op->descriptor, SIMDNORM_GROUP_DESC);
  EXPECT_EQ(op->centered, 1);
  EXPECT_EQ(op->has_backward, 1);
  EXPECT_EQ(op->flags, unsigned{SIMDNORM_FAST_ROUNDING});
  EXPECT_EQ(simdnorm_op_at(SIMDNORM_GROUPNORM), op);
  for (size_t i = 0; i < simdnorm_op_count(); ++i) {
    const simdnorm_kind k = simdnorm_op_at(i)->kind;
    EXPECT_EQ(simdnorm_op_at(i)->descriptor,
              k == SIMDNORM_GROUPNORM   ? SIMDNORM_GROUP_DESC
              : k == SIMDNORM_BATCHNORM ? SIMDNORM_BATCH_DESC
                                        : SIMDNORM_ROW_DESC);
  }
  ExpectNotARowKind(SIMDNORM_GROUPNORM);
}

// Each bad descriptor gets its status from both entry points, and y is
// untouched.
TEST(GroupNormStatus, BadDescriptorsWriteNothing) {
  Problem p(Shape{2, 8, 5, 4}, SIMDNORM_NCHW, SIMDNORM_F32, SIMDNORM_F32,
            SIMDNORM_F32);
  Fill(p, 0.0, 1.0, 2);
  std::fill(p.y.bytes.begin(), p.y.bytes.end(), 0xAB);
  const std::vector<uint8_t> sentinel = p.y.bytes;
  const simdnorm_group_desc good = p.Desc();
  struct Case {
    const char* what;
    void (*edit)(simdnorm_group_desc&);
    simdnorm_status want;
  };
  const Case kCases[] = {
      {"c % groups", [](simdnorm_group_desc& d) { d.groups = 3; },
       SIMDNORM_INVALID_SHAPE},
      {"groups 0", [](simdnorm_group_desc& d) { d.groups = 0; },
       SIMDNORM_INVALID_SHAPE},
      {"c 0", [](simdnorm_group_desc& d) { d.c = 0; }, SIMDNORM_INVALID_SHAPE},
      {"hw 0", [](simdnorm_group_desc& d) { d.hw = 0; },
       SIMDNORM_INVALID_SHAPE},
      {"size overflow", [](simdnorm_group_desc& d) { d.hw = SIZE_MAX / 4; },
       SIMDNORM_INVALID_SHAPE},
      {"layout 2",
       [](simdnorm_group_desc& d) {
         d.layout = static_cast<simdnorm_layout>(2);
       },
       SIMDNORM_INVALID_ARGUMENT},
      {"x_type 7",
       [](simdnorm_group_desc& d) {
         d.x_type = static_cast<simdnorm_dtype>(7);
       },
       SIMDNORM_INVALID_ARGUMENT},
      {"I8 x", [](simdnorm_group_desc& d) { d.x_type = SIMDNORM_I8; },
       SIMDNORM_UNSUPPORTED},
      {"I8 y", [](simdnorm_group_desc& d) { d.y_type = SIMDNORM_I8; },
       SIMDNORM_UNSUPPORTED},
      {"eps < 0", [](simdnorm_group_desc& d) { d.eps = -1.0f; },
       SIMDNORM_INVALID_ARGUMENT},
      {"eps NaN", [](simdnorm_group_desc& d) { d.eps = NAN; },
       SIMDNORM_INVALID_ARGUMENT},
      {"unknown flag",
       [](simdnorm_group_desc& d) { d.flags = SIMDNORM_ROUND_NORMALIZED; },
       SIMDNORM_INVALID_ARGUMENT},
      {"x NULL", [](simdnorm_group_desc& d) { d.x = nullptr; },
       SIMDNORM_INVALID_ARGUMENT},
      {"y overlaps x",
       [](simdnorm_group_desc& d) {
         d.x = static_cast<const float*>(d.y) + 1;
         d.n = 1;
       },
       SIMDNORM_OVERLAP},
      {"y is x, other size",
       [](simdnorm_group_desc& d) {
         d.x = d.y;
         d.x_type = SIMDNORM_BF16;
       },
       SIMDNORM_OVERLAP},
      {"y overlaps gamma",
       [](simdnorm_group_desc& d) { d.gamma = static_cast<float*>(d.y) + 3; },
       SIMDNORM_OVERLAP},
      {"y overlaps beta", [](simdnorm_group_desc& d) { d.beta = d.y; },
       SIMDNORM_OVERLAP},
  };
  for (const Case& c : kCases) {
    simdnorm_group_desc d = good;
    c.edit(d);
    EXPECT_EQ(simdnorm_group_norm(&d), c.want) << c.what;
    EXPECT_EQ(simdnorm_group_norm_reference(&d), c.want) << c.what;
    EXPECT_EQ(p.y.bytes, sentinel) << c.what;
  }
  EXPECT_EQ(simdnorm_group_norm(nullptr), SIMDNORM_INVALID_ARGUMENT);
  // The saved statistics (n * groups = 8 floats each) overlap nothing else;
  // then neither y nor they are written.
  std::vector<float> stats(16, 5.0f);
  const std::vector<float> stats_before = stats;
  const auto overlap = [&](float* mean, float* rstd, const char* what) {
    simdnorm_group_desc d = good;
    d.mean_out = mean;
    d.rstd_out = rstd;
    EXPECT_EQ(simdnorm_group_norm(&d), SIMDNORM_OVERLAP) << what;
    EXPECT_EQ(simdnorm_group_norm_reference(&d), SIMDNORM_OVERLAP) << what;
    EXPECT_EQ(p.y.bytes, sentinel) << what;
    EXPECT_EQ(stats, stats_before) << what;
  };
  overlap(static_cast<float*>(p.y.data()) + 3, nullptr, "mean_out over y");
  overlap(&stats[0], static_cast<float*>(p.x.data()) + 70, "rstd_out over x");
  overlap(static_cast<float*>(p.gamma.data()) + 7, &stats[8],
          "mean_out over gamma");
  overlap(&stats[0], static_cast<float*>(p.beta.data()), "rstd_out over beta");
  overlap(&stats[0], &stats[7], "rstd_out over mean_out");
  {  // adjacent: fine, and written
    simdnorm_group_desc d = good;
    d.mean_out = &stats[0];
    d.rstd_out = &stats[8];
    EXPECT_EQ(simdnorm_group_norm(&d), SIMDNORM_OK);
    EXPECT_NE(stats, stats_before);
    p.y.bytes = sentinel;
  }
  // n = 0: nothing to do, pointers unused.
  simdnorm_group_desc empty{};
  EXPECT_EQ(simdnorm_group_norm(&empty), SIMDNORM_OK);
  ExpectDescriptorSizes(simdnorm_group_norm_sized, good,
                        SIMDNORM_GROUP_DESC_MIN_SIZE,
                        [&] { EXPECT_EQ(p.y.bytes, sentinel); });
}

}  // namespace
}  // namespace simdnorm_test

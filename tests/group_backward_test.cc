// GroupNorm's (and InstanceNorm's) backward pass
// (simdnorm_group_norm_backward): the float64 reference against central
// differences of a float64 forward and against the Jacobian identities;
// every ISA's kernels against the reference (both layouts, dtype triples,
// InstanceNorm and one group, hard data), the identities, in place, NaN
// groups isolated, the forward's saved statistics (mean, rstd) in place of
// recomputed ones, bitwise identity over thread counts, the C++ wrapper,
// bad descriptors.
//
// The bound (docs/accuracy.md, "Backward"), LayerNorm's over each
// (sample, group) of m elements, with g = dy * gamma[ch], r = 1 / sqrt(var
// + eps), W = min(1, 1 / sum(xhat^2)) (>= 1/m) and the sums over the group:
//   |dx - exact| <= 128 * 2^-23 * M_j,
//   M_j = r * (|g_j| + mean|g| + (|xhat_j| + 1) * W * sum(|g| (|xhat| + 1)))
// (fp32 dx; 16-bit dx add half an ulp of |exact| plus that), and per
// channel, over samples and positions,
//   |dgamma - exact| <= 64 * 2^-23 * sum(|dy| (|xhat| + 1)),
//   |dbeta - exact|  <= 32 * 2^-23 * sum(|dy|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/dtypes.h"
#include "support/grad_bounds.h"
#include "support/inputs.h"
#include "support/isa_test.h"
#include "support/tensor.h"

namespace simdnorm_test {
namespace {

// The bounds, in units of 2^-23: support/grad_bounds.h.
constexpr double kUlp = kGradUlp;

struct Shape {
  size_t n, c, hw, groups;
};

struct Grad {
  Shape s;
  simdnorm_layout layout;
  Tensor x, dy, dx, gamma;
  bool has_gamma = true;
  bool in_place = false;  // dx is dy
  float eps = 1e-5f;
  std::vector<float> dgamma, dbeta;
  // The forward's saved statistics (n * groups each), or empty: none.
  std::vector<float> mean, rstd;
  size_t max_threads = 0;

  Grad(Shape shape, simdnorm_layout l, simdnorm_dtype xt, simdnorm_dtype dyt,
       simdnorm_dtype dxt, simdnorm_dtype pt)
      : s(shape),
        layout(l),
        x(xt, shape.n * shape.c * shape.hw),
        dy(dyt, shape.n * shape.c * shape.hw),
        dx(dxt, shape.n * shape.c * shape.hw),
        gamma(pt, shape.c),
        dgamma(shape.c, -1.0f),
        dbeta(shape.c, -1.0f) {}

  size_t Index(size_t i, size_t ch, size_t p) const {
    return ChannelIndex(s.c, s.hw, layout, i, ch, p);
  }
  double Gamma(size_t ch) const { return has_gamma ? gamma.Get(ch) : 1.0; }
  Tensor& Out() { return in_place ? dy : dx; }

  simdnorm_group_backward_desc Desc() {
    simdnorm_group_backward_desc d{};
    d.n = s.n;
    d.c = s.c;
    d.hw = s.hw;
    d.groups = s.groups;
    d.layout = layout;
    d.x = x.data();
    d.x_type = x.t;
    d.dy = dy.data();
    d.dy_type = dy.t;
    d.dx = Out().data();
    d.dx_type = Out().t;
    d.gamma = has_gamma ? gamma.data() : nullptr;
    d.param_type = gamma.t;
    d.eps = eps;
    d.dgamma = dgamma.empty() ? nullptr : dgamma.data();
    d.dbeta = dbeta.empty() ? nullptr : dbeta.data();
    d.max_threads = max_threads;
    d.mean = mean.empty() ? nullptr : mean.data();
    d.rstd = rstd.empty() ? nullptr : rstd.data();
    return d;
  }
};

// The forward's saved statistics of p's x (the kernels', f32 y) into
// p.mean and p.rstd.
void SaveStatistics(Grad& p) {
  const size_t units = p.s.n * p.s.groups;
  p.mean.assign(units, -1.0f);
  p.rstd.assign(units, -1.0f);
  std::vector<float> y(p.x.size());
  simdnorm_group_desc f{};
  FillChannelForward(f, p.s.n, p.s.c, p.s.hw, p.layout, p.x, y.data(), p.eps);
  f.groups = p.s.groups;
  f.mean_out = p.mean.data();
  f.rstd_out = p.rstd.data();
  EXPECT_EQ(simdnorm_group_norm(&f), SIMDNORM_OK);
}

// x = mean + sd N(0, 1), dy = N(0, 1), gamma = 1 + 0.5 N(0, 1).
void Fill(Grad& p, double mean, double sd, uint32_t seed) {
  Rng rng(seed);
  for (size_t k = 0; k < p.x.size(); ++k) p.x.Set(k, mean + sd * rng.Normal());
  for (size_t k = 0; k < p.dy.size(); ++k) p.dy.Set(k, rng.Normal());
  for (size_t j = 0; j < p.s.c; ++j) p.gamma.Set(j, 1.0 + 0.5 * rng.Normal());
}

// The exact statistics of every element (double, from the stored x), the
// M_j of its bound, and the scales of dgamma's and dbeta's bounds.
struct Exact {
  std::vector<double> xhat, r, m;
  std::vector<double> dgamma, dbeta;  // per channel
  std::vector<double> kappa;          // 1 + max|x| / std of the group
};

Exact ExactOf(const Grad& p) {
  const Shape& s = p.s;
  const size_t cg = s.c / s.groups, m = cg * s.hw, size = p.x.size();
  const double md = static_cast<double>(m);
  Exact e{std::vector<double>(size),     std::vector<double>(size),
          std::vector<double>(size),     std::vector<double>(s.c, 0.0),
          std::vector<double>(s.c, 0.0), std::vector<double>(size)};
  std::vector<size_t> idx(m);
  for (size_t i = 0; i < s.n; ++i) {
    for (size_t g = 0; g < s.groups; ++g) {
      double mean = 0.0, second = 0.0, largest = 0.0;
      for (size_t q = 0; q < m; ++q) {
        idx[q] = p.Index(i, g * cg + q / s.hw, q % s.hw);
        mean += p.x.Get(idx[q]);
        largest = std::max(largest, std::fabs(p.x.Get(idx[q])));
      }
      mean /= md;
      for (size_t k : idx) second += (p.x.Get(k) - mean) * (p.x.Get(k) - mean);
      const double r = 1.0 / std::sqrt(second / md + p.eps);
      double abs_g = 0.0, abs_gx = 0.0, sq = 0.0;
      for (size_t q = 0; q < m; ++q) {
        const size_t k = idx[q], ch = g * cg + q / s.hw;
        const double xhat = (p.x.Get(k) - mean) * r;
        const double ag = std::fabs(p.dy.Get(k) * p.Gamma(ch));
        e.xhat[k] = xhat;
        e.r[k] = r;
        abs_g += ag;
        abs_gx += ag * (std::fabs(xhat) + 1.0);
        sq += xhat * xhat;
        e.dgamma[ch] += std::fabs(p.dy.Get(k)) * (std::fabs(xhat) + 1.0);
        e.dbeta[ch] += std::fabs(p.dy.Get(k));
      }
      const double w = sq > 1.0 ? 1.0 / sq : 1.0;
      const double sd = std::sqrt(second / md);
      for (size_t q = 0; q < m; ++q) {
        const size_t k = idx[q], ch = g * cg + q / s.hw;
        const double ag = std::fabs(p.dy.Get(k) * p.Gamma(ch));
        e.m[k] =
            r * (ag + abs_g / md + (std::fabs(e.xhat[k]) + 1.0) * w * abs_gx);
        e.kappa[k] = sd > 0.0 ? 1.0 + largest / sd : 1.0;
      }
    }
  }
  return e;
}

// The reference's dx as fp32 (one more rounding: 2^-24 relative), dgamma
// and dbeta, on a copy of the problem.
struct Truth {
  Tensor dx;
  std::vector<float> dgamma, dbeta;
};

Truth ReferenceOf(const Grad& p) {
  Grad q = p;
  q.in_place = false;
  q.dx = Tensor(SIMDNORM_F32, p.x.size());
  q.dgamma.assign(p.s.c, 0.0f);
  q.dbeta.assign(p.s.c, 0.0f);
  simdnorm_group_backward_desc d = q.Desc();
  EXPECT_EQ(simdnorm_group_norm_backward_reference(&d), SIMDNORM_OK);
  return Truth{q.dx, q.dgamma, q.dbeta};
}

// The largest |dx - truth| / (2^-23 M) seen on fp32 dx (reported).
double g_worst = 0.0;

void ReportWorst(const char* test) {
  std::printf("%s %s: fp32 dx within %.2f of 2^-23 M (bound %.0f)\n",
              simdnorm_active_isa(), test, g_worst, kDxBound);
  g_worst = 0.0;
}

std::string Name(const Grad& p, const std::string& extra = "") {
  const Shape& s = p.s;
  return std::string(simdnorm_active_isa()) +
         (p.layout == SIMDNORM_NCHW ? " NCHW " : " NHWC ") + "(" +
         std::to_string(s.n) + ", " + std::to_string(s.c) + ", " +
         std::to_string(s.hw) + ") groups " + std::to_string(s.groups) + " x " +
         DTypeName(p.x.t) + " dy " + DTypeName(p.dy.t) + " dx " +
         DTypeName(p.in_place ? p.dy.t : p.dx.t) + " gamma " +
         (p.has_gamma ? DTypeName(p.gamma.t) : "none") + " eps " +
         std::to_string(p.eps) + extra;
}

// Runs the kernels and checks dx, dgamma and dbeta against the reference.
void ExpectMatchesReference(Grad p, const std::string& what) {
  const Truth truth = ReferenceOf(p);
  const Exact e = ExactOf(p);
  simdnorm_group_backward_desc d = p.Desc();
  ASSERT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK) << what;
  const Tensor& out = p.Out();
  int failures = 0;
  for (size_t k = 0; k < out.size() && failures < 5; ++k) {
    const double want = truth.dx.Get(k), got = out.Get(k);
    if (std::isnan(want)) {
      if (!out.IsNaN(k)) {
        ++failures;
        ADD_FAILURE() << what << " element " << k << ": dx " << got
                      << " want NaN";
      }
      continue;
    }
    const double tol = DxTolerance(out.t, want, e.m[k]);
    if (out.t == SIMDNORM_F32 && e.m[k] > 0) {
      g_worst = std::max(g_worst, std::fabs(got - want) / (kUlp * e.m[k]));
    }
    if (!(std::fabs(got - want) <= tol)) {
      ++failures;
      ADD_FAILURE() << what << " element " << k << ": dx " << got << " want "
                    << want << " tol " << tol;
    }
  }
  for (size_t j = 0; j < p.s.c; ++j) {
    const double tg = kDgammaBound * kUlp * e.dgamma[j] +
                      0x1p-24 * std::fabs(truth.dgamma[j]);
    const double tb =
        kDbetaBound * kUlp * e.dbeta[j] + 0x1p-24 * std::fabs(truth.dbeta[j]);
    ASSERT_LE(std::fabs(p.dgamma[j] - truth.dgamma[j]), tg)
        << what << " dgamma channel " << j;
    ASSERT_LE(std::fabs(p.dbeta[j] - truth.dbeta[j]), tb)
        << what << " dbeta channel " << j;
  }
}

const simdnorm_layout kLayouts[] = {SIMDNORM_NCHW, SIMDNORM_NHWC};

const Shape kShapes[] = {
    {2, 8, 5, 4},     // two channels of 5 per group
    {2, 12, 7, 3},    // hw and cg not multiples of any vector
    {2, 16, 50, 16},  // InstanceNorm
    {3, 6, 1, 6},     // InstanceNorm of one element: var = 0
    {2, 10, 33, 1},   // one group: LayerNorm over each sample
    {1, 64, 3, 8},    // wide c (NHWC: several channel vectors)
    {1, 4, 600, 2},   // NCHW channels over several fp32 chunks
    {1, 300, 40, 4},  // NHWC blocks of fewer than 32 positions
};

SIMDNORM_ISA_FIXTURE(GroupBackwardTest);

// Dtype triples (x, dy, dx, gamma): all f32; 16-bit data with f32
// weights; mixed ones; 16-bit weights. Weights or none, eps 0 or not.
TEST_P(GroupBackwardTest, MatchesReference) {
  struct Types {
    simdnorm_dtype x, dy, dx, p;
  };
  const Types kTypes[] = {
      {SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
      {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_F32},
      {SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F32},
      {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16, SIMDNORM_BF16},
      {SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F16},
  };
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (simdnorm_layout l : kLayouts) {
      for (const Types& t : kTypes) {
        Grad p(s, l, t.x, t.dy, t.dx, t.p);
        Fill(p, 0.5, 2.0, seed++);
        p.has_gamma = seed % 4 != 0;
        p.eps = seed % 3 == 0 && s.hw * s.c / s.groups > 1 ? 0.0f : 1e-5f;
        ExpectMatchesReference(p, Name(p));
      }
    }
  }
  ReportWorst("MatchesReference");
}

// A large mean with a small spread, tiny values (r beyond FLT_MAX), and a
// first element (the shift) far from the mean (the general path).
TEST_P(GroupBackwardTest, HardData) {
  struct Data {
    const char* what;
    double mean, sd;
  };
  const Data kData[] = {{" mean 1e4, sd 1e-2", 1e4, 1e-2},
                        {" 1e-25", 0.0, 1e-25},
                        {" 1e25", 0.0, 1e25}};
  uint32_t seed = 100;
  for (const Data& data : kData) {
    for (simdnorm_layout l : kLayouts) {
      for (bool outlier : {false, true}) {
        Grad p(Shape{2, 12, 20, 3}, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32,
               SIMDNORM_F32);
        Fill(p, data.mean, data.sd, seed++);
        p.eps = 0.0f;
        if (outlier) {  // each group's first element 20 sd off the mean
          for (size_t i = 0; i < p.s.n; ++i)
            for (size_t g = 0; g < p.s.groups; ++g)
              p.x.Set(p.Index(i, g * 4, 0), data.mean + 20 * data.sd);
        }
        ExpectMatchesReference(p, Name(p, data.what));
      }
    }
  }
  ReportWorst("HardData");
}

// The forward's saved statistics handed to the backward: within the same
// bounds of the reference (which recomputes), on data whose fp32 mean is
// 5 % of a deviation off (1e4 + N(0, 1) / 100: the correction c), in both
// layouts, InstanceNorm, one group, wide NHWC, 16-bit data; units whose
// saved rstd is not positive and finite (NaN, 0, inf) or whose mean is not
// finite are recomputed.
TEST_P(GroupBackwardTest, SavedStatistics) {
  struct Data {
    const char* what;
    double mean, sd;
  };
  const Data kData[] = {{" saved", 0.5, 2.0},
                        {" saved, mean 1e4, sd 1e-2", 1e4, 1e-2}};
  const Shape shapes[] = {
      {2, 12, 20, 3}, {2, 16, 50, 16}, {1, 64, 3, 8}, {2, 10, 33, 1}};
  uint32_t seed = 500;
  for (const Data& data : kData) {
    for (const Shape& s : shapes) {
      for (simdnorm_layout l : kLayouts) {
        for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
          // (bf16 x of 1e4 + N(0, 1) / 100 is constant: f32 x there.)
          const simdnorm_dtype xt = data.mean > 1.0 ? SIMDNORM_F32 : t;
          Grad p(s, l, xt, t, t, SIMDNORM_F32);
          Fill(p, data.mean, data.sd, seed++);
          p.eps = seed % 3 == 0 ? 0.0f : 1e-5f;
          SaveStatistics(p);
          std::string extra = data.what;
          if (seed % 2 == 0 && p.rstd.size() > 2) {  // some recomputed
            p.rstd[0] = seed % 4 == 0 ? NAN : 0.0f;
            p.rstd.back() = INFINITY;
            p.mean[1] = NAN;
            extra += ", three unusable";
          }
          ExpectMatchesReference(p, Name(p, extra));
        }
      }
    }
  }
  ReportWorst("SavedStatistics");
}

// dx == dy: the same bits as out of place (also bf16 dy into f16 dx).
TEST_P(GroupBackwardTest, InPlace) {
  const simdnorm_dtype kPairs[][2] = {{SIMDNORM_F32, SIMDNORM_F32},
                                      {SIMDNORM_BF16, SIMDNORM_BF16},
                                      {SIMDNORM_BF16, SIMDNORM_F16}};
  for (simdnorm_layout l : kLayouts) {
    for (const auto& t : kPairs) {
      Grad p(Shape{2, 20, 33, 5}, l, SIMDNORM_F32, t[0], t[1], SIMDNORM_F32);
      Fill(p, -1.0, 3.0, 11);
      simdnorm_group_backward_desc d = p.Desc();
      ASSERT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
      const std::vector<float> dgamma = p.dgamma, dbeta = p.dbeta;
      p.in_place = true;
      d = p.Desc();
      d.dx_type = t[1];
      ASSERT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
      EXPECT_EQ(p.dy.bytes, p.dx.bytes) << Name(p);
      EXPECT_EQ(p.dgamma, dgamma) << Name(p);
      EXPECT_EQ(p.dbeta, dbeta) << Name(p);
    }
  }
}

// A NaN in x of one group, an inf in dy of another, and a constant group
// with eps 0: those groups' dx are the default quiet NaN and their
// channels' dgamma NaN; every other dx has the bits of the call without
// the NaN and the inf; dbeta is dy's sum as given (inf in one channel).
// With saved statistics the same (the NaN groups' are NaN: recomputed).
TEST_P(GroupBackwardTest, NonFiniteGroupsAreIsolated) {
  const Shape s{2, 12, 10, 4};  // groups of 3 channels
  for (simdnorm_layout l : kLayouts) {
    for (int v = 0; v < 4; ++v) {
      const simdnorm_dtype t = v % 2 ? SIMDNORM_BF16 : SIMDNORM_F32;
      const bool saved = v >= 2;
      Grad clean(s, l, SIMDNORM_F32, t, t, SIMDNORM_F32);
      Fill(clean, 1.0, 1.0, 5);
      clean.eps = 0.0f;
      for (size_t ch = 9; ch < 12; ++ch)  // sample 1, group 3 constant
        for (size_t q = 0; q < s.hw; ++q)
          clean.x.Set(clean.Index(1, ch, q), 2.5);
      Grad bad = clean;
      bad.x.Set(bad.Index(0, 4, 7), NAN);        // sample 0, group 1
      bad.dy.Set(bad.Index(1, 0, 3), INFINITY);  // sample 1, group 0
      if (saved) {
        SaveStatistics(clean);
        SaveStatistics(bad);
        EXPECT_TRUE(std::isnan(bad.rstd[1]) && std::isinf(bad.rstd[7]));
      }
      simdnorm_group_backward_desc dc = clean.Desc(), db = bad.Desc();
      ASSERT_EQ(simdnorm_group_norm_backward(&dc), SIMDNORM_OK);
      ASSERT_EQ(simdnorm_group_norm_backward(&db), SIMDNORM_OK);
      for (size_t i = 0; i < s.n; ++i) {
        for (size_t ch = 0; ch < s.c; ++ch) {
          const size_t g = ch / 3;
          const bool nan = (i == 0 && g == 1) || (i == 1 && (g == 0 || g == 3));
          for (size_t q = 0; q < s.hw; ++q) {
            const size_t k = bad.Index(i, ch, q);
            if (nan) {
              ASSERT_EQ(bad.dx.Bits(k),
                        t == SIMDNORM_F32 ? 0x7FC00000u : 0x7FC0u)
                  << Name(bad) << " " << i << " " << ch << " " << q;
            } else {
              ASSERT_EQ(bad.dx.Bits(k), clean.dx.Bits(k))
                  << Name(bad) << " " << i << " " << ch << " " << q;
            }
          }
        }
      }
      for (size_t ch = 0; ch < s.c; ++ch) {
        const size_t g = ch / 3;
        EXPECT_EQ(std::isnan(bad.dgamma[ch]), g <= 1 || g == 3) << ch;
        EXPECT_EQ(std::isinf(bad.dbeta[ch]), ch == 0) << ch;
        EXPECT_FALSE(std::isnan(bad.dbeta[ch])) << ch;
      }
      // The reference agrees on which are NaN.
      const Truth truth = ReferenceOf(bad);
      for (size_t k = 0; k < bad.dx.size(); ++k) {
        ASSERT_EQ(std::isnan(truth.dx.Get(k)), bad.dx.IsNaN(k)) << k;
      }
      for (size_t ch = 0; ch < s.c; ++ch) {
        EXPECT_EQ(std::isnan(truth.dgamma[ch]), std::isnan(bad.dgamma[ch]));
        EXPECT_EQ(std::isinf(truth.dbeta[ch]), std::isinf(bad.dbeta[ch]));
      }
    }
  }
}

// ------------------------------------------------ Jacobian identities
//
// With gamma = 1, per group: dy = 1 gives dx = r (1 - 1 - xhat mean(xhat))
// = 0 for any eps; dy = xhat gives r (xhat - xhat mean(xhat^2)) = xhat r
// eps / (var + eps) (mean(xhat^2) = var r^2), 0 at eps = 0. Each holds
// within the kernels' bound (128 2^-23 M) or the reference's (2^-40 kappa
// M: its double mean moves xhat by 2^-53 max|x| / std), plus 2^-24 M where
// dy is xhat rounded to fp32, plus 2^-24 |want| (fp32 dx).
enum class Run { kReference, kKernels };

void ExpectIdentity(Grad p, const std::vector<double>& dy,
                    const std::vector<double>& want, double extra, Run run,
                    const std::string& what) {
  for (size_t k = 0; k < dy.size(); ++k) p.dy.Set(k, dy[k]);
  simdnorm_group_backward_desc d = p.Desc();
  ASSERT_EQ(run == Run::kReference ? simdnorm_group_norm_backward_reference(&d)
                                   : simdnorm_group_norm_backward(&d),
            SIMDNORM_OK);
  const Exact e = ExactOf(p);
  for (size_t k = 0; k < dy.size(); ++k) {
    const double bound =
        (run == Run::kKernels ? kDxBound * kUlp : 0x1p-40 * e.kappa[k]) + extra;
    ASSERT_LE(std::fabs(p.dx.Get(k) - want[k]),
              bound * e.m[k] + 0x1p-24 * std::fabs(want[k]))
        << what << " element " << k << " want " << want[k];
  }
}

void JacobianIdentities(Run run) {
  const char* who = run == Run::kReference ? "reference " : "kernels ";
  const Shape shapes[] = {{2, 8, 9, 2}, {2, 6, 20, 6}, {1, 5, 40, 1}};
  uint32_t seed = 40;
  for (const Shape& s : shapes) {
    for (simdnorm_layout l : kLayouts) {
      for (double mean : {0.5, 1e4}) {
        for (float eps : {0.0f, 0.5f}) {
          Grad p(s, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
          Fill(p, mean, mean > 1.0 ? 1e-2 : 2.0, seed++);
          p.has_gamma = false;
          p.eps = eps;
          const Exact e = ExactOf(p);
          const size_t size = p.x.size();
          const std::string what = who + Name(p);
          ExpectIdentity(p, std::vector<double>(size, 1.0),
                         std::vector<double>(size, 0.0), 0.0, run,
                         "dy = 1 " + what);
          std::vector<double> want(size);
          for (size_t k = 0; k < size; ++k) {
            // eps / (var + eps) = eps r^2.
            want[k] = e.xhat[k] * e.r[k] * (eps * e.r[k] * e.r[k]);
          }
          ExpectIdentity(p, e.xhat, want, 0x1p-24, run, "dy = xhat " + what);
        }
      }
    }
  }
}

TEST(GroupBackwardReference, JacobianIdentities) {
  JacobianIdentities(Run::kReference);
}

TEST_P(GroupBackwardTest, JacobianIdentities) {
  JacobianIdentities(Run::kKernels);
}

// ------------------------------------------------ finite differences
//
// L = sum(dy * y) with y GroupNorm's forward in float64 (below); x, gamma
// and beta multiples of 2^-8 below 8 in magnitude, so that v +- h and v +-
// h/2 (h = 2^-10) are exact floats. D(h) = dL/dv + C h^2 + O(h^4): the
// tolerance takes |D(h) - D(h/2)|, the rounding of L over 2h, and 2^-24 of
// the reference's fp32 output.
double LossOf(const Grad& p, const std::vector<double>& beta,
              double* abs_sum = nullptr) {
  const Shape& s = p.s;
  const size_t cg = s.c / s.groups, m = cg * s.hw;
  double loss = 0.0, abs_loss = 0.0;
  for (size_t i = 0; i < s.n; ++i) {
    for (size_t g = 0; g < s.groups; ++g) {
      double mean = 0.0, second = 0.0;
      for (size_t q = 0; q < m; ++q)
        mean += p.x.Get(p.Index(i, g * cg + q / s.hw, q % s.hw));
      mean /= static_cast<double>(m);
      for (size_t q = 0; q < m; ++q) {
        const double d =
            p.x.Get(p.Index(i, g * cg + q / s.hw, q % s.hw)) - mean;
        second += d * d;
      }
      const double r = 1.0 / std::sqrt(second / static_cast<double>(m) + p.eps);
      for (size_t q = 0; q < m; ++q) {
        const size_t ch = g * cg + q / s.hw, k = p.Index(i, ch, q % s.hw);
        const double y = (p.x.Get(k) - mean) * r * p.Gamma(ch) + beta[ch];
        loss += p.dy.Get(k) * y;
        abs_loss += std::fabs(p.dy.Get(k) * y);
      }
    }
  }
  if (abs_sum) *abs_sum = abs_loss;
  return loss;
}

TEST(GroupBackwardReference, FiniteDifferences) {
  const Shape shapes[] = {{2, 4, 3, 2}, {2, 3, 4, 3}, {1, 4, 5, 1}};
  Rng rng(18);
  for (const Shape& s : shapes) {
    for (simdnorm_layout l : kLayouts) {
      for (float eps : {0.01f, 100.0f}) {
        Grad p(s, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32);
        Fill(p, 0.0, 1.0, 3);
        p.eps = eps;
        const auto grid = [&](double v) { return std::round(v * 256) / 256; };
        std::vector<double> beta(s.c);
        for (size_t k = 0; k < p.x.size(); ++k) p.x.Set(k, grid(rng.Normal()));
        for (size_t j = 0; j < s.c; ++j) {
          p.gamma.Set(j, grid(1.0 + 0.5 * (rng.Uniform() - 0.5)));
          beta[j] = grid(rng.Normal());
        }
        simdnorm_group_backward_desc d = p.Desc();
        ASSERT_EQ(simdnorm_group_norm_backward_reference(&d), SIMDNORM_OK);
        double scale;
        LossOf(p, beta, &scale);
        scale *= 2;  // room for the perturbed problems' sums
        const std::string what = Name(p);
        // dL/dv by central differences; set(v) changes the problem.
        const auto derivative = [&](const std::function<void(double)>& set,
                                    double v0, double want,
                                    const std::string& which) {
          double fd[2];
          for (int k = 0; k < 2; ++k) {
            const double h = k == 0 ? 0x1p-10 : 0x1p-11;
            set(v0 + h);
            const double up = LossOf(p, beta);
            set(v0 - h);
            const double down = LossOf(p, beta);
            fd[k] = (up - down) / (2 * h);
          }
          set(v0);
          const double tol = std::fabs(fd[0] - fd[1]) +
                             2 * 0x1p-45 * scale / 0x1p-10 +
                             0x1p-24 * std::fabs(want);
          EXPECT_NEAR(want, fd[1], tol) << what << " " << which;
        };
        for (size_t k = 0; k < p.x.size(); ++k) {
          derivative([&](double v) { p.x.Set(k, v); }, p.x.Get(k), p.dx.Get(k),
                     "dx " + std::to_string(k));
        }
        for (size_t j = 0; j < s.c; ++j) {
          derivative([&](double v) { p.gamma.Set(j, v); }, p.gamma.Get(j),
                     p.dgamma[j], "dgamma " + std::to_string(j));
          derivative([&](double v) { beta[j] = v; }, beta[j], p.dbeta[j],
                     "dbeta " + std::to_string(j));
        }
      }
    }
  }
}

// ------------------------------------------------ threads, statuses

// dx, dgamma and dbeta bitwise the same for 1, 2, 3 and the default number
// of threads (units large enough to be split).
TEST(GroupBackwardThreadsTest, BitsDoNotDependOnThreads) {
  for (simdnorm_layout l : kLayouts) {
    Grad first(Shape{4, 32, 1024, 8}, l, SIMDNORM_BF16, SIMDNORM_F32,
               SIMDNORM_F32, SIMDNORM_F32);
    Fill(first, 0.0, 1.0, 3);
    first.max_threads = 1;
    simdnorm_group_backward_desc d = first.Desc();
    ASSERT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
    for (size_t threads : {2, 3, 0}) {
      Grad p = first;
      p.max_threads = threads;
      std::fill(p.dx.bytes.begin(), p.dx.bytes.end(), 0);
      d = p.Desc();
      ASSERT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
      EXPECT_EQ(p.dx.bytes, first.dx.bytes) << threads << " threads";
      EXPECT_EQ(0, std::memcmp(p.dgamma.data(), first.dgamma.data(),
                               p.s.c * sizeof(float)))
          << threads << " threads";
      EXPECT_EQ(0, std::memcmp(p.dbeta.data(), first.dbeta.data(),
                               p.s.c * sizeof(float)))
          << threads << " threads";
    }
  }
}

TEST(GroupBackwardRegistry, GroupNormHasBackward) {
  const simdnorm_op_info* op = simdnorm_op_of(SIMDNORM_GROUPNORM);
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->has_backward, 1);
  EXPECT_EQ(op->descriptor, SIMDNORM_GROUP_DESC);
}

// Each bad descriptor gets its status from both entry points, and nothing
// is written.
TEST(GroupBackwardStatus, BadDescriptorsWriteNothing) {
  struct Case {
    const char* what;
    simdnorm_status want;
    void (*edit)(simdnorm_group_backward_desc& d, Grad& p);
  };
  using D = simdnorm_group_backward_desc;
  const Case kCases[] = {
      {"layout 2", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad&) { d.layout = static_cast<simdnorm_layout>(2); }},
      {"dx_type 7", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad&) { d.dx_type = static_cast<simdnorm_dtype>(7); }},
      {"I8 x", SIMDNORM_UNSUPPORTED,
       [](D& d, Grad&) { d.x_type = SIMDNORM_I8; }},
      {"I8 dy", SIMDNORM_UNSUPPORTED,
       [](D& d, Grad&) { d.dy_type = SIMDNORM_I8; }},
      {"I8 dx", SIMDNORM_UNSUPPORTED,
       [](D& d, Grad&) { d.dx_type = SIMDNORM_I8; }},
      {"I8 param", SIMDNORM_UNSUPPORTED,
       [](D& d, Grad&) { d.param_type = SIMDNORM_I8; }},
      {"eps < 0", SIMDNORM_INVALID_ARGUMENT, [](D& d, Grad&) { d.eps = -1; }},
      {"eps NaN", SIMDNORM_INVALID_ARGUMENT, [](D& d, Grad&) { d.eps = NAN; }},
      {"eps inf", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad&) { d.eps = INFINITY; }},
      {"flags", SIMDNORM_INVALID_ARGUMENT, [](D& d, Grad&) { d.flags = 8; }},
      {"x NULL", SIMDNORM_INVALID_ARGUMENT, [](D& d, Grad&) { d.x = nullptr; }},
      {"dy NULL", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad&) { d.dy = nullptr; }},
      {"dx NULL", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad&) { d.dx = nullptr; }},
      {"c 0", SIMDNORM_INVALID_SHAPE, [](D& d, Grad&) { d.c = 0; }},
      {"hw 0", SIMDNORM_INVALID_SHAPE, [](D& d, Grad&) { d.hw = 0; }},
      {"groups 0", SIMDNORM_INVALID_SHAPE, [](D& d, Grad&) { d.groups = 0; }},
      {"c % groups", SIMDNORM_INVALID_SHAPE, [](D& d, Grad&) { d.groups = 3; }},
      {"size overflow", SIMDNORM_INVALID_SHAPE,
       [](D& d, Grad&) { d.hw = SIZE_MAX / 4; }},
      {"dx over x", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.dx = static_cast<float*>(p.x.data()) + 3; }},
      {"dx over dy, shifted", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.dx = static_cast<float*>(p.dy.data()) + 1; }},
      {"dx = dy, other size", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) {
         d.dx = p.dy.data();
         d.dx_type = SIMDNORM_BF16;
       }},
      {"dx over gamma", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.gamma = static_cast<float*>(p.dx.data()) + 2; }},
      {"dgamma over dbeta", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.dbeta = &p.dgamma[1]; }},
      {"dgamma over x", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.dgamma = static_cast<float*>(p.x.data()) + 5; }},
      {"dbeta over dx", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.dbeta = static_cast<float*>(p.dx.data()) + 7; }},
      {"dgamma over gamma", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) { d.dgamma = static_cast<float*>(p.gamma.data()); }},
      // Saved statistics: n * groups = 8 floats each, both or neither.
      {"mean without rstd", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad& p) {
         p.mean.assign(8, 1.0f);
         d.mean = p.mean.data();
       }},
      {"rstd without mean", SIMDNORM_INVALID_ARGUMENT,
       [](D& d, Grad& p) {
         p.rstd.assign(8, 1.0f);
         d.rstd = p.rstd.data();
       }},
      {"dx over rstd", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) {
         p.mean.assign(8, 1.0f);
         d.mean = p.mean.data();
         d.rstd = static_cast<float*>(p.dx.data()) + 75;
       }},
      {"dgamma over mean", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) {
         p.rstd.assign(8, 1.0f);
         d.rstd = p.rstd.data();
         d.mean = p.dgamma.data() + 4;
       }},
      {"dbeta over mean", SIMDNORM_OVERLAP,
       [](D& d, Grad& p) {
         p.rstd.assign(8, 1.0f);
         d.rstd = p.rstd.data();
         d.mean = p.dbeta.data();
       }},
  };
  for (const Case& c : kCases) {
    for (int reference = 0; reference < 2; ++reference) {
      Grad p(Shape{2, 8, 5, 4}, SIMDNORM_NCHW, SIMDNORM_F32, SIMDNORM_F32,
             SIMDNORM_F32, SIMDNORM_F32);
      Fill(p, 0.0, 1.0, 2);
      std::fill(p.dx.bytes.begin(), p.dx.bytes.end(), 0xAB);
      const Grad before = p;
      simdnorm_group_backward_desc d = p.Desc();
      c.edit(d, p);
      const simdnorm_status s = reference
                                    ? simdnorm_group_norm_backward_reference(&d)
                                    : simdnorm_group_norm_backward(&d);
      EXPECT_EQ(s, c.want) << c.what << (reference ? " (reference)" : "");
      EXPECT_EQ(p.dx.bytes, before.dx.bytes) << c.what;
      EXPECT_EQ(p.dy.bytes, before.dy.bytes) << c.what;
      EXPECT_EQ(p.x.bytes, before.x.bytes) << c.what;
      EXPECT_EQ(p.gamma.bytes, before.gamma.bytes) << c.what;
      EXPECT_EQ(p.dgamma, before.dgamma) << c.what;
      EXPECT_EQ(p.dbeta, before.dbeta) << c.what;
    }
  }
  EXPECT_EQ(simdnorm_group_norm_backward(nullptr), SIMDNORM_INVALID_ARGUMENT);
  Grad p(Shape{2, 8, 5, 4}, SIMDNORM_NHWC, SIMDNORM_F32, SIMDNORM_F32,
         SIMDNORM_F32, SIMDNORM_F32);
  Fill(p, 0.0, 1.0, 2);
  const std::vector<uint8_t> sentinel = p.dx.bytes;
  const simdnorm_group_backward_desc good = p.Desc();
  ExpectDescriptorSizes(simdnorm_group_norm_backward_sized, good,
                        SIMDNORM_GROUP_BACKWARD_DESC_MIN_SIZE,
                        [&] { EXPECT_EQ(p.dx.bytes, sentinel); });
  // n = 0: the sums over no samples are zeros; x, dy, dx may be NULL.
  simdnorm_group_backward_desc d = good;
  d.n = 0;
  d.x = d.dy = nullptr;
  d.dx = nullptr;
  EXPECT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
  EXPECT_EQ(p.dgamma, std::vector<float>(8, 0.0f));
  EXPECT_EQ(p.dbeta, std::vector<float>(8, 0.0f));
  // ... but the shape of the sums must be valid.
  d.c = 0;
  EXPECT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_INVALID_SHAPE);
  d.dgamma = d.dbeta = nullptr;
  EXPECT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
  // The saved statistics are inputs: they may overlap each other and the
  // other inputs (x, dy, gamma), and are not read when n = 0.
  d = good;
  d.mean = d.rstd = static_cast<const float*>(p.gamma.data());
  EXPECT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
  d = good;
  d.n = 0;
  d.mean = d.rstd = static_cast<const float*>(p.dx.data());
  EXPECT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
}

// The C++ wrapper is the C call, with Options::stats as mean and rstd
// (those of simdnorm::group_norm's Options::stats).
TEST(GroupBackwardCpp, WrapperIsTheCCall) {
  Grad p(Shape{2, 12, 20, 3}, SIMDNORM_NHWC, SIMDNORM_F32, SIMDNORM_F32,
         SIMDNORM_F32, SIMDNORM_F32);
  Fill(p, 1e4, 1e-2, 8);
  const auto* x = static_cast<const float*>(p.x.data());
  const auto* dy = static_cast<const float*>(p.dy.data());
  const auto* gamma = static_cast<const float*>(p.gamma.data());
  std::vector<float> y(p.x.size()), dx(p.x.size()), mean(6), rstd(6);
  std::vector<float> dgamma(12), dbeta(12);
  simdnorm::Options opt;
  opt.eps = p.eps;
  opt.stats = {mean.data(), rstd.data()};
  ASSERT_EQ(
      simdnorm::group_norm(x, y.data(), 2, 12, 20, 3, simdnorm::Layout::kNHWC,
                           gamma, static_cast<const float*>(nullptr), opt),
      simdnorm::Status::kOk);
  for (bool saved : {false, true}) {
    if (saved) SaveStatistics(p);
    simdnorm_group_backward_desc d = p.Desc();
    ASSERT_EQ(simdnorm_group_norm_backward(&d), SIMDNORM_OK);
    simdnorm::Options o = opt;
    if (!saved) o.stats = {};
    ASSERT_EQ(simdnorm::group_norm_backward(x, dy, dx.data(), 2, 12, 20, 3,
                                            simdnorm::Layout::kNHWC, gamma,
                                            dgamma.data(), dbeta.data(), o),
              simdnorm::Status::kOk);
    EXPECT_EQ(0, std::memcmp(dx.data(), p.dx.data(), dx.size() * 4)) << saved;
    EXPECT_EQ(dgamma, p.dgamma) << saved;
    EXPECT_EQ(dbeta, p.dbeta) << saved;
  }
  EXPECT_EQ(mean, p.mean);
  EXPECT_EQ(rstd, p.rstd);
  opt.gamma_offset = 1.0f;
  EXPECT_EQ(simdnorm::group_norm_backward(x, dy, dx.data(), 2, 12, 20, 3,
                                          simdnorm::Layout::kNHWC, gamma,
                                          dgamma.data(), dbeta.data(), opt),
            simdnorm::Status::kInvalidArgument);
}

SIMDNORM_INSTANTIATE_PER_ISA(GroupBackwardTest);

}  // namespace
}  // namespace simdnorm_test

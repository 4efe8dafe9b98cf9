// BatchNorm's backward pass (simdnorm_batch_norm_backward) on every ISA,
// training and inference, both layouts: the kernels against the float64
// formulas (which the library's reference must match) over dtype triples
// and shapes, hard data, the Jacobian identities of a channel, central
// differences of a float64 forward against the reference, NaN channels
// isolated, in place, the forward's saved statistics (save_mean,
// save_invstd) in place of recomputed ones, bitwise identity over thread
// counts, the C++ wrapper, bad descriptors.
//
// The bounds (docs/accuracy.md, "Backward", BatchNorm): per element j of
// a channel of M = n * hw elements, r = 1 / sqrt(var + eps), training
// (LayerNorm's over the channel, tau = 1, w = 1 / M):
//   |dx - exact| <= kDxBound * 2^-23 * M_j,
//   M_j = r |gamma| (|dy_j| + mean|dy| + (|xhat_j| + 1) mean(|dy| (|xhat| +
//   1)));
// inference (dx = dy * (gamma * r): two roundings):
//   |dx - exact| <= kInferenceBound * 2^-23 * |exact|;
// 16-bit dx: a rounding of some value within that bound of the exact one.
//   |dgamma - exact| <= kDgammaBound * 2^-23 * sum |dy| (|xhat| + tau),
//   |dbeta - exact|  <= kDbetaBound * 2^-23 * sum |dy|
// (tau = 1 in training, 0 in inference), each plus 2^-24 of the value.
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

constexpr double kUlp = 0x1p-23;
constexpr double kDxBound = 128.0;
constexpr double kInferenceBound = 2.0;
constexpr double kDgammaBound = 64.0;
constexpr double kDbetaBound = 32.0;

struct Shape {
  size_t n, c, hw;
};

struct Types {
  simdnorm_dtype x, dy, dx, param;
};

struct Problem {
  Shape s;
  simdnorm_layout layout;
  Tensor x, dy, dx, gamma;
  std::vector<float> rm, rv, dgamma, dbeta;
  // Training: the forward's saved statistics (c each), or empty: none.
  std::vector<float> save_mean, save_invstd;
  bool has_gamma = true, training = true, in_place = false, sums = true;
  float eps = 1e-5f;

  Problem(Shape shape, simdnorm_layout l, Types t, bool train)
      : s(shape),
        layout(l),
        x(t.x, shape.n * shape.c * shape.hw),
        dy(t.dy, shape.n * shape.c * shape.hw),
        dx(t.dx, shape.n * shape.c * shape.hw),
        gamma(t.param, shape.c),
        rm(shape.c),
        rv(shape.c),
        dgamma(shape.c, -7.0f),
        dbeta(shape.c, -7.0f),
        training(train) {}

  size_t Index(size_t i, size_t ch, size_t p) const {
    return ChannelIndex(s.c, s.hw, layout, i, ch, p);
  }
  const Tensor& Out() const { return in_place ? dy : dx; }
  double Gamma(size_t ch) const { return has_gamma ? gamma.Get(ch) : 1.0; }

  simdnorm_batch_backward_desc Desc(size_t max_threads = 0) {
    simdnorm_batch_backward_desc d{};
    d.n = s.n;
    d.c = s.c;
    d.hw = s.hw;
    d.layout = layout;
    d.x = x.data();
    d.x_type = x.t;
    d.dy = dy.data();
    d.dy_type = dy.t;
    d.dx = in_place ? dy.data() : dx.data();
    d.dx_type = in_place ? dy.t : dx.t;
    d.gamma = has_gamma ? gamma.data() : nullptr;
    d.param_type = gamma.t;
    d.running_mean = rm.data();
    d.running_var = rv.data();
    d.eps = eps;
    d.training = training ? 1 : 0;
    d.dgamma = sums ? dgamma.data() : nullptr;
    d.dbeta = sums ? dbeta.data() : nullptr;
    d.max_threads = max_threads;
    d.save_mean = save_mean.empty() ? nullptr : save_mean.data();
    d.save_invstd = save_invstd.empty() ? nullptr : save_invstd.data();
    return d;
  }
};

// The training forward's save_mean and save_invstd of p's x (the kernels',
// f32 y; running statistics untouched: none given) into p.
void SaveStatistics(Problem& p) {
  p.save_mean.assign(p.s.c, -1.0f);
  p.save_invstd.assign(p.s.c, -1.0f);
  std::vector<float> y(p.x.size());
  simdnorm_batch_desc f{};
  FillChannelForward(f, p.s.n, p.s.c, p.s.hw, p.layout, p.x, y.data(), p.eps);
  f.save_mean = p.save_mean.data();
  f.save_invstd = p.save_invstd.data();
  f.training = 1;
  EXPECT_EQ(simdnorm_batch_norm(&f), SIMDNORM_OK);
}

// x = mean + sd * N(0, 1), dy ~ N(0, 1), gamma ~ N(1, 0.5), running
// statistics near the data's.
void Fill(Problem& p, double mean, double sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  for (size_t i = 0; i < p.x.size(); ++i) {
    p.x.Set(i, mean + sd * normal(rng));
    p.dy.Set(i, normal(rng));
  }
  for (size_t j = 0; j < p.s.c; ++j) {
    p.gamma.Set(j, 1.0 + 0.5 * normal(rng));
    p.rm[j] = static_cast<float>(mean + 0.1 * sd * normal(rng));
    p.rv[j] = static_cast<float>(sd * sd * uniform(rng));
  }
}

// The exact gradients from the formulas in double, the bound of each dx
// (see top) and of each channel's dgamma and dbeta, and xhat.
struct Exact {
  std::vector<double> dx, bound, xhat, dgamma, dbeta, dgamma_bound, dbeta_bound,
      m;                              // m: M_j (training) or |dx| (inference)
  std::vector<double> var, r, kappa;  // per channel
};

Exact ExactOf(const Problem& p) {
  const Shape& s = p.s;
  const size_t size = p.x.size(), m = s.n * s.hw;
  const double md = static_cast<double>(m);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Exact e;
  for (auto* v : {&e.dx, &e.bound, &e.xhat, &e.m}) v->assign(size, 0.0);
  std::vector<size_t> idx(m);
  for (size_t ch = 0; ch < s.c; ++ch) {
    bool finite = true;
    double mean = p.rm[ch], var = p.rv[ch], largest = 0.0;
    for (size_t k = 0; k < m; ++k) {
      idx[k] = p.Index(k / s.hw, ch, k % s.hw);
      finite = finite && std::isfinite(p.x.Get(idx[k])) &&
               std::isfinite(p.dy.Get(idx[k]));
      largest = std::max(largest, std::fabs(p.x.Get(idx[k])));
    }
    if (p.training) {
      mean = var = 0.0;
      for (size_t k : idx) mean += p.x.Get(k);
      mean /= md;
      for (size_t k : idx) var += (p.x.Get(k) - mean) * (p.x.Get(k) - mean);
      var /= md;
    }
    const double r = 1.0 / std::sqrt(var + static_cast<double>(p.eps));
    const double gm = p.Gamma(ch), tau = p.training ? 1.0 : 0.0;
    double sum_g = 0.0, sum_gx = 0.0, dgamma = 0.0, dbeta = 0.0;
    double abs_dy = 0.0, abs_dyx = 0.0, dg_bound = 0.0;
    for (size_t k : idx) {
      const double xhat = (p.x.Get(k) - mean) * r, dy = p.dy.Get(k);
      e.xhat[k] = xhat;
      sum_g += dy * gm;
      sum_gx += dy * gm * xhat;
      dgamma += dy * xhat;
      dbeta += dy;
      abs_dy += std::fabs(dy);
      abs_dyx += std::fabs(dy) * (std::fabs(xhat) + 1.0);
      dg_bound += std::fabs(dy) * (std::fabs(xhat) + tau);
    }
    const bool nan_channel =
        !std::isfinite(r) || std::isnan(mean) || (p.training && !finite);
    for (size_t k : idx) {
      const double dy = p.dy.Get(k), g = dy * gm, xhat = e.xhat[k];
      double dx, scale;
      if (p.training) {
        dx = r * (g - sum_g / md - xhat * (sum_gx / md));
        scale = r * std::fabs(gm) *
                (std::fabs(dy) + abs_dy / md +
                 (std::fabs(xhat) + 1.0) * abs_dyx / md);
        e.bound[k] = kDxBound * kUlp * scale + 0x1p-24 * std::fabs(dx);
      } else {
        dx = g * r;
        scale = std::fabs(dx);
        e.bound[k] = kInferenceBound * kUlp * scale;
      }
      e.dx[k] = nan_channel ? nan : dx;
      e.m[k] = scale;
    }
    e.dgamma.push_back(nan_channel ? nan : dgamma);
    e.dbeta.push_back(dbeta);
    e.dgamma_bound.push_back(kDgammaBound * kUlp * dg_bound +
                             0x1p-24 * std::fabs(dgamma));
    e.dbeta_bound.push_back(kDbetaBound * kUlp * abs_dy +
                            0x1p-24 * std::fabs(dbeta));
    e.var.push_back(var);
    e.r.push_back(r);
    e.kappa.push_back(p.training ? 1.0 + largest / std::sqrt(var) : 1.0);
  }
  return e;
}

// A per-channel sum against its exact value (NaN where it is NaN).
void ExpectSum(float got, double exact, double bound, const std::string& what,
               const char* name, size_t ch) {
  if (std::isnan(exact)) {
    EXPECT_TRUE(std::isnan(got)) << what << " " << name << "[" << ch << "]";
  } else if (got != static_cast<float>(exact)) {
    EXPECT_LE(std::fabs(got - exact), bound)
        << what << " " << name << "[" << ch << "] = " << got << ", exact "
        << exact;
  }
}

// The largest |dx - exact| / (2^-23 M) on fp32 training dx (reported).
double g_worst = 0.0;

void ReportWorst() {
  std::printf("%s: fp32 training dx within %.2f of 2^-23 M (bound %.0f)\n",
              simdnorm_active_isa(), g_worst, kDxBound);
  g_worst = 0.0;
}

std::string Name(const Problem& p, const std::string& extra = "") {
  return std::string(simdnorm_active_isa()) + " " +
         (p.layout == SIMDNORM_NCHW ? "NCHW" : "NHWC") + " (" +
         std::to_string(p.s.n) + ", " + std::to_string(p.s.c) + ", " +
         std::to_string(p.s.hw) + ") " +
         (p.training ? "training" : "inference") + " x " + DTypeName(p.x.t) +
         " dy " + DTypeName(p.dy.t) + " dx " + DTypeName(p.Out().t) +
         " gamma " + (p.has_gamma ? DTypeName(p.gamma.t) : "none") + " eps " +
         std::to_string(p.eps) + extra;
}

// Runs the kernels and checks dx, dgamma and dbeta; then the library's
// reference (fp32 dx), which must be within 2^-40 kappa M of the exact
// values (double sums in another order) and round once.
void RunAndCheck(Problem p, const std::string& what) {
  const Exact e = ExactOf(p);
  Problem q = p;  // for the reference (p.dy may become dx)
  simdnorm_batch_backward_desc d = p.Desc();
  ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK) << what;
  CheckWithin(p.Out(), e.dx, e.bound, what.c_str());
  if (p.Out().t == SIMDNORM_F32 && p.training) {
    for (size_t k = 0; k < e.dx.size(); ++k) {
      if (e.m[k] > 0 && !std::isnan(e.dx[k])) {
        g_worst = std::max(
            g_worst, std::fabs(p.Out().Get(k) - e.dx[k]) / (kUlp * e.m[k]));
      }
    }
  }
  for (size_t ch = 0; ch < p.s.c && p.sums; ++ch) {
    ExpectSum(p.dgamma[ch], e.dgamma[ch], e.dgamma_bound[ch], what, "dgamma",
              ch);
    ExpectSum(p.dbeta[ch], e.dbeta[ch], e.dbeta_bound[ch], what, "dbeta", ch);
  }
  // The reference, out of place into fp32.
  q.in_place = false;
  q.dx = Tensor(SIMDNORM_F32, p.x.size());
  q.sums = true;
  d = q.Desc();
  ASSERT_EQ(simdnorm_batch_norm_backward_reference(&d), SIMDNORM_OK) << what;
  std::vector<double> tight(e.dx.size());
  for (size_t k = 0; k < tight.size(); ++k) {
    const size_t ch =
        p.layout == SIMDNORM_NCHW ? k / p.s.hw % p.s.c : k % p.s.c;
    tight[k] = 0x1p-40 * e.kappa[ch] * e.m[k] + 0x1p-24 * std::fabs(e.dx[k]);
  }
  CheckWithin(q.dx, e.dx, tight, (what + " reference").c_str());
  for (size_t ch = 0; ch < p.s.c; ++ch) {
    ExpectSum(q.dgamma[ch], e.dgamma[ch],
              0x1p-24 * std::fabs(e.dgamma[ch]) + 0x1p-40 * e.dgamma_bound[ch],
              what + " reference", "dgamma", ch);
    ExpectSum(q.dbeta[ch], e.dbeta[ch],
              0x1p-24 * std::fabs(e.dbeta[ch]) + 0x1p-40 * e.dbeta_bound[ch],
              what + " reference", "dbeta", ch);
  }
}

const simdnorm_layout kLayouts[] = {SIMDNORM_NCHW, SIMDNORM_NHWC};

SIMDNORM_ISA_FIXTURE(BatchBackwardTest);

// Shapes (hw = 1, odd sizes, NHWC blocks of 16 full and partial), dtype
// triples, gamma absent or 16-bit, eps 0, sums not wanted.
TEST_P(BatchBackwardTest, MatchesReference) {
  const Shape kShapes[] = {
      {2, 5, 7}, {3, 4, 1}, {4, 20, 9}, {2, 40, 50}, {3, 17, 33}};
  const Types kTypes[] = {
      {SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
      {SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_F32},
      {SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F32},
      {SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_BF16},
      {SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_F16, SIMDNORM_F16},
      {SIMDNORM_F16, SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_BF16},
  };
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (simdnorm_layout l : kLayouts) {
      for (bool training : {true, false}) {
        for (const Types& t : kTypes) {
          Problem p(s, l, t, training);
          Fill(p, 0.5, 2.0, seed++);
          p.has_gamma = seed % 5 != 0;
          p.sums = seed % 7 != 0;
          p.eps = seed % 3 == 0 ? 0.0f : 1e-5f;
          RunAndCheck(p, Name(p));
        }
      }
    }
  }
  ReportWorst();
}

// Data that defeats naive statistics: a large mean with a small spread
// (the forward's shift), 1e+-25 (its rescaling), a channel's first
// element 20 sd from its mean; inference with running statistics equal to
// the data's.
TEST_P(BatchBackwardTest, HardData) {
  struct Data {
    const char* what;
    double mean, sd;
  };
  const Data kData[] = {{" mean 1e4, sd 1e-2", 1e4, 1e-2},
                        {" 1e25", 0.0, 1e25},
                        {" 1e-25", 0.0, 1e-25},
                        {" mean -3e20, sd 1e18", -3e20, 1e18}};
  uint32_t seed = 100;
  for (const Data& data : kData) {
    for (const Shape& s : {Shape{3, 18, 40}, Shape{2, 5, 9}}) {
      for (simdnorm_layout l : kLayouts) {
        for (bool training : {true, false}) {
          for (simdnorm_dtype dxt : {SIMDNORM_F32, SIMDNORM_BF16}) {
            Problem p(s, l,
                      Types{SIMDNORM_F32, SIMDNORM_F32, dxt, SIMDNORM_F32},
                      training);
            Fill(p, data.mean, data.sd, seed++);
            p.eps = 0.0f;
            for (size_t ch = 0; ch < s.c; ++ch) {
              p.rm[ch] = static_cast<float>(data.mean);
              p.rv[ch] = static_cast<float>(
                  std::min(std::max(data.sd * data.sd, 1e-30), 1e30));
              if (seed % 2)
                p.x.Set(p.Index(0, ch, 0), data.mean + 20 * data.sd);
            }
            RunAndCheck(p, Name(p, data.what));
          }
        }
      }
    }
  }
  ReportWorst();
}

// Jacobian identities of a channel in training with gamma = 1 (J is that
// of LayerNorm over the channel's M elements, docs/accuracy.md):
//   dy = 1:    dx = r (1 - 1 - xhat mean(xhat)) = 0 (any eps);
//   dy = xhat: dx = r (xhat - xhat mean(xhat^2)) = xhat r eps / (var + eps)
//              (mean(xhat^2) = var r^2), 0 at eps = 0.
// Each holds within the kernels' bound (2^-40 kappa M for the reference),
// plus 2^-24 M where dy is xhat rounded to fp32.
enum class Run { kReference, kKernels };

void JacobianIdentities(Run run) {
  const char* who = run == Run::kReference ? "reference " : "kernels ";
  uint32_t seed = 40;
  for (const Shape& s : {Shape{2, 6, 33}, Shape{4, 20, 1}, Shape{3, 17, 50}}) {
    for (simdnorm_layout l : kLayouts) {
      for (double mean : {0.3, 1e4}) {
        for (float eps : {0.0f, 0.5f}) {
          Problem p(
              s, l,
              Types{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
              true);
          Fill(p, mean, mean > 1.0 ? 1e-2 : 1.0, seed++);
          p.has_gamma = false;
          p.eps = eps;
          const std::string what = std::string(who) + Name(p);
          for (int which = 0; which < 2; ++which) {
            Exact e = ExactOf(p);  // xhat, var, r of x
            std::vector<double> want(p.x.size());
            for (size_t k = 0; k < want.size(); ++k) {
              const size_t ch = l == SIMDNORM_NCHW ? k / s.hw % s.c : k % s.c;
              p.dy.Set(k, which == 0 ? 1.0 : e.xhat[k]);
              want[k] = which == 0
                            ? 0.0
                            : e.xhat[k] * e.r[ch] * eps / (e.var[ch] + eps);
            }
            e = ExactOf(p);  // M with this dy
            simdnorm_batch_backward_desc d = p.Desc();
            ASSERT_EQ(run == Run::kKernels
                          ? simdnorm_batch_norm_backward(&d)
                          : simdnorm_batch_norm_backward_reference(&d),
                      SIMDNORM_OK);
            for (size_t k = 0; k < want.size(); ++k) {
              const size_t ch = l == SIMDNORM_NCHW ? k / s.hw % s.c : k % s.c;
              const double ulps =
                  (run == Run::kKernels ? kDxBound * kUlp
                                        : 0x1p-40 * e.kappa[ch]) +
                  (which == 1 ? 0x1p-24 : 0.0);
              ASSERT_LE(std::fabs(p.dx.Get(k) - want[k]),
                        ulps * e.m[k] + 0x1p-24 * std::fabs(want[k]))
                  << what << (which ? " dy = xhat" : " dy = 1") << " element "
                  << k << " want " << want[k];
            }
          }
        }
      }
    }
  }
}

TEST(BatchBackwardReference, JacobianIdentities) {
  JacobianIdentities(Run::kReference);
}

TEST_P(BatchBackwardTest, JacobianIdentities) {
  JacobianIdentities(Run::kKernels);
}

// Central differences of L = sum(dy * y), y from a float64 forward of
// simdnorm.h's formulas, against the reference's dx, dgamma and dbeta.
// x, gamma and beta are multiples of 2^-8; D(h) = dL/dv + C h^2 + O(h^4),
// so D(h/2) is within |D(h) - D(h/2)| of the derivative; the rounding of
// L over 2h adds 2 * 2^-50 sum|dy y| / h.
double Loss(const Problem& p, const std::vector<double>& x,
            const std::vector<double>& gamma, const std::vector<double>& beta,
            double* abs_sum = nullptr) {
  const Shape& s = p.s;
  const size_t m = s.n * s.hw;
  double loss = 0.0, abs_loss = 0.0;
  for (size_t ch = 0; ch < s.c; ++ch) {
    double mean = p.rm[ch], var = p.rv[ch];
    if (p.training) {
      mean = var = 0.0;
      for (size_t k = 0; k < m; ++k) mean += x[p.Index(k / s.hw, ch, k % s.hw)];
      mean /= static_cast<double>(m);
      for (size_t k = 0; k < m; ++k) {
        const double v = x[p.Index(k / s.hw, ch, k % s.hw)] - mean;
        var += v * v;
      }
      var /= static_cast<double>(m);
    }
    const double r = 1.0 / std::sqrt(var + static_cast<double>(p.eps));
    for (size_t k = 0; k < m; ++k) {
      const size_t i = p.Index(k / s.hw, ch, k % s.hw);
      const double y = (x[i] - mean) * r * gamma[ch] + beta[ch];
      loss += p.dy.Get(i) * y;
      abs_loss += std::fabs(p.dy.Get(i) * y);
    }
  }
  if (abs_sum) *abs_sum = abs_loss;
  return loss;
}

TEST(BatchBackwardReference, FiniteDifferences) {
  std::mt19937 rng(18);
  std::normal_distribution<double> normal;
  const auto grid = [&](double v) { return std::round(v * 256.0) / 256.0; };
  for (const Shape& s : {Shape{2, 3, 2}, Shape{3, 2, 1}}) {
    for (simdnorm_layout l : kLayouts) {
      for (bool training : {true, false}) {
        for (float eps : {0.01f, 4.0f}) {
          const Types t{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32};
          Problem p(s, l, t, training);
          Fill(p, 0.0, 1.0, 7);
          p.eps = eps;
          std::vector<double> x(p.x.size()), gamma(s.c), beta(s.c);
          for (size_t k = 0; k < x.size(); ++k) {
            x[k] = grid(normal(rng));
            p.x.Set(k, x[k]);
          }
          for (size_t j = 0; j < s.c; ++j) {
            gamma[j] = grid(1.0 + 0.5 * normal(rng));
            beta[j] = grid(normal(rng));
            p.gamma.Set(j, gamma[j]);
          }
          simdnorm_batch_backward_desc d = p.Desc();
          ASSERT_EQ(simdnorm_batch_norm_backward_reference(&d), SIMDNORM_OK);
          double scale;
          Loss(p, x, gamma, beta, &scale);
          const std::string what = Name(p);
          const auto check = [&](double* v, double want, const std::string& w) {
            const double v0 = *v;
            double fd[2];
            for (int k = 0; k < 2; ++k) {
              const double h = k == 0 ? 0x1p-10 : 0x1p-11;
              *v = v0 + h;
              const double up = Loss(p, x, gamma, beta);
              *v = v0 - h;
              fd[k] = (up - Loss(p, x, gamma, beta)) / (2 * h);
            }
            *v = v0;
            const double tol = std::fabs(fd[0] - fd[1]) +
                               4 * 0x1p-50 * scale / 0x1p-11 +
                               0x1p-24 * std::fabs(want);
            EXPECT_NEAR(want, fd[1], tol) << what << " " << w;
          };
          for (size_t k = 0; k < x.size(); ++k) {
            check(&x[k], p.dx.Get(k), "dx " + std::to_string(k));
          }
          for (size_t j = 0; j < s.c; ++j) {
            check(&gamma[j], p.dgamma[j], "dgamma " + std::to_string(j));
            check(&beta[j], p.dbeta[j], "dbeta " + std::to_string(j));
          }
        }
      }
    }
  }
}

// Training: a NaN in x (channel 2), an inf in dy (channel 7) and a
// constant channel 9 with eps = 0 make those channels' dx the default
// quiet NaN and their dgamma NaN; every other channel has the bits of a
// clean call. Inference: x does not enter dx, a NaN in dy is its element's
// alone, running_var + eps = 0 makes channel 4 NaN.
TEST_P(BatchBackwardTest, NaNChannelsAreIsolated) {
  const Shape s{3, 20, 10};
  for (simdnorm_layout l : kLayouts) {
    for (int v = 0; v < 4; ++v) {
      const simdnorm_dtype t = v % 2 ? SIMDNORM_BF16 : SIMDNORM_F32;
      const bool saved = v >= 2;  // training's: the NaN ones recomputed
      const Types types{t, t, t, SIMDNORM_F32};
      Problem clean(s, l, types, true);
      Fill(clean, 1.0, 1.0, 5);
      clean.eps = 0.0f;
      for (size_t i = 0; i < s.n; ++i)
        for (size_t q = 0; q < s.hw; ++q)
          clean.x.Set(clean.Index(i, 9, q), 2.5);
      Problem bad = clean;
      bad.x.Set(bad.Index(1, 2, 7), NAN);
      bad.dy.Set(bad.Index(2, 7, 3), INFINITY);
      if (saved) {
        SaveStatistics(clean);
        SaveStatistics(bad);
        EXPECT_TRUE(std::isnan(bad.save_invstd[2]) &&
                    std::isinf(bad.save_invstd[9]));
      }
      simdnorm_batch_backward_desc dc = clean.Desc(), db = bad.Desc();
      ASSERT_EQ(simdnorm_batch_norm_backward(&dc), SIMDNORM_OK);
      ASSERT_EQ(simdnorm_batch_norm_backward(&db), SIMDNORM_OK);
      RunAndCheck(bad, Name(bad, " non-finite"));
      const uint32_t qnan = t == SIMDNORM_F32 ? 0x7FC00000u : 0x7FC0u;
      for (size_t i = 0; i < s.n; ++i) {
        for (size_t ch = 0; ch < s.c; ++ch) {
          for (size_t q = 0; q < s.hw; ++q) {
            const size_t k = bad.Index(i, ch, q);
            if (ch == 2 || ch == 7 || ch == 9) {
              ASSERT_EQ(bad.dx.Bits(k), qnan) << ch;
            } else {
              ASSERT_EQ(bad.dx.Bits(k), clean.dx.Bits(k)) << ch;
            }
          }
        }
      }
      for (size_t ch = 0; ch < s.c; ++ch) {
        const bool nan = ch == 2 || ch == 7 || ch == 9;
        EXPECT_EQ(std::isnan(bad.dgamma[ch]), nan) << ch;
        if (!nan) {
          EXPECT_EQ(bad.dgamma[ch], clean.dgamma[ch]) << ch;
        }
        EXPECT_EQ(bad.dbeta[ch], ch == 7 ? INFINITY : clean.dbeta[ch]) << ch;
      }

      Problem inf_clean(s, l, types, false);
      Fill(inf_clean, 1.0, 1.0, 6);
      inf_clean.eps = 0.0f;
      inf_clean.rv[4] = 0.0f;
      Problem inf_bad = inf_clean;
      inf_bad.x.Set(inf_bad.Index(1, 2, 7), NAN);
      inf_bad.dy.Set(inf_bad.Index(0, 5, 1), NAN);
      dc = inf_clean.Desc();
      db = inf_bad.Desc();
      ASSERT_EQ(simdnorm_batch_norm_backward(&dc), SIMDNORM_OK);
      ASSERT_EQ(simdnorm_batch_norm_backward(&db), SIMDNORM_OK);
      RunAndCheck(inf_bad, Name(inf_bad, " non-finite"));
      size_t nans = 0;
      for (size_t k = 0; k < inf_bad.dx.size(); ++k) {
        if (inf_bad.dx.IsNaN(k)) {
          ++nans;
        } else {
          EXPECT_EQ(inf_bad.dx.Bits(k), inf_clean.dx.Bits(k)) << k;
        }
      }
      EXPECT_EQ(nans, s.n * s.hw + 1);
      EXPECT_TRUE(std::isnan(inf_bad.dgamma[4]) &&
                  std::isnan(inf_bad.dgamma[2]));
    }
  }
}

// Training on the forward's saved statistics: within the same bounds of
// the exact gradients (and the reference), on data whose fp32 mean is 5 %
// of a deviation off (1e4 + N(0, 1) / 100: the correction c), both
// layouts, NHWC blocks of 64 channels full and partial, 16-bit data;
// channels whose save_invstd is not positive and finite (NaN, 0, inf) or
// whose save_mean is not finite are recomputed. Inference does not read
// them: the same bits as without.
TEST_P(BatchBackwardTest, SavedStatistics) {
  struct Data {
    const char* what;
    double mean, sd;
  };
  const Data kData[] = {{" saved", 0.5, 2.0},
                        {" saved, mean 1e4, sd 1e-2", 1e4, 1e-2}};
  uint32_t seed = 500;
  for (const Data& data : kData) {
    for (const Shape& s : {Shape{3, 18, 40}, Shape{2, 70, 9}}) {
      for (simdnorm_layout l : kLayouts) {
        for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16}) {
          // (bf16 x of 1e4 + N(0, 1) / 100 is constant: f32 x there.)
          const simdnorm_dtype xt = data.mean > 1.0 ? SIMDNORM_F32 : t;
          Problem p(s, l, Types{xt, t, t, SIMDNORM_F32}, true);
          Fill(p, data.mean, data.sd, seed++);
          p.eps = seed % 3 == 0 ? 0.0f : 1e-5f;
          SaveStatistics(p);
          std::string extra = data.what;
          if (seed % 2 == 0) {  // some recomputed
            p.save_invstd[0] = seed % 4 == 0 ? NAN : 0.0f;
            p.save_invstd[s.c - 1] = INFINITY;
            p.save_mean[1] = NAN;
            extra += ", three unusable";
          }
          RunAndCheck(p, Name(p, extra));
        }
      }
    }
  }
  ReportWorst();
  for (simdnorm_layout l : kLayouts) {
    Problem p(Shape{2, 20, 9}, l,
              Types{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
              false);
    Fill(p, 1.0, 1.0, 9);
    simdnorm_batch_backward_desc d = p.Desc();
    ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
    const std::vector<uint8_t> plain = p.dx.bytes;
    std::fill(p.dx.bytes.begin(), p.dx.bytes.end(), 0);
    d.save_mean = static_cast<const float*>(p.dx.data());  // not read
    ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
    EXPECT_EQ(p.dx.bytes, plain);
  }
}

// dx == dy: the same bits as out of place.
TEST_P(BatchBackwardTest, InPlace) {
  for (simdnorm_layout l : kLayouts) {
    for (bool training : {true, false}) {
      for (simdnorm_dtype t : {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}) {
        Problem p(Shape{3, 21, 13}, l, Types{t, t, t, SIMDNORM_F32}, training);
        Fill(p, -1.0, 3.0, 11);
        simdnorm_batch_backward_desc d = p.Desc();
        ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
        const std::vector<float> dgamma = p.dgamma, dbeta = p.dbeta;
        p.in_place = true;
        d = p.Desc();
        ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
        EXPECT_EQ(p.dy.bytes, p.dx.bytes) << Name(p);
        EXPECT_EQ(p.dgamma, dgamma) << Name(p);
        EXPECT_EQ(p.dbeta, dbeta) << Name(p);
      }
    }
  }
}

// Bitwise the same dx, dgamma and dbeta for 1, 2, 3 and the default
// number of threads, with the best ISA (as the row backward's test; the
// split does not depend on the ISA): (4, 40, 320) is three blocks of
// work in both layouts (parallel_rows.cc: 64 Ki per block); (4, 136, 120)
// is three NHWC units (64, 64 and 8 channels).
TEST(BatchBackwardThreadsTest, ThreadCountDoesNotChangeBits) {
  for (const Shape& s : {Shape{4, 40, 320}, Shape{4, 136, 120}}) {
    for (simdnorm_layout l : kLayouts) {
      for (bool training : {true, false}) {
        Problem p(
            s, l,
            Types{SIMDNORM_BF16, SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F32},
            training);
        Fill(p, 0.0, 1.0, 3);
        simdnorm_batch_backward_desc d = p.Desc(1);
        ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
        const std::vector<uint8_t> one = p.dx.bytes;
        const std::vector<float> dgamma = p.dgamma, dbeta = p.dbeta;
        for (size_t threads : {2, 3, 0}) {
          std::fill(p.dx.bytes.begin(), p.dx.bytes.end(), 0);
          std::fill(p.dgamma.begin(), p.dgamma.end(), 0.0f);
          std::fill(p.dbeta.begin(), p.dbeta.end(), 0.0f);
          d = p.Desc(threads);
          ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
          EXPECT_EQ(p.dx.bytes, one) << Name(p) << threads << " threads";
          EXPECT_EQ(p.dgamma, dgamma) << Name(p) << threads << " threads";
          EXPECT_EQ(p.dbeta, dbeta) << Name(p) << threads << " threads";
        }
      }
    }
  }
}

SIMDNORM_INSTANTIATE_PER_ISA(BatchBackwardTest);

// The C++ wrapper is the C call; in training Options::stats are
// save_mean and save_invstd (those simdnorm::batch_norm wrote through its
// Options::stats).
TEST(BatchBackwardCpp, WrapperIsTheCCall) {
  const Shape s{2, 70, 9};
  Problem p(s, SIMDNORM_NHWC,
            Types{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
            true);
  Fill(p, 1e4, 1e-2, 12);
  const auto* x = static_cast<const float*>(p.x.data());
  const auto* dy = static_cast<const float*>(p.dy.data());
  const auto* gamma = static_cast<const float*>(p.gamma.data());
  std::vector<float> y(p.x.size()), dx(p.x.size()), mean(s.c), invstd(s.c);
  std::vector<float> dgamma(s.c), dbeta(s.c);
  simdnorm::Options opt;
  opt.eps = p.eps;
  opt.stats = {mean.data(), invstd.data()};
  ASSERT_EQ(
      simdnorm::batch_norm(x, y.data(), s.n, s.c, s.hw, simdnorm::Layout::kNHWC,
                           nullptr, nullptr, true, 0.1f, gamma, nullptr, opt),
      simdnorm::Status::kOk);
  for (int run = 0; run < 3; ++run) {  // recomputed, saved, inference
    if (run == 1) SaveStatistics(p);
    p.training = run < 2;
    simdnorm_batch_backward_desc d = p.Desc();
    ASSERT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
    simdnorm::Options o = opt;
    if (run == 0) o.stats = {};
    ASSERT_EQ(simdnorm::batch_norm_backward(
                  x, dy, dx.data(), s.n, s.c, s.hw, simdnorm::Layout::kNHWC,
                  p.rm.data(), p.rv.data(), p.training, gamma, dgamma.data(),
                  dbeta.data(), o),
              simdnorm::Status::kOk);
    EXPECT_EQ(0, std::memcmp(dx.data(), p.dx.data(), dx.size() * 4)) << run;
    EXPECT_EQ(dgamma, p.dgamma) << run;
    EXPECT_EQ(dbeta, p.dbeta) << run;
  }
  EXPECT_EQ(mean, p.save_mean);
  EXPECT_EQ(invstd, p.save_invstd);
  opt.gamma_offset = 1.0f;
  EXPECT_EQ(simdnorm::batch_norm_backward(x, dy, dx.data(), s.n, s.c, s.hw,
                                          simdnorm::Layout::kNHWC, p.rm.data(),
                                          p.rv.data(), true, gamma,
                                          dgamma.data(), dbeta.data(), opt),
            simdnorm::Status::kInvalidArgument);
}

// Each bad descriptor gets its status from both entry points, and nothing
// is written: dx, dgamma, dbeta (and dy, x).
TEST(BatchBackwardStatus, BadDescriptorsWriteNothing) {
  Problem p(Shape{2, 8, 5}, SIMDNORM_NCHW,
            Types{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
            true);
  Fill(p, 0.0, 1.0, 2);
  std::fill(p.dx.bytes.begin(), p.dx.bytes.end(), 0xAB);
  const Problem before = p;
  const simdnorm_batch_backward_desc good = p.Desc();
  using D = simdnorm_batch_backward_desc;
  struct Case {
    const char* what;
    void (*edit)(D&);
    simdnorm_status want;
  };
  const Case kCases[] = {
      {"layout 2", [](D& d) { d.layout = static_cast<simdnorm_layout>(2); },
       SIMDNORM_INVALID_ARGUMENT},
      {"dy_type 7", [](D& d) { d.dy_type = static_cast<simdnorm_dtype>(7); },
       SIMDNORM_INVALID_ARGUMENT},
      {"I8 dx", [](D& d) { d.dx_type = SIMDNORM_I8; }, SIMDNORM_UNSUPPORTED},
      {"I8 param", [](D& d) { d.param_type = SIMDNORM_I8; },
       SIMDNORM_UNSUPPORTED},
      {"eps < 0", [](D& d) { d.eps = -1.0f; }, SIMDNORM_INVALID_ARGUMENT},
      {"eps inf", [](D& d) { d.eps = INFINITY; }, SIMDNORM_INVALID_ARGUMENT},
      {"flags", [](D& d) { d.flags = SIMDNORM_FAST_ROUNDING; },
       SIMDNORM_INVALID_ARGUMENT},
      {"inference without running_var",
       [](D& d) {
         d.training = 0;
         d.running_var = nullptr;
       },
       SIMDNORM_INVALID_ARGUMENT},
      {"x NULL", [](D& d) { d.x = nullptr; }, SIMDNORM_INVALID_ARGUMENT},
      {"dy NULL", [](D& d) { d.dy = nullptr; }, SIMDNORM_INVALID_ARGUMENT},
      {"dx NULL", [](D& d) { d.dx = nullptr; }, SIMDNORM_INVALID_ARGUMENT},
      {"c 0", [](D& d) { d.c = 0; }, SIMDNORM_INVALID_SHAPE},
      {"hw 0", [](D& d) { d.hw = 0; }, SIMDNORM_INVALID_SHAPE},
      {"size overflow", [](D& d) { d.hw = SIZE_MAX / 4; },
       SIMDNORM_INVALID_SHAPE},
      {"training, M = 1", [](D& d) { d.n = 1, d.hw = 1; },
       SIMDNORM_INVALID_SHAPE},
      {"dx overlaps x",
       [](D& d) {
         d.dx = const_cast<float*>(static_cast<const float*>(d.x)) + 1;
       },
       SIMDNORM_OVERLAP},
      {"dx is x", [](D& d) { d.dx = const_cast<void*>(d.x); },
       SIMDNORM_OVERLAP},
      {"dx overlaps dy, shifted",
       [](D& d) {
         d.dy = static_cast<const float*>(d.dx) + 1;
         d.n = 1;
       },
       SIMDNORM_OVERLAP},
      {"dx is dy, other size",
       [](D& d) {
         d.dy = d.dx;
         d.dy_type = SIMDNORM_BF16;
       },
       SIMDNORM_OVERLAP},
      {"dx overlaps gamma", [](D& d) { d.gamma = d.dx; }, SIMDNORM_OVERLAP},
      {"dgamma is dbeta", [](D& d) { d.dbeta = d.dgamma; }, SIMDNORM_OVERLAP},
      {"dgamma in dx", [](D& d) { d.dgamma = static_cast<float*>(d.dx) + 3; },
       SIMDNORM_OVERLAP},
      {"dbeta in dy",
       [](D& d) {
         d.dbeta = const_cast<float*>(static_cast<const float*>(d.dy));
       },
       SIMDNORM_OVERLAP},
      {"inference: dgamma in running_mean",
       [](D& d) {
         d.training = 0;
         d.dgamma = const_cast<float*>(d.running_mean) + 1;
       },
       SIMDNORM_OVERLAP},
      // Training's saved statistics: both or neither, inputs.
      {"save_mean without save_invstd",
       [](D& d) { d.save_mean = d.running_mean; }, SIMDNORM_INVALID_ARGUMENT},
      {"save_invstd without save_mean",
       [](D& d) { d.save_invstd = d.running_var; }, SIMDNORM_INVALID_ARGUMENT},
      {"save_invstd in dx",
       [](D& d) {
         d.save_mean = d.running_mean;
         d.save_invstd = static_cast<const float*>(d.dx) + 5;
       },
       SIMDNORM_OVERLAP},
      {"dgamma over save_mean",
       [](D& d) {
         d.save_mean = d.dgamma + 2;
         d.save_invstd = d.running_var;
       },
       SIMDNORM_OVERLAP},
      {"dbeta is save_invstd",
       [](D& d) {
         d.save_mean = d.running_mean;
         d.save_invstd = d.dbeta;
       },
       SIMDNORM_OVERLAP},
  };
  for (const Case& c : kCases) {
    for (int reference = 0; reference < 2; ++reference) {
      D d = good;
      c.edit(d);
      EXPECT_EQ(reference ? simdnorm_batch_norm_backward_reference(&d)
                          : simdnorm_batch_norm_backward(&d),
                c.want)
          << c.what << (reference ? " (reference)" : "");
      EXPECT_EQ(p.dx.bytes, before.dx.bytes) << c.what;
      EXPECT_EQ(p.dy.bytes, before.dy.bytes) << c.what;
      EXPECT_EQ(p.x.bytes, before.x.bytes) << c.what;
      EXPECT_EQ(p.dgamma, before.dgamma) << c.what;
      EXPECT_EQ(p.dbeta, before.dbeta) << c.what;
      EXPECT_EQ(p.rm, before.rm) << c.what;
    }
  }
  EXPECT_EQ(simdnorm_batch_norm_backward(nullptr), SIMDNORM_INVALID_ARGUMENT);
  // Training ignores the running statistics: NULL is fine.
  D d = good;
  d.running_mean = d.running_var = nullptr;
  EXPECT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
  p.dx.bytes = before.dx.bytes;
  // Inference does not look at save_*: one alone, or over dx, is fine.
  d = good;
  d.training = 0;
  d.save_mean = static_cast<const float*>(d.dx);
  EXPECT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
  p.dx.bytes = before.dx.bytes;
  // n = 0: x, dy, dx may be NULL; dgamma and dbeta are zeros.
  d = good;
  d.n = 0;
  d.x = d.dy = nullptr;
  d.dx = nullptr;
  EXPECT_EQ(simdnorm_batch_norm_backward(&d), SIMDNORM_OK);
  EXPECT_EQ(p.dgamma, std::vector<float>(8, 0.0f));
  EXPECT_EQ(p.dbeta, std::vector<float>(8, 0.0f));
  std::fill(p.dgamma.begin(), p.dgamma.end(), -7.0f);
  std::fill(p.dbeta.begin(), p.dbeta.end(), -7.0f);
  ExpectDescriptorSizes(simdnorm_batch_norm_backward_sized, good,
                        SIMDNORM_BATCH_BACKWARD_DESC_MIN_SIZE, [&] {
                          EXPECT_EQ(p.dgamma, before.dgamma);
                          EXPECT_EQ(p.dx.bytes, before.dx.bytes);
                        });
}

}  // namespace
}  // namespace simdnorm_test

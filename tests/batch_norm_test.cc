// BatchNorm (simdnorm_batch_norm) on every ISA, inference and training:
// against a float64 computation of the formulas (which the library's
// reference must match), both layouts, dtype triples, shapes with hw = 1
// and odd sizes, the running-statistics update and save_mean/save_invstd,
// hard data (a large mean with a small spread, 1e+-25, shifts far from the
// mean), NaN and inf channels isolated, in place, bitwise identity over
// thread counts, the batch dependence that makes it BatchNorm, the C++
// wrapper, the registry entry, and bad descriptors.
//
// The bounds (docs/accuracy.md, "BatchNorm"): per element, with xhat the
// exact normalized value and g, b its channel's weights,
//   f32 y:    |y - exact| <= B = 32 * 2^-23 * (|g| * max(1, |xhat|) + |b|),
//   16-bit y: a rounding of some value within B of the exact one.
// Training statistics, against the float64 mean and var of the channel:
//   save_mean, running_mean: within 4 * 2^-23 * (|value| + w * sd), w the
//     weight of the batch's mean in the value (1, momentum),
//   running_var: within 4 * 2^-23 * (|value| + momentum * var),
//   save_invstd: within 16 * 2^-23 * |value| (the variance's fp32 block
//     sums; measured up to ~5.4, the others up to ~2),
// or equal to the exact value rounded to float (infinities). Inference is
// tested with the same B; its error is ~2 scaled ulps (batch_rows-inl.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
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
constexpr double kStatUlps = 4.0 * 0x1p-23;
constexpr double kInvstdUlps = 16.0 * 0x1p-23;

struct Shape {
  size_t n, c, hw;
};

struct Problem {
  Shape s;
  simdnorm_layout layout;
  Tensor x, y, gamma, beta;
  std::vector<float> rm, rv, save_mean, save_invstd;
  bool has_gamma = true, has_beta = true, training = false;
  bool running = true, save = true;
  float eps = 1e-5f, momentum = 0.1f;

  Problem(Shape shape, simdnorm_layout l, simdnorm_dtype xt, simdnorm_dtype yt,
          simdnorm_dtype pt, bool train)
      : s(shape),
        layout(l),
        x(xt, shape.n * shape.c * shape.hw),
        y(yt, shape.n * shape.c * shape.hw),
        gamma(pt, shape.c),
        beta(pt, shape.c),
        rm(shape.c),
        rv(shape.c),
        save_mean(shape.c, -7.0f),
        save_invstd(shape.c, -7.0f),
        training(train) {}

  size_t Index(size_t i, size_t ch, size_t p) const {
    return ChannelIndex(s.c, s.hw, layout, i, ch, p);
  }

  simdnorm_batch_desc Desc(size_t max_threads = 0) {
    simdnorm_batch_desc d{};
    d.n = s.n;
    d.c = s.c;
    d.hw = s.hw;
    d.layout = layout;
    d.x = x.data();
    d.x_type = x.t;
    d.y = y.data();
    d.y_type = y.t;
    d.gamma = has_gamma ? gamma.data() : nullptr;
    d.beta = has_beta ? beta.data() : nullptr;
    d.param_type = gamma.t;
    d.running_mean = running ? rm.data() : nullptr;
    d.running_var = running ? rv.data() : nullptr;
    d.save_mean = save ? save_mean.data() : nullptr;
    d.save_invstd = save ? save_invstd.data() : nullptr;
    d.momentum = momentum;
    d.eps = eps;
    d.training = training ? 1 : 0;
    d.max_threads = max_threads;
    d.flags = y.t == SIMDNORM_F32 ? 0u : unsigned{SIMDNORM_FAST_ROUNDING};
    return d;
  }
};

// x = mean + sd * N(0, 1), weights N(1, 0.5) and N(0, 1), running
// statistics near the data's (rm = mean + 0.1 sd N, rv = sd^2 U(0.5, 2)).
void Fill(Problem& p, double mean, double sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform(0.5, 2.0);
  for (size_t i = 0; i < p.x.size(); ++i) p.x.Set(i, mean + sd * normal(rng));
  for (size_t j = 0; j < p.s.c; ++j) {
    p.gamma.Set(j, 1.0 + 0.5 * normal(rng));
    p.beta.Set(j, normal(rng));
    p.rm[j] = static_cast<float>(mean + 0.1 * sd * normal(rng));
    p.rv[j] = static_cast<float>(sd * sd * uniform(rng));
  }
}

// The exact results: y and its bound per element, and per channel the
// training outputs (NaN for channels whose statistics are not finite).
struct Exact {
  std::vector<double> y, bound;
  std::vector<double> mean, var, rm, rv, invstd;
};

Exact ExactOf(const Problem& p) {
  const Shape& s = p.s;
  const size_t m = s.n * s.hw;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Exact e{std::vector<double>(p.x.size()),
          std::vector<double>(p.x.size()),
          {},
          {},
          {},
          {},
          {}};
  for (size_t ch = 0; ch < s.c; ++ch) {
    double mean = p.rm[ch], var = p.rv[ch];
    if (p.training) {
      double sum = 0.0, second = 0.0;
      for (size_t i = 0; i < s.n; ++i)
        for (size_t q = 0; q < s.hw; ++q) sum += p.x.Get(p.Index(i, ch, q));
      mean = sum / static_cast<double>(m);
      for (size_t i = 0; i < s.n; ++i) {
        for (size_t q = 0; q < s.hw; ++q) {
          const double d = p.x.Get(p.Index(i, ch, q)) - mean;
          second += d * d;
        }
      }
      var = second / static_cast<double>(m);
      if (!std::isfinite(mean) || !std::isfinite(var)) mean = var = nan;
    }
    const double denom = std::sqrt(var + static_cast<double>(p.eps));
    const bool nan_channel = std::isnan(mean) || !(denom > 0.0);
    const double mom = p.momentum, md = static_cast<double>(m);
    e.mean.push_back(mean);
    e.var.push_back(var);
    e.invstd.push_back(1.0 / denom);
    e.rm.push_back((1.0 - mom) * p.rm[ch] + mom * mean);
    e.rv.push_back((1.0 - mom) * p.rv[ch] + mom * (var * md / (md - 1.0)));
    const double gm = p.has_gamma ? p.gamma.Get(ch) : 1.0;
    const double bt = p.has_beta ? p.beta.Get(ch) : -0.0;
    for (size_t i = 0; i < s.n; ++i) {
      for (size_t q = 0; q < s.hw; ++q) {
        const size_t k = p.Index(i, ch, q);
        const double xhat = (p.x.Get(k) - mean) / denom;
        e.y[k] = nan_channel ? nan : xhat * gm + bt;
        e.bound[k] = kBound * (std::fabs(gm) * std::max(1.0, std::fabs(xhat)) +
                               std::fabs(bt));
      }
    }
  }
  return e;
}

// A per-channel float output against its exact value within tol (both
// NaN passes, and so does the exact value rounded once: infinities).
void ExpectNear(float got, double exact, double tol, const char* what,
                const char* name, size_t ch) {
  if (got == static_cast<float>(exact)) return;
  if (std::isnan(exact)) {
    EXPECT_TRUE(std::isnan(got)) << what << " " << name << "[" << ch << "]";
    return;
  }
  EXPECT_LE(std::fabs(got - exact), tol)
      << what << " " << name << "[" << ch << "] = " << got << ", exact "
      << exact;
}

// The training outputs against the exact ones.
void CheckStats(const Problem& p, const Exact& e, const char* what) {
  if (!p.training) return;
  for (size_t ch = 0; ch < p.s.c; ++ch) {
    const double sd = std::sqrt(e.var[ch]), mom = p.momentum;
    if (p.save) {
      ExpectNear(p.save_mean[ch], e.mean[ch],
                 kStatUlps * (std::fabs(e.mean[ch]) + sd), what, "save_mean",
                 ch);
      ExpectNear(p.save_invstd[ch], e.invstd[ch],
                 kInvstdUlps * std::fabs(e.invstd[ch]), what, "save_invstd",
                 ch);
    }
    if (p.running) {
      ExpectNear(p.rm[ch], e.rm[ch],
                 kStatUlps * (std::fabs(e.rm[ch]) + mom * sd), what,
                 "running_mean", ch);
      ExpectNear(p.rv[ch], e.rv[ch],
                 kStatUlps * (std::fabs(e.rv[ch]) + mom * e.var[ch]), what,
                 "running_var", ch);
    }
  }
}

// Runs the kernels and checks them (y, save_*, running statistics); then
// the library's reference from the same inputs, which must be the exact
// values rounded once.
void RunAndCheck(Problem& p, const char* what, size_t max_threads = 0) {
  const Exact e = ExactOf(p);
  const std::vector<float> rm0 = p.rm, rv0 = p.rv;
  simdnorm_batch_desc d = p.Desc(max_threads);
  ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK) << what;
  CheckWithin(p.y, e.y, e.bound, what);
  CheckStats(p, e, what);
  // The reference.
  Tensor ref(p.y.t, p.y.size());
  std::vector<float> rm = rm0, rv = rv0, sm(p.s.c), si(p.s.c);
  d.y = ref.data();
  d.running_mean = p.running ? rm.data() : nullptr;
  d.running_var = p.running ? rv.data() : nullptr;
  d.save_mean = sm.data();
  d.save_invstd = si.data();
  ASSERT_EQ(simdnorm_batch_norm_reference(&d), SIMDNORM_OK) << what;
  ExpectRoundedOnce(ref, e.y, what);
  if (!p.training) {
    EXPECT_EQ(rm, rm0) << what;
    EXPECT_EQ(rv, rv0) << what;
    return;
  }
  const auto same = [](float got, double exact) {
    return std::isnan(exact) ? std::isnan(got)
                             : got == static_cast<float>(exact);
  };
  for (size_t ch = 0; ch < p.s.c; ++ch) {
    EXPECT_TRUE(same(sm[ch], e.mean[ch])) << what << " ref save_mean " << ch;
    EXPECT_TRUE(same(si[ch], e.invstd[ch])) << what << " ref invstd " << ch;
    if (p.running) {
      EXPECT_TRUE(same(rm[ch], e.rm[ch])) << what << " ref rm " << ch;
      EXPECT_TRUE(same(rv[ch], e.rv[ch])) << what << " ref rv " << ch;
    }
  }
}

const simdnorm_layout kLayouts[] = {SIMDNORM_NCHW, SIMDNORM_NHWC};
const simdnorm_dtype kTypes[] = {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16};

SIMDNORM_ISA_FIXTURE(BatchNormTest);

TEST_P(BatchNormTest, ShapesLayoutsAndDTypes) {
  const Shape kShapes[] = {
      {2, 3, 5},   // odd everything
      {3, 6, 1},   // hw = 1
      {1, 40, 1},  // hw = 1, one sample: inference only (m = 1)
      {4, 20, 7},  // NHWC: a full block of 16 and a partial one
      {2, 33, 17},
  };
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    for (simdnorm_layout l : kLayouts) {
      for (bool training : {false, true}) {
        if (training && s.n * s.hw == 1) continue;
        for (simdnorm_dtype xt : kTypes) {
          for (simdnorm_dtype yt : kTypes) {
            for (simdnorm_dtype pt : {SIMDNORM_F32, SIMDNORM_BF16}) {
              Problem p(s, l, xt, yt, pt, training);
              Fill(p, 0.5, 2.0, seed++);
              p.has_beta = (seed % 3) != 0;
              p.has_gamma = (seed % 5) != 0;
              p.running = !training || (seed % 4) != 0;
              p.save = (seed % 7) != 0;
              RunAndCheck(p, training ? "training" : "inference");
            }
          }
        }
      }
    }
  }
}

// A ResNet-like shape, (8, 64, 7, 7), f32.
TEST_P(BatchNormTest, ResNetShape) {
  for (simdnorm_layout l : kLayouts) {
    for (bool training : {false, true}) {
      Problem p(Shape{8, 64, 49}, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32,
                training);
      Fill(p, 0.3, 1.7, 21);
      RunAndCheck(p, training ? "training" : "inference");
    }
  }
}

// Data that defeats naive statistics, and in inference a running mean far
// larger than the spread: x = 1e4 + 1e-2 N(0, 1) with rm = 1e4 and rv =
// 1e-4 (|xhat| ~ 1), where the folded form x * s + (beta - rm * s) would
// be off by ~1e6 ulps.
TEST_P(BatchNormTest, HardData) {
  struct Data {
    const char* what;
    double mean, sd;
  };
  const Data kData[] = {{"mean 1e4, sd 1e-2", 1e4, 1e-2},
                        {"1e25", 0.0, 1e25},
                        {"1e-25", 0.0, 1e-25},
                        {"mean -3e20, sd 1e18", -3e20, 1e18}};
  const Shape shapes[] = {{4, 18, 40}, {3, 5, 9}};
  uint32_t seed = 100;
  for (const Data& data : kData) {
    for (const Shape& s : shapes) {
      for (simdnorm_layout l : kLayouts) {
        for (bool training : {false, true}) {
          for (bool outlier : {false, true}) {
            Problem p(s, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, training);
            Fill(p, data.mean, data.sd, seed++);
            p.eps = 0.0f;
            for (size_t ch = 0; ch < s.c; ++ch) {
              // rv as close to var as a float allows (1e+-50 are not).
              p.rm[ch] = static_cast<float>(data.mean);
              p.rv[ch] = static_cast<float>(
                  std::min(std::max(data.sd * data.sd, 1e-30), 1e30));
              // The channel's first element (the shift) 20 sd off.
              if (outlier) p.x.Set(p.Index(0, ch, 0), data.mean + 20 * data.sd);
            }
            RunAndCheck(p, data.what);
          }
        }
      }
    }
  }
}

// Training: a NaN in one channel, an inf in another and a constant third
// with eps = 0 make those channels (only) the default quiet NaN, their
// statistics NaN (the constant one's var 0: save_invstd inf).
// Inference: a NaN element is NaN alone; channels with running_var + eps
// 0 or negative are NaN throughout.
TEST_P(BatchNormTest, NonFiniteChannelsAreIsolated) {
  const Shape s{3, 20, 10};
  for (simdnorm_layout l : kLayouts) {
    for (simdnorm_dtype yt : kTypes) {
      Problem p(s, l, SIMDNORM_F32, yt, SIMDNORM_F32, true);
      Fill(p, 1.0, 1.0, 5);
      p.eps = 0.0f;
      p.x.Set(p.Index(1, 2, 7), NAN);
      p.x.Set(p.Index(2, 17, 3), INFINITY);
      for (size_t i = 0; i < s.n; ++i)
        for (size_t q = 0; q < s.hw; ++q) p.x.Set(p.Index(i, 9, q), 2.5);
      RunAndCheck(p, "training non-finite");
      size_t nans = 0;
      for (size_t k = 0; k < p.y.size(); ++k) nans += p.y.IsNaN(k);
      EXPECT_EQ(nans, 3 * s.n * s.hw);
      EXPECT_TRUE(std::isnan(p.save_mean[2]) && std::isnan(p.rm[17]));
      EXPECT_EQ(p.save_invstd[9], INFINITY);

      Problem q(s, l, SIMDNORM_F32, yt, SIMDNORM_F32, false);
      Fill(q, 1.0, 1.0, 6);
      q.eps = 0.0f;
      q.x.Set(q.Index(1, 2, 7), NAN);
      q.rv[4] = 0.0f;
      q.rv[11] = -1.0f;
      RunAndCheck(q, "inference non-finite");
      nans = 0;
      for (size_t k = 0; k < q.y.size(); ++k) nans += q.y.IsNaN(k);
      EXPECT_EQ(nans, 2 * s.n * s.hw + 1);
    }
  }
}

// y == x: the same bits as out of place.
TEST_P(BatchNormTest, InPlace) {
  for (simdnorm_layout l : kLayouts) {
    for (bool training : {false, true}) {
      for (simdnorm_dtype t : kTypes) {
        Problem p(Shape{3, 21, 13}, l, t, t, SIMDNORM_F32, training);
        Fill(p, -1.0, 3.0, 11);
        p.running = false;
        p.momentum = 0.0f;
        simdnorm_batch_desc d = p.Desc();
        if (!training)
          d.running_mean = p.rm.data(), d.running_var = p.rv.data();
        ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
        d.y = p.x.data();
        ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
        EXPECT_EQ(p.x.bytes, p.y.bytes);
      }
    }
  }
}

// Bitwise the same y and statistics for every thread count.
TEST_P(BatchNormTest, ThreadCountDoesNotChangeBits) {
  for (simdnorm_layout l : kLayouts) {
    for (bool training : {false, true}) {
      Problem p(Shape{4, 40, 1000}, l, SIMDNORM_BF16, SIMDNORM_F32,
                SIMDNORM_F32, training);
      Fill(p, 0.0, 1.0, 3);
      const std::vector<float> rm0 = p.rm, rv0 = p.rv;
      simdnorm_batch_desc d = p.Desc(1);
      ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
      const std::vector<uint8_t> one = p.y.bytes;
      const std::vector<float> stats[] = {p.rm, p.rv, p.save_mean,
                                          p.save_invstd};
      for (size_t threads : {2, 3, 0}) {
        std::fill(p.y.bytes.begin(), p.y.bytes.end(), 0);
        p.rm = rm0;
        p.rv = rv0;
        d = p.Desc(threads);
        ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
        EXPECT_EQ(p.y.bytes, one) << threads << " threads";
        EXPECT_EQ(p.rm, stats[0]) << threads << " threads";
        EXPECT_EQ(p.rv, stats[1]) << threads << " threads";
        EXPECT_EQ(p.save_mean, stats[2]) << threads << " threads";
        EXPECT_EQ(p.save_invstd, stats[3]) << threads << " threads";
      }
    }
  }
}

// What makes it BatchNorm: in training a sample's output depends on the
// other samples of the batch (they share the channel's statistics); in
// inference it does not, and neither does LayerNorm's over the sample.
TEST_P(BatchNormTest, TrainingCouplesTheBatch) {
  const Shape s{4, 6, 9};
  const size_t per_sample = s.c * s.hw;
  for (simdnorm_layout l : kLayouts) {
    for (bool training : {false, true}) {
      Problem p(s, l, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, training);
      Fill(p, 0.0, 1.0, 8);
      p.running = !training;
      simdnorm_batch_desc d = p.Desc();
      ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
      const Tensor before = p.y;
      // Sample 2 changes; sample 0 is looked at.
      for (size_t ch = 0; ch < s.c; ++ch)
        for (size_t q = 0; q < s.hw; ++q)
          p.x.Set(p.Index(2, ch, q), 3.0 + 2.0 * p.x.Get(p.Index(2, ch, q)));
      ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
      size_t changed = 0;
      for (size_t ch = 0; ch < s.c; ++ch)
        for (size_t q = 0; q < s.hw; ++q)
          changed +=
              p.y.Bits(p.Index(0, ch, q)) != before.Bits(p.Index(0, ch, q));
      if (training) {
        EXPECT_EQ(changed, per_sample) << "training: every element moves";
      } else {
        EXPECT_EQ(changed, 0u) << "inference: sample 0 is its own";
      }
    }
  }
  // LayerNorm over each sample's c * hw elements: per sample.
  Problem p(s, SIMDNORM_NCHW, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32, false);
  Fill(p, 0.0, 1.0, 8);
  auto* x = static_cast<float*>(p.x.data());
  std::vector<float> y0(p.x.size()), y1(p.x.size());
  const simdnorm::Rows<const float> xr(x, s.n, per_sample);
  ASSERT_EQ(simdnorm::layer_norm(
                xr, simdnorm::Rows<float>(y0.data(), s.n, per_sample)),
            simdnorm::Status::kOk);
  for (size_t k = 2 * per_sample; k < 3 * per_sample; ++k) x[k] = 3 + 2 * x[k];
  ASSERT_EQ(simdnorm::layer_norm(
                xr, simdnorm::Rows<float>(y1.data(), s.n, per_sample)),
            simdnorm::Status::kOk);
  EXPECT_EQ(0, std::memcmp(y0.data(), y1.data(), per_sample * 4));
  EXPECT_NE(0, std::memcmp(y0.data() + 2 * per_sample,
                           y1.data() + 2 * per_sample, per_sample * 4));
}

TEST_P(BatchNormTest, CppWrapper) {
  const Shape s{2, 8, 12};
  for (bool training : {false, true}) {
    Problem p(s, SIMDNORM_NHWC, SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32,
              training);
    Fill(p, 0.0, 1.0, 9);
    std::vector<float> rm = p.rm, rv = p.rv, sm(s.c), si(s.c);
    simdnorm_batch_desc d = p.Desc();
    ASSERT_EQ(simdnorm_batch_norm(&d), SIMDNORM_OK);
    std::vector<float> y(p.y.size());
    const auto* x = static_cast<const float*>(p.x.data());
    const auto* g = static_cast<const float*>(p.gamma.data());
    const auto* b = static_cast<const float*>(p.beta.data());
    simdnorm::Options opt;
    opt.eps = p.eps;
    ASSERT_EQ(simdnorm::batch_norm(x, y.data(), s.n, s.c, s.hw,
                                   simdnorm::Layout::kNHWC, rm.data(),
                                   rv.data(), training, p.momentum, g, b, opt,
                                   sm.data(), si.data()),
              simdnorm::Status::kOk);
    EXPECT_EQ(std::memcmp(y.data(), p.y.data(), y.size() * 4), 0);
    EXPECT_EQ(rm, p.rm);
    EXPECT_EQ(rv, p.rv);
    if (training) {
      EXPECT_EQ(sm, p.save_mean);
      EXPECT_EQ(si, p.save_invstd);
    }
    std::vector<simdnorm::bf16> y16(y.size());
    EXPECT_EQ(simdnorm::batch_norm(x, y16.data(), s.n, s.c, s.hw,
                                   simdnorm::Layout::kNHWC, rm.data(),
                                   rv.data(), training, p.momentum, g, b, opt),
              simdnorm::Status::kOk);  // correctly rounded
    opt.gamma_offset = 1.0f;
    EXPECT_EQ(simdnorm::batch_norm(x, y.data(), s.n, s.c, s.hw,
                                   simdnorm::Layout::kNHWC, rm.data(),
                                   rv.data(), training, p.momentum, g, b, opt),
              simdnorm::Status::kInvalidArgument);
  }
}

SIMDNORM_INSTANTIATE_PER_ISA(BatchNormTest);

// ------------------------------------------------ registry and statuses

TEST(BatchNormRegistry, EntryAndRowEnumerators) {
  const simdnorm_op_info* op = simdnorm_op_of(SIMDNORM_BATCHNORM);
  ASSERT_NE(op, nullptr);
  EXPECT_STREQ(op->name, "batchnorm");
  EXPECT_EQ(op->kind, SIMDNORM_BATCHNORM);
  EXPECT_EQ(op->descriptor, SIMDNORM_BATCH_DESC);
  EXPECT_EQ(op->has_backward, 1);  // simdnorm_batch_norm_backward
  EXPECT_EQ(op->flags, unsigned{SIMDNORM_FAST_ROUNDING});
  EXPECT_EQ(simdnorm_op_at(SIMDNORM_BATCHNORM), op);
  ExpectNotARowKind(SIMDNORM_BATCHNORM);
}

// Each bad descriptor gets its status from both entry points, and nothing
// is written: y, the running statistics, save_*.
TEST(BatchNormStatus, BadDescriptorsWriteNothing) {
  Problem p(Shape{2, 8, 5}, SIMDNORM_NCHW, SIMDNORM_F32, SIMDNORM_F32,
            SIMDNORM_F32, true);
  Fill(p, 0.0, 1.0, 2);
  std::fill(p.y.bytes.begin(), p.y.bytes.end(), 0xAB);
  const std::vector<uint8_t> sentinel = p.y.bytes;
  const std::vector<float> rm = p.rm, rv = p.rv, sm = p.save_mean,
                           si = p.save_invstd;
  const simdnorm_batch_desc good = p.Desc();
  using D = simdnorm_batch_desc;
  struct Case {
    const char* what;
    void (*edit)(D&);
    simdnorm_status want;
  };
  const Case kCases[] = {
      {"c 0", [](D& d) { d.c = 0; }, SIMDNORM_INVALID_SHAPE},
      {"hw 0", [](D& d) { d.hw = 0; }, SIMDNORM_INVALID_SHAPE},
      {"size overflow", [](D& d) { d.hw = SIZE_MAX / 4; },
       SIMDNORM_INVALID_SHAPE},
      {"training, m = 1", [](D& d) { d.n = 1, d.hw = 1; },
       SIMDNORM_INVALID_SHAPE},
      {"layout 2", [](D& d) { d.layout = static_cast<simdnorm_layout>(2); },
       SIMDNORM_INVALID_ARGUMENT},
      {"param_type 7",
       [](D& d) { d.param_type = static_cast<simdnorm_dtype>(7); },
       SIMDNORM_INVALID_ARGUMENT},
      {"I8 x", [](D& d) { d.x_type = SIMDNORM_I8; }, SIMDNORM_UNSUPPORTED},
      {"eps < 0", [](D& d) { d.eps = -1.0f; }, SIMDNORM_INVALID_ARGUMENT},
      {"momentum NaN", [](D& d) { d.momentum = NAN; },
       SIMDNORM_INVALID_ARGUMENT},
      {"momentum inf", [](D& d) { d.momentum = INFINITY; },
       SIMDNORM_INVALID_ARGUMENT},
      {"unknown flag", [](D& d) { d.flags = SIMDNORM_Y_STREAM; },
       SIMDNORM_INVALID_ARGUMENT},
      {"running_mean only", [](D& d) { d.running_var = nullptr; },
       SIMDNORM_INVALID_ARGUMENT},
      {"running_var only", [](D& d) { d.running_mean = nullptr; },
       SIMDNORM_INVALID_ARGUMENT},
      {"inference without running stats",
       [](D& d) {
         d.training = 0;
         d.running_mean = d.running_var = nullptr;
       },
       SIMDNORM_INVALID_ARGUMENT},
      {"x NULL", [](D& d) { d.x = nullptr; }, SIMDNORM_INVALID_ARGUMENT},
      {"y NULL", [](D& d) { d.y = nullptr; }, SIMDNORM_INVALID_ARGUMENT},
      {"y overlaps x",
       [](D& d) {
         d.x = static_cast<const float*>(d.y) + 1;
         d.n = 1;
       },
       SIMDNORM_OVERLAP},
      {"y overlaps gamma", [](D& d) { d.gamma = d.y; }, SIMDNORM_OVERLAP},
      {"running_mean in y",
       [](D& d) { d.running_mean = static_cast<float*>(d.y) + 3; },
       SIMDNORM_OVERLAP},
      {"running_var is running_mean",
       [](D& d) { d.running_var = d.running_mean; }, SIMDNORM_OVERLAP},
      {"save_mean overlaps running_var",
       [](D& d) { d.save_mean = d.running_var + 1; }, SIMDNORM_OVERLAP},
      {"save_invstd in x",
       [](D& d) {
         d.save_invstd = const_cast<float*>(static_cast<const float*>(d.x));
       },
       SIMDNORM_OVERLAP},
      {"running_var in beta",
       [](D& d) {
         d.running_var = const_cast<float*>(static_cast<const float*>(d.beta));
       },
       SIMDNORM_OVERLAP},
  };
  for (const Case& c : kCases) {
    D d = good;
    c.edit(d);
    EXPECT_EQ(simdnorm_batch_norm(&d), c.want) << c.what;
    EXPECT_EQ(simdnorm_batch_norm_reference(&d), c.want) << c.what;
    EXPECT_EQ(p.y.bytes, sentinel) << c.what;
    EXPECT_EQ(p.rm, rm) << c.what;
    EXPECT_EQ(p.rv, rv) << c.what;
    EXPECT_EQ(p.save_mean, sm) << c.what;
    EXPECT_EQ(p.save_invstd, si) << c.what;
  }
  EXPECT_EQ(simdnorm_batch_norm(nullptr), SIMDNORM_INVALID_ARGUMENT);
  // n = 0 does nothing (inference still needs the running statistics).
  D empty{};
  empty.training = 1;
  EXPECT_EQ(simdnorm_batch_norm(&empty), SIMDNORM_OK);
  empty.training = 0;
  EXPECT_EQ(simdnorm_batch_norm(&empty), SIMDNORM_INVALID_ARGUMENT);
  ExpectDescriptorSizes(simdnorm_batch_norm_sized, good,
                        SIMDNORM_BATCH_DESC_MIN_SIZE, [&] {
                          EXPECT_EQ(p.y.bytes, sentinel);
                          EXPECT_EQ(p.rm, rm);
                        });
}

}  // namespace
}  // namespace simdnorm_test

// Correctly rounded 16-bit y of the channel kinds (GroupNorm/InstanceNorm,
// BatchNorm inference and training) on every ISA: the kernels' bits equal
// the float64 reference's (the exact result rounded once to nearest-even,
// docs/accuracy.md "Correct rounding"), in both layouts, every dtype
// triple with 16-bit y, with and without weights, in place, over thread
// counts, and on hard data: exact ties and near-ties, large means with
// small spread, huge and tiny magnitudes, NaN groups and channels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "support/half.h"
#include "support/isa_test.h"
#include "support/tensor.h"

namespace simdnorm_test {
namespace {

struct Shape {
  size_t n, c, hw, groups;  // groups: GroupNorm only
};

enum class Kind { kGroup, kInference, kTraining };

const char* KindName(Kind k) {
  return k == Kind::kGroup       ? "group"
         : k == Kind::kInference ? "bn-infer"
                                 : "bn-train";
}

// One problem of any channel kind; x is set by the test.
struct Problem {
  Kind kind;
  Shape s;
  simdnorm_layout layout;
  Tensor x, y, gamma, beta;
  std::vector<float> rm, rv;
  bool has_gamma = true, has_beta = true;
  float eps = 1e-5f;
  unsigned flags = 0;  // correctly rounded

  Problem(Kind k, Shape shape, simdnorm_layout l, simdnorm_dtype xt,
          simdnorm_dtype yt, simdnorm_dtype pt)
      : kind(k),
        s(shape),
        layout(l),
        x(xt, shape.n * shape.c * shape.hw),
        y(yt, shape.n * shape.c * shape.hw),
        gamma(pt, shape.c),
        beta(pt, shape.c),
        rm(shape.c, 0.0f),
        rv(shape.c, 1.0f) {}

  size_t Index(size_t i, size_t ch, size_t p) const {
    return ChannelIndex(s.c, s.hw, layout, i, ch, p);
  }

  // The fields the group and batch descriptors share, from this problem.
  template <class Desc>
  void FillDesc(Desc& d, Tensor& out, size_t max_threads, const void* x_in) {
    d.n = s.n;
    d.c = s.c;
    d.hw = s.hw;
    d.layout = layout;
    d.x = x_in ? x_in : x.data();
    d.x_type = x.t;
    d.y = out.data();
    d.y_type = out.t;
    d.gamma = has_gamma ? gamma.data() : nullptr;
    d.beta = has_beta ? beta.data() : nullptr;
    d.param_type = gamma.t;
    d.eps = eps;
    d.max_threads = max_threads;
    d.flags = flags;
  }

  // Runs the kernel (into out) or the reference.
  simdnorm_status Run(Tensor& out, bool reference, size_t max_threads = 0,
                      const void* x_in = nullptr) {
    if (kind == Kind::kGroup) {
      simdnorm_group_desc d{};
      FillDesc(d, out, max_threads, x_in);
      d.groups = s.groups;
      return reference ? simdnorm_group_norm_reference(&d)
                       : simdnorm_group_norm(&d);
    }
    // Training updates the running statistics: each run on its own copy.
    std::vector<float> m = rm, v = rv;
    simdnorm_batch_desc d{};
    FillDesc(d, out, max_threads, x_in);
    d.running_mean = m.data();
    d.running_var = v.data();
    d.momentum = 0.1f;
    d.training = kind == Kind::kTraining ? 1 : 0;
    return reference ? simdnorm_batch_norm_reference(&d)
                     : simdnorm_batch_norm(&d);
  }

  std::string What(const char* what) const {
    return std::string(what) + " " + KindName(kind) +
           (layout == SIMDNORM_NCHW ? " nchw" : " nhwc") + " x" +
           std::to_string(x.t) + " y" + std::to_string(y.t) + " p" +
           std::to_string(gamma.t) + (has_gamma ? "" : " no-gamma") +
           (has_beta ? "" : " no-beta");
  }
};

// Number of elements whose bits differ (the first few reported).
int CountDiffs(const Tensor& got, const Tensor& want, const std::string& what) {
  int diffs = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got.Bits(i) == want.Bits(i)) continue;
    if (++diffs <= 3) {
      ADD_FAILURE() << what << ": element " << i << " got 0x" << std::hex
                    << got.Bits(i) << " want 0x" << want.Bits(i) << std::dec
                    << " (" << want.Get(i) << ")";
    }
  }
  return diffs;
}

// The kernel's bits against the reference's.
void ExpectSameBits(Problem& p, const char* what, size_t max_threads = 0) {
  const std::string w = p.What(what);
  ASSERT_EQ(p.Run(p.y, false, max_threads), SIMDNORM_OK) << w;
  Tensor ref(p.y.t, p.y.size());
  ASSERT_EQ(p.Run(ref, true), SIMDNORM_OK) << w;
  EXPECT_EQ(CountDiffs(p.y, ref, w), 0) << w;
}

// x = mean + sd * N(0, 1), weights N(1, 0.5) and N(0, 1), running
// statistics near the data's.
void Fill(Problem& p, double mean, double sd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit(0.5, 2.0);
  for (size_t i = 0; i < p.x.size(); ++i) p.x.Set(i, mean + sd * normal(rng));
  for (size_t j = 0; j < p.s.c; ++j) {
    p.gamma.Set(j, 1.0 + 0.5 * normal(rng));
    p.beta.Set(j, normal(rng));
    p.rm[j] = static_cast<float>(mean + 0.1 * sd * normal(rng));
    p.rv[j] = static_cast<float>(sd * sd * unit(rng));
  }
}

const simdnorm_layout kLayouts[] = {SIMDNORM_NCHW, SIMDNORM_NHWC};
const simdnorm_dtype kTypes[] = {SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16};
const simdnorm_dtype kOut16[] = {SIMDNORM_BF16, SIMDNORM_F16};
const Kind kKinds[] = {Kind::kGroup, Kind::kInference, Kind::kTraining};

// hw and c/groups not multiples of a vector; NHWC BatchNorm blocks of 16
// channels with a short last one.
const Shape kShape{2, 20, 37, 4};

SIMDNORM_ISA_FIXTURE(ChannelRoundingTest);

TEST_P(ChannelRoundingTest, DTypesLayoutsWeights) {
  uint32_t seed = 1;
  for (Kind kind : kKinds) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype xt : kTypes) {
        for (simdnorm_dtype yt : kOut16) {
          for (simdnorm_dtype pt : kTypes) {
            Problem p(kind, kShape, l, xt, yt, pt);
            Fill(p, 0.5, 2.0, seed++);
            p.has_gamma = pt != SIMDNORM_F16;  // both ways over the triples
            p.has_beta = pt != SIMDNORM_BF16;
            ExpectSameBits(p, "random");
          }
        }
      }
    }
  }
}

// Rows of +-a have mean 0 and variance a^2: with eps = 0, xhat = +-1
// exactly, and y = +-g + b is set to a tie of y's type (g = 1 + k * 2^-7
// and b = 2^-8 for bf16: y = g + 2^-8 is halfway between g and the next
// bf16; 2^-11 for f16, g = 1 + k * 2^-10), or is exactly representable
// (-g + b = -(g - b)), or is within 2^-30 of a tie. Inference: running
// mean 0 and variance 4 (sqrt exact) with x = +-2a, a bf16 in [1, 2).
TEST_P(ChannelRoundingTest, TiesAndNearTies) {
  const double nudges[] = {0.0, 0x1p-30, -0x1p-30};
  for (Kind kind : kKinds) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype yt : kOut16) {
        const double half_ulp = yt == SIMDNORM_BF16 ? 0x1p-8 : 0x1p-11;
        for (double nudge : nudges) {
          // hw even: +a and -a equally often in every group and channel.
          Problem p(kind, Shape{2, 20, 36, 4}, l, SIMDNORM_BF16, yt,
                    SIMDNORM_F32);
          p.eps = 0.0f;
          std::mt19937 rng(7);
          for (size_t i = 0; i < p.s.n; ++i) {
            for (size_t ch = 0; ch < p.s.c; ++ch) {
              for (size_t q = 0; q < p.s.hw; ++q) {
                double a = 2.0;
                if (kind == Kind::kInference) {
                  a = 2.0 * (1.0 + static_cast<double>(rng() % 128) / 128);
                }
                const double sign = q % 2 == 0 ? 1.0 : -1.0;
                p.x.Set(p.Index(i, ch, q), sign * a);
              }
            }
          }
          for (size_t ch = 0; ch < p.s.c; ++ch) {
            p.gamma.Set(
                ch, 1.0 + static_cast<double>(rng() % 128) * (2 * half_ulp));
            p.beta.Set(ch, half_ulp + nudge);
            p.rm[ch] = 0.0f;
            p.rv[ch] = 4.0f;
          }
          ExpectSameBits(p, nudge == 0.0 ? "ties" : "near ties");
          // The exact y is known here: +-a / 2 * g + b (inference) or +-g
          // + b, exact in double, rounded once.
          int wrong = 0;
          for (size_t i = 0; i < p.s.n; ++i) {
            for (size_t ch = 0; ch < p.s.c; ++ch) {
              for (size_t q = 0; q < p.s.hw; ++q) {
                const size_t at = p.Index(i, ch, q);
                const double xhat = kind == Kind::kInference
                                        ? p.x.Get(at) / 2
                                        : (p.x.Get(at) > 0 ? 1.0 : -1.0);
                const double exact = xhat * p.gamma.Get(ch) + p.beta.Get(ch);
                wrong += p.y.Bits(at) != RoundToHalf(HalfOf(yt), exact);
              }
            }
          }
          EXPECT_EQ(wrong, 0) << p.What("exact ties");
          // Near ties: fp32 results round to the tie, so the fast path
          // differs from the exact rounding at about half the elements.
          if (nudge != 0.0) {
            p.flags = SIMDNORM_FAST_ROUNDING;
            Tensor fast(yt, p.y.size());
            ASSERT_EQ(p.Run(fast, false), SIMDNORM_OK);
            size_t differ = 0;
            for (size_t i = 0; i < fast.size(); ++i) {
              differ += fast.Bits(i) != p.y.Bits(i);
            }
            EXPECT_GT(differ, 0u) << p.What("near ties need the exact path");
          }
        }
      }
    }
  }
}

// y across its type's whole range, subnormals and overflow included: each
// channel's gamma a power of two from below the smallest subnormal result
// to beyond the largest finite one (bf16 2^-140 to 2^126, f16 2^-34 to
// 2^17), beta 0 or a power of two on alternate channels. The paths that
// round both ends of a lane's bound by hardware (f16 on F16C and FCVT,
// bf16 on AVX3_BF16, whose conversion reads subnormals as zero) must give
// the reference's bits there too.
TEST_P(ChannelRoundingTest, ResultsAcrossTheRange) {
  uint32_t seed = 500;
  for (Kind kind : kKinds) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype yt : kOut16) {
        const int lo = yt == SIMDNORM_BF16 ? -140 : -34;
        const int hi = yt == SIMDNORM_BF16 ? 126 : 17;
        Problem p(kind, kShape, l, SIMDNORM_F32, yt, SIMDNORM_F32);
        Fill(p, 0.5, 2.0, seed++);
        const size_t c = p.s.c;
        for (size_t ch = 0; ch < c; ++ch) {
          const int e =
              lo + static_cast<int>(ch) * (hi - lo) / static_cast<int>(c - 1);
          p.gamma.Set(ch, std::ldexp(1.0, e));
          p.beta.Set(ch, ch % 2 == 0 ? 0.0 : std::ldexp(-1.0, e - 3));
        }
        ExpectSameBits(p, "across the range");
      }
    }
  }
}

// Inference with x at its channel's running mean (d = 0, so y = beta
// exactly and the lean bound's w0 is 0) in a third of the elements, beta
// +0, -0, normal, a bf16 and f16 tie, or subnormal: the ends rounded by
// the hardware (where Bf16EndsHold lets bf16 take them) and the software
// test must give the reference's bits. Then with running means 2^-14 off
// a 16-bit value, x the nearest x value (d tiny but not 0: bf16 x never
// selects w0 there, AtZero).
TEST_P(ChannelRoundingTest, InferenceAtTheRunningMean) {
  const double betas[] = {0.0,           -0.0,     0.75,      1.0 + 0x1p-8,
                          1.0 + 0x1p-11, 0x1p-130, -0x1p-140, 0x1p-126};
  const size_t kBetas = sizeof(betas) / sizeof(betas[0]);
  uint32_t seed = 900;
  for (float off : {0.0f, 0x1p-14f}) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype yt : kOut16) {
        for (simdnorm_dtype xt : {SIMDNORM_F32, SIMDNORM_BF16}) {
          // 32 channels next to the mean: whole pairs of channel vectors
          // (the subnormal betas keep these units off ApplyNhwcMerged,
          // which InferenceNearBoundaries takes).
          Problem p(Kind::kInference,
                    off == 0.0f ? kShape : Shape{2, 32, 37, 1}, l, xt, yt,
                    SIMDNORM_F32);
          Fill(p, 0.5, 2.0, seed++);
          const size_t c = p.s.c, hw = p.s.hw;
          for (size_t j = 0; j < c; ++j) {
            p.rm[j] = 0.5f + 0.125f * static_cast<float>(j % 8) + off;
            p.beta.Set(j, betas[j % kBetas]);
          }
          for (size_t i = 0; i < p.x.size(); i += 3) {
            p.x.Set(i, p.rm[l == SIMDNORM_NCHW ? i / hw % c : i % c]);
          }
          ExpectSameBits(p, off == 0.0f ? "x at the running mean"
                                        : "x next to the running mean");
        }
      }
    }
  }
}

// bf16 inference whose running means are no bf16 value (so that the lean
// loops drop the d = 0 case and take y = (x - m) s + b, one FMA: AtZero,
// MergedScale), with beta chosen so that one element per channel lies a few
// fp32 ulps from a bf16 rounding boundary: those elements test the bound
// where it is tight, on both sides of it.
TEST_P(ChannelRoundingTest, InferenceNearBoundaries) {
  std::mt19937 rng(1234);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> ulps(-12, 12);
  for (int round = 0; round < 40; ++round) {
    for (simdnorm_layout l : kLayouts) {
      Problem p(Kind::kInference, Shape{1, 32, 34, 1}, l, SIMDNORM_BF16,
                SIMDNORM_BF16, SIMDNORM_F32);
      for (size_t i = 0; i < p.x.size(); ++i) p.x.Set(i, normal(rng));
      for (size_t ch = 0; ch < p.s.c; ++ch) {
        p.rm[ch] = static_cast<float>(0.1 * normal(rng)) + 0x1p-20f;
        p.rv[ch] = static_cast<float>(1.0 + 0.5 * std::fabs(normal(rng)));
        const double g = 1.0 + 0.5 * normal(rng);
        p.gamma.Set(ch, g);
        // Element ch % hw near a boundary: y = xhat g + b within a few
        // fp32 ulps of the bf16 midpoint T next to xhat g + 0.1 N(0, 1).
        const double x = p.x.Get(p.Index(0, ch, ch % p.s.hw));
        const double xhat =
            (x - p.rm[ch]) / std::sqrt(static_cast<double>(p.rv[ch]) + p.eps);
        const float y0 = static_cast<float>(xhat * g + 0.1 * normal(rng));
        uint32_t bits;
        std::memcpy(&bits, &y0, sizeof(bits));
        bits = (bits & 0xFFFF0000u) | 0x8000u;
        float tie;
        std::memcpy(&tie, &bits, sizeof(tie));
        const double ulp = std::ldexp(1.0, std::ilogb(tie) - 23);
        p.beta.Set(ch, tie - xhat * g + ulps(rng) * ulp / 2);
      }
      ExpectSameBits(p, "near a rounding boundary");
      if (HasFailure()) return;
    }
  }
}

TEST_P(ChannelRoundingTest, HardData) {
  struct Case {
    double mean, sd;
    const char* what;
  };
  const Case cases[] = {{1e4, 0.01, "mean 1e4 + 0.01 N"},
                        {0.0, 1e25, "magnitude 1e25"},
                        {3e25, 1e25, "mean 3e25, sd 1e25"},
                        {0.0, 1e-25, "magnitude 1e-25"},
                        {5e-25, 1e-25, "mean 5e-25, sd 1e-25"}};
  uint32_t seed = 100;
  for (const Case& c : cases) {
    for (Kind kind : kKinds) {
      for (simdnorm_layout l : kLayouts) {
        for (simdnorm_dtype yt : kOut16) {
          // f16 x holds neither 1e25 nor 1e-25; bf16 x holds both.
          for (simdnorm_dtype xt : {SIMDNORM_F32, SIMDNORM_BF16}) {
            Problem p(kind, kShape, l, xt, yt, SIMDNORM_F32);
            Fill(p, c.mean, c.sd, seed++);
            if (std::fabs(c.mean) < 1e-20 || std::fabs(c.mean) > 1e20) {
              p.eps = 0.0f;  // eps would swamp tiny, not matter for huge
            }
            ExpectSameBits(p, c.what);
          }
        }
      }
    }
  }
}

// A NaN (or inf) in one group or channel, or a NaN or infinite running
// statistic: that unit is NaN (or as the exact value says), the others
// keep their bits.
TEST_P(ChannelRoundingTest, NonFiniteUnitsAreIsolated) {
  uint32_t seed = 300;
  for (Kind kind : kKinds) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype yt : kOut16) {
        Problem p(kind, kShape, l, SIMDNORM_F32, yt, SIMDNORM_F32);
        Fill(p, 1.0, 3.0, seed++);
        p.x.Set(p.Index(1, 5, 3), NAN);
        p.x.Set(p.Index(0, 14, 0), INFINITY);
        if (kind == Kind::kInference) {
          p.rv[2] = NAN;
          p.rm[3] = INFINITY;
          p.rv[4] = INFINITY;
          p.rv[6] = -1.0f;
        }
        ExpectSameBits(p, "non-finite");
        const size_t i0 = kind == Kind::kGroup ? 1 : 0;  // another sample
        // The NaN's group or channel is the default quiet NaN.
        const uint32_t nan_bits = yt == SIMDNORM_BF16 ? 0x7FC0 : 0x7E00;
        if (kind != Kind::kInference) {
          EXPECT_EQ(p.y.Bits(p.Index(i0, 5, 10)), nan_bits) << p.What("nan");
        }
        EXPECT_FALSE(p.y.IsNaN(p.Index(0, 9, 1))) << p.What("isolated");
      }
    }
  }
}

TEST_P(ChannelRoundingTest, InPlace) {
  uint32_t seed = 400;
  for (Kind kind : kKinds) {
    for (simdnorm_layout l : kLayouts) {
      for (simdnorm_dtype t : kOut16) {
        Problem p(kind, kShape, l, t, t, SIMDNORM_F32);
        Fill(p, 1e4, 0.01, seed++);
        Tensor ref(t, p.y.size());
        ASSERT_EQ(p.Run(ref, true), SIMDNORM_OK);
        Tensor inout = p.x;
        ASSERT_EQ(p.Run(inout, false, 0, inout.data()), SIMDNORM_OK);
        EXPECT_EQ(CountDiffs(inout, ref, p.What("in place")), 0);
      }
    }
  }
}

TEST_P(ChannelRoundingTest, ThreadCountDoesNotChangeBits) {
  uint32_t seed = 500;
  for (Kind kind : kKinds) {
    for (simdnorm_layout l : kLayouts) {
      Problem p(kind, Shape{4, 32, 300, 8}, l, SIMDNORM_BF16, SIMDNORM_BF16,
                SIMDNORM_F32);
      Fill(p, 2.0, 1.5, seed++);
      for (size_t threads : {1, 2, 3, 0}) {
        ExpectSameBits(p, "threads", threads);
      }
    }
  }
}

// SIMDNORM_FAST_ROUNDING still runs (the fp32 result rounded once).
TEST_P(ChannelRoundingTest, FastRoundingStaysAvailable) {
  for (Kind kind : kKinds) {
    Problem p(kind, kShape, SIMDNORM_NHWC, SIMDNORM_BF16, SIMDNORM_BF16,
              SIMDNORM_F32);
    Fill(p, 0.0, 1.0, 600);
    p.flags = SIMDNORM_FAST_ROUNDING;
    Tensor fast(p.y.t, p.y.size());
    ASSERT_EQ(p.Run(fast, false), SIMDNORM_OK);
    p.flags = 0;
    ASSERT_EQ(p.Run(p.y, false), SIMDNORM_OK);
    size_t same = 0;
    for (size_t i = 0; i < fast.size(); ++i)
      same += fast.Bits(i) == p.y.Bits(i);
    EXPECT_GE(same * 100, fast.size() * 99) << KindName(kind);
  }
}

SIMDNORM_INSTANTIATE_PER_ISA(ChannelRoundingTest);

}  // namespace
}  // namespace simdnorm_test

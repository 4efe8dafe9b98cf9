// Per-target BatchNorm backward kernels (simdnorm_batch_norm_backward),
// written once with Highway on the forward's statistics (batch_rows-inl.h)
// and the row backward's pieces (backward_rows-inl.h).
//
// gamma is one number per channel, so with g = dy * gamma,
//   dx = r * (g - mean(g) - xhat * mean(g * xhat))
//      = (r * gamma) * ((dy - a) - xhat * c),  a = mean(dy), c = mean(dy xhat)
// and the sums sum(dy) and sum(dy * xhat) that give a and c are dbeta and
// dgamma themselves. Each channel, in three passes over its elements:
// 1. training: the forward's statistics of the channel (ChannelScaleNchw,
//    NhwcStats), so that xhat = (x * s - m) * mul + add is bit for bit the
//    forward's, and r = 1 / sqrt(var + eps) in double; inference: the
//    forward's InferenceScale (xhat = (x - rm) * r);
// 2. S1 = sum(dy) and S2 = sum(dy * xhat) in fp32 blocks added in double
//    (NCHW: each row of hw by the row backward's GradSums, blocks of 32
//    vectors; NHWC: per channel lane, blocks of 32 positions), skipped in
//    inference when neither dgamma nor dbeta is wanted;
// 3. dx = (((dy - a) - xhat * c) * rg) * p2, rg * p2 = r * gamma (p2 a
//    power of two, 1 unless r * gamma is beyond 2^+-100: SplitMultiplier);
//    in inference a = c = 0 and x is not read: dx = (dy * rg) * p2.
// dx goes through an fp32 buffer (a row chunk in NCHW, 32 positions of a
// channel block in NHWC) and is stored from there by a function of the dx
// type alone: the vector code is instantiated per (x, dy) type pair, not
// per triple (compile time), for one more pass through L1.
// A unit (a channel in NCHW, a block of kBatchBlock channels in NHWC)
// holds all elements of its channels, so the sums of a channel, and
// everything from them, do not depend on how units are split over
// threads. A channel whose statistics, r, S1 or S2 are not finite (training)
// or whose running statistics give no finite r (inference) gets dx = the
// default quiet NaN throughout and dgamma NaN.

#if defined(SIMDNORM_LIB_BATCH_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_BATCH_BACKWARD_INL_H_
#undef SIMDNORM_LIB_BATCH_BACKWARD_INL_H_
#else
#define SIMDNORM_LIB_BATCH_BACKWARD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <memory>
#include <utility>

#include "hwy/highway.h"
#include "lib/backward_rows-inl.h"
#include "lib/batch_backward.h"
#include "lib/batch_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// A channel's constants (GradRow's fields): xhat from k, then a, c and rf
// = rg, p2 as above; nan: dx is NaN throughout. Also writes the channel's
// dgamma and dbeta.
inline GradRow FinishChannel(const internal::BatchBackwardArgs& a, size_t ch,
                             const RowScale& k, double r, double s1,
                             double s2) {
  const double m = static_cast<double>(a.n) * static_cast<double>(a.hw);
  GradRow g;
  g.k = k;
  g.a = a.training ? static_cast<float>(s1 / m) : 0.0f;
  g.c = a.training ? static_cast<float>(s2 / m) : 0.0f;
  const double rg = r * static_cast<double>(a.gamma[ch]);
  SplitMultiplier(std::fabs(rg), g.rf, g.p2);
  if (rg < 0.0) g.rf = -g.rf;
  g.nan = NaNRow(k) || !std::isfinite(r) ||
          (a.training && (!std::isfinite(s1) || !std::isfinite(s2) ||
                          !std::isfinite(g.a) || !std::isfinite(g.c)));
  if (a.dgamma != nullptr) {
    a.dgamma[ch] = g.nan ? std::numeric_limits<float>::quiet_NaN()
                         : static_cast<float>(s2);
  }
  if (a.dbeta != nullptr) a.dbeta[ch] = static_cast<float>(s1);
  return g;
}

// The channel's r (see top): from the forward's statistics (training) or
// the running variance (inference), in double.
inline double ChannelR(const internal::BatchBackwardArgs& a, size_t ch,
                       const RowScale& k) {
  const double var = a.training ? k.second / (static_cast<double>(a.n) * a.hw)
                                : static_cast<double>(a.running_var[ch]);
  return 1.0 / std::sqrt(var + static_cast<double>(a.eps));
}

// Inference dx of n elements: (dy * rg) * p2.
template <class DF, typename TDY, typename TDX>
HWY_NOINLINE void ScaleSpan(DF df, const TDY* dy, TDX* dx, size_t n, float rg,
                            float p2) {
  const size_t N = hn::Lanes(df);
  const auto vr = hn::Set(df, rg), vp = hn::Set(df, p2);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    StoreF(df, hn::Mul(hn::Mul(LoadF(df, dy + i), vr), vp), dx + i);
  }
  if (i < n) {
    const auto v = hn::Mul(hn::Mul(LoadTailF(df, dy + i, n - i), vr), vp);
    StoreTailF(df, v, dx + i, n - i);
  }
}

// dx[i, i + n) of dx_type TDX from n floats, each rounded once.
template <typename TDX>
HWY_NOINLINE void StoreFromF32(const float* in, void* dx, size_t i, size_t n) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  TDX* out = static_cast<TDX*>(dx) + i;
  size_t j = 0;
  for (; j + N <= n; j += N) StoreF(df, hn::LoadU(df, in + j), out + j);
  if (j < n) StoreTailF(df, LoadTailF(df, in + j, n - j), out + j, n - j);
}

using StoreFn = void (*)(const float* in, void* dx, size_t i, size_t n);

// NCHW: the forward's statistics of a channel, once per x type.
template <class DF, typename TX>
HWY_NOINLINE RowScale StatsNchw(DF df, const internal::BatchBackwardArgs& a,
                                const TX* x, size_t ch) {
  if (!a.training) {
    return InferenceScale(a.running_mean, a.running_var, a.eps, ch);
  }
  double mean;  // the forward's; not needed here
  return ChannelScaleNchw(df, x, a.n, a.hw, a.c * a.hw, a.eps, &mean);
}

// NCHW dx goes through a buffer of this many floats (a row of hw may be
// longer: in chunks).
inline constexpr size_t kGradChunk = 512;

template <typename TX, typename TDY>
HWY_NOINLINE void BatchBackwardNchwF32(const internal::BatchBackwardArgs& a,
                                       size_t begin, size_t end,
                                       StoreFn store) {
  const hn::ScalableTag<float> df;
  const size_t rs = a.c * a.hw;  // between a channel's rows
  // The row backward's view of (a chunk of) one row: g = dy * 1 (exact).
  internal::BackwardArgs row{};
  row.cols = a.hw;
  row.scale = nullptr;
  row.scale_const = 1.0f;
  const bool sums = a.training || a.dgamma != nullptr || a.dbeta != nullptr;
  HWY_ALIGN float buf[kGradChunk];
  for (size_t ch = begin; ch < end; ++ch) {
    const TX* x = static_cast<const TX*>(a.x) + ch * a.hw;
    const TDY* dy = static_cast<const TDY*>(a.dy) + ch * a.hw;
    const RowScale k = StatsNchw(df, a, x, ch);
    double s1 = 0.0, s2 = 0.0;
    for (size_t i = 0; sums && i < a.n; ++i) {
      double r1, r2;
      GradSums(df, x + i * rs, dy + i * rs, row.scale, row.scale_const, a.hw, k,
               r1, r2);
      s1 += r1;
      s2 += r2;
    }
    const GradRow g = FinishChannel(a, ch, k, ChannelR(a, ch, k), s1, s2);
    // Each chunk is stored after its dy is read (dx may be dy).
    for (size_t i = 0; i < a.n; ++i) {
      for (size_t j = 0; j < a.hw; j += kGradChunk) {
        const size_t len = a.hw - j < kGradChunk ? a.hw - j : kGradChunk;
        const size_t at = i * rs + j;
        if (HWY_UNLIKELY(g.nan)) {
          FillNaN(df, buf, static_cast<float*>(nullptr), 0, len);
        } else if (a.training) {
          row.cols = len;
          GradApply<true>(df, row, x + at, dy + at, buf, g, nullptr, nullptr);
        } else {
          ScaleSpan(df, dy + at, buf, len, g.rf, g.p2);
        }
        store(buf, a.dx, ch * a.hw + at, len);
      }
    }
  }
}

template <typename TX, typename TDY, typename TDX>
void BatchBackwardNchw(const internal::BatchBackwardArgs& a, size_t begin,
                       size_t end) {
  BatchBackwardNchwF32<TX, TDY>(a, begin, end, &StoreFromF32<TDX>);
}

// NHWC per-channel arrays of a block: kBatchBlock channels and room for a
// whole vector from any of them. Lanes past the block stay 0.
inline constexpr size_t kGradLanes = internal::kBatchBlock + kMaxFloatLanes;

struct GradChannels {
  float s[kGradLanes] = {}, m[kGradLanes] = {}, mul[kGradLanes] = {},
        add[kGradLanes] = {}, a[kGradLanes] = {}, c[kGradLanes] = {},
        rf[kGradLanes] = {}, p2[kGradLanes] = {}, nan[kGradLanes] = {};
};

// NHWC: the forward's statistics of the block's cb channels (NhwcStats
// with one channel per group, as the forward's BatchNhwc), once per x
// type.
template <class DF, typename TX>
HWY_NOINLINE void StatsNhwc(DF df, const internal::BatchBackwardArgs& a,
                            const TX* x, size_t c0, size_t cb,
                            ChannelScratch* scratch, RowScale* k) {
  if (!a.training) {
    for (size_t j = 0; j < cb; ++j) {
      k[j] = InferenceScale(a.running_mean, a.running_var, a.eps, c0 + j);
    }
    return;
  }
  const internal::GroupArgs ga{cb,      a.n * a.hw, cb,      1,    a.x,
                               nullptr, nullptr,    nullptr, a.eps};
  double mean[internal::kBatchBlock];
  NhwcStats(df, ga, x, a.c, *scratch, k, mean);
}

// NHWC: for each channel j < cb of `rows` positions `stride` elements
// apart, S1 = sum(dy) and S2 = sum(dy * xhat), in fp32 over blocks of 32
// positions (in position order per lane) added in double.
template <class DF, typename TX, typename TDY>
HWY_NOINLINE void ChannelGradSums(DF df, const TX* x, const TDY* dy,
                                  size_t stride, size_t rows, size_t cb,
                                  const GradChannels& t, double* s1,
                                  double* s2) {
  const size_t N = hn::Lanes(df);
  float acc1[kGradLanes], acc2[kGradLanes];
  std::fill(s1, s1 + cb, 0.0);
  std::fill(s2, s2 + cb, 0.0);
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = 0; j < cb; j += N) {
      const size_t count = cb - j < N ? cb - j : N;
      const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.m + j);
      const auto mul = hn::LoadU(df, t.mul + j);
      const auto add = hn::LoadU(df, t.add + j);
      auto sum1 = hn::Zero(df), sum2 = hn::Zero(df);
      for (size_t p = p0; p < p1; ++p) {
        const TX* xp = x + p * stride + j;
        const TDY* dp = dy + p * stride + j;
        const auto xv = count == N ? LoadF(df, xp) : LoadTailF(df, xp, count);
        const auto dv = count == N ? LoadF(df, dp) : LoadTailF(df, dp, count);
        sum1 = hn::Add(sum1, dv);
        sum2 = hn::MulAdd(dv, XhatOf(xv, s, m, mul, add), sum2);
      }
      hn::StoreU(sum1, df, acc1 + j);
      hn::StoreU(sum2, df, acc2 + j);
    }
    for (size_t j = 0; j < cb; ++j) {
      s1[j] += acc1[j];
      s2[j] += acc2[j];
    }
  }
}

// NHWC dx of cb channels at `rows` positions `stride` elements apart
// (position p's first at element dx0 + p * stride of dx), in blocks of 32
// positions with each channel vector's constants in registers; a block's
// dx goes to an fp32 buffer, then to dx once all its dy are read (dx may
// be dy).
template <class DF, typename TX, typename TDY>
HWY_NOINLINE void ApplyGradNhwc(DF df, const TX* x, const TDY* dy,
                                size_t stride, size_t rows, size_t cb,
                                bool training, const GradChannels& t, void* dx,
                                size_t dx0, StoreFn store) {
  const size_t N = hn::Lanes(df);
  const auto qnan = QuietNaN(df);
  // Positions kGradLanes apart: a whole vector from any j < cb fits.
  HWY_ALIGN float buf[32 * kGradLanes];
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = 0; j < cb; j += N) {
      const size_t count = cb - j < N ? cb - j : N;
      const auto nan = hn::Ne(hn::LoadU(df, t.nan + j), hn::Zero(df));
      const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.m + j);
      const auto mul = hn::LoadU(df, t.mul + j);
      const auto add = hn::LoadU(df, t.add + j);
      const auto va = hn::LoadU(df, t.a + j), vc = hn::LoadU(df, t.c + j);
      const auto rf = hn::LoadU(df, t.rf + j), p2 = hn::LoadU(df, t.p2 + j);
      for (size_t p = p0; p < p1; ++p) {
        const TDY* dp = dy + p * stride + j;
        auto v = count == N ? LoadF(df, dp) : LoadTailF(df, dp, count);
        if (training) {
          const TX* xp = x + p * stride + j;
          const auto xv = count == N ? LoadF(df, xp) : LoadTailF(df, xp, count);
          v = hn::NegMulAdd(XhatOf(xv, s, m, mul, add), vc, hn::Sub(v, va));
        }
        v = hn::IfThenElse(nan, qnan, hn::Mul(hn::Mul(v, rf), p2));
        hn::StoreU(v, df, buf + (p - p0) * kGradLanes + j);
      }
    }
    for (size_t p = p0; p < p1; ++p) {
      store(buf + (p - p0) * kGradLanes, dx, dx0 + p * stride, cb);
    }
  }
}

template <typename TX, typename TDY>
HWY_NOINLINE void BatchBackwardNhwcF32(const internal::BatchBackwardArgs& a,
                                       size_t begin, size_t end,
                                       StoreFn store) {
  constexpr size_t kBlock = internal::kBatchBlock;
  const hn::ScalableTag<float> df;
  const size_t rows = a.n * a.hw;
  const bool sums = a.training || a.dgamma != nullptr || a.dbeta != nullptr;
  // The forward's statistics scratch (training only).
  std::unique_ptr<ChannelScratch> scratch(
      a.training ? new ChannelScratch(kBlock, hn::Lanes(df)) : nullptr);
  GradChannels t;
  RowScale k[kBlock];
  double s1[kBlock] = {}, s2[kBlock] = {};
  for (size_t u = begin; u < end; ++u) {
    const size_t c0 = u * kBlock, cb = std::min(kBlock, a.c - c0);
    const TX* x = static_cast<const TX*>(a.x) + c0;
    const TDY* dy = static_cast<const TDY*>(a.dy) + c0;
    StatsNhwc(df, a, x, c0, cb, scratch.get(), k);
    for (size_t j = 0; j < kGradLanes; ++j) {
      const bool in = j < cb;
      t.s[j] = in ? k[j].s : 0.0f;
      t.m[j] = in ? k[j].m : 0.0f;
      t.mul[j] = in ? k[j].mul : 0.0f;
      t.add[j] = in ? k[j].add : 0.0f;
    }
    if (sums) ChannelGradSums(df, x, dy, a.c, rows, cb, t, s1, s2);
    for (size_t j = 0; j < cb; ++j) {
      const GradRow g = FinishChannel(a, c0 + j, k[j],
                                      ChannelR(a, c0 + j, k[j]), s1[j], s2[j]);
      t.a[j] = g.a;
      t.c[j] = g.c;
      t.rf[j] = g.rf;
      t.p2[j] = g.p2;
      t.nan[j] = g.nan ? 1.0f : 0.0f;
    }
    ApplyGradNhwc(df, x, dy, a.c, rows, cb, a.training, t, a.dx, c0, store);
  }
}

template <typename TX, typename TDY, typename TDX>
void BatchBackwardNhwc(const internal::BatchBackwardArgs& a, size_t begin,
                       size_t end) {
  BatchBackwardNhwcF32<TX, TDY>(a, begin, end, &StoreFromF32<TDX>);
}

// This target's table, [layout][x_type][dy_type][dx_type], filled at
// compile time.
struct BatchBackwardKernels {
  internal::BatchBackwardTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[0][I / 9][I / 3 % 3][I % 3] =
          &BatchBackwardNchw<InType<I / 9>, InType<I / 3 % 3>, InType<I % 3>>),
     ...);
    ((table[1][I / 9][I / 3 % 3][I % 3] =
          &BatchBackwardNhwc<InType<I / 9>, InType<I / 3 % 3>, InType<I % 3>>),
     ...);
  }
  constexpr BatchBackwardKernels() { Fill(std::make_index_sequence<27>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_BATCH_BACKWARD_INL_H_

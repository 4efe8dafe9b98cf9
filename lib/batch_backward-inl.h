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
//    forward's, and r = 1 / sqrt(var + eps) in double; or, for a channel
//    whose saved statistics (save_mean, save_invstd) come with the call,
//    none: pass 2 also sums d = x - mean, and xhat = (d - c) * rstd, c =
//    mean(d), r = rstd (saved_stats-inl.h); inference: the forward's
//    InferenceScale (xhat = (x - rm) * r);
// 2. S1 = sum(dy) and S2 = sum(dy * xhat) in fp32 blocks added in double
//    (NCHW: each row of hw by the row backward's GradSums, blocks of 32
//    vectors; NHWC: per channel lane, blocks of 32 positions), skipped in
//    inference when neither dgamma nor dbeta is wanted;
// 3. dx = (((dy - a) - xhat * c) * rg) * p2, rg * p2 = r * gamma (p2 a
//    power of two, 1 unless r * gamma is beyond 2^+-100: SplitMultiplier);
//    in inference a = c = 0 and dx = (dy * rg) * p2 needs no sums: it is
//    made in pass 2's loop (same sums, same order), one pass over x and dy
//    instead of two (x is not read when no sums are wanted).
// The vector code is instantiated per (x, dy) type pair, not per triple
// (compile time): when dx_type is dy_type (in place, the usual case) dx
// is stored as it is made; otherwise it goes through an fp32 buffer (32
// vectors of a row in NCHW, 32 positions of a channel block in NHWC) and
// is stored from there by a function of the dx type alone.
// A unit (a channel in NCHW, a block of kBatchGradBlock channels in NHWC)
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
#include <optional>
#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "lib/backward_rows-inl.h"
#include "lib/batch_backward.h"
#include "lib/batch_rows-inl.h"
#include "lib/saved_stats-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// A channel's constants (GradRow's fields): xhat from k, then a, c and rf
// = rg, p2 as above; nan: dx is NaN throughout. In inference they do not
// depend on the sums (a = c = 0), so dx can be made in the sums' pass.
inline GradRow ChannelGrad(const internal::BatchBackwardArgs& a, size_t ch,
                           const RowScale& k, double r, double s1, double s2) {
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
  return g;
}

// The channel's dgamma and dbeta from its sums.
inline void SetChannelSums(const internal::BatchBackwardArgs& a, size_t ch,
                           bool nan, double s1, double s2) {
  if (a.dgamma != nullptr) {
    a.dgamma[ch] =
        nan ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(s2);
  }
  if (a.dbeta != nullptr) a.dbeta[ch] = static_cast<float>(s1);
}

// The channel's r (see top): from the forward's statistics (training) or
// the running variance (inference), in double.
inline double ChannelR(const internal::BatchBackwardArgs& a, size_t ch,
                       const RowScale& k) {
  const double var = a.training ? k.second / (static_cast<double>(a.n) * a.hw)
                                : static_cast<double>(a.running_var[ch]);
  return 1.0 / std::sqrt(var + static_cast<double>(a.eps));
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

// Where dx goes: kDirect, straight to dx (its type is dy's: the vector
// code is instantiated per (x, dy) type pair, and dx_type == dy_type, the
// in-place case, needs no conversion function); else through an fp32
// buffer stored by `store` (a function of the dx type alone, so that the
// code is not instantiated per type triple).
template <bool kDirect, typename TDY>
using DxOut = std::conditional_t<kDirect, TDY, float>;

// Inference, one GradSums block (at most 32 vectors) of a row: out = (dy
// * rg) * p2 and, with kSums, the block's fp32 sums of dy and dy * xhat
// added to sum1 and sum2 as GradSums adds them (same chains, same order):
// one pass over x and dy instead of two. out may be dy: each vector is
// loaded before it is stored.
template <bool kSums, class DF, typename TX, typename TDY, typename TOut>
HWY_NOINLINE void ScaleBlock(DF df, const TX* HWY_RESTRICT x, const TDY* dy,
                             TOut* out, size_t n, const GradRow& g,
                             double& sum1, double& sum2) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, g.k.s), m = hn::Set(df, g.k.m);
  const auto mul = hn::Set(df, g.k.mul), add = hn::Set(df, g.k.add);
  const auto vr = hn::Set(df, g.rf), vp = hn::Set(df, g.p2);
  auto a1 = hn::Zero(df), b1 = hn::Zero(df);
  auto a2 = hn::Zero(df), b2 = hn::Zero(df);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto d0 = LoadF(df, dy + i), d1 = LoadF(df, dy + i + N);
    if constexpr (kSums) {
      a1 = hn::Add(a1, d0);
      a2 = hn::MulAdd(d0, XhatOf(LoadF(df, x + i), s, m, mul, add), a2);
      b1 = hn::Add(b1, d1);
      b2 = hn::MulAdd(d1, XhatOf(LoadF(df, x + i + N), s, m, mul, add), b2);
    }
    StoreF(df, hn::Mul(hn::Mul(d0, vr), vp), out + i);
    StoreF(df, hn::Mul(hn::Mul(d1, vr), vp), out + i + N);
  }
  if (i + N <= n) {
    const auto d0 = LoadF(df, dy + i);
    if constexpr (kSums) {
      a1 = hn::Add(a1, d0);
      a2 = hn::MulAdd(d0, XhatOf(LoadF(df, x + i), s, m, mul, add), a2);
    }
    StoreF(df, hn::Mul(hn::Mul(d0, vr), vp), out + i);
    i += N;
  }
  if (i < n) {
    const auto d0 = LoadTailF(df, dy + i, n - i);
    if constexpr (kSums) {
      const auto xhat = hn::IfThenElseZero(
          hn::FirstN(df, n - i),
          XhatOf(LoadTailF(df, x + i, n - i), s, m, mul, add));
      b1 = hn::Add(b1, d0);
      b2 = hn::MulAdd(d0, xhat, b2);
    }
    StoreTailF(df, hn::Mul(hn::Mul(d0, vr), vp), out + i, n - i);
  }
  if constexpr (kSums) {
    sum1 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a1, b1)));
    sum2 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a2, b2)));
  }
}

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

// NCHW dx through the buffer goes in chunks of at most this many floats:
// 32 vectors, a GradSums block.
inline constexpr size_t kGradChunk = 32 * kMaxFloatLanes;

// NCHW inference of one channel (x, dy and dx at its first element) when
// dx is finite: dx and the sums in one pass, a block at a time.
template <bool kDirect, bool kSums, class DF, typename TX, typename TDY>
HWY_INLINE void InferenceNchw(DF df, const internal::BatchBackwardArgs& a,
                              const TX* x, const TDY* dy, size_t dx0,
                              const GradRow& g, StoreFn store, double& s1,
                              double& s2) {
  const size_t rs = a.c * a.hw, block = 32 * hn::Lanes(df);
  HWY_ALIGN float buf[kDirect ? 1 : kGradChunk];
  for (size_t i = 0; i < a.n; ++i) {
    double r1 = 0.0, r2 = 0.0;  // the row's, as GradSums adds them
    for (size_t j = 0; j < a.hw; j += block) {
      const size_t len = std::min(block, a.hw - j), at = i * rs + j;
      if constexpr (kDirect) {
        TDY* dx = static_cast<TDY*>(a.dx) + dx0 + at;
        ScaleBlock<kSums>(df, x + at, dy + at, dx, len, g, r1, r2);
      } else {
        ScaleBlock<kSums>(df, x + at, dy + at, buf, len, g, r1, r2);
        store(buf, a.dx, dx0 + at, len);
      }
    }
    s1 += r1;
    s2 += r2;
  }
}

template <typename TX, typename TDY, bool kDirect>
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
  HWY_ALIGN float buf[kDirect ? 1 : kGradChunk];
  const double m = static_cast<double>(a.n) * static_cast<double>(a.hw);
  for (size_t ch = begin; ch < end; ++ch) {
    const TX* x = static_cast<const TX*>(a.x) + ch * a.hw;
    const TDY* dy = static_cast<const TDY*>(a.dy) + ch * a.hw;
    // Training on saved statistics (a channel of usable ones): no
    // statistics pass; pass 2 sums d = x - mean too.
    const bool saved = a.save_invstd != nullptr &&
                       UsableSaved(a.save_mean[ch], a.save_invstd[ch]);
    RowScale k = saved ? DiffScale(a.save_mean[ch]) : StatsNchw(df, a, x, ch);
    double r = saved ? 0.0 : ChannelR(a, ch, k);
    double s1 = 0.0, s2 = 0.0, s3 = 0.0;
    if (!a.training) {
      const GradRow g = ChannelGrad(a, ch, k, r, 0.0, 0.0);
      if (HWY_LIKELY(!g.nan)) {
        if (sums) {
          InferenceNchw<kDirect, true>(df, a, x, dy, ch * a.hw, g, store, s1,
                                       s2);
        } else {
          InferenceNchw<kDirect, false>(df, a, x, dy, ch * a.hw, g, store, s1,
                                        s2);
        }
        SetChannelSums(a, ch, false, s1, s2);
        continue;
      }
    }
    for (size_t i = 0; sums && i < a.n; ++i) {
      double r1, r2, r3 = 0.0;
      if (saved) {
        GradSums<true>(df, x + i * rs, dy + i * rs, row.scale, row.scale_const,
                       a.hw, k, r1, r2, r3);
      } else {
        GradSums(df, x + i * rs, dy + i * rs, row.scale, row.scale_const, a.hw,
                 k, r1, r2);
      }
      s1 += r1;
      s2 += r2;
      s3 += r3;
    }
    if (saved) {  // xhat = (d - c) * rstd (saved_stats-inl.h)
      const SavedSet set =
          SavedSetOf(a.save_mean[ch], a.save_invstd[ch], s3, m);
      k = set.k;
      r = set.r;
      s2 = SavedXhatSum(set, s1, s2);
    }
    const GradRow g = ChannelGrad(a, ch, k, r, s1, s2);
    SetChannelSums(a, ch, g.nan, s1, s2);
    // Each chunk is stored after its dy is read (dx may be dy).
    for (size_t i = 0; i < a.n; ++i) {
      const size_t at = i * rs;
      if (HWY_UNLIKELY(g.nan) && kDirect) {
        FillNaN(df, static_cast<TDY*>(a.dx) + ch * a.hw + at,
                static_cast<float*>(nullptr), 0, a.hw);
      } else if (HWY_UNLIKELY(g.nan)) {
        for (size_t j = 0; j < a.hw; j += kGradChunk) {
          const size_t len = std::min(kGradChunk, a.hw - j);
          FillNaN(df, buf, static_cast<float*>(nullptr), 0, len);
          store(buf, a.dx, ch * a.hw + at + j, len);
        }
      } else if constexpr (kDirect) {
        TDY* dx = static_cast<TDY*>(a.dx) + ch * a.hw + at;
        GradApply<true>(df, row, x + at, dy + at, dx, g, nullptr, nullptr);
      } else {
        for (size_t j = 0; j < a.hw; j += kGradChunk) {
          row.cols = std::min(kGradChunk, a.hw - j);
          GradApply<true>(df, row, x + at + j, dy + at + j, buf, g, nullptr,
                          nullptr);
          store(buf, a.dx, ch * a.hw + at + j, row.cols);
        }
      }
    }
  }
}

template <typename TX, typename TDY, typename TDX>
void BatchBackwardNchw(const internal::BatchBackwardArgs& a, size_t begin,
                       size_t end) {
  BatchBackwardNchwF32<TX, TDY, std::is_same_v<TDY, TDX>>(a, begin, end,
                                                          &StoreFromF32<TDX>);
}

// NHWC per-channel arrays of a block: kBatchGradBlock channels and room for a
// whole vector from any of them. Lanes past the block stay 0.
inline constexpr size_t kGradLanes = internal::kBatchGradBlock + kMaxFloatLanes;

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
  double mean[internal::kBatchGradBlock];
  NhwcStats(df, ga, x, a.c, *scratch, k, mean);
}

// NHWC: for each channel j < cb of `rows` positions `stride` elements
// apart, S1 = sum(dy) and S2 = sum(dy * xhat) (kSum3: and S3 = sum(xhat),
// d for the channels of saved statistics), in fp32 over blocks of 32
// positions (in position order per lane) added in double.
template <bool kSum3, class DF, typename TX, typename TDY>
HWY_NOINLINE void ChannelGradSums(DF df, const TX* x, const TDY* dy,
                                  size_t stride, size_t rows, size_t cb,
                                  const GradChannels& t, double* s1, double* s2,
                                  double* s3) {
  const size_t N = hn::Lanes(df);
  float acc1[kGradLanes], acc2[kGradLanes], acc3[kSum3 ? kGradLanes : 1];
  std::fill(s1, s1 + cb, 0.0);
  std::fill(s2, s2 + cb, 0.0);
  if constexpr (kSum3) std::fill(s3, s3 + cb, 0.0);
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = 0; j < cb; j += N) {
      const size_t count = cb - j < N ? cb - j : N;
      const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.m + j);
      const auto mul = hn::LoadU(df, t.mul + j);
      const auto add = hn::LoadU(df, t.add + j);
      auto sum1 = hn::Zero(df), sum2 = hn::Zero(df), sum3 = hn::Zero(df);
      for (size_t p = p0; p < p1; ++p) {
        const TX* xp = x + p * stride + j;
        const TDY* dp = dy + p * stride + j;
        if (p + 32 < rows) {  // a block ahead, as ChannelSums
          hwy::Prefetch(xp + 32 * stride);
          hwy::Prefetch(dp + 32 * stride);
        }
        const auto xv = LoadTailF(df, xp, count);
        const auto dv = LoadTailF(df, dp, count);
        const auto xhat = XhatOf(xv, s, m, mul, add);
        sum1 = hn::Add(sum1, dv);
        sum2 = hn::MulAdd(dv, xhat, sum2);
        if constexpr (kSum3) sum3 = hn::Add(sum3, xhat);
      }
      hn::StoreU(sum1, df, acc1 + j);
      hn::StoreU(sum2, df, acc2 + j);
      if constexpr (kSum3) hn::StoreU(sum3, df, acc3 + j);
    }
    for (size_t j = 0; j < cb; ++j) {
      s1[j] += acc1[j];
      s2[j] += acc2[j];
      if constexpr (kSum3) s3[j] += acc3[j];
    }
  }
}

// NHWC dx of cb channels at `rows` positions `stride` elements apart
// (position p's first at element dx0 + p * stride of dx), in blocks of 32
// positions with each channel vector's constants in registers. kDirect:
// stored to dx as made; else a block's dx goes to an fp32 buffer, then to
// dx once all its dy are read (dx may be dy). kSums (inference): also
// ChannelGradSums' sums, same chains in the same order, into s1 and s2.
template <bool kTraining, bool kSums, bool kDirect, class DF, typename TX,
          typename TDY>
HWY_NOINLINE void ApplyGradNhwc(DF df, const TX* x, const TDY* dy,
                                size_t stride, size_t rows, size_t cb,
                                const GradChannels& t, void* dx, size_t dx0,
                                StoreFn store, double* s1, double* s2) {
  static_assert(!(kTraining && kSums), "training sums come first");
  const size_t N = hn::Lanes(df);
  const auto qnan = QuietNaN(df);
  // Positions kGradLanes apart: a whole vector from any j < cb fits.
  HWY_ALIGN float buf[kDirect ? 1 : 32 * kGradLanes];
  float acc1[kSums ? kGradLanes : 1], acc2[kSums ? kGradLanes : 1];
  if constexpr (kSums) {
    std::fill(s1, s1 + cb, 0.0);
    std::fill(s2, s2 + cb, 0.0);
  }
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
      auto sum1 = hn::Zero(df), sum2 = hn::Zero(df);
      for (size_t p = p0; p < p1; ++p) {
        const TDY* dp = dy + p * stride + j;
        const TX* xp = x + p * stride + j;
        if (p + 32 < rows) {  // a block ahead, as ChannelSums
          if constexpr (kTraining || kSums) hwy::Prefetch(xp + 32 * stride);
          hwy::Prefetch(dp + 32 * stride);
        }
        auto v = LoadTailF(df, dp, count);
        if constexpr (kTraining || kSums) {
          const auto xv = LoadTailF(df, xp, count);
          const auto xhat = XhatOf(xv, s, m, mul, add);
          if constexpr (kSums) {
            sum1 = hn::Add(sum1, v);
            sum2 = hn::MulAdd(v, xhat, sum2);
          } else {
            v = hn::NegMulAdd(xhat, vc, hn::Sub(v, va));
          }
        }
        v = hn::IfThenElse(nan, qnan, hn::Mul(hn::Mul(v, rf), p2));
        if constexpr (kDirect) {
          TDY* out = static_cast<TDY*>(dx) + dx0 + p * stride + j;
          if (count == N) {
            StoreF(df, v, out);
          } else {
            StoreTailF(df, v, out, count);
          }
        } else {
          hn::StoreU(v, df, buf + (p - p0) * kGradLanes + j);
        }
      }
      if constexpr (kSums) {
        hn::StoreU(sum1, df, acc1 + j);
        hn::StoreU(sum2, df, acc2 + j);
      }
    }
    if constexpr (kSums) {
      for (size_t j = 0; j < cb; ++j) {
        s1[j] += acc1[j];
        s2[j] += acc2[j];
      }
    }
    if constexpr (!kDirect) {
      for (size_t p = p0; p < p1; ++p) {
        store(buf + (p - p0) * kGradLanes, dx, dx0 + p * stride, cb);
      }
    }
  }
}

template <typename TX, typename TDY, bool kDirect>
HWY_NOINLINE void BatchBackwardNhwcF32(const internal::BatchBackwardArgs& a,
                                       size_t begin, size_t end,
                                       StoreFn store) {
  constexpr size_t kBlock = internal::kBatchGradBlock;
  const hn::ScalableTag<float> df;
  const size_t rows = a.n * a.hw;
  const double m = static_cast<double>(rows);
  const bool sums = a.training || a.dgamma != nullptr || a.dbeta != nullptr;
  // The forward's statistics scratch (training only).
  internal::Scratch memory;
  std::optional<ChannelScratch> scratch;
  if (a.training) scratch.emplace(kBlock, hn::Lanes(df), memory);
  GradChannels t;
  RowScale k[kBlock];
  double s1[kBlock] = {}, s2[kBlock] = {}, s3[kBlock] = {};
  bool saved[kBlock] = {};  // training: the channel's saved statistics used
  for (size_t u = begin; u < end; ++u) {
    const size_t c0 = u * kBlock, cb = std::min(kBlock, a.c - c0);
    const TX* x = static_cast<const TX*>(a.x) + c0;
    const TDY* dy = static_cast<const TDY*>(a.dy) + c0;
    size_t kept = 0;
    for (size_t j = 0; a.save_invstd != nullptr && j < cb; ++j) {
      saved[j] = UsableSaved(a.save_mean[c0 + j], a.save_invstd[c0 + j]);
      kept += saved[j];
    }
    if (kept < cb)
      StatsNhwc(df, a, x, c0, cb, scratch ? &*scratch : nullptr, k);
    for (size_t j = 0; kept > 0 && j < cb; ++j) {
      if (saved[j]) k[j] = DiffScale(a.save_mean[c0 + j]);
    }
    for (size_t j = 0; j < kGradLanes; ++j) {
      const bool in = j < cb;
      t.s[j] = in ? k[j].s : 0.0f;
      t.m[j] = in ? k[j].m : 0.0f;
      t.mul[j] = in ? k[j].mul : 0.0f;
      t.add[j] = in ? k[j].add : 0.0f;
    }
    if (a.training && kept > 0) {
      ChannelGradSums<true>(df, x, dy, a.c, rows, cb, t, s1, s2, s3);
    } else if (a.training) {
      ChannelGradSums<false>(df, x, dy, a.c, rows, cb, t, s1, s2, s3);
    }
    GradRow g[kBlock];
    for (size_t j = 0; j < cb; ++j) {
      double r;
      if (kept > 0 && saved[j]) {  // xhat = (d - c) rstd (saved_stats-inl.h)
        const SavedSet set =
            SavedSetOf(a.save_mean[c0 + j], a.save_invstd[c0 + j], s3[j], m);
        k[j] = set.k;
        t.mul[j] = set.k.mul;
        t.add[j] = set.k.add;
        r = set.r;
        s2[j] = SavedXhatSum(set, s1[j], s2[j]);
      } else {
        r = ChannelR(a, c0 + j, k[j]);
      }
      g[j] = ChannelGrad(a, c0 + j, k[j], r, s1[j], s2[j]);
      t.a[j] = g[j].a;
      t.c[j] = g[j].c;
      t.rf[j] = g[j].rf;
      t.p2[j] = g[j].p2;
      t.nan[j] = g[j].nan ? 1.0f : 0.0f;
    }
    // Inference: dx does not need the sums, so they come in its pass.
    if (a.training) {
      ApplyGradNhwc<true, false, kDirect>(df, x, dy, a.c, rows, cb, t, a.dx, c0,
                                          store, s1, s2);
    } else if (sums) {
      ApplyGradNhwc<false, true, kDirect>(df, x, dy, a.c, rows, cb, t, a.dx, c0,
                                          store, s1, s2);
    } else {
      ApplyGradNhwc<false, false, kDirect>(df, x, dy, a.c, rows, cb, t, a.dx,
                                           c0, store, s1, s2);
    }
    for (size_t j = 0; j < cb; ++j) {
      SetChannelSums(a, c0 + j, g[j].nan, s1[j], s2[j]);
    }
  }
}

template <typename TX, typename TDY, typename TDX>
void BatchBackwardNhwc(const internal::BatchBackwardArgs& a, size_t begin,
                       size_t end) {
  BatchBackwardNhwcF32<TX, TDY, std::is_same_v<TDY, TDX>>(a, begin, end,
                                                          &StoreFromF32<TDX>);
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

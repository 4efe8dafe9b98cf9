// Per-target GroupNorm kernels (simdnorm_group_norm), written once with
// Highway. The statistics of a group are LayerNorm's (norm_rows-inl.h):
// one pass over d = x - k, k the group's first element (NHWC: the mean of
// its channels at the first position, or for groups under 4 channels at
// the first 16), with fp32 partial
// sums of at most 32 terms per lane added in double, trusted while the
// sum of squares is in a safe range and E[d]^2 <= 4 var; otherwise the
// general path: a power of two s bringing max|x| to [1, 2), then the
// corrected two-pass algorithm on x * s. y = ((x * s - m) * mul + add) *
// gamma[ch] + beta[ch], the last step one FMA (GammaBeta); NHWC where s =
// 1 folds the weights in (FoldChannels).
//
// NCHW: a group is a contiguous row of cg * hw elements: Scale<true> as for
// a LayerNorm row, then each channel's hw elements with its weights.
// NHWC: a sample is hw rows of c channels. The sums are taken per channel,
// vectorized across channels, over blocks of 32 positions (fp32) added in
// double; a group's sums are its channels' added in channel order. Each
// channel carries its group's shift (and scale), so every group keeps its
// own statistics; the general path's passes run over the whole sample
// only when some group of it needs them.
//
// A group whose statistics are NaN, or whose 1/sqrt is infinite, is the
// default quiet NaN throughout. Results of a unit (NCHW: a sample's group;
// NHWC: a sample) depend only on it.

#if defined(SIMDNORM_LIB_GROUP_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_GROUP_ROWS_INL_H_
#undef SIMDNORM_LIB_GROUP_ROWS_INL_H_
#else
#define SIMDNORM_LIB_GROUP_ROWS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "hwy/highway.h"
#include "lib/channel_checked-inl.h"
#include "lib/convert-inl.h"
#include "lib/group_norm.h"
#include "lib/norm_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// The result of one vector: LayerNorm's xhat = (x * s - m) * mul + add
// (x * 1 - m is x - m rounded once, as the rows compute it), then the
// weights; NaN lanes of `nan` give the default quiet NaN.
template <class DF>
HWY_INLINE hn::Vec<DF> GroupResult(DF df, hn::Vec<DF> x, hn::Vec<DF> s,
                                   hn::Vec<DF> m, hn::Vec<DF> mul,
                                   hn::Vec<DF> add, hn::Vec<DF> g,
                                   hn::Vec<DF> b) {
  return GammaBeta(df, hn::MulAdd(hn::MulSub(x, s, m), mul, add), g, b);
}

// NCHW: the cg channels of one group, hw elements each, from its
// statistics k. y may be x: each vector is loaded before it is stored.
template <class DF, typename TX, typename TY>
HWY_NOINLINE void ApplyChannels(DF df, const TX* x, TY* y, const float* gamma,
                                const float* beta, size_t cg, size_t hw,
                                const RowScale& k) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  for (size_t ch = 0; ch < cg; ++ch, x += hw, y += hw) {
    const auto g = hn::Set(df, gamma[ch]), b = hn::Set(df, beta[ch]);
    size_t i = 0;
    for (; i + N <= hw; i += N) {
      StoreF(df, GroupResult(df, LoadF(df, x + i), s, m, mul, add, g, b),
             y + i);
    }
    if (i < hw) {
      const auto v = LoadTailF(df, x + i, hw - i);
      StoreTailF(df, GroupResult(df, v, s, m, mul, add, g, b), y + i, hw - i);
    }
  }
}

template <typename TX, typename TY>
HWY_NOINLINE void GroupNchwChecked(const internal::GroupArgs& a, size_t begin,
                                   size_t end);
template <typename TX, typename TY>
HWY_NOINLINE void GroupNhwcChecked(const internal::GroupArgs& a, size_t begin,
                                   size_t end);

template <typename TX, typename TY>
HWY_NOINLINE void GroupNchw(const internal::GroupArgs& a, size_t begin,
                            size_t end) {
  if constexpr (kRounds16<TY>) {
    if (a.correct_rounding) return GroupNchwChecked<TX, TY>(a, begin, end);
  }
  const hn::ScalableTag<float> df;
  const size_t m = a.cg * a.hw;
  for (size_t u = begin; u < end; ++u) {
    const TX* x = static_cast<const TX*>(a.x) + u * m;
    TY* y = static_cast<TY*>(a.y) + u * m;
    const RowScale k =
        Scale<true>(df, x, static_cast<const TX*>(nullptr),
                    static_cast<TX*>(nullptr), m, a.eps, SIMDNORM_LAYERNORM);
    SaveGroupStats(a, u, k.mean, k.second);
    if (HWY_UNLIKELY(NaNRow(k))) {
      FillNaN(df, y, static_cast<float*>(nullptr), 0, m);
      continue;
    }
    const size_t c0 = u % a.groups * a.cg;
    ApplyChannels(df, x, y, a.gamma + c0, a.beta + c0, a.cg, a.hw, k);
  }
}

// NHWC scratch for one sample: per-channel arrays of cp floats (c rounded
// up to whole vectors, and one more: a vector from any channel fits) and
// doubles, zeroed, in the call's scratch.
struct ChannelScratch {
  size_t cp;
  float *s, *k, *max, *acc_sum, *acc_sq, *mul, *add, *nan;
  float *fold_mul, *fold_add;  // FoldChannels
  double *sum, *sq;

  ChannelScratch(size_t c, size_t lanes, internal::Scratch& scratch)
      : cp((c + lanes - 1) / lanes * lanes + lanes) {
    float* f = scratch.Take<float>(10 * cp);
    for (float** p : {&s, &k, &max, &acc_sum, &acc_sq, &mul, &add, &nan,
                      &fold_mul, &fold_add}) {
      *p = f;
      f += cp;
    }
    sum = scratch.Take<double>(2 * cp);
    sq = sum + cp;
  }
};

// Channel vectors a column walk keeps in registers at once: four where
// the target has 32 vector registers (AVX-512, NEON, SVE: 1.1x on a
// 1x320x64x64 GroupNorm), two on AVX2 and SSE4 (16), where more spill.
#if HWY_TARGET <= HWY_AVX3 || \
    (HWY_TARGET >= HWY_SVE2_128 && HWY_TARGET <= HWY_NEON)
inline constexpr size_t kWalkVectors = 4;
#else
inline constexpr size_t kWalkVectors = 2;
#endif

// One channel vector of ChannelSums at q: count lanes (N: a whole vector;
// 0: past the channels, nothing).
template <bool kMax, class DF, typename TX>
HWY_INLINE void SumStep(DF df, const TX* q, size_t count, hn::Vec<DF> s,
                        hn::Vec<DF> k, hn::Vec<DF>& sum, hn::Vec<DF>& sq,
                        hn::Vec<DF>& max) {
  if (count == 0) return;
  const auto x =
      count == hn::Lanes(df) ? LoadF(df, q) : LoadTailF(df, q, count);
  const auto v = hn::MulSub(x, s, k);
  sum = hn::Add(sum, v);
  sq = hn::MulAdd(v, v, sq);
  if constexpr (kMax) max = hn::Max(max, hn::Abs(x));
}

// The block's sums of one channel vector at j (count lanes) to t.
template <bool kMax, class DF>
HWY_INLINE void SumStore(DF df, size_t j, size_t count, hn::Vec<DF> sum,
                         hn::Vec<DF> sq, hn::Vec<DF> max, ChannelScratch& t) {
  if (count == 0) return;
  hn::StoreU(sum, df, t.acc_sum + j);
  hn::StoreU(sq, df, t.acc_sq + j);
  if constexpr (kMax) hn::StoreU(max, df, t.max + j);
}

#if HWY_TARGET <= HWY_AVX3
// ChannelSums' walk over eight whole channel vectors at j, positions [p0,
// p1), without max|x|: 24 of AVX-512's 32 registers (s from memory), so
// that each position reads 512 contiguous bytes (1.0x-1.06x on a
// 1x320x64x64 GroupNorm, Zen 5, against four-vector walks). The same
// terms in the same order as the four-vector walk. x86 only: an array of
// vectors (SVE's are sizeless).
template <class DF, typename TX>
HWY_INLINE void SumWalk8(DF df, const TX* x, size_t stride, size_t p0,
                         size_t p1, size_t j, ChannelScratch& t) {
  constexpr size_t kV = 8;
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> k[kV], sum[kV], sq[kV];
  for (size_t v = 0; v < kV; ++v) {
    k[v] = hn::LoadU(df, t.k + j + v * N);
    sum[v] = hn::Zero(df);
    sq[v] = hn::Zero(df);
  }
  for (size_t p = p0; p < p1; ++p) {
    const TX* q = x + p * stride + j;
    for (size_t v = 0; v < kV; ++v) {
      const auto d = hn::MulSub(LoadF(df, q + v * N),
                                hn::LoadU(df, t.s + j + v * N), k[v]);
      sum[v] = hn::Add(sum[v], d);
      sq[v] = hn::MulAdd(d, d, sq[v]);
    }
  }
  for (size_t v = 0; v < kV; ++v) {
    hn::StoreU(sum[v], df, t.acc_sum + j + v * N);
    hn::StoreU(sq[v], df, t.acc_sq + j + v * N);
  }
}
#endif

// For channels [j0, j1) of c, over hw positions `stride` elements apart
// (a sample's; BatchNorm's: the batch's): the sums of v = x * s[ch] -
// k[ch] (one rounding) and of v^2, in fp32 over blocks of 32 positions
// added in double; with kMax also max|x|. Lanes past j1 are summed too
// (zeros in, ignored out). Each channel's terms are added in position
// order; within a block up to four channel vectors' accumulators stay in
// registers (kWalkVectors; independent chains hide the add latency), or
// eight without kMax on AVX-512 (SumWalk8). No software prefetch: a block
// ahead it made a 1x320x64x64 GroupNorm 1.13x slower on Zen 5 (four-vector
// walks), and eight steps ahead in walk order 1.0x (to L1) or 0.9x (to L2).
template <bool kMax, class DF, typename TX>
HWY_NOINLINE void ChannelSums(DF df, const TX* x, size_t stride, size_t hw,
                              size_t j0, size_t j1, ChannelScratch& t) {
  const size_t N = hn::Lanes(df);
  for (size_t j = j0; j < j1; ++j) t.sum[j] = t.sq[j] = 0.0;
  if constexpr (kMax) std::fill(t.max + j0, t.max + j1, 0.0f);
  // The lanes of the i-th vector from j (0: past j1).
  const auto lanes = [&](size_t j, size_t i) -> size_t {
    const size_t at = j + i * N;
    return at >= j1 ? 0 : HWY_MIN(N, j1 - at);
  };
  size_t wide_end = j0;  // channels [j0, wide_end) in eight-vector walks
#if HWY_TARGET <= HWY_AVX3
  if constexpr (!kMax) wide_end = j0 + (j1 - j0) / (8 * N) * (8 * N);
#endif
  for (size_t p0 = 0; p0 < hw; p0 += 32) {
    const size_t p1 = hw - p0 > 32 ? p0 + 32 : hw;
#if HWY_TARGET <= HWY_AVX3
    for (size_t j = j0; j < wide_end; j += 8 * N) {
      SumWalk8(df, x, stride, p0, p1, j, t);
    }
#endif
    // Vectors live in locals, not structs (SVE's are sizeless). Vectors
    // past j1 repeat the first's constants and are never loaded.
    for (size_t j = wide_end; j < j1; j += kWalkVectors * N) {
      const size_t n0 = lanes(j, 0), n1 = lanes(j, 1);
      const size_t n2 = kWalkVectors > 2 ? lanes(j, 2) : 0;
      const size_t n3 = kWalkVectors > 3 ? lanes(j, 3) : 0;
      const auto s0 = hn::LoadU(df, t.s + j), k0 = hn::LoadU(df, t.k + j);
      const auto s1 = n1 ? hn::LoadU(df, t.s + j + N) : s0;
      const auto k1 = n1 ? hn::LoadU(df, t.k + j + N) : k0;
      const auto s2 = n2 ? hn::LoadU(df, t.s + j + 2 * N) : s0;
      const auto k2 = n2 ? hn::LoadU(df, t.k + j + 2 * N) : k0;
      const auto s3 = n3 ? hn::LoadU(df, t.s + j + 3 * N) : s0;
      const auto k3 = n3 ? hn::LoadU(df, t.k + j + 3 * N) : k0;
      auto sum0 = hn::Zero(df), sq0 = sum0, sum1 = sum0, sq1 = sum0;
      auto sum2 = sum0, sq2 = sum0, sum3 = sum0, sq3 = sum0;
      auto max0 = kMax ? hn::LoadU(df, t.max + j) : sum0;
      auto max1 = kMax && n1 ? hn::LoadU(df, t.max + j + N) : sum0;
      auto max2 = kMax && n2 ? hn::LoadU(df, t.max + j + 2 * N) : sum0;
      auto max3 = kMax && n3 ? hn::LoadU(df, t.max + j + 3 * N) : sum0;
      for (size_t p = p0; p < p1; ++p) {
        const TX* q = x + p * stride + j;
        SumStep<kMax>(df, q, n0, s0, k0, sum0, sq0, max0);
        SumStep<kMax>(df, q + N, n1, s1, k1, sum1, sq1, max1);
        SumStep<kMax>(df, q + 2 * N, n2, s2, k2, sum2, sq2, max2);
        SumStep<kMax>(df, q + 3 * N, n3, s3, k3, sum3, sq3, max3);
      }
      SumStore<kMax>(df, j, n0, sum0, sq0, max0, t);
      SumStore<kMax>(df, j + N, n1, sum1, sq1, max1, t);
      SumStore<kMax>(df, j + 2 * N, n2, sum2, sq2, max2, t);
      SumStore<kMax>(df, j + 3 * N, n3, sum3, sq3, max3, t);
    }
    for (size_t j = j0; j < j1; ++j) {
      t.sum[j] += t.acc_sum[j];
      t.sq[j] += t.acc_sq[j];
    }
  }
}

// A group's sums: its channels' in channel order.
inline void GroupSums(const ChannelScratch& t, size_t c0, size_t cg,
                      double* sum, double* sq) {
  *sum = *sq = 0.0;
  for (size_t j = c0; j < c0 + cg; ++j) {
    *sum += t.sum[j];
    *sq += t.sq[j];
  }
}

// The statistics of every group of one NHWC sample (see top), as
// LayerNormScale and LayerNormScaleGeneral compute those of a row: a.c
// channels of a.hw positions `stride` elements apart. With `mean`, each
// group's mean in double too (not meaningful for a NaN group).
template <class DF, typename TX>
void NhwcStats(DF df, const internal::GroupArgs& a, const TX* x, size_t stride,
               ChannelScratch& t, RowScale* k, double* mean = nullptr) {
  const size_t c = a.c, cg = a.cg;
  const double inv_n = 1.0 / static_cast<double>(cg * a.hw);
  const double eps = static_cast<double>(a.eps);
  // The shift of a group: the mean of its channels over the first `rows`
  // positions. A group's first element alone is often over 2 sd from its
  // mean (its channels' means differ), which sends it down the general
  // path: two more passes over the sample's columns. Groups of 4 channels
  // or more average their channels at the first position. Narrower ones
  // (BatchNorm's and InstanceNorm's single channels: one element is 2 sd
  // off in one channel of 22, so most units of 16 channels had a general
  // channel) over the first 16 positions, whose mean is 2 sd off as rarely
  // as one element is 8 sd off (terms x / 16: the sum cannot overflow).
  size_t rows = 1;
  while (cg < 4 && rows < 16 && 2 * rows <= a.hw) rows *= 2;
  const size_t N = hn::Lanes(df);
  const auto scale = hn::Set(df, 1.0f / static_cast<float>(rows));
  for (size_t j = 0; j < c; j += N) {  // t.k: each channel's mean
    auto acc = hn::Zero(df);
    for (size_t p = 0; p < rows; ++p) {
      const TX* xp = x + p * stride + j;
      acc = hn::MulAdd(c - j >= N ? LoadF(df, xp) : LoadTailF(df, xp, c - j),
                       scale, acc);
    }
    hn::StoreU(acc, df, t.k + j);
  }
  for (size_t g = 0; g < a.groups; ++g) {
    double first = 0.0;
    for (size_t j = g * cg; j < (g + 1) * cg; ++j) first += t.k[j];
    const float kg = static_cast<float>(first / static_cast<double>(cg));
    for (size_t j = g * cg; j < (g + 1) * cg; ++j) {
      t.s[j] = 1.0f;
      t.k[j] = kg;
    }
  }
  // The sums alone first (max|x| cost 1.02-1.04x), and again with max|x|
  // (the same sums) in the rare sample with a general group; where the
  // shift is one element, max|x| from the start.
  bool have_max = cg < 4 && rows == 1;
  if (have_max) {
    ChannelSums<true>(df, x, stride, a.hw, 0, c, t);
  } else {
    ChannelSums<false>(df, x, stride, a.hw, 0, c, t);
  }
  size_t general = 0;  // groups that take the general path
  for (size_t g = 0; g < a.groups; ++g) {
    double sum, sq;
    GroupSums(t, g * cg, cg, &sum, &sq);
    const double mean_d = sum * inv_n, var = sq * inv_n - mean_d * mean_d;
    const float kg = t.k[g * cg];
    if (!SafeSumOfSquares(sq) || !(mean_d * mean_d <= 4.0 * var)) {
      if (!have_max) {
        ChannelSums<true>(df, x, stride, a.hw, 0, c, t);
        have_max = true;
      }
      // General path: its scale from the group's max|x|.
      float max_abs = 0.0f;
      for (size_t j = g * cg; j < (g + 1) * cg; ++j) {
        max_abs = std::fmax(max_abs, t.max[j]);
      }
      k[g] = RowScale{ScaleFor(max_abs), kg, 0.0f, 0.0f, -1.0};
      ++general;
      continue;
    }
    const double mul = 1.0 / std::sqrt(var + eps);
    k[g] = RowScale{1.0f, kg, static_cast<float>(mul),
                    static_cast<float>(-mean_d * mul), var / inv_n};
    if (mean) mean[g] = static_cast<double>(kg) + mean_d;
  }
  if (general == 0) return;
  // The general groups (second < 0 marks them): first the sums of x * s -
  // k * s, giving m0; then of x * s - m0 and their squares. Over the whole
  // sample when most groups need it, else over each such group's channels
  // (a group's sums are the same either way).
  const bool whole = 2 * general > a.groups;
  // Groups narrower than a vector (BatchNorm's and InstanceNorm's single
  // channels): one pass over the span of the general groups instead, as a
  // pass per group walks every position for a partial vector (tail loads,
  // 60% of BatchNorm backward's time in L2). Lanes are independent: the
  // same sums.
  const bool span = !whole && cg < hn::Lanes(df);
  size_t j0 = span ? c : 0, j1 = span ? 0 : c;
  for (size_t g = 0; span && g < a.groups; ++g) {
    if (!(k[g].second < 0)) continue;
    j0 = std::min(j0, g * cg);
    j1 = (g + 1) * cg;
  }
  if (span) {  // whole vectors where c allows: no tail loads
    const size_t N = hn::Lanes(df), w = (j1 - j0 + N - 1) / N * N;
    j1 = std::min(c, j0 + w);
    j0 = j1 >= w ? j1 - w : 0;
  }
  for (size_t j = 0; j < c; ++j) {
    const RowScale& kg = k[j / cg];
    t.s[j] = kg.second < 0 ? kg.s : 1.0f;
    t.k[j] = kg.second < 0 ? kg.m * kg.s : 0.0f;
  }
  if (whole || span) ChannelSums<false>(df, x, stride, a.hw, j0, j1, t);
  for (size_t g = 0; g < a.groups; ++g) {
    if (!(k[g].second < 0)) continue;
    if (!whole && !span) {
      ChannelSums<false>(df, x, stride, a.hw, g * cg, (g + 1) * cg, t);
    }
    double sum, sq;
    GroupSums(t, g * cg, cg, &sum, &sq);
    k[g].m =
        static_cast<float>(static_cast<double>(k[g].m) * k[g].s + sum * inv_n);
    for (size_t j = g * cg; j < (g + 1) * cg; ++j) t.k[j] = k[g].m;
  }
  if (whole || span) ChannelSums<false>(df, x, stride, a.hw, j0, j1, t);
  for (size_t g = 0; g < a.groups; ++g) {
    if (!(k[g].second < 0)) continue;
    if (!whole && !span) {
      ChannelSums<false>(df, x, stride, a.hw, g * cg, (g + 1) * cg, t);
    }
    double sum, sq;
    GroupSums(t, g * cg, cg, &sum, &sq);
    const double cm = sum * inv_n, sd = static_cast<double>(k[g].s);
    const double var = std::fmax(sq * inv_n - cm * cm, 0.0) / (sd * sd);
    const double mul = 1.0 / (std::sqrt(var + eps) * sd);
    k[g].mul = MulToFloat(mul);
    k[g].add = static_cast<float>(-cm * mul);
    k[g].second = var / inv_n;
    if (mean) mean[g] = (static_cast<double>(k[g].m) + cm) / sd;
  }
}

// One whole vector of ApplyNhwc's results (no NaN channel).
template <class DF, typename TX, typename TY>
HWY_INLINE void ApplyStep(DF df, const TX* x, TY* y, hn::Vec<DF> s,
                          hn::Vec<DF> m, hn::Vec<DF> mul, hn::Vec<DF> add,
                          hn::Vec<DF> g, hn::Vec<DF> b) {
  StoreF(df, GroupResult(df, LoadF(df, x), s, m, mul, add, g, b), y);
}

// Results of unscaled channels (fp32 y, or 16-bit y with fast rounding,
// which rounds this fp32 value once; s = 1: x - k rounds as in
// GroupResult, and |add| <= 2, as the statistics passes choose k within 2
// sd of the mean; BatchNorm inference's add is 0) in two operations a
// vector: y = (x - k) * fold_mul + fold_add, fold_mul =
// fl(mul * g), fold_add = fl(add * g + b) (one FMA). GroupResult's
// roundings with one moved: beyond mul's own, which both share, |error| <=
// 2u|(x - k) mul g| + u|add g + b| + u|y|, against u|(x - k) mul g| +
// u|xhat g| + u|y| there: a few scaled ulps either way. Three vectors of
// constants a channel vector instead of six, so the rows are walked in
// memory order with the constants from L1, a row at a time (the column
// walk of four channel vectors over 32 rows 1280 bytes apart was ~1.1x
// slower on 1x320x64x64, and two rows a step, sharing the constants'
// loads, 1.02-1.07x), or, for rows of up to four vectors, from
// registers. False (nothing usable set) where a channel is scaled or NaN,
// or its folded constants are not finite.
template <class DF>
HWY_INLINE bool FoldChannels(DF df, ChannelScratch& t, const float* g,
                             const float* b, size_t c) {
  const size_t N = hn::Lanes(df);
  const auto one = hn::Set(df, 1.0f), zero = hn::Zero(df);
  const auto top = hn::Set(df, 3.40282347e38f);  // FLT_MAX
  auto bad = hn::Zero(df);
  for (size_t j = 0; j < c; j += N) {
    const auto gj = hn::LoadU(df, g + j);
    const auto fm = hn::Mul(hn::LoadU(df, t.mul + j), gj);
    const auto fa =
        hn::MulAdd(hn::LoadU(df, t.add + j), gj, hn::LoadU(df, b + j));
    hn::StoreU(fm, df, t.fold_mul + j);
    hn::StoreU(fa, df, t.fold_add + j);
    const auto no = hn::Or(
        hn::Or(hn::Ne(hn::LoadU(df, t.s + j), one),
               hn::Ne(hn::LoadU(df, t.nan + j), zero)),
        hn::Not(hn::And(hn::Le(hn::Abs(fm), top), hn::Le(hn::Abs(fa), top))));
    // Lanes past c hold what the scratch held: not counted.
    bad = hn::Or(bad, hn::VecFromMask(df, hn::And(no, hn::FirstN(df, c - j))));
  }
  return hn::AllFalse(df, hn::MaskFromVec(bad));
}

// Rows of kV (1 to 4) whole vectors of channels, the constants in
// registers (named vectors: SVE's are sizeless, no arrays of them).
template <size_t kV, class DF, typename TX, typename TY>
HWY_INLINE void ApplyFoldedInRegisters(DF df, const TX* x, TY* y, size_t stride,
                                       size_t rows, const ChannelScratch& t) {
  const size_t N = hn::Lanes(df);
  // Vector v's offset; the unused ones load vector 0 again.
  const size_t o1 = kV > 1 ? N : 0, o2 = kV > 2 ? 2 * N : 0;
  const size_t o3 = kV > 3 ? 3 * N : 0;
  const auto k0 = hn::LoadU(df, t.k), k1 = hn::LoadU(df, t.k + o1);
  const auto k2 = hn::LoadU(df, t.k + o2), k3 = hn::LoadU(df, t.k + o3);
  const float *fm = t.fold_mul, *fa = t.fold_add;
  const auto m0 = hn::LoadU(df, fm), m1 = hn::LoadU(df, fm + o1);
  const auto m2 = hn::LoadU(df, fm + o2), m3 = hn::LoadU(df, fm + o3);
  const auto a0 = hn::LoadU(df, fa), a1 = hn::LoadU(df, fa + o1);
  const auto a2 = hn::LoadU(df, fa + o2), a3 = hn::LoadU(df, fa + o3);
  for (size_t p = 0; p < rows; ++p) {
    const TX* xr = x + p * stride;
    TY* yr = y + p * stride;
    StoreF(df, hn::MulAdd(hn::Sub(LoadF(df, xr), k0), m0, a0), yr);
    if constexpr (kV > 1) {
      StoreF(df, hn::MulAdd(hn::Sub(LoadF(df, xr + o1), k1), m1, a1), yr + o1);
    }
    if constexpr (kV > 2) {
      StoreF(df, hn::MulAdd(hn::Sub(LoadF(df, xr + o2), k2), m2, a2), yr + o2);
    }
    if constexpr (kV > 3) {
      StoreF(df, hn::MulAdd(hn::Sub(LoadF(df, xr + o3), k3), m3, a3), yr + o3);
    }
  }
}

template <class DF, typename TX, typename TY>
HWY_NOINLINE void ApplyNhwcFolded(DF df, const TX* x, TY* y, size_t c,
                                  size_t stride, size_t rows,
                                  const ChannelScratch& t) {
  const size_t N = hn::Lanes(df), whole = c / N * N;
  // A row of up to four whole vectors (BatchNorm's channel blocks, or c =
  // 64 on AVX-512): every constant in registers (from L1: 0.95x there).
#if HWY_TARGET != HWY_SCALAR
  if (whole == c) {
    switch (c / N) {
      case 1:
        return ApplyFoldedInRegisters<1>(df, x, y, stride, rows, t);
      case 2:
        return ApplyFoldedInRegisters<2>(df, x, y, stride, rows, t);
      case 3:
        return ApplyFoldedInRegisters<3>(df, x, y, stride, rows, t);
      case 4:
        return ApplyFoldedInRegisters<4>(df, x, y, stride, rows, t);
      default:
        break;
    }
  }
#endif
  // Locals: a vector store may alias t's members.
  const float *k = t.k, *fm = t.fold_mul, *fa = t.fold_add;
  const auto result = [&](hn::Vec<DF> v, size_t j) {
    return hn::MulAdd(hn::Sub(v, hn::LoadU(df, k + j)), hn::LoadU(df, fm + j),
                      hn::LoadU(df, fa + j));
  };
  for (size_t p = 0; p < rows; ++p) {
    const TX* x0 = x + p * stride;
    TY* y0 = y + p * stride;
    size_t j = 0;
    for (; j < whole; j += N) StoreF(df, result(LoadF(df, x0 + j), j), y0 + j);
    if (j < c) {
      StoreTailF(df, result(LoadTailF(df, x0 + j, c - j), j), y0 + j, c - j);
    }
  }
}

// Channels-last results: `rows` rows of c channels, `stride` elements
// apart, each channel with its own xhat = (x * s - k) * mul + add (t's
// arrays) and weights g, b (cp floats each); channels whose t.nan is set
// are the default quiet NaN. Only the c channels of a row are written.
// Unscaled channels: ApplyNhwcFolded; else, as follows.
// Blocks of 32 rows, and in each the channel vectors with their constants
// in registers: four at a time where the target has the registers
// (kWalkVectors) and no channel is NaN, else one, whose loads prefetch
// the same channels a block ahead (the four-vector walk measured faster
// without). y may be x: each vector is loaded before it
// is stored.
template <class DF, typename TX, typename TY>
HWY_NOINLINE void ApplyNhwc(DF df, const TX* x, TY* y, size_t c, size_t stride,
                            size_t rows, ChannelScratch& t, const float* g,
                            const float* b) {
  if (FoldChannels(df, t, g, b, c)) {
    return ApplyNhwcFolded(df, x, y, c, stride, rows, t);
  }
  const size_t N = hn::Lanes(df);
  const auto qnan = QuietNaN(df);
  size_t wide_end = 0;
  if constexpr (kWalkVectors == 4) {
    wide_end = c / (4 * N) * (4 * N);
    for (size_t j = 0; j < c && wide_end != 0; ++j) {
      if (t.nan[j] != 0.0f) wide_end = 0;
    }
  }
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = 0; j < wide_end; j += 4 * N) {
      const float *s = t.s + j, *k = t.k + j, *mul = t.mul + j;
      const float *add = t.add + j, *gj = g + j, *bj = b + j;
      const auto s0 = hn::LoadU(df, s), m0 = hn::LoadU(df, k);
      const auto mul0 = hn::LoadU(df, mul), add0 = hn::LoadU(df, add);
      const auto g0 = hn::LoadU(df, gj), b0 = hn::LoadU(df, bj);
      const auto s1 = hn::LoadU(df, s + N), m1 = hn::LoadU(df, k + N);
      const auto mul1 = hn::LoadU(df, mul + N), add1 = hn::LoadU(df, add + N);
      const auto g1 = hn::LoadU(df, gj + N), b1 = hn::LoadU(df, bj + N);
      const auto s2 = hn::LoadU(df, s + 2 * N), m2 = hn::LoadU(df, k + 2 * N);
      const auto mul2 = hn::LoadU(df, mul + 2 * N);
      const auto add2 = hn::LoadU(df, add + 2 * N);
      const auto g2 = hn::LoadU(df, gj + 2 * N), b2 = hn::LoadU(df, bj + 2 * N);
      const auto s3 = hn::LoadU(df, s + 3 * N), m3 = hn::LoadU(df, k + 3 * N);
      const auto mul3 = hn::LoadU(df, mul + 3 * N);
      const auto add3 = hn::LoadU(df, add + 3 * N);
      const auto g3 = hn::LoadU(df, gj + 3 * N), b3 = hn::LoadU(df, bj + 3 * N);
      for (size_t p = p0; p < p1; ++p) {
        const TX* xr = x + p * stride + j;
        TY* yr = y + p * stride + j;
        ApplyStep(df, xr, yr, s0, m0, mul0, add0, g0, b0);
        ApplyStep(df, xr + N, yr + N, s1, m1, mul1, add1, g1, b1);
        ApplyStep(df, xr + 2 * N, yr + 2 * N, s2, m2, mul2, add2, g2, b2);
        ApplyStep(df, xr + 3 * N, yr + 3 * N, s3, m3, mul3, add3, g3, b3);
      }
    }
    for (size_t j = wide_end; j < c; j += N) {
      const size_t count = c - j < N ? c - j : N;
      const auto nan = hn::Ne(hn::LoadU(df, t.nan + j), hn::Zero(df));
      const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.k + j);
      const auto mul = hn::LoadU(df, t.mul + j);
      const auto add = hn::LoadU(df, t.add + j);
      const auto gv = hn::LoadU(df, g + j), bv = hn::LoadU(df, b + j);
      for (size_t p = p0; p < p1; ++p) {
        const TX* xr = x + p * stride + j;
        TY* yr = y + p * stride + j;
        if (p + 32 < rows) hwy::Prefetch(xr + 32 * stride);
        const auto xv = LoadTailF(df, xr, count);
        const auto v = hn::IfThenElse(
            nan, qnan, GroupResult(df, xv, s, m, mul, add, gv, bv));
        if (count == N) {
          StoreF(df, v, yr);
        } else {
          StoreTailF(df, v, yr, count);
        }
      }
    }
  }
}

// t's per-channel arrays from each channel's statistics k[j].
inline void SetChannels(ChannelScratch& t, const RowScale* k, size_t c,
                        size_t cg) {
  for (size_t j = 0; j < c; ++j) {
    const RowScale& kg = k[j / cg];
    t.s[j] = kg.s;
    t.k[j] = kg.m;
    t.mul[j] = kg.mul;
    t.add[j] = kg.add;
    t.nan[j] = NaNRow(kg) ? 1.0f : 0.0f;
  }
}

template <typename TX, typename TY>
HWY_NOINLINE void GroupNhwc(const internal::GroupArgs& a, size_t begin,
                            size_t end) {
  if constexpr (kRounds16<TY>) {
    if (a.correct_rounding) return GroupNhwcChecked<TX, TY>(a, begin, end);
  }
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df), c = a.c, per_sample = c * a.hw;
  internal::Scratch scratch;
  ChannelScratch t(c, N, scratch);
  RowScale* k = scratch.Take<RowScale>(a.groups);
  const bool save = a.mean_out != nullptr || a.rstd_out != nullptr;
  double* mean = save ? scratch.Take<double>(a.groups) : nullptr;
  float* g = scratch.Take<float>(2 * t.cp);
  float* b = g + t.cp;
  std::copy(a.gamma, a.gamma + c, g);
  std::copy(a.beta, a.beta + c, b);
  for (size_t i = begin; i < end; ++i) {
    const TX* x = static_cast<const TX*>(a.x) + i * per_sample;
    TY* y = static_cast<TY*>(a.y) + i * per_sample;
    NhwcStats(df, a, x, c, t, k, mean);
    for (size_t grp = 0; save && grp < a.groups; ++grp) {
      SaveGroupStats(a, i * a.groups + grp, mean[grp], k[grp].second);
    }
    SetChannels(t, k, c, a.cg);
    ApplyNhwc(df, x, y, c, c, a.hw, t, g, b);
  }
}

// ------------------------------------------ correctly rounded 16-bit y
// (channel_checked-inl.h): a group is a LayerNorm row of cg * hw elements,
// contiguous in NCHW, runs of cg channels c apart in NHWC.

// The unit's x, or (in place) a copy of its n elements in *copy.
template <typename TX>
const TX* UnitX(const TX* x, const void* y, size_t n,
                std::unique_ptr<TX[]>& copy) {
  if (static_cast<const void*>(x) != y) return x;
  if (!copy) copy.reset(new TX[n]);
  std::memcpy(copy.get(), x, n * sizeof(TX));
  return copy.get();
}

template <typename TX, typename TY>
inline internal::CrRow GroupCrRow(const TX* x, size_t n, float eps,
                                  const internal::RowStats& st) {
  return internal::LayerNormRow(x, kDType<TX>, kDType<TY>, n, eps, st);
}

template <typename TX, typename TY>
HWY_NOINLINE void GroupNchwChecked(const internal::GroupArgs& a, size_t begin,
                                   size_t end) {
  const hn::ScalableTag<float> df;
  const size_t m = a.cg * a.hw;
  std::unique_ptr<TX[]> copy;
  for (size_t u = begin; u < end; ++u) {
    TY* y = static_cast<TY*>(a.y) + u * m;
    const TX* x = UnitX(static_cast<const TX*>(a.x) + u * m, y, m, copy);
    const internal::RowStats st = StatsOfSet(
        m, a.eps, ToFloat(x[0]),
        [&](float k, double* s, double* q) { SumsF64(df, x, m, k, *s, *q); });
    SaveGroupStats(a, u, st.k + st.c, st.v);
    CheckedConsts k{};
    const Unit mode = CheckedUnit(st, &k);
    const internal::CrRow cr = GroupCrRow<TX, TY>(x, m, a.eps, st);
    internal::CrCache cache;
    const size_t c0 = u % a.groups * a.cg;
    for (size_t ch = 0; ch < a.cg; ++ch) {
      const float g = a.gamma[c0 + ch], b = a.beta[c0 + ch];
      const size_t at = ch * a.hw;
      ApplyPlaneUnit(df, mode, x + at, y + at, a.hw, k, g, b, [&](size_t i) {
        return internal::CorrectlyRoundedBits(cr, at + i, g, b, cache);
      });
    }
  }
}

// NHWC: every group's sums in one pass over the sample (ChannelSumsF64,
// shifted as NhwcStats: by the mean of the group's channels at the first
// position); a group shifted again (StatsOfSet) sums its channels again.
template <typename TX, typename TY>
HWY_NOINLINE void GroupNhwcChecked(const internal::GroupArgs& a, size_t begin,
                                   size_t end) {
  const hn::ScalableTag<float> df;
  const size_t c = a.c, cg = a.cg, groups = a.groups;
  const size_t per_sample = c * a.hw, n = cg * a.hw;
  internal::Scratch scratch;
  CheckedChannels t(c, hn::Lanes(df), scratch);
  float* shift = scratch.Take<float>(c);
  double* sum = scratch.Take<double>(2 * c);
  double* sq = sum + c;
  internal::CrRow* cr = scratch.Take<internal::CrRow>(groups);
  std::unique_ptr<internal::CrCache[]> cache;
  std::unique_ptr<TX[]> copy;
  for (size_t i = begin; i < end; ++i) {
    TY* y = static_cast<TY*>(a.y) + i * per_sample;
    const TX* x = UnitX(static_cast<const TX*>(a.x) + i * per_sample, y,
                        per_sample, copy);
    for (size_t g = 0; g < groups; ++g) {
      double first = 0.0;
      for (size_t j = g * cg; j < (g + 1) * cg; ++j) first += ToFloat(x[j]);
      const float kg = static_cast<float>(first / static_cast<double>(cg));
      std::fill(shift + g * cg, shift + (g + 1) * cg, kg);
    }
    std::fill(sum, sum + 2 * c, 0.0);
    ChannelSumsF64(df, x, c, a.hw, 0, c, shift, sum, sq);
    for (size_t g = 0; g < groups; ++g) {
      const size_t j0 = g * cg, j1 = j0 + cg;
      const auto group_sums = [&](float k, double* s, double* q) {
        if (k != shift[j0]) {  // shifted again: this group's channels
          std::fill(shift + j0, shift + j1, k);
          std::fill(sum + j0, sum + j1, 0.0);
          std::fill(sq + j0, sq + j1, 0.0);
          ChannelSumsF64(df, x, c, a.hw, j0, j1, shift, sum, sq);
        }
        *s = *q = 0.0;
        for (size_t j = j0; j < j1; ++j) {
          *s += sum[j];
          *q += sq[j];
        }
      };
      const internal::RowStats st = StatsOfSet(n, a.eps, shift[j0], group_sums);
      SaveGroupStats(a, i * groups + g, st.k + st.c, st.v);
      CheckedConsts k{};
      const Unit mode = CheckedUnit(st, &k);
      for (size_t j = j0; j < j1; ++j)
        t.Set<TX>(j, mode, k, a.gamma[j], a.beta[j]);
      cr[g] = GroupCrRow<TX, TY>(x + j0, n, a.eps, st);
      cr[g].run = cg;
      cr[g].run_stride = c;
    }
    cache.reset(new internal::CrCache[groups]);
    ApplyNhwcChecked(df, x, c, y, c, c, a.hw, t, [&](size_t p, size_t j) {
      const size_t g = j / cg;
      return internal::CorrectlyRoundedBits(cr[g], p * cg + j % cg, t.g[j],
                                            t.b[j], cache[g]);
    });
  }
}

// This target's table, [layout][x_type][y_type] indexed by simdnorm_layout
// and simdnorm_dtype, filled at compile time.
// Null where the target takes another's kernel (kCompiledHere: y, and
// copies of x, are written).
template <bool kNhwc, typename TX, typename TY>
constexpr internal::GroupFn GroupKernel() {
  if constexpr (!kCompiledHere<TX, TY>) {
    return nullptr;
  } else if constexpr (kNhwc) {
    return &GroupNhwc<TX, TY>;
  } else {
    return &GroupNchw<TX, TY>;
  }
}

struct GroupKernels {
  internal::GroupTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[0][I / 3][I % 3] =
          GroupKernel<false, InType<I / 3>, InType<I % 3>>()),
     ...);
    ((table[1][I / 3][I % 3] =
          GroupKernel<true, InType<I / 3>, InType<I % 3>>()),
     ...);
  }
  constexpr GroupKernels() { Fill(std::make_index_sequence<9>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_GROUP_ROWS_INL_H_

// Per-target LayerNorm and RMSNorm row kernels, written once with Highway.
//
// Numerics (see docs/accuracy.md):
// - LayerNorm uses the corrected two-pass algorithm (Chan, Golub & LeVeque,
//   "Algorithms for computing the sample variance", 1983): a first pass finds
//   m0, an estimate of the mean, from sum(x - K) with K = x[0], which is
//   exact in fp32 when |mean| >> std (Sterbenz); the second pass sums
//   d = x - m0 and d^2, and the correction c = sum(d)/n removes what m0
//   missed. Outputs use (d - c) * r, never x * r - mean * r, so their error
//   does not grow with |mean| / std.
// - Sums of squares would overflow for |x| ~ 1e20 and lose everything for
//   |x| ~ 1e-20. The first pass also finds max|x|; outside a safe range the
//   row is processed as x * s with s a power of two (exact) that brings
//   max|x| to [1, 2).
// - Per-row scalars (mean, variance, 1/sqrt) are computed in float64, so
//   only the vector sums and the per-element FMAs round in fp32.
// - A NaN anywhere in a row reaches every output of the row through m0 (or
//   the sum of squares); rows never share state.

#if defined(SIMDNORM_LIB_NORM_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_NORM_ROWS_INL_H_
#undef SIMDNORM_LIB_NORM_ROWS_INL_H_
#else
#define SIMDNORM_LIB_NORM_ROWS_INL_H_
#endif

#include <cmath>
#include <cstddef>

#include "hwy/highway.h"
#include "lib/convert-inl.h"
#include "lib/kernel_table.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace HWY_NAMESPACE {

// Rows whose max|x| lies in these ranges need no scaling: squares of their
// deviations stay normal and finite in fp32 (for up to 2^40 columns).
inline constexpr float kLayerNormSafeMin = 0x1p-30f,
                       kLayerNormSafeMax = 0x1p40f;
inline constexpr float kRMSNormSafeMin = 0x1p-50f, kRMSNormSafeMax = 0x1p40f;

// The power of two s with max_abs * s in [1, 2), kept a normal float.
inline float ScaleFor(float max_abs) {
  if (!(max_abs > 0.0f) || !std::isfinite(max_abs)) {
    return max_abs > 0.0f ? 0x1p-126f : 1.0f;  // inf: any; 0 or NaN: none
  }
  int e;
  std::frexp(max_abs, &e);  // max_abs = f * 2^e, f in [0.5, 1)
  e = e - 1;
  if (e > 126) e = 126;
  if (e < -126) e = -126;
  return std::ldexp(1.0f, -e);
}

// Sums over a row of v = x * s - k (one rounding, by FMA): sum(v), sum(v^2)
// and max|x|, each only when asked for. Four independent chains hide the
// add/FMA latency. Vector sums run in fp32 over blocks of 32 vectors and are
// added up in float64, so the rounding error does not grow with the row
// length (a single float chain of 8192 adds would lose ~2^-11).
struct RowSums {
  double sum = 0.0, sum_sq = 0.0;
  float max_abs = 0.0f;
};

template <bool kSum, bool kSq, bool kMax, class DF, typename TX>
HWY_INLINE RowSums ReduceRow(DF df, const TX* HWY_RESTRICT x, size_t n, float s,
                             float k) {
  const size_t N = hn::Lanes(df);
  const auto vs = hn::Set(df, s);
  const auto vk = hn::Set(df, k);
  auto max0 = hn::Zero(df), max1 = hn::Zero(df);
  RowSums out;
  size_t i = 0;
  while (i < n) {
    auto sum0 = hn::Zero(df), sum1 = hn::Zero(df), sum2 = hn::Zero(df),
         sum3 = hn::Zero(df);
    auto sq0 = hn::Zero(df), sq1 = hn::Zero(df), sq2 = hn::Zero(df),
         sq3 = hn::Zero(df);
    const size_t block_end = n - i > 32 * N ? i + 32 * N : n;
    for (; i + 4 * N <= block_end; i += 4 * N) {
      const auto x0 = LoadF(df, x + i);
      const auto x1 = LoadF(df, x + i + N);
      const auto x2 = LoadF(df, x + i + 2 * N);
      const auto x3 = LoadF(df, x + i + 3 * N);
      const auto v0 = hn::MulSub(x0, vs, vk);
      const auto v1 = hn::MulSub(x1, vs, vk);
      const auto v2 = hn::MulSub(x2, vs, vk);
      const auto v3 = hn::MulSub(x3, vs, vk);
      if constexpr (kSum) {
        sum0 = hn::Add(sum0, v0);
        sum1 = hn::Add(sum1, v1);
        sum2 = hn::Add(sum2, v2);
        sum3 = hn::Add(sum3, v3);
      }
      if constexpr (kSq) {
        sq0 = hn::MulAdd(v0, v0, sq0);
        sq1 = hn::MulAdd(v1, v1, sq1);
        sq2 = hn::MulAdd(v2, v2, sq2);
        sq3 = hn::MulAdd(v3, v3, sq3);
      }
      if constexpr (kMax) {
        max0 = hn::Max(max0, hn::Max(hn::Abs(x0), hn::Abs(x1)));
        max1 = hn::Max(max1, hn::Max(hn::Abs(x2), hn::Abs(x3)));
      }
    }
    for (; i + N <= block_end; i += N) {
      const auto x0 = LoadF(df, x + i);
      const auto v0 = hn::MulSub(x0, vs, vk);
      if constexpr (kSum) sum0 = hn::Add(sum0, v0);
      if constexpr (kSq) sq0 = hn::MulAdd(v0, v0, sq0);
      if constexpr (kMax) max0 = hn::Max(max0, hn::Abs(x0));
    }
    if (i < block_end) {  // the row's last, partial vector: zero-padded
      const size_t count = block_end - i;
      const auto x1 = LoadTailF(df, x + i, count);
      const auto v1 =
          hn::IfThenElseZero(hn::FirstN(df, count), hn::MulSub(x1, vs, vk));
      if constexpr (kSum) sum1 = hn::Add(sum1, v1);
      if constexpr (kSq) sq1 = hn::MulAdd(v1, v1, sq1);
      if constexpr (kMax) max1 = hn::Max(max1, hn::Abs(x1));
      i = block_end;
    }
    if constexpr (kSum) {
      const auto sum = hn::Add(hn::Add(sum0, sum1), hn::Add(sum2, sum3));
      out.sum += hn::GetLane(hn::SumOfLanes(df, sum));
    }
    if constexpr (kSq) {
      const auto sq = hn::Add(hn::Add(sq0, sq1), hn::Add(sq2, sq3));
      out.sum_sq += hn::GetLane(hn::SumOfLanes(df, sq));
    }
  }
  if constexpr (kMax)
    out.max_abs = hn::GetLane(hn::MaxOfLanes(df, hn::Max(max0, max1)));
  return out;
}

// The normalized value before gamma/beta, as a function of one x vector:
//   xhat = (x * s - m) * mul + add.
// LayerNorm: m = m0 * s (scaled first mean), mul = r / s, add = -c * r / s.
// RMSNorm:   m = 0, mul = r / s, add = 0 (a single rounding of x * s is exact).
struct RowScale {
  float s, m, mul, add;
};

// The row's constants, broadcast once (vectors cannot live in structs on
// SVE, so they are plain locals of the caller).
template <bool kLayerNorm, class V>
HWY_INLINE V Normalized(V v, V s, V m, V mul, V add) {
  if constexpr (kLayerNorm) {
    return hn::MulAdd(hn::MulSub(v, s, m), mul, add);
  } else {
    return hn::Mul(hn::Mul(v, s), mul);
  }
}

template <bool kGamma, bool kBeta, class DF, typename TP>
HWY_INLINE hn::Vec<DF> Affine(DF df, hn::Vec<DF> t,
                              const TP* HWY_RESTRICT gamma,
                              const TP* HWY_RESTRICT beta, size_t i) {
  if constexpr (kGamma && kBeta)
    return hn::MulAdd(t, LoadF(df, gamma + i), LoadF(df, beta + i));
  if constexpr (kGamma && !kBeta) return hn::Mul(t, LoadF(df, gamma + i));
  if constexpr (!kGamma && kBeta) return hn::Add(t, LoadF(df, beta + i));
  return t;
}

template <bool kGamma, bool kBeta, class DF, typename TP>
HWY_INLINE hn::Vec<DF> AffineTail(DF df, hn::Vec<DF> t,
                                  const TP* HWY_RESTRICT gamma,
                                  const TP* HWY_RESTRICT beta, size_t i,
                                  size_t count) {
  if constexpr (kGamma && kBeta) {
    return hn::MulAdd(t, LoadTailF(df, gamma + i, count),
                      LoadTailF(df, beta + i, count));
  }
  if constexpr (kGamma && !kBeta)
    return hn::Mul(t, LoadTailF(df, gamma + i, count));
  if constexpr (!kGamma && kBeta)
    return hn::Add(t, LoadTailF(df, beta + i, count));
  return t;
}

// y = Normalized(x) * gamma + beta. x and y may be the same row (in place):
// each vector is loaded before it is stored.
template <bool kLayerNorm, bool kGamma, bool kBeta, class DF, typename TX,
          typename TY, typename TP>
HWY_NOINLINE void ApplyRow(DF df, const TX* x, TY* y,
                           const TP* HWY_RESTRICT gamma,
                           const TP* HWY_RESTRICT beta, size_t n, RowScale k) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto x0 = LoadF(df, x + i);
    const auto x1 = LoadF(df, x + i + N);
    const auto t0 = Normalized<kLayerNorm>(x0, s, m, mul, add);
    const auto t1 = Normalized<kLayerNorm>(x1, s, m, mul, add);
    StoreF(df, Affine<kGamma, kBeta>(df, t0, gamma, beta, i), y + i);
    StoreF(df, Affine<kGamma, kBeta>(df, t1, gamma, beta, i + N), y + i + N);
  }
  if (i + N <= n) {
    const auto t = Normalized<kLayerNorm>(LoadF(df, x + i), s, m, mul, add);
    StoreF(df, Affine<kGamma, kBeta>(df, t, gamma, beta, i), y + i);
    i += N;
  }
  if (i < n) {
    const size_t count = n - i;
    const auto t =
        Normalized<kLayerNorm>(LoadTailF(df, x + i, count), s, m, mul, add);
    StoreTailF(df, AffineTail<kGamma, kBeta>(df, t, gamma, beta, i, count),
               y + i, count);
  }
}

// When a one-pass sum of squares can be trusted: no square overflowed, and
// none that matters underflowed (below 2^-126 each, n of them are < 2^-60).
inline bool SafeSumOfSquares(double sum_sq) {
  return sum_sq >= 0x1p-60 && sum_sq <= 0x1p100;
}

// LayerNorm, general path: max|x| picks the scale s, then the corrected
// two-pass algorithm on x * s.
template <class DF, typename TX>
HWY_NOINLINE RowScale LayerNormScaleGeneral(DF df, const TX* x, size_t n,
                                            float eps) {
  const double inv_n = 1.0 / static_cast<double>(n);
  const float k = ToFloat(x[0]);
  const float s =
      ScaleFor(ReduceRow<false, false, true>(df, x, n, 1.0f, 0.0f).max_abs);
  const RowSums first = ReduceRow<true, false, false>(df, x, n, s, k * s);
  // First mean estimate, scaled, rounded to fp32 once.
  const float m0 =
      static_cast<float>(static_cast<double>(k) * s + first.sum * inv_n);
  const RowSums dev = ReduceRow<true, true, false>(df, x, n, s, m0);
  const double c = dev.sum * inv_n;
  const double var_scaled = std::fmax(dev.sum_sq * inv_n - c * c, 0.0);
  const double var = var_scaled / (static_cast<double>(s) * s);
  const double mul = 1.0 / (std::sqrt(var + static_cast<double>(eps)) * s);
  return RowScale{s, m0, static_cast<float>(mul), static_cast<float>(-c * mul)};
}

// LayerNorm: one pass over d = x - K with K = x[0]. d is exact when
// |mean| >> std, and var = E[d^2] - E[d]^2 loses at most ~2 bits while
// E[d]^2 <= 4 var (K within two standard deviations of the mean). Rows that
// fail that test, or whose squares under- or overflow, take the general path.
template <class DF, typename TX>
HWY_INLINE RowScale LayerNormScale(DF df, const TX* x, size_t n, float eps) {
  const double inv_n = 1.0 / static_cast<double>(n);
  const float k = ToFloat(x[0]);
  const RowSums d = ReduceRow<true, true, false>(df, x, n, 1.0f, k);
  const double mean_d = d.sum * inv_n;
  const double var = d.sum_sq * inv_n - mean_d * mean_d;
  if (!SafeSumOfSquares(d.sum_sq) || !(mean_d * mean_d <= 4.0 * var)) {
    return LayerNormScaleGeneral(df, x, n, eps);
  }
  const double mul = 1.0 / std::sqrt(var + static_cast<double>(eps));
  return RowScale{1.0f, k, static_cast<float>(mul),
                  static_cast<float>(-mean_d * mul)};
}

template <class DF, typename TX>
HWY_INLINE RowScale RMSNormScale(DF df, const TX* x, size_t n, float eps) {
  RowSums sq = ReduceRow<false, true, false>(df, x, n, 1.0f, 0.0f);
  float s = 1.0f;
  if (!SafeSumOfSquares(sq.sum_sq)) {  // rare: rescale by max|x|
    s = ScaleFor(ReduceRow<false, false, true>(df, x, n, 1.0f, 0.0f).max_abs);
    sq = ReduceRow<false, true, false>(df, x, n, s, 0.0f);
  }
  const double ms =
      sq.sum_sq / static_cast<double>(n) / (static_cast<double>(s) * s);
  const double mul = 1.0 / (std::sqrt(ms + static_cast<double>(eps)) * s);
  return RowScale{s, 0.0f, static_cast<float>(mul), 0.0f};
}

template <int kKind, typename TX, typename TY, typename TP>
void NormRows(const internal::RowArgs& a, size_t row_begin, size_t row_end) {
  constexpr bool kLayerNorm = kKind == 0;
  const hn::ScalableTag<float> df;
  const TP* gamma = static_cast<const TP*>(a.gamma);
  const TP* beta = static_cast<const TP*>(a.beta);
  const size_t n = a.cols;
  for (size_t r = row_begin; r < row_end; ++r) {
    const TX* x = static_cast<const TX*>(a.x) + r * a.x_stride;
    TY* y = static_cast<TY*>(a.y) + r * a.y_stride;
    const RowScale k = kLayerNorm ? LayerNormScale(df, x, n, a.eps)
                                  : RMSNormScale(df, x, n, a.eps);
    if (gamma && beta) {
      ApplyRow<kLayerNorm, true, true>(df, x, y, gamma, beta, n, k);
    } else if (gamma) {
      ApplyRow<kLayerNorm, true, false>(df, x, y, gamma, beta, n, k);
    } else if (beta) {
      ApplyRow<kLayerNorm, false, true>(df, x, y, gamma, beta, n, k);
    } else {
      ApplyRow<kLayerNorm, false, false>(df, x, y, gamma, beta, n, k);
    }
  }
}

// The table of one kind for this target: [x_type][y_type][param_type],
// indexed by simdnorm_dtype (0 = f32, 1 = bf16).
template <int kKind>
struct KindKernels {
  internal::KindTable table = {{{&NormRows<kKind, float, float, float>,
                                 &NormRows<kKind, float, float, bf16_t>},
                                {&NormRows<kKind, float, bf16_t, float>,
                                 &NormRows<kKind, float, bf16_t, bf16_t>}},
                               {{&NormRows<kKind, bf16_t, float, float>,
                                 &NormRows<kKind, bf16_t, float, bf16_t>},
                                {&NormRows<kKind, bf16_t, bf16_t, float>,
                                 &NormRows<kKind, bf16_t, bf16_t, bf16_t>}}};
};

}  // namespace HWY_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_NORM_ROWS_INL_H_

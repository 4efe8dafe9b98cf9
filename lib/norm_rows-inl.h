// Per-target LayerNorm and RMSNorm row kernels, written once with Highway.
//
// Numerics (docs/accuracy.md has the long version):
// - LayerNorm statistics come from d = x - K with K = x[0]. When |mean| >>
//   std the subtraction is exact (Sterbenz), so accuracy does not depend on
//   the mean. One pass gives sum(d) and sum(d^2); var = E[d^2] - E[d]^2 is
//   trusted while E[d]^2 <= 4 var (K within two standard deviations of the
//   mean: at most ~2 bits cancel). Other rows take the general path, the
//   corrected two-pass algorithm (Chan, Golub & LeVeque, "Algorithms for
//   computing the sample variance", 1983): m0 = K + E[x - K], then sums of
//   d = x - m0 and d^2, the correction E[d] removing what m0 missed.
// - Outputs are (d - E[d]) * r by FMA, never x * r - mean * r, whose error
//   would grow with |mean| / std.
// - Sums of squares overflow for |x| ~ 1e20 and vanish for |x| ~ 1e-20.
//   When the one-pass sum of squares is outside a safe range, the row is
//   processed as x * s, with s a power of two (exact) bringing max|x| to
//   [1, 2).
// - Vector sums run in fp32 over blocks of 32 vectors and are added in
//   float64, so their error does not grow with the row length; per-row
//   scalars (mean, variance, 1/sqrt) are float64.
// - A NaN anywhere in a row makes its statistics NaN; such rows (and rows
//   whose 1/sqrt is infinite: var + eps = 0, where the truth is 0/0) are
//   written as the default quiet NaN, so the output bits never depend on
//   which NaN payload an add happened to propagate. Rows never share state:
//   any partition of rows gives the same bits.

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

// What a pass does to x before summing: nothing, x - k, or x * s - k (one
// rounding, by FMA). The cheaper forms keep the common rows off the FMA
// ports, which bound these loops.
enum class Shift { kNone, kSub, kScaleSub };

template <Shift kShift, class V>
HWY_INLINE V Shifted(V x, V s, V k) {
  if constexpr (kShift == Shift::kNone) return x;
  if constexpr (kShift == Shift::kSub) return hn::Sub(x, k);
  return hn::MulSub(x, s, k);
}

struct RowSums {
  double sum = 0.0, sum_sq = 0.0;
  float max_abs = 0.0f;
};

// sum(v), sum(v^2) and max|x| over a row, v = Shifted(x), each only when
// asked for. Four independent chains hide the add/FMA latency; fp32 sums of
// at most 32 vectors are added up in float64 (a single fp32 chain of 8192
// adds would lose ~2^-11).
template <bool kSum, bool kSq, bool kMax, Shift kShift, class DF, typename TX>
HWY_INLINE RowSums ReduceRow(DF df, const TX* HWY_RESTRICT x, size_t n, float s,
                             float k) {
  const size_t N = hn::Lanes(df);
  const auto vs = hn::Set(df, s);
  const auto vk = hn::Set(df, k);
  auto max0 = hn::Zero(df), max1 = hn::Zero(df);
  RowSums out;
  size_t i = 0;
  while (i < n) {
    auto sum0 = hn::Zero(df), sum1 = hn::Zero(df);
    auto sum2 = hn::Zero(df), sum3 = hn::Zero(df);
    auto sq0 = hn::Zero(df), sq1 = hn::Zero(df);
    auto sq2 = hn::Zero(df), sq3 = hn::Zero(df);
    const size_t block_end = n - i > 32 * N ? i + 32 * N : n;
    for (; i + 4 * N <= block_end; i += 4 * N) {
      const auto x0 = LoadPairA(df, x + i);
      const auto x1 = LoadPairB(df, x + i);
      const auto x2 = LoadPairA(df, x + i + 2 * N);
      const auto x3 = LoadPairB(df, x + i + 2 * N);
      const auto v0 = Shifted<kShift>(x0, vs, vk);
      const auto v1 = Shifted<kShift>(x1, vs, vk);
      const auto v2 = Shifted<kShift>(x2, vs, vk);
      const auto v3 = Shifted<kShift>(x3, vs, vk);
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
      const auto v0 = Shifted<kShift>(x0, vs, vk);
      if constexpr (kSum) sum0 = hn::Add(sum0, v0);
      if constexpr (kSq) sq0 = hn::MulAdd(v0, v0, sq0);
      if constexpr (kMax) max0 = hn::Max(max0, hn::Abs(x0));
    }
    if (i < block_end) {  // the row's last, partial vector: zero-padded
      const size_t count = block_end - i;
      const auto x1 = LoadTailF(df, x + i, count);
      const auto v1 = hn::IfThenElseZero(hn::FirstN(df, count),
                                         Shifted<kShift>(x1, vs, vk));
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
  if constexpr (kMax) {
    out.max_abs = hn::GetLane(hn::MaxOfLanes(df, hn::Max(max0, max1)));
  }
  return out;
}

// A row's normalization as xhat = Shifted(x) * mul + add, with
// LayerNorm: Shifted(x) = x * s - m, m the (scaled) shift, add = -E[d] * mul;
// RMSNorm:   Shifted(x) = x * s, add = 0. Unscaled rows have s = 1.
struct RowScale {
  float s, m, mul, add;
};

template <bool kLayerNorm, bool kScaled, class V>
HWY_INLINE V Normalized(V v, V s, V m, V mul, V add) {
  constexpr Shift kShift = !kLayerNorm
                               ? (kScaled ? Shift::kScaleSub : Shift::kNone)
                               : (kScaled ? Shift::kScaleSub : Shift::kSub);
  if constexpr (kLayerNorm) {
    return hn::MulAdd(Shifted<kShift>(v, s, m), mul, add);
  } else {
    return hn::Mul(Shifted<kShift>(v, s, hn::Zero(hn::DFromV<V>())), mul);
  }
}

// t * gamma + beta with one rounding where the target has FMA. Without
// FMA it is a multiply and an add, and t * gamma may overflow although the
// sum is finite (weights near FLT_MAX): such lanes are redone halved, which
// is exact for them (their product is far above the subnormal range).
template <class DF>
HWY_INLINE hn::Vec<DF> GammaBeta(DF df, hn::Vec<DF> t, hn::Vec<DF> g,
                                 hn::Vec<DF> b) {
#if HWY_NATIVE_FMA
  (void)df;
  return hn::MulAdd(t, g, b);
#else
  const auto product = hn::Mul(t, g);
  const auto y = hn::Add(product, b);
  const auto overflow = hn::IsInf(product);
  if (HWY_LIKELY(hn::AllFalse(df, overflow))) return y;
  const auto half = hn::Set(df, 0.5f);
  const auto halved = hn::Add(hn::Mul(t, hn::Mul(g, half)), hn::Mul(b, half));
  return hn::IfThenElse(overflow, hn::Add(halved, halved), y);
#endif
}

template <bool kGamma, bool kBeta, class DF, typename TP>
HWY_INLINE hn::Vec<DF> Affine(DF df, hn::Vec<DF> t,
                              const TP* HWY_RESTRICT gamma,
                              const TP* HWY_RESTRICT beta, size_t i) {
  if constexpr (kGamma && kBeta) {
    return GammaBeta(df, t, LoadF(df, gamma + i), LoadF(df, beta + i));
  }
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
    return GammaBeta(df, t, LoadTailF(df, gamma + i, count),
                     LoadTailF(df, beta + i, count));
  }
  if constexpr (kGamma && !kBeta) {
    return hn::Mul(t, LoadTailF(df, gamma + i, count));
  }
  if constexpr (!kGamma && kBeta) {
    return hn::Add(t, LoadTailF(df, beta + i, count));
  }
  return t;
}

// y = Normalized(x) * gamma + beta. x and y may be the same row (in place):
// each vector is loaded before it is stored. The row's constants are
// broadcast once (vectors cannot live in structs on SVE). The main loop
// moves pairs (convert-inl.h) when x, y and the weights pair alike.
template <bool kLayerNorm, bool kScaled, bool kGamma, bool kBeta, class DF,
          typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRow(DF df, const TX* x, TY* y,
                           const TP* HWY_RESTRICT gamma,
                           const TP* HWY_RESTRICT beta, size_t n, RowScale k) {
  constexpr bool kPairs = kEvenOdd<TX> == kEvenOdd<TY> &&
                          (kEvenOdd<TX> == kEvenOdd<TP> || (!kGamma && !kBeta));
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  size_t i = 0;
  if constexpr (kPairs) {
    for (; i + 2 * N <= n; i += 2 * N) {
      auto t0 =
          Normalized<kLayerNorm, kScaled>(LoadPairA(df, x + i), s, m, mul, add);
      auto t1 =
          Normalized<kLayerNorm, kScaled>(LoadPairB(df, x + i), s, m, mul, add);
      if constexpr (kGamma && kBeta) {  // one rounding, as in Affine()
        t0 = GammaBeta(df, t0, LoadPairA(df, gamma + i),
                       LoadPairA(df, beta + i));
        t1 = GammaBeta(df, t1, LoadPairB(df, gamma + i),
                       LoadPairB(df, beta + i));
      } else if constexpr (kGamma) {
        t0 = hn::Mul(t0, LoadPairA(df, gamma + i));
        t1 = hn::Mul(t1, LoadPairB(df, gamma + i));
      } else if constexpr (kBeta) {
        t0 = hn::Add(t0, LoadPairA(df, beta + i));
        t1 = hn::Add(t1, LoadPairB(df, beta + i));
      }
      StorePair(df, t0, t1, y + i);
    }
  } else {
    for (; i + 2 * N <= n; i += 2 * N) {
      const auto x0 = LoadF(df, x + i);
      const auto x1 = LoadF(df, x + i + N);
      const auto t0 = Normalized<kLayerNorm, kScaled>(x0, s, m, mul, add);
      const auto t1 = Normalized<kLayerNorm, kScaled>(x1, s, m, mul, add);
      StoreF(df, Affine<kGamma, kBeta>(df, t0, gamma, beta, i), y + i);
      StoreF(df, Affine<kGamma, kBeta>(df, t1, gamma, beta, i + N), y + i + N);
    }
  }
  if (i + N <= n) {
    const auto t =
        Normalized<kLayerNorm, kScaled>(LoadF(df, x + i), s, m, mul, add);
    StoreF(df, Affine<kGamma, kBeta>(df, t, gamma, beta, i), y + i);
    i += N;
  }
  if (i < n) {
    const size_t count = n - i;
    const auto t = Normalized<kLayerNorm, kScaled>(LoadTailF(df, x + i, count),
                                                   s, m, mul, add);
    StoreTailF(df, AffineTail<kGamma, kBeta>(df, t, gamma, beta, i, count),
               y + i, count);
  }
}

// The row's multiplier r / s as a float. A finite r / s beyond FLT_MAX
// only happens when every deviation is 0 (var = 0 with eps > 0 on a row of
// huge values): then any finite multiplier gives xhat = 0, as it should,
// where infinity would give 0 * inf = NaN. An infinite r (var = eps = 0)
// stays infinite: the truth is 0 / 0 there.
inline float MulToFloat(double mul) {
  constexpr double kMax = 3.4028234663852886e38;  // FLT_MAX
  return static_cast<float>(mul > kMax && mul <= 1.7976931348623157e308 ? kMax
                                                                        : mul);
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
      ScaleFor(ReduceRow<false, false, true, Shift::kNone>(df, x, n, 1.0f, 0.0f)
                   .max_abs);
  const RowSums first =
      ReduceRow<true, false, false, Shift::kScaleSub>(df, x, n, s, k * s);
  // First mean estimate, scaled, rounded to fp32 once.
  const float m0 =
      static_cast<float>(static_cast<double>(k) * s + first.sum * inv_n);
  const RowSums dev =
      ReduceRow<true, true, false, Shift::kScaleSub>(df, x, n, s, m0);
  const double c = dev.sum * inv_n;
  const double var_scaled = std::fmax(dev.sum_sq * inv_n - c * c, 0.0);
  const double var = var_scaled / (static_cast<double>(s) * s);
  const double mul = 1.0 / (std::sqrt(var + static_cast<double>(eps)) * s);
  return RowScale{s, m0, MulToFloat(mul), static_cast<float>(-c * mul)};
}

// LayerNorm: one pass over d = x - x[0], or the general path (see top).
template <class DF, typename TX>
HWY_INLINE RowScale LayerNormScale(DF df, const TX* x, size_t n, float eps) {
  const double inv_n = 1.0 / static_cast<double>(n);
  const float k = ToFloat(x[0]);
  const RowSums d =
      ReduceRow<true, true, false, Shift::kSub>(df, x, n, 1.0f, k);
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
  RowSums sq =
      ReduceRow<false, true, false, Shift::kNone>(df, x, n, 1.0f, 0.0f);
  float s = 1.0f;
  if (!SafeSumOfSquares(sq.sum_sq)) {  // rare: rescale by max|x|
    s = ScaleFor(
        ReduceRow<false, false, true, Shift::kNone>(df, x, n, 1.0f, 0.0f)
            .max_abs);
    sq = ReduceRow<false, true, false, Shift::kScaleSub>(df, x, n, s, 0.0f);
  }
  const double ms =
      sq.sum_sq / static_cast<double>(n) / (static_cast<double>(s) * s);
  const double mul = 1.0 / (std::sqrt(ms + static_cast<double>(eps)) * s);
  return RowScale{s, 0.0f, MulToFloat(mul), 0.0f};
}

template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE void ApplyAffine(DF df, const TX* x, TY* y, const TP* gamma,
                            const TP* beta, size_t n, RowScale k) {
  if (gamma && beta) {
    ApplyRow<kLayerNorm, kScaled, true, true>(df, x, y, gamma, beta, n, k);
  } else if (gamma) {
    ApplyRow<kLayerNorm, kScaled, true, false>(df, x, y, gamma, beta, n, k);
  } else if (beta) {
    ApplyRow<kLayerNorm, kScaled, false, true>(df, x, y, gamma, beta, n, k);
  } else {
    ApplyRow<kLayerNorm, kScaled, false, false>(df, x, y, gamma, beta, n, k);
  }
}

// Writes the default quiet NaN (0x7FC00000, bf16 0x7FC0) over a row.
template <class DF, typename TY>
HWY_NOINLINE void FillNaN(DF df, TY* y, size_t n) {
  const size_t N = hn::Lanes(df);
  const auto nan = hn::BitCast(
      df, hn::Set(hn::RebindToUnsigned<DF>(), uint32_t{0x7FC00000u}));
  size_t i = 0;
  for (; i + N <= n; i += N) StoreF(df, nan, y + i);
  if (i < n) StoreTailF(df, nan, y + i, n - i);
}

// Whether a row's result is NaN throughout (see top).
inline bool NaNRow(const RowScale& k) {
  return std::isnan(k.m) || std::isnan(k.add) ||
         !(std::fabs(k.mul) < HUGE_VALF);
}

template <bool kLayerNorm, class DF, typename TX>
HWY_INLINE RowScale Scale(DF df, const TX* x, size_t n, float eps) {
  return kLayerNorm ? LayerNormScale(df, x, n, eps)
                    : RMSNormScale(df, x, n, eps);
}

// Rows are software-pipelined: row r + 1's statistics are computed before
// row r is written, so the latency of one row's reduction, square root and
// division overlaps the other row's stores. Each row's result still depends
// only on that row (in place too: row r + 1 is read, row r is written).
template <int kKind, typename TX, typename TY, typename TP>
void NormRows(const internal::RowArgs& a, size_t row_begin, size_t row_end) {
  constexpr bool kLayerNorm = kKind == 0;
  const hn::ScalableTag<float> df;
  const TP* gamma = static_cast<const TP*>(a.gamma);
  const TP* beta = static_cast<const TP*>(a.beta);
  const size_t n = a.cols;
  const TX* x_rows = static_cast<const TX*>(a.x);
  if (row_begin >= row_end) return;
  RowScale next =
      Scale<kLayerNorm>(df, x_rows + row_begin * a.x_stride, n, a.eps);
  for (size_t r = row_begin; r < row_end; ++r) {
    const RowScale k = next;
    if (r + 1 < row_end) {
      next = Scale<kLayerNorm>(df, x_rows + (r + 1) * a.x_stride, n, a.eps);
    }
    const TX* x = x_rows + r * a.x_stride;
    TY* y = static_cast<TY*>(a.y) + r * a.y_stride;
    if (HWY_UNLIKELY(NaNRow(k))) {
      FillNaN(df, y, n);
    } else if (k.s == 1.0f) {  // x * 1 - m == x - m exactly: cheaper
      ApplyAffine<kLayerNorm, false>(df, x, y, gamma, beta, n, k);
    } else {
      ApplyAffine<kLayerNorm, true>(df, x, y, gamma, beta, n, k);
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

// Per-target rows whose y is the fp32 result rounded once (fp32 y, and
// 16-bit or int8 y with SIMDNORM_FAST_ROUNDING): each row's scale from its
// sums (the fused residual add, the saved statistics), then the write
// pass, two rows at a time (NormRowPairs). Part of lib/norm_rows-inl.h's
// kernels.

#if defined(SIMDNORM_LIB_FAST_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_FAST_ROWS_INL_H_
#undef SIMDNORM_LIB_FAST_ROWS_INL_H_
#else
#define SIMDNORM_LIB_FAST_ROWS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "lib/kernel_table.h"
#include "lib/row_stats-inl.h"
#include "lib/row_write-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

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
  return RowScale{s,
                  m0,
                  MulToFloat(mul),
                  static_cast<float>(-c * mul),
                  var * static_cast<double>(n),
                  (static_cast<double>(m0) + c) / s};
}

// The row's first element (of h = x + r with kAdd).
template <bool kAdd, class DF, typename TX>
HWY_INLINE float FirstElement(DF df, const TX* x, const TX* r) {
  if constexpr (kAdd) {
    return hn::GetLane(WithResidual<kAdd, DF, TX>(
        df, hn::Set(df, ToFloat(x[0])), hn::Set(df, ToFloat(r[0]))));
  }
  return ToFloat(x[0]);
}

// LayerNorm: one pass over d = x - x[0], or the general path (see top).
// With kAdd the first pass makes h = x + r; the others read h.
template <bool kAdd, class DF, typename TX>
HWY_INLINE RowScale LayerNormScale(DF df, const TX* x, const TX* r, TX* h,
                                   size_t n, float eps) {
  const double inv_n = 1.0 / static_cast<double>(n);
  const float k = FirstElement<kAdd>(df, x, r);
  const RowSums d =
      ReduceRow<true, true, false, Shift::kSub, kAdd>(df, x, n, 1.0f, k, r, h);
  const double mean_d = d.sum * inv_n;
  const double var = d.sum_sq * inv_n - mean_d * mean_d;
  if (!SafeSumOfSquares(d.sum_sq) || !(mean_d * mean_d <= 4.0 * var)) {
    return LayerNormScaleGeneral(df, kAdd ? h : x, n, eps);
  }
  const double mul = 1.0 / std::sqrt(var + static_cast<double>(eps));
  return RowScale{1.0f,
                  k,
                  static_cast<float>(mul),
                  static_cast<float>(-mean_d * mul),
                  var * static_cast<double>(n),
                  k + mean_d};
}

// Uncentered kinds (RMSNorm, L2): one pass of sum(x^2); the kind's
// multiplier from it (internal::UncenteredMul).
template <bool kAdd, class DF, typename TX>
HWY_INLINE RowScale UncenteredScale(DF df, const TX* x_in, const TX* r, TX* h,
                                    size_t n, float eps, int kind) {
  RowSums sq = ReduceRow<false, true, false, Shift::kNone, kAdd>(
      df, x_in, n, 1.0f, 0.0f, r, h);
  const TX* x = kAdd ? h : x_in;
  float s = 1.0f;
  if (!SafeSumOfSquares(sq.sum_sq)) {  // rare: rescale by max|x|
    s = ScaleFor(
        ReduceRow<false, false, true, Shift::kNone>(df, x, n, 1.0f, 0.0f)
            .max_abs);
    sq = ReduceRow<false, true, false, Shift::kScaleSub>(df, x, n, s, 0.0f);
  }
  const double mul = internal::UncenteredMul(kind, sq.sum_sq, s, n, eps);
  const double sd = static_cast<double>(s);
  return RowScale{s, 0.0f, MulToFloat(mul), 0.0f, sq.sum_sq / (sd * sd)};
}

template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE void ApplyAny(DF df, const TX* x, TY* y, float* scales, size_t group,
                         const Weights<TP>& w, size_t n, RowScale k,
                         bool stream) {
  if constexpr (std::is_same_v<TY, int8_t>) {
    (void)stream;
    ApplyRowQuant<kLayerNorm, kScaled>(df, x, y, scales, group, w, n, k);
  } else {
    (void)scales;
    (void)group;
    ApplyRow<kLayerNorm, kScaled>(df, x, y, w, n, k, stream);
  }
}

// Writes a row whose result is NaN throughout (see top): the default quiet
// NaN (0x7FC00000; bf16 0x7FC0, f16 0x7E00), or for int8 q = 0 with NaN
// scales.
template <class DF, typename TY>
HWY_NOINLINE void FillNaN(DF df, TY* y, float* scales, size_t scale_count,
                          size_t n) {
  const size_t N = hn::Lanes(df);
  const auto v = std::is_same_v<TY, int8_t>
                     ? hn::Zero(df)
                     : hn::BitCast(df, hn::Set(hn::RebindToUnsigned<DF>(),
                                               uint32_t{0x7FC00000u}));
  size_t i = 0;
  for (; i + N <= n; i += N) StoreF(df, v, y + i);
  if (i < n) StoreTailF(df, v, y + i, n - i);
  for (size_t j = 0; j < scale_count; ++j) scales[j] = std::nanf("");
}

// Whether a row's result is NaN throughout (see top).
inline bool NaNRow(const RowScale& k) {
  return std::isnan(k.m) || std::isnan(k.add) ||
         !(std::fabs(k.mul) < HUGE_VALF);
}

// Row r's saved statistics (simdnorm_desc's mean_out and rstd_out, when
// wanted): its mean and 1 / the kind's denominator of second = sum((x -
// center)^2), each rounded once to fp32; both NaN when the mean is not
// finite (a NaN or inf in a LayerNorm row, whose second may then be 0).
inline void SaveStats(const internal::RowArgs& a, size_t r, double mean,
                      double second) {
  const bool finite = std::isfinite(mean);
  if (a.mean_out != nullptr) {
    a.mean_out[r] = finite ? static_cast<float>(mean) : NAN;
  }
  if (a.rstd_out != nullptr) {
    a.rstd_out[r] =
        finite ? static_cast<float>(
                     1.0 / internal::kOps[a.kind].denominator(
                               second, static_cast<double>(a.cols), a.eps))
               : NAN;
  }
}

// The row's statistics; with a residual r, the first pass also makes h.
template <bool kLayerNorm, class DF, typename TX>
HWY_INLINE RowScale Scale(DF df, const TX* x, const TX* r, TX* h, size_t n,
                          float eps, int kind) {
  if (r != nullptr) {
    return kLayerNorm ? LayerNormScale<true>(df, x, r, h, n, eps)
                      : UncenteredScale<true>(df, x, r, h, n, eps, kind);
  }
  return kLayerNorm ? LayerNormScale<false>(df, x, r, h, n, eps)
                    : UncenteredScale<false>(df, x, r, h, n, eps, kind);
}

// Row r's statistics; *h becomes the row to apply (x, or h = x + residual
// made in `scratch` or in sum_out). Not inlined: it depends on x's type
// only, and one copy serves the 12 (y, weights) kernels of that x (the
// lambda it replaced was compiled into each: ~17% of the rows kernels'
// code). One call per row.
template <bool kLayerNorm, typename TX>
HWY_NOINLINE RowScale RowStatsOf(const internal::RowArgs& a, size_t r,
                                 TX* scratch, const TX** h) {
  const hn::ScalableTag<float> df;
  const size_t n = a.cols;
  const TX* x = static_cast<const TX*>(a.x) + r * a.x_stride;
  TX* sum =
      a.sum_out ? static_cast<TX*>(a.sum_out) + r * a.sum_out_stride : nullptr;
  RowScale k;
  if (a.residual != nullptr) {
    TX* made = sum ? sum : scratch;
    *h = made;
    k = Scale<kLayerNorm>(
        df, x, static_cast<const TX*>(a.residual) + r * a.residual_stride, made,
        n, a.eps, a.kind);
  } else {
    if (sum != nullptr && sum != x) std::memcpy(sum, x, n * sizeof(TX));
    *h = x;
    k = Scale<kLayerNorm>(df, x, static_cast<const TX*>(nullptr), sum, n, a.eps,
                          a.kind);
  }
  if (a.mean_out != nullptr || a.rstd_out != nullptr) {
    SaveStats(a, r, k.mean, k.second);
  }
  return k;
}

// Room on the stack for a row of a correctly rounded call (16384 floats).
inline constexpr size_t kCheckedScratchBytes = 64 * 1024;

// The most bytes of x whose rows' statistics NormRowsChecked makes before
// writing them: half the smallest L1 data cache of the x86 and Arm cores
// it runs on (32 KiB), so that the writing reads them from L1.
inline constexpr size_t kStatsBlockBytes = 16 * 1024;

// Room on the stack for two rows of h when there is a residual but no
// sum_out (rows are taken two at a time); longer rows use a heap buffer.
inline constexpr size_t kScratchBytes = 16 * 1024;

// Writes row r of y from its statistics k; h is the row read (x, or x +
// residual).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void ApplyOne(DF df, const internal::RowArgs& a,
                         const Weights<TP>& w, size_t r, const TX* h,
                         const RowScale& k, bool stream) {
  constexpr bool kQuant = std::is_same_v<TY, int8_t>;
  TY* y = static_cast<TY*>(a.y) + r * a.y_stride;
  float* scales = kQuant ? a.y_scale + r * a.scales_per_row : nullptr;
  if (HWY_UNLIKELY(NaNRow(k))) {
    FillNaN(df, y, scales, kQuant ? a.scales_per_row : 0, a.cols);
  } else if (k.s == 1.0f) {  // x * 1 - m == x - m exactly: cheaper
    ApplyAny<kLayerNorm, false>(df, h, y, scales, a.quant_group, w, a.cols, k,
                                stream);
  } else {
    ApplyAny<kLayerNorm, true>(df, h, y, scales, a.quant_group, w, a.cols, k,
                               stream);
  }
}

// Rows go two at a time: both rows' statistics, then both rows written in
// one pass (ApplyRows2) unless one needs a special path. The second row's
// reduction overlaps the first one's square root and division. Each row's
// result still depends only on that row (in place too: both rows are read
// before either is written). With a residual and no sum_out, h is made in
// scratch[0] and scratch[1]. Not inlined: its two callers share one copy.
template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowPairs(const internal::RowArgs& a, size_t row_begin,
                               size_t row_end, TX* const scratch[2]) {
  constexpr bool kLayerNorm = kKind == 0;
  constexpr bool kQuant = std::is_same_v<TY, int8_t>;
  const hn::ScalableTag<float> df;
  const size_t n = a.cols;
  const Weights<TP> w = WeightsOf<TP>(a);
  // Non-temporal stores go where the write loops are aligned (PeelHead).
  const bool stream = a.stream_y;
  const auto stats = [&](size_t r, size_t slot, const TX** h) {
    return RowStatsOf<kLayerNorm, TX>(a, r, scratch[slot], h);
  };
  size_t r = row_begin;
  for (; r + 2 <= row_end; r += 2) {
    const TX *h0, *h1;
    const RowScale k0 = stats(r, 0, &h0);
    const RowScale k1 = stats(r + 1, 1, &h1);
    if constexpr (!kQuant) {
      TY* y = static_cast<TY*>(a.y) + r * a.y_stride;
      if (k0.s == 1.0f && k1.s == 1.0f && !NaNRow(k0) && !NaNRow(k1) &&
          PeelHead(df, h0, y, w, n, stream) ==
              PeelHead(df, h1, y + a.y_stride, w, n, stream)) {
        ApplyRows2<kLayerNorm>(df, h0, h1, y, y + a.y_stride, w, n, k0, k1,
                               stream);
        continue;
      }
    }
    ApplyOne<kLayerNorm, decltype(df), TX, TY, TP>(df, a, w, r, h0, k0, stream);
    ApplyOne<kLayerNorm, decltype(df), TX, TY, TP>(df, a, w, r + 1, h1, k1,
                                                   stream);
  }
  if (r < row_end) {
    const TX* h0;
    const RowScale k0 = stats(r, 0, &h0);
    ApplyOne<kLayerNorm, decltype(df), TX, TY, TP>(df, a, w, r, h0, k0, stream);
  }
  if (stream) hwy::FlushStream();  // order the streamed stores
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_FAST_ROWS_INL_H_

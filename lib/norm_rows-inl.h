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
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "lib/convert-inl.h"
#include "lib/correct_rounding.h"
#include "lib/kernel_table.h"
#include "lib/rounding_check-inl.h"
#include "lib/row_stats-inl.h"
#include "lib/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

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

// Shifted, with x - k computed as x * 1 - k where the target has FMA: the
// same single rounding, on the multiply-add units. Reductions alternate the two
// forms, so that the subtractions share the adders' and the multiply-adders'
// ports (each loop step is 2 adds and 1 FMA per vector otherwise).
template <Shift kShift, class V>
HWY_INLINE V ShiftedOnFma(V x, V s, V k) {
#if HWY_NATIVE_FMA
  if constexpr (kShift == Shift::kSub) {
    return hn::MulSub(x, hn::Set(hn::DFromV<V>(), 1.0f), k);
  }
#endif
  return Shifted<kShift>(x, s, k);
}

struct RowSums {
  double sum = 0.0, sum_sq = 0.0;
  float max_abs = 0.0f;
};

// 512-bit f32 vectors on x86 (AVX-512 targets): where RotatedSquares and
// the shifted stream (StreamShifted) are compiled.
#undef SIMDNORM_SHIFTED_STREAM  // once per target (foreach_target.h)
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && HWY_MAX_BYTES == 64
#define SIMDNORM_SHIFTED_STREAM 1
#else
#define SIMDNORM_SHIFTED_STREAM 0
#endif

#if SIMDNORM_SHIFTED_STREAM
// sum(x^2) of the whole quads of a block of a row of f32 x that starts `lag`
// floats (1-15) past a 64-byte line, from aligned loads: a 512-bit load there
// would touch two lines at every vector (the cost of RMSNorm rows 16 bytes
// off, whose statistics pass is one load and one FMA a vector). The aligned
// vector t of the block holds lanes lag..15 of the row's vector t (terms of
// chain t % 4) and lanes 0..lag-1 of its vector t - 1 (chain (t - 1) % 4's).
// Summed into R[t % 4], every lane of every chain gets the same terms in the
// same order, in a lane `lag` higher (the last lag lanes in the next R): at
// the end each chain is two R's joined by one permute, so the sums have the
// same bits as ReduceRow's loop. The block's first and last aligned vectors
// are its first and last row vectors rotated, so nothing outside
// [x + i, x + end) is read. Returns the end of the quads.
HWY_INLINE size_t RotatedSquares(const float* x, size_t i, size_t end,
                                 size_t lag, hn::Vec512<float> (&sq)[4]) {
  constexpr size_t N = 16;
  const size_t last = (end - i) / N / 4 * 4;  // the last aligned vector
  const __m512i lanes =
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i lag_v = _mm512_set1_epi32(static_cast<int>(lag));
  const __m512i rotate = _mm512_and_si512(
      _mm512_sub_epi32(_mm512_add_epi32(lanes, _mm512_set1_epi32(N)), lag_v),
      _mm512_set1_epi32(N - 1));
  const __mmask16 low = static_cast<__mmask16>((1u << lag) - 1);
  const float* a = x + i - lag;  // 64-byte aligned
  const __m512 first = _mm512_maskz_permutexvar_ps(
      static_cast<__mmask16>(~low), rotate, _mm512_loadu_ps(x + i));
  __m512 r0 = _mm512_mul_ps(first, first), r1 = _mm512_setzero_ps();
  __m512 r2 = _mm512_setzero_ps(), r3 = _mm512_setzero_ps();
  size_t t = 1;
  for (;; t += 4) {
    const __m512 x1 = _mm512_load_ps(a + t * N);
    const __m512 x2 = _mm512_load_ps(a + (t + 1) * N);
    const __m512 x3 = _mm512_load_ps(a + (t + 2) * N);
    r1 = _mm512_fmadd_ps(x1, x1, r1);
    r2 = _mm512_fmadd_ps(x2, x2, r2);
    r3 = _mm512_fmadd_ps(x3, x3, r3);
    if (t + 3 == last) break;
    const __m512 x0 = _mm512_load_ps(a + (t + 3) * N);
    r0 = _mm512_fmadd_ps(x0, x0, r0);
  }
  const __m512 end_part = _mm512_maskz_permutexvar_ps(
      low, rotate, _mm512_loadu_ps(x + i + last * N - N));
  r0 = _mm512_fmadd_ps(end_part, end_part, r0);
  // Chain c, lane L: R[c]'s lane L + lag, or R[c + 1]'s lane L + lag - 16.
  const __m512i join = _mm512_add_epi32(lanes, lag_v);
  sq[0] = hn::Vec512<float>{_mm512_permutex2var_ps(r0, join, r1)};
  sq[1] = hn::Vec512<float>{_mm512_permutex2var_ps(r1, join, r2)};
  sq[2] = hn::Vec512<float>{_mm512_permutex2var_ps(r2, join, r3)};
  sq[3] = hn::Vec512<float>{_mm512_permutex2var_ps(r3, join, r0)};
  return i + last * N;
}
#endif

// Floats past a 64-byte line where ReduceRow sums squares with
// RotatedSquares, else 0: f32 x off a line (by whole floats) on AVX-512,
// without the fused add (whose h and r may sit elsewhere).
template <bool kAdd, class DF, typename TX>
HWY_INLINE size_t RotatedLag(DF df, const TX* x) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(x) % 64;
  if (!SIMDNORM_SHIFTED_STREAM || kAdd || !std::is_same_v<TX, float> ||
      hn::Lanes(df) != 16 || at % sizeof(float) != 0) {
    return 0;
  }
  return at / sizeof(float);
}

// The fused residual add inside a pass: x + r rounded to TX (the fp32 sum
// of two bf16 or f16 values is exact or, when it is not, far from their
// rounding ties), which is also stored to h. h may be x or r: each vector
// is loaded before it is stored.
template <bool kAdd, class DF, typename TX>
HWY_INLINE hn::Vec<DF> WithResidual(DF df, hn::Vec<DF> x, hn::Vec<DF> r) {
  if constexpr (kAdd) return RoundTo<TX>(df, hn::Add(x, r));
  return x;
}

// sum(v), sum(v^2) and max|x| over a row, v = Shifted(x), each only when
// asked for. Four independent chains hide the add/FMA latency; fp32 sums of
// at most 32 vectors are added up in float64 (a single fp32 chain of 8192
// adds would lose ~2^-11). With kAdd the row is h = x + r, stored to h on
// the way.
template <bool kSum, bool kSq, bool kMax, Shift kShift, bool kAdd = false,
          class DF, typename TX>
HWY_INLINE RowSums ReduceRow(DF df, const TX* x, size_t n, float s, float k,
                             const TX* r = nullptr, TX* h = nullptr) {
  const size_t N = hn::Lanes(df);
  const auto vs = hn::Set(df, s);
  const auto vk = hn::Set(df, k);
  auto max0 = hn::Zero(df), max1 = hn::Zero(df);
  const size_t lag = RotatedLag<kAdd>(df, x);
  RowSums out;
  size_t i = 0;
  while (i < n) {
    auto sum0 = hn::Zero(df), sum1 = hn::Zero(df);
    auto sum2 = hn::Zero(df), sum3 = hn::Zero(df);
    auto sq0 = hn::Zero(df), sq1 = hn::Zero(df);
    auto sq2 = hn::Zero(df), sq3 = hn::Zero(df);
    const size_t block_end = n - i > 32 * N ? i + 32 * N : n;
#if SIMDNORM_SHIFTED_STREAM
    if constexpr (kSq && !kSum && !kMax && kShift == Shift::kNone &&
                  std::is_same_v<TX, float> &&
                  std::is_same_v<hn::Vec<DF>, hn::Vec512<float>>) {
      if (lag != 0 && block_end - i >= 4 * N) {
        hn::Vec512<float> sq[4];  // no arrays of vectors elsewhere (SVE)
        i = RotatedSquares(x, i, block_end, lag, sq);
        sq0 = sq[0], sq1 = sq[1], sq2 = sq[2], sq3 = sq[3];
      }
    }
#else
    (void)lag;
#endif
    for (; i + 4 * N <= block_end; i += 4 * N) {
      auto x0 = LoadPairA(df, x + i);
      auto x1 = LoadPairB(df, x + i);
      auto x2 = LoadPairA(df, x + i + 2 * N);
      auto x3 = LoadPairB(df, x + i + 2 * N);
      if constexpr (kAdd) {
        x0 = WithResidual<kAdd, DF, TX>(df, x0, LoadPairA(df, r + i));
        x1 = WithResidual<kAdd, DF, TX>(df, x1, LoadPairB(df, r + i));
        x2 = WithResidual<kAdd, DF, TX>(df, x2, LoadPairA(df, r + i + 2 * N));
        x3 = WithResidual<kAdd, DF, TX>(df, x3, LoadPairB(df, r + i + 2 * N));
        StorePair(df, x0, x1, h + i);
        StorePair(df, x2, x3, h + i + 2 * N);
      }
      const auto v0 = Shifted<kShift>(x0, vs, vk);
      const auto v1 = ShiftedOnFma<kShift>(x1, vs, vk);
      const auto v2 = Shifted<kShift>(x2, vs, vk);
      const auto v3 = ShiftedOnFma<kShift>(x3, vs, vk);
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
      auto x0 = LoadF(df, x + i);
      if constexpr (kAdd) {
        x0 = WithResidual<kAdd, DF, TX>(df, x0, LoadF(df, r + i));
        StoreF(df, x0, h + i);
      }
      const auto v0 = Shifted<kShift>(x0, vs, vk);
      if constexpr (kSum) sum0 = hn::Add(sum0, v0);
      if constexpr (kSq) sq0 = hn::MulAdd(v0, v0, sq0);
      if constexpr (kMax) max0 = hn::Max(max0, hn::Abs(x0));
    }
    if (i < block_end) {  // the row's last, partial vector: zero-padded
      const size_t count = block_end - i;
      auto x1 = LoadTailF(df, x + i, count);
      if constexpr (kAdd) {
        x1 = WithResidual<kAdd, DF, TX>(df, x1, LoadTailF(df, r + i, count));
        StoreTailF(df, x1, h + i, count);
      }
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
  // sum((x - center)^2) of the unscaled row, in double: the kind's
  // denominator (ops.h) is a function of it; the backward pass uses it.
  double second = 0.0;
  double mean = 0.0;  // the row's mean in double (LayerNorm; else 0)
  // The row's smallest nonzero |x| where the statistics pass found it (bf16
  // rows of the uncentered checked kinds; +inf for a row of zeros), else 0.
  float min_x = 0.0f;
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

// Where a vector of a row is: a whole vector, the even or odd half of a
// pair (convert-inl.h), or the zero-padded tail of `count` elements.
enum class At { kFull, kPairA, kPairB, kTail };

template <At kAt, class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadAt(DF df, const T* HWY_RESTRICT p, size_t count) {
  if constexpr (kAt == At::kFull) {
    return LoadF(df, p);
  } else if constexpr (kAt == At::kPairA) {
    return LoadPairA(df, p);
  } else if constexpr (kAt == At::kPairB) {
    return LoadPairB(df, p);
  } else {
    return LoadTailF(df, p, count);
  }
}

// What one call applies to every row. The result is always
// t * g + b with one rounding (GammaBeta), which covers every case exactly:
// g = offset + gamma (fp32), or the constant `scale` = 1 + offset without
// gamma; b = beta, or -0 without it (t * g + -0 == t * g, and t * 1 + b ==
// t + b, bit for bit). A zero offset is not added (gamma + 0 would turn a
// gamma of -0 into +0). Which operands exist is a predictable branch per
// vector, not a template: the kernels stay few.
template <typename TP>
struct Weights {
  const TP* gamma;
  const TP* beta;
  float offset;
  float scale;
  bool has_offset;
  bool round;  // xhat rounded to x's type first (Hugging Face's order)
  bool tame_gamma = false;  // TameGamma: TameChunk may run
  float tame_min_g = 0.0f;  // then the smallest nonzero |g| (1: no gamma)
  const float* gamma_pairs = nullptr;  // f32 gamma for it (TameGammaPairs)
  bool hardware_ends = false;  // LeanChunk may round both ends by hardware
  // LayerNorm's lean bound's weight terms, made once a call (LeanTerms).
  const float* lean_terms = nullptr;
};

// The weights of a call.
template <typename TP>
Weights<TP> WeightsOf(const internal::RowArgs& a) {
  return Weights<TP>{static_cast<const TP*>(a.gamma),
                     static_cast<const TP*>(a.beta),
                     a.gamma_offset,
                     1.0f + a.gamma_offset,
                     a.gamma_offset != 0.0f,
                     a.round_normalized};
}

// bf16 results are rounded by integer steps that need NaN lanes made quiet
// unless every NaN that can reach them has a zero low half. In a row that
// is not NaN, NaN results only come from the weights (t is finite), so
// only f32 and f16 weights need it; bf16 weights widen with a zero low
// half and invalid operations give the default NaN.
template <typename TP>
inline constexpr bool kQuietNaNs = !std::is_same_v<TP, bf16_t>;

// The weights g and b of the vector of a row at i.
template <At kAt, class DF, typename TP>
HWY_INLINE void WeightsAt(DF df, const Weights<TP>& w, size_t i, size_t count,
                          hn::Vec<DF>& g, hn::Vec<DF>& b) {
  g = hn::Set(df, w.scale);
  if (w.gamma) {
    g = LoadAt<kAt>(df, w.gamma + i, count);
    if (w.has_offset) g = hn::Add(g, hn::Set(df, w.offset));
  }
  b = hn::Set(df, -0.0f);
  if (w.beta) b = LoadAt<kAt>(df, w.beta + i, count);
}

// The normalized value t of the vector of a row at i (before the weights).
template <bool kLayerNorm, bool kScaled, At kAt, class DF, typename TX>
HWY_INLINE hn::Vec<DF> NormalizedAt(DF df, const TX* HWY_RESTRICT x, bool round,
                                    size_t i, size_t count, hn::Vec<DF> s,
                                    hn::Vec<DF> m, hn::Vec<DF> mul,
                                    hn::Vec<DF> add) {
  auto t = Normalized<kLayerNorm, kScaled>(LoadAt<kAt>(df, x + i, count), s, m,
                                           mul, add);
  if constexpr (!std::is_same_v<TX, float>) {
    if (round) t = RoundTo<TX>(df, t);
  }
  return t;
}

// The result y (fp32) of the vector of a row at i.
template <bool kLayerNorm, bool kScaled, At kAt, class DF, typename TX,
          typename TP>
HWY_INLINE hn::Vec<DF> ResultAt(DF df, const TX* HWY_RESTRICT x,
                                const Weights<TP>& w, size_t i, size_t count,
                                hn::Vec<DF> s, hn::Vec<DF> m, hn::Vec<DF> mul,
                                hn::Vec<DF> add) {
  hn::Vec<DF> g, b;
  WeightsAt<kAt>(df, w, i, count, g, b);
  const auto t = NormalizedAt<kLayerNorm, kScaled, kAt>(df, x, w.round, i,
                                                        count, s, m, mul, add);
  return GammaBeta(df, t, g, b);
}

// Whether x, y and the weights pair alike (convert-inl.h): then the main
// loops move pairs.
template <typename TX, typename TY, typename TP>
inline constexpr bool kPairs =
    kEvenOdd<TX> == kEvenOdd<TY>&& kEvenOdd<TX> == kEvenOdd<TP>;

// The main loops' store of 2N results at y: a pair (convert-inl.h) when
// x, y and the weights pair alike, else two vectors in order; with
// `stream` (f32 or paired output only) non-temporal.
template <bool kPaired, bool kQuiet, class DF, typename TY>
HWY_INLINE void Store2N(DF df, hn::Vec<DF> a, hn::Vec<DF> b, TY* HWY_RESTRICT y,
                        bool stream) {
  if constexpr (kPaired || std::is_same_v<TY, float>) {
    if (stream) {
      StorePair<kQuiet, true>(df, a, b, y);
    } else {
      StorePair<kQuiet>(df, a, b, y);
    }
  } else {
    (void)stream;
    StoreF<kQuiet>(df, a, y);
    StoreF<kQuiet>(df, b, y + hn::Lanes(df));
  }
}

// Loads and stores that split a cache line cost up to twice as much as
// aligned ones (docs/performance.md), and callers' rows are often off a
// line (std::vector's by 16 bytes). So the write loops peel a head: the
// row's first 2N results are stored unaligned, and the loop goes on from
// the element where the row's accesses are aligned (to a vector of floats'
// bytes). Every result is computed the same way wherever it is (element by
// element), so the bits never depend on the address.

// Elements before p + head is aligned (< 2N); 0 when p is aligned or not a
// multiple of its element size (nothing to align to).
template <typename T>
HWY_INLINE size_t HeadToAlign(size_t bytes, const T* p) {
  const size_t off = reinterpret_cast<uintptr_t>(p) % bytes;
  return off % sizeof(T) != 0 ? 0 : (bytes - off) % bytes / sizeof(T);
}

// Rows whose y sits at another offset of a line than x have split loads or
// split stores, and neither goes with non-temporal stores (split streaming
// stores cost more than cached ones; split loads beside them made 4096
// rows 1.5x slower). So where y (f32) is streamed, the peel aligns x, the
// results are computed at x's aligned positions, and each aligned vector
// of y is made of two consecutive results by a two-source permute
// (vpermt2ps): aligned loads of x, aligned non-temporal stores, the same
// values; the weights are loaded where they are (copied to x's offset
// first for most calls: WeightsApart). AVX-512 only (elsewhere
// kShiftedStream is false and nothing here runs).
template <typename TY>
inline constexpr bool kShiftedStream =
    SIMDNORM_SHIFTED_STREAM&& std::is_same_v<TY, float>;

// The peel of a row: the head that aligns y's stores, or the one that
// aligns x's loads when x and the weights share an offset that y does not
// (three split loads cost more than one split store on Zen 5), or y is
// streamed through shifted vectors (kShiftedStream). 0 for rows
// shorter than head + 2N. A few integer operations: it runs for every row.
// When y is streamed, its head reaches a cache line where 2N results can
// (AVX2's f32): a line written partly by cached and partly by non-temporal
// stores is flushed half full, which made AVX2 rows 16 bytes off 3x slower
// than aligned ones at 4096 rows on Zen 4.
template <class DF, typename TX, typename TY, typename TP>
HWY_INLINE size_t PeelHead(DF df, const TX* x, const TY* y,
                           const Weights<TP>& w, size_t n, bool stream) {
  const size_t bytes = hn::Lanes(df) * sizeof(float);
  const size_t ox = reinterpret_cast<uintptr_t>(x) % bytes;
  const size_t oy = reinterpret_cast<uintptr_t>(y) % bytes;
  const size_t og = w.gamma ? reinterpret_cast<uintptr_t>(w.gamma) % bytes : ox;
  const size_t ob = w.beta ? reinterpret_cast<uintptr_t>(w.beta) % bytes : ox;
  if ((ox | oy | og | ob) == 0) return 0;
  const bool x_side =
      ox != oy && ((og == ox && ob == ox) ||
                   (stream && kShiftedStream<TY> && hn::Lanes(df) == 16));
  const size_t y_bytes =
      stream
          ? HWY_MAX(bytes, HWY_MIN(size_t{64}, 2 * hn::Lanes(df) * sizeof(TY)))
          : bytes;
  const size_t head = x_side ? HeadToAlign(bytes, x) : HeadToAlign(y_bytes, y);
  return head + 2 * hn::Lanes(df) <= n ? head : 0;
}

// Whether p is aligned to a vector of floats' bytes. Non-temporal stores
// need y aligned, and are used only where x's loads are aligned too: with
// split loads of x they made 4096 rows 1.5x slower here.
template <class DF, typename TY>
HWY_INLINE bool StreamAligned(DF df, const TY* p) {
  return reinterpret_cast<uintptr_t>(p) % (hn::Lanes(df) * sizeof(float)) == 0;
}

// Rows of at least 2N elements are written in three parts: a peeled head
// (see PeelHead), the aligned main loop, and the row's last 2N results,
// computed before any store (in place, their loads must come first) and
// stored last, over results already stored with the same values. So no
// row needs a partial vector (a copy through a stack buffer) unless it is
// shorter than 2N.
//
// StoreHead stores the head: the row's first vector of results at y (two
// when the head is longer than a vector), or, when the rest of the row is
// streamed, only its first `head` (< 2N) elements, so that no cached store
// touches a line written with non-temporal stores (which would cost a flush of
// that line).
template <bool kQuiet, class DF, typename TY>
HWY_INLINE void StoreHead(DF df, hn::Vec<DF> h0, hn::Vec<DF> h1,
                          TY* HWY_RESTRICT y, size_t head, bool stream) {
  const size_t N = hn::Lanes(df);
  if (!stream) {
    StoreF<kQuiet>(df, h0, y);
    if (head > N) StoreF<kQuiet>(df, h1, y + N);
  } else if (head < N) {
    StoreTailF<kQuiet>(df, h0, y, head);
  } else {
    StoreF<kQuiet>(df, h0, y);
    if (head > N) StoreTailF<kQuiet>(df, h1, y + N, head - N);
  }
}

// StoreEnd stores the row's last results, e1 (elements n - N to n) and, if
// the `count` elements not yet stored are more than N, e0 (n - 2N to n - N);
// with streaming exactly those `count` elements.
template <bool kQuiet, class DF, typename TY>
HWY_INLINE void StoreEnd(DF df, hn::Vec<DF> e0, hn::Vec<DF> e1,
                         TY* HWY_RESTRICT y, size_t n, size_t count,
                         bool stream) {
  const size_t N = hn::Lanes(df);
  if (!stream) {
    if (count > N) StoreF<kQuiet>(df, e0, y + n - 2 * N);
    StoreF<kQuiet>(df, e1, y + n - N);
    return;
  }
  HWY_ALIGN TY buf[2 * kMaxFloatLanes];
  StoreF<kQuiet>(df, e0, buf);
  StoreF<kQuiet>(df, e1, buf + N);
  std::memcpy(y + n - count, buf + 2 * N - count, count * sizeof(TY));
}

#if SIMDNORM_SHIFTED_STREAM
// Floats of y + i past a line where x + i is at a line's start and y + i
// (f32) is not, with at least 3N elements left and the head (see
// StreamShifted) at most 2N long; else 0 (the plain loops).
template <class DF, typename TX>
HWY_INLINE size_t ShiftedLag(DF df, const TX* x, const float* y, size_t i,
                             size_t n) {
  const size_t N = hn::Lanes(df);
  const uintptr_t oy = reinterpret_cast<uintptr_t>(y + i) % 64;
  if (N != 16 || !StreamAligned(df, x + i) || oy % sizeof(float) != 0) {
    return 0;
  }
  const size_t lag = oy / sizeof(float);
  return i + 3 * N <= n && i + N - lag <= 2 * N ? lag : 0;
}

// Streams the results of kRows rows from x's aligned position i on, where
// y + i is `lag` floats past a line: at(j, r) gives each row's 16 results
// at j. Returns the end of what is stored: y's elements from i + 16 - lag
// (the first line of y after i; the caller's head stores those before) up
// to the value returned, less than 2N from n.
template <size_t kRows, class F>
HWY_INLINE size_t StreamShifted(float* const (&y)[kRows], size_t i, size_t n,
                                size_t lag, const F& at) {
  constexpr size_t N = 16;
  const __m512i idx = _mm512_add_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      _mm512_set1_epi32(static_cast<int>(N - lag)));
  __m512 prev[kRows], a[kRows], b[kRows];
  at(i, prev);
  size_t k = i;
  for (; k + 3 * N <= n; k += 2 * N) {
    at(k + N, a);
    at(k + 2 * N, b);
    for (size_t r = 0; r < kRows; ++r) {
      _mm512_stream_ps(y[r] + k + N - lag,
                       _mm512_permutex2var_ps(prev[r], idx, a[r]));
      _mm512_stream_ps(y[r] + k + 2 * N - lag,
                       _mm512_permutex2var_ps(a[r], idx, b[r]));
      prev[r] = b[r];
    }
  }
  if (k + 2 * N <= n) {
    at(k + N, a);
    for (size_t r = 0; r < kRows; ++r) {
      _mm512_stream_ps(y[r] + k + N - lag,
                       _mm512_permutex2var_ps(prev[r], idx, a[r]));
    }
    k += N;
  }
  return k + N - lag;
}
#endif

// The 2N results of a row at i, as the main loops store them (Store2N): a
// pair when x, y and the weights pair alike, else two vectors in order.
template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE void Results2N(DF df, const TX* HWY_RESTRICT x, const Weights<TP>& w,
                          size_t i, hn::Vec<DF> s, hn::Vec<DF> m,
                          hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF>& a,
                          hn::Vec<DF>& b) {
  if constexpr (kPairs<TX, TY, TP>) {
    a = ResultAt<kLayerNorm, kScaled, At::kPairA>(df, x, w, i, 0, s, m, mul,
                                                  add);
    b = ResultAt<kLayerNorm, kScaled, At::kPairB>(df, x, w, i, 0, s, m, mul,
                                                  add);
  } else {
    a = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i, 0, s, m, mul,
                                                 add);
    b = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i + hn::Lanes(df), 0,
                                                 s, m, mul, add);
  }
}

// y = Normalized(x) * scale + beta over a row. The weights come by value:
// a local copy that stores to y cannot alias, so their broadcasts stay out
// of the loop. x and y may be the same row (in place): each vector is
// loaded before it is stored, the peeled head is stored after the loads of
// the first aligned step, whose elements it overlaps, and the row's end is
// loaded first (see StoreHead). The row's constants are broadcast once
// (vectors cannot live in structs on SVE).
template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE void ApplyRow(DF df, const TX* x, TY* y, const Weights<TP> w,
                           size_t n, const RowScale& k, bool stream) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  if (n < 2 * N) {  // a vector and a partial one at most
    size_t i = 0;
    if (N <= n) {
      StoreF<kQuiet>(df,
                     ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, 0, 0, s,
                                                              m, mul, add),
                     y);
      i = N;
    }
    if (i < n) {
      StoreTailF<kQuiet>(df,
                         ResultAt<kLayerNorm, kScaled, At::kTail>(
                             df, x, w, i, n - i, s, m, mul, add),
                         y + i, n - i);
    }
    return;
  }
  size_t i = PeelHead(df, x, y, w, n, stream);
#if SIMDNORM_SHIFTED_STREAM
  if constexpr (kShiftedStream<TY>) {
    const size_t lag = stream ? ShiftedLag(df, x, y, i, n) : 0;
    if (lag != 0) {  // the ends computed first, as below
      const auto at = [&](size_t j) {
        return ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, j, 0, s, m,
                                                        mul, add);
      };
      const auto e0 = at(n - 2 * N), e1 = at(n - N), h0 = at(0), h1 = at(N);
      StoreHead<kQuiet>(df, h0, h1, y, i + N - lag, true);
      float* const rows[1] = {y};
      const size_t end = StreamShifted(
          rows, i, n, lag, [&](size_t j, __m512(&r)[1]) { r[0] = at(j).raw; });
      StoreEnd<kQuiet>(df, e0, e1, y, n, n - end, true);
      return;
    }
  }
#endif
  stream = stream && StreamAligned(df, y + i) && StreamAligned(df, x + i);
  // What the loop leaves over: e1 covers up to N elements, e0 the rest.
  const size_t rest = (n - i) % (2 * N);
  hn::Vec<DF> a, b, e0 = hn::Zero(df), e1 = hn::Zero(df);
  if (rest > N) {
    e0 = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, n - 2 * N, 0, s, m,
                                                  mul, add);
  }
  if (rest != 0) {
    e1 = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, n - N, 0, s, m, mul,
                                                  add);
  }
  if (i != 0) {
    const auto h0 = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, 0, 0, s,
                                                             m, mul, add);
    const auto h1 = i > N ? ResultAt<kLayerNorm, kScaled, At::kFull>(
                                df, x, w, N, 0, s, m, mul, add)
                          : h0;  // the head fits in h0
    Results2N<kLayerNorm, kScaled, DF, TX, TY>(df, x, w, i, s, m, mul, add, a,
                                               b);
    StoreHead<kQuiet>(df, h0, h1, y, i, stream);
    Store2N<kPaired, kQuiet>(df, a, b, y + i, stream);
    i += 2 * N;
  }
  for (; i + 2 * N <= n; i += 2 * N) {
    Results2N<kLayerNorm, kScaled, DF, TX, TY>(df, x, w, i, s, m, mul, add, a,
                                               b);
    Store2N<kPaired, kQuiet>(df, a, b, y + i, stream);
  }
  if (rest != 0) StoreEnd<kQuiet>(df, e0, e1, y, n, rest, stream);
}

// One vector (kAt) of two rows that share the weights' loads.
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TP>
HWY_INLINE void Results2At(DF df, const TX* HWY_RESTRICT x0,
                           const TX* HWY_RESTRICT x1, const Weights<TP>& w,
                           size_t i, size_t count, hn::Vec<DF> m0,
                           hn::Vec<DF> mul0, hn::Vec<DF> add0, hn::Vec<DF> m1,
                           hn::Vec<DF> mul1, hn::Vec<DF> add1, hn::Vec<DF>& y0,
                           hn::Vec<DF>& y1) {
  const auto one = hn::Set(df, 1.0f);
  hn::Vec<DF> g, b;
  WeightsAt<kAt>(df, w, i, count, g, b);
  y0 = GammaBeta(df,
                 NormalizedAt<kLayerNorm, false, kAt>(df, x0, w.round, i, count,
                                                      one, m0, mul0, add0),
                 g, b);
  y1 = GammaBeta(df,
                 NormalizedAt<kLayerNorm, false, kAt>(df, x1, w.round, i, count,
                                                      one, m1, mul1, add1),
                 g, b);
}

// The 2N results of two rows at i (Results2N for two rows).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void Results2N2(DF df, const TX* HWY_RESTRICT x0,
                           const TX* HWY_RESTRICT x1, const Weights<TP>& w,
                           size_t i, hn::Vec<DF> m0, hn::Vec<DF> mul0,
                           hn::Vec<DF> add0, hn::Vec<DF> m1, hn::Vec<DF> mul1,
                           hn::Vec<DF> add1, hn::Vec<DF>& a0, hn::Vec<DF>& b0,
                           hn::Vec<DF>& a1, hn::Vec<DF>& b1) {
  if constexpr (kPairs<TX, TY, TP>) {
    Results2At<kLayerNorm, At::kPairA>(df, x0, x1, w, i, 0, m0, mul0, add0, m1,
                                       mul1, add1, a0, a1);
    Results2At<kLayerNorm, At::kPairB>(df, x0, x1, w, i, 0, m0, mul0, add0, m1,
                                       mul1, add1, b0, b1);
  } else {
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, i, 0, m0, mul0, add0, m1,
                                      mul1, add1, a0, a1);
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, i + hn::Lanes(df), 0, m0,
                                      mul0, add0, m1, mul1, add1, b0, b1);
  }
}

// ApplyRow for two unscaled rows at once: each weight vector is loaded (and
// widened) once for both, which halves the weights' share of the loads and
// conversions, and the two rows' operations are independent. Each result
// is computed exactly as ApplyRow computes it: the same bits. The caller
// makes sure both rows have the same PeelHead.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRows2(DF df, const TX* x0, const TX* x1, TY* y0, TY* y1,
                             const Weights<TP> w, size_t n, const RowScale& k0,
                             const RowScale& k1, bool stream) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  const size_t N = hn::Lanes(df);
  const auto m0 = hn::Set(df, k0.m), mul0 = hn::Set(df, k0.mul);
  const auto add0 = hn::Set(df, k0.add);
  const auto m1 = hn::Set(df, k1.m), mul1 = hn::Set(df, k1.mul);
  const auto add1 = hn::Set(df, k1.add);
  hn::Vec<DF> a0, a1, b0, b1;
  if (n < 2 * N) {  // a vector and a partial one at most
    size_t i = 0;
    if (N <= n) {
      Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, 0, 0, m0, mul0, add0, m1,
                                        mul1, add1, a0, a1);
      StoreF<kQuiet>(df, a0, y0);
      StoreF<kQuiet>(df, a1, y1);
      i = N;
    }
    if (i < n) {
      Results2At<kLayerNorm, At::kTail>(df, x0, x1, w, i, n - i, m0, mul0, add0,
                                        m1, mul1, add1, a0, a1);
      StoreTailF<kQuiet>(df, a0, y0 + i, n - i);
      StoreTailF<kQuiet>(df, a1, y1 + i, n - i);
    }
    return;
  }
  size_t i = PeelHead(df, x0, y0, w, n, stream);
#if SIMDNORM_SHIFTED_STREAM
  if constexpr (kShiftedStream<TY>) {
    const size_t lag = stream ? ShiftedLag(df, x0, y0, i, n) : 0;
    if (lag != 0 && lag == ShiftedLag(df, x1, y1, i, n)) {
      const auto at = [&](size_t j, hn::Vec<DF>& r0, hn::Vec<DF>& r1) {
        Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, j, 0, m0, mul0, add0,
                                          m1, mul1, add1, r0, r1);
      };
      hn::Vec<DF> e00, e01, e10, e11, h00, h01, h10, h11;  // as in ApplyRow
      at(n - 2 * N, e00, e10);
      at(n - N, e01, e11);
      at(0, h00, h10);
      at(N, h01, h11);
      StoreHead<kQuiet>(df, h00, h01, y0, i + N - lag, true);
      StoreHead<kQuiet>(df, h10, h11, y1, i + N - lag, true);
      float* const rows[2] = {y0, y1};
      const size_t end =
          StreamShifted(rows, i, n, lag, [&](size_t j, __m512(&r)[2]) {
            hn::Vec<DF> r0, r1;
            at(j, r0, r1);
            r[0] = r0.raw;
            r[1] = r1.raw;
          });
      StoreEnd<kQuiet>(df, e00, e01, y0, n, n - end, true);
      StoreEnd<kQuiet>(df, e10, e11, y1, n, n - end, true);
      return;
    }
  }
#endif
  stream = stream && StreamAligned(df, y0 + i) && StreamAligned(df, y1 + i) &&
           StreamAligned(df, x0 + i) && StreamAligned(df, x1 + i);
  const size_t rest = (n - i) % (2 * N);  // the rows' ends, as in ApplyRow
  hn::Vec<DF> e00 = hn::Zero(df), e01 = e00, e10 = e00, e11 = e00;
  if (rest > N) {
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, n - 2 * N, 0, m0, mul0,
                                      add0, m1, mul1, add1, e00, e10);
  }
  if (rest != 0) {
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, n - N, 0, m0, mul0, add0,
                                      m1, mul1, add1, e01, e11);
  }
  if (i != 0) {  // the peeled heads, as in ApplyRow
    hn::Vec<DF> h00, h10;
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, 0, 0, m0, mul0, add0, m1,
                                      mul1, add1, h00, h10);
    hn::Vec<DF> h01 = h00, h11 = h10;  // the heads fit in h00, h10
    if (i > N) {
      Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, N, 0, m0, mul0, add0, m1,
                                        mul1, add1, h01, h11);
    }
    Results2N2<kLayerNorm, DF, TX, TY>(df, x0, x1, w, i, m0, mul0, add0, m1,
                                       mul1, add1, a0, b0, a1, b1);
    StoreHead<kQuiet>(df, h00, h01, y0, i, stream);
    StoreHead<kQuiet>(df, h10, h11, y1, i, stream);
    Store2N<kPaired, kQuiet>(df, a0, b0, y0 + i, stream);
    Store2N<kPaired, kQuiet>(df, a1, b1, y1 + i, stream);
    i += 2 * N;
  }
  for (; i + 2 * N <= n; i += 2 * N) {
    Results2N2<kLayerNorm, DF, TX, TY>(df, x0, x1, w, i, m0, mul0, add0, m1,
                                       mul1, add1, a0, b0, a1, b1);
    Store2N<kPaired, kQuiet>(df, a0, b0, y0 + i, stream);
    Store2N<kPaired, kQuiet>(df, a1, b1, y1 + i, stream);
  }
  if (rest != 0) {
    StoreEnd<kQuiet>(df, e00, e01, y0, n, rest, stream);
    StoreEnd<kQuiet>(df, e10, e11, y1, n, rest, stream);
  }
}

// The int8 scale of a group from the bits of its max|y| (see simdnorm.h):
// q = y * pre * inv. inv = 127 / max is a float unless max is tiny; then y
// is first scaled up by 2^100 (exact), so inv stays finite. A zero, inf or
// NaN max gives inv = 0: the group is q = 0.
struct QuantScale {
  float scale, pre, inv;
};

inline QuantScale QuantScaleFor(uint32_t max_bits) {
  float m;
  std::memcpy(&m, &max_bits, sizeof(m));
  if (!(m > 0.0f) || !(m < HUGE_VALF)) return QuantScale{m, 0.0f, 0.0f};
  const double pre = m < 0x1p-100f ? 0x1p100 : 1.0;
  return QuantScale{m / 127.0f, static_cast<float>(pre),
                    static_cast<float>(127.0 / (static_cast<double>(m) * pre))};
}

// Int8 output, group by group: max|y| over the group's fp32 results, then
// the results again (recomputed from the row, which is in L1: cheaper than
// a buffer), scaled and rounded. max|y| is taken on the bits of |y|, whose
// unsigned order is the order of the values and puts NaN above inf.
template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TP>
HWY_NOINLINE void ApplyRowQuant(DF df, const TX* x, int8_t* y, float* scales,
                                size_t group, const Weights<TP> w, size_t n,
                                const RowScale& k) {
  const hn::RebindToUnsigned<DF> du;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  for (size_t g0 = 0; g0 < n; g0 += group) {
    const size_t g1 = n - g0 > group ? g0 + group : n;
    auto max_bits = hn::Zero(du);
    size_t i = g0;
    for (; i + N <= g1; i += N) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i, 0, s,
                                                              m, mul, add);
      max_bits = hn::Max(max_bits, hn::BitCast(du, hn::Abs(v)));
    }
    if (i < g1) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kTail>(
          df, x, w, i, g1 - i, s, m, mul, add);
      const auto valid = hn::RebindMask(du, hn::FirstN(df, g1 - i));
      max_bits = hn::Max(
          max_bits, hn::IfThenElseZero(valid, hn::BitCast(du, hn::Abs(v))));
    }
    const QuantScale q =
        QuantScaleFor(hn::GetLane(hn::MaxOfLanes(du, max_bits)));
    *scales++ = q.scale;
    if (q.inv == 0.0f) {  // zeros, inf or NaN: q = 0 (y * 0 may be NaN)
      std::memset(y + g0, 0, g1 - g0);
      continue;
    }
    const auto pre = hn::Set(df, q.pre), inv = hn::Set(df, q.inv);
    for (i = g0; i + N <= g1; i += N) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i, 0, s,
                                                              m, mul, add);
      StoreF(df, hn::Mul(hn::Mul(v, pre), inv), y + i);
    }
    if (i < g1) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kTail>(
          df, x, w, i, g1 - i, s, m, mul, add);
      StoreTailF(df, hn::Mul(hn::Mul(v, pre), inv), y + i, g1 - i);
    }
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

// ------------------------------------------------ correctly rounded rows
//
// bf16 and f16 outputs, by default (lib/correct_rounding.h): each row's
// statistics in double with error bounds, the results in fp32 as above with
// a per-lane bound on |y - exact y|, and the lanes whose bound reaches a
// rounding boundary (rare: ~1e-4 of them) decided again in double, or
// exactly. docs/accuracy.md has the argument.

template <typename T>
inline constexpr simdnorm_dtype kDType =
    std::is_same_v<T, float>    ? SIMDNORM_F32
    : std::is_same_v<T, bf16_t> ? SIMDNORM_BF16
    : std::is_same_v<T, f16_t>  ? SIMDNORM_F16
                                : SIMDNORM_I8;

template <typename TY>
inline constexpr bool kRounds16 =
    std::is_same_v<TY, bf16_t> || std::is_same_v<TY, f16_t>;

// sum(x - k) and sum((x - k)^2) in double lanes (x - k in double from
// float x and k; error bounds in StatsFromSums); !kCentered: k = 0 and
// only sum(x^2) (sum is 0); !kShift: k = 0, no subtraction a term. Four chains
// per sum: with two, the adds' latency bounded the loop (1.6x the time at
// hidden 896). Elements are read 2N at a time as pairs (LoadPairA/B: bf16
// without a shuffle), then widened by halves; any order of the terms has the
// same bound.
template <bool kCentered = true, bool kShift = kCentered, class DF, typename TX>
HWY_NOINLINE void SumsF64(DF df, const TX* HWY_RESTRICT x, size_t n, float k,
                          double& sum, double& sum_sq) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dfh;
  const size_t M = hn::Lanes(dd);
  const auto vk = hn::Set(dd, static_cast<double>(k));
  auto s0 = hn::Zero(dd), s1 = hn::Zero(dd), s2 = hn::Zero(dd),
       s3 = hn::Zero(dd);
  auto q0 = hn::Zero(dd), q1 = hn::Zero(dd), q2 = hn::Zero(dd),
       q3 = hn::Zero(dd);
  size_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const auto centered = [&](hn::Vec<decltype(dfh)> v) {
    const auto d = hn::PromoteTo(dd, v);
    return kShift ? hn::Sub(d, vk) : d;
  };
  const size_t N = hn::Lanes(df);
  for (; i + 2 * N <= n; i += 2 * N) {
    hn::Vec<DF> va, vb;
    LoadPair(df, x + i, va, vb);
    const auto d0 = centered(hn::LowerHalf(dfh, va));
    const auto d1 = centered(hn::UpperHalf(dfh, va));
    const auto d2 = centered(hn::LowerHalf(dfh, vb));
    const auto d3 = centered(hn::UpperHalf(dfh, vb));
    if constexpr (kCentered) {
      s0 = hn::Add(s0, d0);
      s1 = hn::Add(s1, d1);
      s2 = hn::Add(s2, d2);
      s3 = hn::Add(s3, d3);
    }
    q0 = hn::MulAdd(d0, d0, q0);
    q1 = hn::MulAdd(d1, d1, q1);
    q2 = hn::MulAdd(d2, d2, q2);
    q3 = hn::MulAdd(d3, d3, q3);
  }
#else
  (void)df;
#endif
  for (; i < n; i += M) {
    const size_t count = n - i < M ? n - i : M;
    const auto d0 = hn::IfThenElseZero(
        hn::FirstN(dd, count),
        hn::Sub(hn::PromoteTo(dd, LoadTailF(dfh, x + i, count)), vk));
    if constexpr (kCentered) s0 = hn::Add(s0, d0);
    q0 = hn::MulAdd(d0, d0, q0);
  }
  sum = hn::GetLane(
      hn::SumOfLanes(dd, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  sum_sq = hn::GetLane(
      hn::SumOfLanes(dd, hn::Add(hn::Add(q0, q1), hn::Add(q2, q3))));
}

// Whether a row's first vector (its first N elements or fewer) shares a
// sign (not 0): nearly every row whose |mean| is several deviations does
// (at 4 deviations, 995 in 1000 with N = 16), a zero-mean one in 2^(N-1).
template <class DF, typename TX>
HWY_INLINE bool LeadSharesSign(DF df, const TX* x, size_t n) {
  const size_t count = HWY_MIN(n, hn::Lanes(df));
  const auto v = LoadTailF(df, x, count);
  const auto outside = hn::Not(hn::FirstN(df, count));
  return hn::AllTrue(df, hn::Or(outside, hn::Gt(v, hn::Zero(df)))) ||
         hn::AllTrue(df, hn::Or(outside, hn::Lt(v, hn::Zero(df))));
}

// StatsF64 in two steps, for rows whose chains run side by side
// (StatsOfLanes): the first sums (returns the shift k), then the
// recentering of the statistics made from them, where they ask for it.
template <bool kLayerNorm, class DF, typename TX>
HWY_INLINE float FirstSumsF64(DF df, const TX* x, size_t n, double& s,
                              double& q) {
  if (kLayerNorm && LeadSharesSign(df, x, n)) {
    const float k = ToFloat(x[0]);
    SumsF64<kLayerNorm>(df, x, n, k, s, q);
    return k;
  }
  SumsF64<kLayerNorm, false>(df, x, n, 0.0f, s, q);
  return 0.0f;
}
template <bool kLayerNorm, class DF, typename TX>
HWY_INLINE void RecenterF64(DF df, const TX* x, size_t n,
                            const internal::StatsPlan& plan,
                            internal::RowStats& st) {
  if (internal::ShouldRecenter(plan.centered, st)) {
    const float k = static_cast<float>(st.k + st.c);
    double s, q;
    SumsF64<kLayerNorm>(df, x, n, k, s, q);
    st = internal::StatsFromSums(plan, k, s, q);
  }
}

// A row's double statistics. LayerNorm: shifted by x[0] where the row's
// first vector shares a sign (LeadSharesSign), else unshifted (no subtraction
// a term: a fifth of SumsF64's operations, and for a zero-mean row less
// cancellation than a shift by x[0]: 1.06-1.09x at 64 x 896); then by the
// mean where the variance's bound is still too loose (ShouldRecenter:
// unshifted, |mean| beyond ~4 deviations at 896). The choice depends on the
// row alone, as the results do. plan: PlanStats with DoubleSums(n).
template <bool kLayerNorm, class DF, typename TX>
HWY_INLINE internal::RowStats StatsF64(DF df, const TX* x, size_t n,
                                       const internal::StatsPlan& plan) {
  double s, q;
  const float k = FirstSumsF64<kLayerNorm>(df, x, n, s, q);
  internal::RowStats st = internal::StatsFromSums(plan, k, s, q);
  RecenterF64<kLayerNorm>(df, x, n, plan, st);
  return st;
}

// v's lanes added to double accumulators (exact conversions).
template <class DF>
HWY_INLINE void AddToF64(DF df, hn::Vec<DF> v,
                         hn::Vec<hn::ScalableTag<double>>& lo,
                         hn::Vec<hn::ScalableTag<double>>& hi) {
  const hn::ScalableTag<double> dd;
  (void)df;
#if HWY_TARGET == HWY_SCALAR
  (void)hi;
  lo = hn::Add(lo, hn::Set(dd, static_cast<double>(hn::GetLane(v))));
#else
  const hn::Half<DF> dh;
  lo = hn::Add(lo, hn::PromoteTo(dd, hn::LowerHalf(dh, v)));
  hi = hn::Add(hi, hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
#endif
}

// The smallest nonzero |value| of a scan, from least = the smallest of
// (magnitude bits - 1), which wraps to all ones for 0 (+inf where every
// value was 0); TU: uint16_t for bf16 bits, uint32_t for f32 bits.
template <typename TU>
inline float SmallestMagnitude(TU least) {
  if (least == static_cast<TU>(~TU{0})) return HUGE_VALF;
  const uint32_t bits = static_cast<uint32_t>(least + 1u)
                        << (sizeof(TU) == 2 ? 16 : 0);
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

// The most fp32 roundings a term of SumSquaresF32 goes through: 3 in its
// chain of 4 FMAs (the first adds an exact square to 0; for f32 x its
// square rounds: 4), 2 adding the chains.
template <typename TX>
inline constexpr int kSumsF32Depth = sizeof(TX) == 2 ? 5 : 6;

// sum(x^2) in fp32 chains short enough for a tight bound
// (internal::Fp32Sums(n, kSumsF32Depth<TX>)): blocks of 16 vectors in four
// chains of 4, each block added to double lanes; a row's last, partial
// block gives its last vectors one to a chain, so that no chain is longer.
// The bound sets how often a lane's rounding is left open: when the
// partial block's vectors went to one chain (depth 9), r was known within
// ~4.6u and TameChunk's K was 8; at depth 5, ~2.6u and 6. kMinX (bf16 x):
// also the smallest nonzero |x| to *min_x (+inf for a row of zeros), for
// TinyV: a few integer operations in a loop that has room for them.
template <bool kMinX = false, class DF, typename TX>
HWY_NOINLINE double SumSquaresF32(DF df, const TX* HWY_RESTRICT x, size_t n,
                                  float* min_x = nullptr) {
  static_assert(!kMinX || std::is_same_v<TX, bf16_t>, "bf16 x only");
  const size_t N = hn::Lanes(df);
  const hn::ScalableTag<double> dd;
#if HWY_TARGET == HWY_SCALAR
  static_assert(!kMinX, "vector targets only");
  const hn::Rebind<uint16_t, DF> d16;
#else
  const hn::Repartition<uint16_t, DF> d16;  // the 2N elements of a pair
#endif
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(x);
  // |x|'s bits - 1, wrapping: a zero's is 0xFFFF, above every other.
  const auto abs = hn::Set(d16, 0x7FFF), one = hn::Set(d16, 1);
  auto mins = hn::Set(d16, 0xFFFF);
  uint16_t min_rest = 0xFFFF;
  auto lo = hn::Zero(dd), hi = hn::Zero(dd);
  size_t i = 0;
  while (i < n) {
    auto q0 = hn::Zero(df), q1 = hn::Zero(df), q2 = hn::Zero(df),
         q3 = hn::Zero(df);
    const size_t block_end = n - i > 16 * N ? i + 16 * N : n;
    for (; i + 4 * N <= block_end; i += 4 * N) {
      hn::Vec<DF> x0, x1, x2, x3;
      LoadPair(df, x + i, x0, x1);
      LoadPair(df, x + i + 2 * N, x2, x3);
      q0 = hn::MulAdd(x0, x0, q0);
      q1 = hn::MulAdd(x1, x1, q1);
      q2 = hn::MulAdd(x2, x2, q2);
      q3 = hn::MulAdd(x3, x3, q3);
      if constexpr (kMinX) {
        const auto m0 = hn::And(hn::LoadU(d16, bits + i), abs);
        const auto m1 = hn::And(hn::LoadU(d16, bits + i + 2 * N), abs);
        mins = hn::Min(mins, hn::Min(hn::Sub(m0, one), hn::Sub(m1, one)));
      }
    }
    if constexpr (kMinX) {
      for (size_t j = i; j < block_end; ++j) {
        const uint16_t m = static_cast<uint16_t>((bits[j] & 0x7FFF) - 1);
        min_rest = m < min_rest ? m : min_rest;
      }
    }
    // Up to 3 whole vectors and a partial one (zero-padded) are left.
    for (size_t c = 0; i < block_end; ++c) {
      const size_t count = block_end - i < N ? block_end - i : N;
      const auto v = LoadTailF(df, x + i, count);
      if (c == 0) {  // separate variables: SVE's vectors are sizeless
        q0 = hn::MulAdd(v, v, q0);
      } else if (c == 1) {
        q1 = hn::MulAdd(v, v, q1);
      } else if (c == 2) {
        q2 = hn::MulAdd(v, v, q2);
      } else {
        q3 = hn::MulAdd(v, v, q3);
      }
      i += count;
    }
    AddToF64(df, hn::Add(hn::Add(q0, q1), hn::Add(q2, q3)), lo, hi);
  }
  if constexpr (kMinX) {
    const uint16_t m = hn::GetLane(hn::MinOfLanes(d16, mins));
    *min_x = SmallestMagnitude<uint16_t>(min_rest < m ? min_rest : m);
  } else {
    (void)min_x, (void)bits, (void)abs, (void)one, (void)mins, (void)min_rest;
  }
  return hn::GetLane(hn::SumOfLanes(dd, hn::Add(lo, hi)));
}

// UncenteredStatsF32's sum (for StatsOfLanes).
template <class DF, typename TX>
HWY_INLINE double SquaresF32(DF df, const TX* x, size_t n, bool want_min,
                             float* min_x) {
  *min_x = 0.0f;
  if constexpr (std::is_same_v<TX, bf16_t> && HWY_TARGET != HWY_SCALAR) {
    return want_min ? SumSquaresF32<true>(df, x, n, min_x)
                    : SumSquaresF32(df, x, n);
  } else {
    (void)want_min;
    return SumSquaresF32(df, x, n);
  }
}

// Uncentered statistics (RMSNorm, L2) of a checked row from fp32 sums with
// their bounds: cheaper than StatsF64 and tight enough that few rows need more
// (their double statistics are made when a lane needs them, LazyCrRow). Sums
// that overflow or lose too much to underflow give a non-finite v or er < 0:
// the caller takes StatsF64 then.
// With want_min (bf16 x), also the row's smallest nonzero |x| to *min_x
// (SumSquaresF32), else 0 there. plan: PlanStats with
// Fp32Sums(n, kSumsF32Depth<TX>).
template <class DF, typename TX>
HWY_INLINE internal::RowStats UncenteredStatsF32(
    DF df, const TX* x, size_t n, const internal::StatsPlan& plan,
    bool want_min, float* min_x) {
  const double q = SquaresF32(df, x, n, want_min, min_x);
  return internal::StatsFromSums(plan, 0.0, 0.0, q);
}

// The fp32 constants of a checked row and its per-lane error bound
// |t - xhat| <= alpha |d| + beta, d = x - k in fp32 and t = d * mul + add
// (RMSNorm: d = x, t = x * mul, and 2^-126 more where x != 0, for a
// subnormal t). From |mul - r| <= (u + er) r, d's own rounding, add's
// rounding, c's error dc, and t's own rounding (u|t| <= u(|d| mul + |add|)),
// also that of t * g without FMA. A bound above zero is at least 2^-126,
// which covers subnormal roundings of t. False when the fp32 constants
// would not be normal floats (rows of |x| beyond ~1e30 or below ~1e-30
// with eps 0): such rows are decided element by element.
struct RowBound {
  float alpha, beta;
};

// The float next to a finite nonzero m toward zero (std::nextafter without
// the call into libm): one unit less of its magnitude's bits.
inline float NextTowardZero(float m) {
  uint32_t bits;
  std::memcpy(&bits, &m, sizeof(bits));
  --bits;
  std::memcpy(&m, &bits, sizeof(bits));
  return m;
}

// `nudge` (rows of nonzero variance, which may take the lean loop): where
// the mean is exact in fp32 and not 0, the shift is moved one ulp toward
// zero, so that add is not 0. With add = 0 a row
// cannot take the lean bound (YBoundOf: its floor would flag the exact
// zeros of d = 0), and bf16 rows often have an exact mean: 1 in 7 at
// hidden 896 (n = 7 * 128), nearly all at 4096. The channels keep the
// exact shift (their lean loops take d = 0 apart instead).
inline bool CheckedScale(bool layernorm, const internal::RowStats& st,
                         RowScale& k, RowBound& bound, bool nudge = false) {
  if (!(st.er >= 0.0 && st.r >= 0x1p-100 && st.r <= 0x1p100)) return false;
  const float mul = static_cast<float>(st.r);
  // LayerNorm's shift: the mean rounded to fp32, so that add (what the
  // shift misses, times r) and its rounding error are small. c and dc
  // follow the shift (k - m in double, then + c: two roundings at most).
  float m = static_cast<float>(st.k);
  double c = st.c, dc = st.dc;
  const float mean = static_cast<float>(st.k + st.c);
  if (layernorm && std::isfinite(mean)) {
    m = mean;
    double km = st.k - static_cast<double>(m);
    if (nudge && km + st.c == 0.0 && m != 0.0f) {
      m = NextTowardZero(m);
      km = st.k - static_cast<double>(m);
    }
    c = km + st.c;
    dc = st.dc + 0x1p-52 * (std::fabs(km) + std::fabs(c));
  }
  // + 0.0f: a zero add is +0, so that t = d * mul + add of a zero d is
  // LayerNorm's +0 xhat (-0 * mul + -0 would be -0).
  const float add = layernorm ? static_cast<float>(-c * st.r) + 0.0f : 0.0f;
  if (!(std::fabs(add) <= 0x1p100f)) return false;
  k = RowScale{1.0f, m, mul, add};
  constexpr double u = 0x1p-24;
  // Without FMA, d * mul rounds once more.
  constexpr double kMulRoundings = HWY_NATIVE_FMA ? 2.0 : 3.0;
  constexpr double kTRoundings = HWY_NATIVE_FMA ? 1.0 : 2.0;
  const double grow = (1 + 2 * st.er) * 1.01;  // r vs mul; fp32 evaluation
  const double alpha = mul * ((kMulRoundings + kTRoundings) * u + st.er) * grow;
  const double beta =
      (std::fabs(add) * ((1 + kTRoundings) * u + st.er) + dc * mul) * grow;
  // Bounds as normal floats, rounded up (a tiny bound is made 2^-126).
  const auto up = [](double v) {
    return v > 0.0 ? std::max(static_cast<float>(v * 1.01), 0x1p-126f) : 0.0f;
  };
  bound = RowBound{up(alpha), up(beta)};
  return true;
}

// t = xhat of x in fp32 and the bound et on |t - exact xhat|
// (CheckedScale's constants).
template <bool kLayerNorm, class DF>
HWY_INLINE void TermsOf(DF df, hn::Vec<DF> xv, hn::Vec<DF> m, hn::Vec<DF> mul,
                        hn::Vec<DF> add, hn::Vec<DF> alpha, hn::Vec<DF> beta,
                        hn::Vec<DF>& t, hn::Vec<DF>& et) {
  hn::Vec<DF> d = xv;
  if constexpr (kLayerNorm) {
    d = hn::Sub(xv, m);
    t = hn::MulAdd(d, mul, add);
  } else {
    (void)m;
    (void)add;
    t = hn::Mul(xv, mul);
  }
  et = hn::MulAdd(hn::Abs(d), alpha, beta);
  if constexpr (!kLayerNorm) {  // x != 0: t may be subnormal
    et = hn::Add(et, hn::IfThenElseZero(hn::Ne(d, hn::Zero(df)),
                                        hn::Set(df, 0x1p-126f)));
  }
}

// The terms of one vector of a checked row: t, the bound et on |t - exact
// xhat| (CheckedScale), and the weights.
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TP>
HWY_INLINE void TermsAt(DF df, const TX* HWY_RESTRICT x, const Weights<TP>& w,
                        size_t i, size_t count, hn::Vec<DF> m, hn::Vec<DF> mul,
                        hn::Vec<DF> add, hn::Vec<DF> alpha, hn::Vec<DF> beta,
                        hn::Vec<DF>& t, hn::Vec<DF>& et, hn::Vec<DF>& g,
                        hn::Vec<DF>& b) {
  WeightsAt<kAt>(df, w, i, count, g, b);
  TermsOf<kLayerNorm>(df, LoadAt<kAt>(df, x + i, count), m, mul, add, alpha,
                      beta, t, et);
}

// y = t * g + b and the bound on |y - exact y| from t's bound et (see
// ResultBoundAt).
template <class DF>
HWY_INLINE hn::Vec<DF> ResultBound(DF df, hn::Vec<DF> t, hn::Vec<DF> et,
                                   hn::Vec<DF> g, hn::Vec<DF> b,
                                   hn::Vec<DF>& y) {
  const auto cu = hn::Set(df, static_cast<float>(0x1p-24 * 1.01));
  y = GammaBeta(df, t, g, b);
  const auto gw = hn::Add(hn::Abs(g), hn::Set(df, 0x1p-23f));
  return hn::MulAdd(gw, et, hn::Mul(cu, hn::Abs(y)));
}

// y = t * g + b and the bound on |y - exact y|: y's own rounding, and |g|
// times t's bound, where |g| + 2^-23 keeps the bound nonzero where t is
// inexact and g is 0 or tiny (the sign of a zero y) and at least 2^-149 (a
// subnormal y's rounding), as t's bound is at least 2^-126 there
// (CheckedScale). Not 2^-24: 2^-24 * 2^-126 = 2^-150 rounds to 0 in fp32
// (a tie, to even), and a constant row of -2^-149 (its shift moved to -0)
// then stored -0 where the truth is +0 (found by the fuzzer).
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TP>
HWY_INLINE hn::Vec<DF> ResultBoundAt(DF df, const TX* HWY_RESTRICT x,
                                     const Weights<TP>& w, size_t i,
                                     size_t count, hn::Vec<DF> m,
                                     hn::Vec<DF> mul, hn::Vec<DF> add,
                                     hn::Vec<DF> alpha, hn::Vec<DF> beta,
                                     hn::Vec<DF>& y) {
  hn::Vec<DF> t, et, g, b;
  TermsAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add, alpha, beta, t, et,
                           g, b);
  return ResultBound(df, t, et, g, b, y);
}

// One vector of a checked row: its results y, and the lanes that round as
// the exact values do (the others are decided again).
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE hn::Mask<DF> CheckedAt(DF df, const TX* HWY_RESTRICT x,
                                  const Weights<TP>& w, size_t i, size_t count,
                                  hn::Vec<DF> m, hn::Vec<DF> mul,
                                  hn::Vec<DF> add, hn::Vec<DF> alpha,
                                  hn::Vec<DF> beta, hn::Vec<DF>& y) {
  const auto e = ResultBoundAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add,
                                                alpha, beta, y);
  auto clear = RoundsClear<TY>(df, y, e);
  if constexpr (kAt == At::kTail) {
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
  }
  return clear;
}

// Hugging Face's order: t = xhat rounded to x's type, then y = t * g + b.
// With 16-bit weights and neither beta nor an offset, y = t * g has at most
// 11 + 11 significant bits: exact in fp32 unless it is below 2^-100 (a
// subnormal product may round), so its conversion rounds the exact value
// once and only t's rounding needs the check (kExactY).
template <typename TP>
HWY_INLINE bool ExactProducts(const Weights<TP>& w) {
  return !std::is_same_v<TP, float> && w.beta == nullptr && !w.has_offset;
}

// One vector of a checked row in Hugging Face's order: its results y, the
// lanes that round as the exact values do, t and the lanes where t is
// known right (`t_clear`).
template <bool kLayerNorm, bool kExactY, At kAt, class DF, typename TX,
          typename TY, typename TP>
HWY_INLINE hn::Mask<DF> HFCheckedAt(DF df, const TX* HWY_RESTRICT x,
                                    const Weights<TP>& w, size_t i,
                                    size_t count, hn::Vec<DF> m,
                                    hn::Vec<DF> mul, hn::Vec<DF> add,
                                    hn::Vec<DF> alpha, hn::Vec<DF> beta,
                                    hn::Vec<DF>& y, hn::Vec<DF>& tx,
                                    hn::Mask<DF>& t_clear) {
  hn::Vec<DF> t, et, g, b;
  TermsAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add, alpha, beta, t, et,
                           g, b);
  if constexpr (std::is_same_v<TX, bf16_t>) {  // et has WithEnds' room
    // t is finite: the row has no NaN or inf, and mul and add are finite.
    t_clear = RoundsAlikeBF16</*kNaNLowBits=*/false>(df, t, et, tx);
  } else {
    tx = RoundTo<TX>(df, t);
    t_clear = RoundsClear<TX>(df, t, et);
  }
  hn::Mask<DF> y_clear;
  if constexpr (kExactY) {
    (void)b;  // -0: t * g + -0 == t * g
    y = hn::Mul(tx, g);
    y_clear = hn::Or(hn::Ge(hn::Abs(y), hn::Set(df, 0x1p-100f)),
                     hn::Eq(tx, hn::Zero(df)));
  } else {
    const auto cu = hn::Set(df, static_cast<float>(0x1p-24 * 1.01));
    y = GammaBeta(df, tx, g, b);
    // Only y's rounding is left; a floor where t is not 0 for a subnormal y.
    const auto ey = hn::MulAdd(
        cu, hn::Abs(y),
        hn::IfThenElseZero(hn::Ne(tx, hn::Zero(df)), hn::Set(df, 0x1p-126f)));
    y_clear = RoundsClear<TY>(df, y, ey);
#if HWY_NATIVE_FMA
    if (HWY_UNLIKELY(!hn::AllTrue(df, y_clear))) {
      // Mostly exact ties (~1/128 of lanes with 16-bit t and weights):
      // where y = t * g + b is exact in fp32, its conversion rounds it to
      // nearest-even and needs no check. Exact: the product's error
      // (TwoProduct by FMA) and the sum's (TwoSum, Knuth) are 0, with y
      // far from underflow, where those errors would not show.
      const auto p = hn::Mul(tx, g);
      const auto pe = hn::MulSub(tx, g, p);
      const auto s = hn::Add(p, b);
      const auto bb = hn::Sub(s, p);
      const auto se = hn::Add(hn::Sub(p, hn::Sub(s, bb)), hn::Sub(b, bb));
      const auto ay = hn::Abs(y);
      const auto exact =
          hn::And(hn::And(hn::Eq(pe, hn::Zero(df)), hn::Eq(se, hn::Zero(df))),
                  hn::And(hn::Ge(ay, hn::Set(df, 0x1p-100f)),
                          hn::Le(ay, hn::Set(df, 0x1p100f))));
      y_clear = hn::Or(y_clear, exact);
    }
#endif
  }
  auto clear = hn::And(t_clear, y_clear);
  if constexpr (kAt == At::kTail) {
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
  }
  return clear;
}

// Element j of a row decided by lib/correct_rounding.h, its weights as
// WeightsAt forms them.
template <typename TP>
HWY_INLINE void WeightsOfElement(const Weights<TP>& w, size_t j, float& g,
                                 float& b) {
  g = w.scale;
  if (w.gamma) {
    g = ToFloat(w.gamma[j]);
    if (w.has_offset) g = g + w.offset;
  }
  b = w.beta ? ToFloat(w.beta[j]) : -0.0f;
}

template <typename TY, typename TP>
HWY_INLINE void DecideElement(const Weights<TP>& w, const internal::CrRow& cr,
                              internal::CrCache& cache, size_t j, TY* y) {
  float g, b;
  WeightsOfElement(w, j, g, b);
  const uint16_t bits = internal::CorrectlyRoundedBits(cr, j, g, b, cache);
  std::memcpy(y + j, &bits, sizeof(bits));
}

// RMSNorm of a row with an inf and no NaN: 1/sqrt is 0, so xhat is +-0 (x's
// sign), NaN at the inf, and y = xhat * g + b is known exactly.
template <typename TX, typename TY, typename TP>
HWY_NOINLINE void RMSNormInfRow(const TX* h, TY* y, float* scales, size_t group,
                                const Weights<TP>& w, size_t n) {
  std::vector<double> v(n);
  for (size_t j = 0; j < n; ++j) {
    const float x = ToFloat(h[j]);
    float g, b;
    WeightsOfElement(w, j, g, b);
    v[j] = (std::isinf(x) ? NAN : std::copysign(0.0, x)) * g + b;
  }
  if constexpr (std::is_same_v<TY, int8_t>) {
    for (size_t g0 = 0; g0 < n; g0 += group) {
      const size_t m = n - g0 > group ? group : n - g0;
      internal::Int8FromExactValues(v.data() + g0, m, y + g0, scales++);
    }
  } else {
    for (size_t j = 0; j < n; ++j) {
      const uint16_t bits = internal::RoundExactValue(kDType<TY>, v[j]);
      std::memcpy(y + j, &bits, sizeof(bits));
    }
  }
}

// Calls f(l) for each lane l < count of `flags` (from VecFromMask) that is
// set: the rare lanes a vector test leaves to the scalar decisions.
template <class DF, class F>
HWY_NOINLINE void ForSetLanes(DF df, hn::Vec<DF> flags, size_t count,
                              const F& f) {
  HWY_ALIGN float lanes[kMaxFloatLanes];
  hn::Store(flags, df, lanes);
  for (size_t l = 0; l < count; ++l) {
    uint32_t set;
    std::memcpy(&set, &lanes[l], sizeof(set));
    if (set != 0) f(l);
  }
}

// A checked row's CrRow; its double statistics (StatsF64) are made when a
// lane first needs them, unless the row came with them.
template <bool kLayerNorm, typename TX>
class LazyCrRow {
 public:
  LazyCrRow(const internal::CrRow& row, bool has_stats)
      : row_(row), has_stats_(has_stats) {}
  const internal::CrRow& Get() {
    if (!has_stats_) {
      row_.st = StatsF64<kLayerNorm>(
          hn::ScalableTag<float>(), static_cast<const TX*>(row_.x), row_.n,
          internal::PlanStats(row_.kind, row_.n, row_.eps,
                              internal::DoubleSums(row_.n)));
      has_stats_ = true;
    }
    return row_;
  }
  // The relative error bound of the r the row's scale was rounded from (the
  // statistics it came with: read it before Get() makes the double ones).
  double ScaleError() const { return row_.st.er; }

 private:
  internal::CrRow row_;
  bool has_stats_;
};

// Decides the elements i + stride * l of the set lanes l of `flags`.
template <class DF, typename TY, typename TP, class CR>
HWY_INLINE void DecideLanes(DF df, hn::Vec<DF> flags, size_t i, size_t count,
                            TY* y, const Weights<TP>& w, CR& cr,
                            internal::CrCache& cache, size_t stride = 1) {
  ForSetLanes(df, flags, count, [&](size_t l) {
    DecideElement(w, cr.Get(), cache, i + stride * l, y);
  });
}

// The open lanes (not `clear`) of a checked vector in Hugging Face's
// order, elements i + stride * l. A lane whose t (xhat rounded to x's
// type) is known right (`t_clear`) has only y = t * g + b's rounding left:
// decided from t alone (internal::RoundProductSum), without the row's
// double statistics.
template <class DF, typename TY, typename TP, class CR>
HWY_INLINE void DecideHFLanes(DF df, hn::Mask<DF> clear, hn::Mask<DF> t_clear,
                              hn::Vec<DF> t, size_t i, size_t count, TY* y,
                              const Weights<TP>& w, CR& cr,
                              internal::CrCache& cache, size_t stride) {
  const auto products = hn::AndNot(clear, t_clear);
  if (!hn::AllFalse(df, products)) {
    HWY_ALIGN float tl[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(t, df, tl);
    ForSetLanes(df, hn::VecFromMask(df, products), count, [&](size_t l) {
      const size_t j = i + stride * l;
      float g, b;
      WeightsOfElement(w, j, g, b);
      const uint16_t bits = internal::RoundProductSum(kDType<TY>, tl[l], g, b);
      std::memcpy(y + j, &bits, sizeof(bits));
    });
  }
  DecideLanes(df, hn::VecFromMask(df, hn::Not(hn::Or(clear, t_clear))), i,
              count, y, w, cr, cache, stride);
}

// A row of 16-bit y, correctly rounded, one vector at a time (the rows the
// lean form below does not take). x is never y (NormRowsChecked copies a
// row normalized in place).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRowChecked(DF df, const TX* x, TY* y,
                                  const Weights<TP> w, size_t n,
                                  const RowScale& k, const RowBound& bound,
                                  LazyCrRow<kLayerNorm, TX>& cr) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  internal::CrCache cache;
  hn::Vec<DF> v;
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto clear = CheckedAt<kLayerNorm, At::kFull, DF, TX, TY>(
        df, x, w, i, 0, m, mul, add, alpha, beta, v);
    StoreF<kQuiet>(df, v, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
      DecideLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, N, y, w, cr,
                  cache);
    }
  }
  if (i < n) {
    const auto clear = CheckedAt<kLayerNorm, At::kTail, DF, TX, TY>(
        df, x, w, i, n - i, m, mul, add, alpha, beta, v);
    StoreTailF<kQuiet>(df, v, y + i, n - i);
    if (!hn::AllTrue(df, clear)) {
      DecideLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, n - i, y, w, cr,
                  cache);
    }
  }
}

// The bound of a checked row's results in a form that costs fewer
// operations per vector: |y - exact y| <= r|y| + ag|g| + ab|b| + f, from
// CheckedScale's |t - xhat| <= alpha|d| + beta and |d| mul <= (|t| +
// |add|)(1 + 2u) (t's rounding): |t - xhat| <= a1|t| + b1, then y = t g + b
// rounded once (twice without FMA) and |g t| <= |y| (1 + 2u) + |b|. The
// floor f = 2^-100 |g| + 2^-111 covers a subnormal t's rounding (2^-150 at
// most) and a subnormal y's, and keeps every |y| < 2^-100 out of
// RoundsClear's reach. It is needed only where t or y may be inexact: where
// d != 0, or everywhere when add != 0. LayerNorm rows with add == 0 take
// ApplyRowChecked; RMSNorm (add = 0) masks f with x != 0, so that x = 0
// gives an exact, unflagged +-0. The floors are normal floats: subnormal
// arithmetic takes microcode assists on x86 (it made rows 7x slower). r
// stays below 2^-13, so that RoundsClear's reach is left to the absolute
// terms; it has 2u more for the roundings of y -+ e (RoundsAlikeBF16).
struct YBound {
  float r, ag, ab;
};

inline constexpr float kTFloor = 0x1p-100f, kYFloor = 0x1p-111f;

inline bool YBoundOf(bool layernorm, const RowScale& k, const RowBound& bound,
                     YBound& yb) {
  if (layernorm && k.add == 0.0f) return false;
  constexpr double u = 0x1p-24;
  constexpr double kExtra = HWY_NATIVE_FMA ? 0.0 : u;  // t * g rounded
  const double per_d = static_cast<double>(bound.alpha) / k.mul;
  const double a1 = per_d * (1 + 3 * u);
  double b1 = bound.beta + per_d * std::fabs(k.add) * (1 + 3 * u);
  if (layernorm) {
    b1 += kTFloor;
  } else if (b1 != 0.0) {
    return false;  // RMSNorm's t = x * mul: no shift, no beta
  }
  const double r = (a1 + 3 * u + 2 * kExtra) * (1 + 3 * u) * 1.01;
  if (!(r <= 0x1p-13)) return false;
  yb = YBound{static_cast<float>(r), static_cast<float>(b1 * 1.01),
              static_cast<float>((a1 + kExtra) * 1.01)};
  return true;
}

// LayerNorm's weight terms ag|g| + ab|b| + kYFloor are the same in every
// row but for ag and ab, which barely move: ab is ~3.1u (t's relative
// error and y's roundings), ag ~2^-50 (the mean's error). So a call of more
// than one row makes them once (LeanTerms) with kLeanAg and kLeanAb, and
// every row whose ag and ab are within those takes them as its bound's
// terms (rounding is monotone: terms made so are at least the row's own).
// That saves 2 FMAs and 2 ANDs a vector of LeanChunk's loop, which issues
// ~3 vector operations a cycle on Zen 5 (docs/performance.md, session 33).
inline constexpr float kLeanAg = 0x1p-30f;
inline constexpr float kLeanAb = HWY_NATIVE_FMA ? 0x1.cp-23f : 0x1.ap-22f;

// The weight terms ag|g| + ab|b| + kYFloor of LayerNorm's lean bound, by
// the same fp32 operations wherever they are made (LeanTerms' table holds
// for a row because rounding is monotone in ag and ab).
template <class DF>
HWY_INLINE hn::Vec<DF> WeightTerms(DF df, hn::Vec<DF> ag, hn::Vec<DF> ab,
                                   hn::Vec<DF> g, hn::Vec<DF> b) {
  return hn::MulAdd(ag, hn::Abs(g),
                    hn::MulAdd(ab, hn::Abs(b), hn::Set(df, kYFloor)));
}

inline bool LeanTermsHold(const YBound& yb) {
  return yb.ag <= kLeanAg && yb.ab <= kLeanAb;
}

// MaxBits raises top to the bits of v's lanes as unsigned integers, and
// FiniteBits says whether all it saw were those of finite values: for v >=
// 0 or NaN (the bounds e), a NaN's bits, whatever its sign, lie above
// +inf's, and every finite v's below.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> MaxBits(
    DF df, hn::Vec<hn::RebindToUnsigned<DF>> top, hn::Vec<DF> v) {
  (void)df;
  return hn::Max(top, hn::BitCast(hn::RebindToUnsigned<DF>(), v));
}
template <class DU>
HWY_INLINE bool FiniteBits(DU du, hn::Vec<DU> top) {
  return hn::AllTrue(du, hn::Lt(top, hn::Set(du, 0x7F800000u)));
}

// The terms of elements [0, paired_end) of a row, 2N at a time as
// LeanBound2N reads them: vector a's at i, vector b's at i + N. Whether
// they are all finite, as they are exactly where gamma and beta are.
template <class DF, typename TX, typename TY, typename TP>
HWY_INLINE bool LeanTerms(DF df, const Weights<TP>& w, size_t paired_end,
                          float* HWY_RESTRICT terms) {
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  constexpr At kA = kPaired ? At::kPairA : At::kFull;
  constexpr At kB = kPaired ? At::kPairB : At::kFull;
  const hn::RebindToUnsigned<DF> du;
  const size_t N = hn::Lanes(df);
  const auto ag = hn::Set(df, kLeanAg), ab = hn::Set(df, kLeanAb);
  auto top = hn::Zero(du);
  for (size_t i = 0; i < paired_end; i += 2 * N) {
    hn::Vec<DF> g, b;
    WeightsAt<kA>(df, w, i, 0, g, b);
    const auto ta = WeightTerms(df, ag, ab, g, b);
    WeightsAt<kB>(df, w, kPaired ? i : i + N, 0, g, b);
    const auto tb = WeightTerms(df, ag, ab, g, b);
    hn::StoreU(ta, df, terms + i);
    hn::StoreU(tb, df, terms + i + N);
    top = MaxBits(df, MaxBits(df, top, ta), tb);
  }
  return FiniteBits(du, top);
}

// One vector of a checked row (without Hugging Face's rounding): its
// results y, and their bound e (YBound) as the return value. kTerms:
// LayerNorm's weight terms from w.lean_terms (LeanTerms' layout), with
// gamma and beta and no offset.
template <bool kLayerNorm, At kAt, bool kTerms = false, class DF, typename TX,
          typename TP>
HWY_INLINE hn::Vec<DF> LeanBoundAt(DF df, const TX* HWY_RESTRICT x,
                                   const Weights<TP>& w, size_t i, size_t count,
                                   hn::Vec<DF> m, hn::Vec<DF> mul,
                                   hn::Vec<DF> add, hn::Vec<DF> vr,
                                   hn::Vec<DF> vag, hn::Vec<DF> vab,
                                   hn::Vec<DF>& y) {
  hn::Vec<DF> g, b;
  if constexpr (kTerms) {  // gamma and beta, no offset: no tests
    g = LoadAt<kAt>(df, w.gamma + i, count);
    b = LoadAt<kAt>(df, w.beta + i, count);
  } else {
    WeightsAt<kAt>(df, w, i, count, g, b);
  }
  const auto xv = LoadAt<kAt>(df, x + i, count);
  hn::Vec<DF> t, weights;
  if constexpr (kLayerNorm && kTerms) {
    static_assert(kAt != At::kTail, "whole vectors only");
    (void)vag, (void)vab;
    t = hn::MulAdd(hn::Sub(xv, m), mul, add);
    weights = hn::LoadU(
        df, w.lean_terms + (kAt == At::kPairB ? i + hn::Lanes(df) : i));
  } else if constexpr (kLayerNorm) {
    t = hn::MulAdd(hn::Sub(xv, m), mul, add);
    weights = WeightTerms(df, vag, vab, g, b);
  } else {  // ag = 0: beta = add = 0
    (void)m;
    (void)add;
    (void)vag;
    t = hn::Mul(xv, mul);
    const auto floor = hn::IfThenElseZero(
        hn::Ne(xv, hn::Zero(df)),
        hn::MulAdd(hn::Set(df, kTFloor), hn::Abs(g), hn::Set(df, kYFloor)));
    weights = hn::MulAdd(vab, hn::Abs(b), floor);
  }
  y = GammaBeta(df, t, g, b);
  return hn::MulAdd(vr, hn::Abs(y), weights);
}

// The lanes of y (bound e, LeanBoundAt) that round as the exact values
// do; bf16 y comes back rounded (RoundsAlikeBF16).
template <At kAt, class DF, typename TY, typename TP>
HWY_INLINE hn::Mask<DF> LeanClear(DF df, hn::Vec<DF>& y, hn::Vec<DF> e,
                                  size_t count) {
  hn::Mask<DF> clear;
  if constexpr (std::is_same_v<TY, bf16_t>) {
    clear = RoundsAlikeBF16<kQuietNaNs<TP>>(df, y, e, y);
  } else {
    clear = RoundsClear<TY>(df, y, e);
  }
  if constexpr (kAt == At::kTail) {
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
  }
  return clear;
}

// One vector of a checked row (without Hugging Face's rounding): its
// results y and the lanes that round as the exact values do (YBound).
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE hn::Mask<DF> LeanCheckedAt(DF df, const TX* HWY_RESTRICT x,
                                      const Weights<TP>& w, size_t i,
                                      size_t count, hn::Vec<DF> m,
                                      hn::Vec<DF> mul, hn::Vec<DF> add,
                                      hn::Vec<DF> vr, hn::Vec<DF> vag,
                                      hn::Vec<DF> vab, hn::Vec<DF>& y) {
  const auto e = LeanBoundAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add,
                                              vr, vag, vab, y);
  return LeanClear<kAt, DF, TY, TP>(df, y, e, count);
}

// The 2N results of a checked row at i (as Results2N moves them: pairs
// where x, y and the weights pair alike, else two vectors in order) and
// their bounds (LeanBoundAt).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP,
          bool kTerms = false>
HWY_INLINE void LeanBound2N(DF df, const TX* HWY_RESTRICT x,
                            const Weights<TP>& w, size_t i, hn::Vec<DF> m,
                            hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> vr,
                            hn::Vec<DF> vag, hn::Vec<DF> vab, hn::Vec<DF>& va,
                            hn::Vec<DF>& vb, hn::Vec<DF>& ea, hn::Vec<DF>& eb) {
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  constexpr At kA = kPaired ? At::kPairA : At::kFull;
  constexpr At kB = kPaired ? At::kPairB : At::kFull;
  const size_t ib = kPaired ? i : i + hn::Lanes(df);
  ea = LeanBoundAt<kLayerNorm, kA, kTerms>(df, x, w, i, 0, m, mul, add, vr, vag,
                                           vab, va);
  eb = LeanBoundAt<kLayerNorm, kB, kTerms>(df, x, w, ib, 0, m, mul, add, vr,
                                           vag, vab, vb);
}

// The 2N results of a checked row at i (LeanBound2N), and the lanes of
// each vector that round as the exact values do.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void LeanChecked2N(DF df, const TX* HWY_RESTRICT x,
                              const Weights<TP>& w, size_t i, hn::Vec<DF> m,
                              hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> vr,
                              hn::Vec<DF> vag, hn::Vec<DF> vab, hn::Vec<DF>& va,
                              hn::Vec<DF>& vb, hn::Mask<DF>& ca,
                              hn::Mask<DF>& cb) {
  hn::Vec<DF> ea, eb;
  LeanBound2N<kLayerNorm, DF, TX, TY>(df, x, w, i, m, mul, add, vr, vag, vab,
                                      va, vb, ea, eb);
  ca = LeanClear<At::kFull, DF, TY, TP>(df, va, ea, 0);
  cb = LeanClear<At::kFull, DF, TY, TP>(df, vb, eb, 0);
}

// A row of 16-bit y, correctly rounded, without Hugging Face's rounding:
// chunks of kLeanChunk elements 2N at a time (pairs where x, y and the
// weights pair alike, as the fast kernels move them), the rare group
// with an open lane checked again with the decisions; then vectors and the
// tail. x is never y.
inline constexpr size_t kLeanChunk = 512;

// Calls f(i, end) for each chunk [i, end) of [0, paired_end).
template <class F>
HWY_INLINE void ForChunks(size_t paired_end, const F& f) {
  for (size_t i = 0; i < paired_end; i += kLeanChunk) {
    f(i, paired_end - i > kLeanChunk ? i + kLeanChunk : paired_end);
  }
}

// A chunk's open lanes are flagged by groups of FlagGroup elements, a bit
// each (the first in bit 0), so that only those groups are checked again
// (a chunk at a time, LayerNorm bf16 redid ~28 % of its elements).
inline constexpr size_t kMaxFlags = 64;
template <class DF>
HWY_INLINE size_t FlagGroup(DF df) {
  return HWY_MAX(2 * hn::Lanes(df), kLeanChunk / kMaxFlags);
}

// Calls f(g0, g1) for each group [g0, g1) of the chunk [i, end) flagged.
template <class F>
HWY_INLINE void ForFlaggedGroups(uint64_t flagged, size_t i, size_t end,
                                 size_t group, const F& f) {
  for (; flagged != 0; flagged &= flagged - 1) {
    const size_t g0 = i + hwy::Num0BitsBelowLS1Bit_Nonzero64(flagged) * group;
    f(g0, HWY_MIN(g0 + group, end));
  }
}

// The 2N bf16 results of LeanChecked2N at p.
template <class DF, typename TX, typename TY, typename TP>
HWY_INLINE void StoreChecked2N(DF df, hn::Vec<DF> va, hn::Vec<DF> vb,
                               TY* HWY_RESTRICT p) {
  const size_t N = hn::Lanes(df);
  if constexpr (std::is_same_v<TY, bf16_t>) {  // rounded (RoundsAlikeBF16)
    if constexpr (kPairs<TX, TY, TP>) {
      StoreRoundedPair(df, va, vb, p);
    } else {
      StoreRounded(df, va, p);
      StoreRounded(df, vb, p + N);
    }
  } else {
    Store2N<kPairs<TX, TY, TP>, kQuietNaNs<TP>>(df, va, vb, p, false);
  }
}

// Elements [i, end) of a checked row, 2N at a time (end - i a multiple of
// 2N, at most kLeanChunk): stores the results and returns the flags of the
// groups with a lane left open. Kept apart from the decisions, so that its
// loop makes no calls and keeps its constants in registers (with the calls
// in the same function, GCC 12 reloaded them from the stack: 1.8x the
// instructions).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE uint64_t LeanChunk(DF df, const TX* HWY_RESTRICT x,
                                TY* HWY_RESTRICT y, const Weights<TP> w,
                                const size_t begin, size_t end,
                                const RowScale& k, const YBound& yb) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto vr = hn::Set(df, yb.r), vag = hn::Set(df, yb.ag);
  const auto vab = hn::Set(df, yb.ab);
  uint64_t flagged = 0;
#if SIMDNORM_AVX512BF16 || SIMDNORM_HW_F16
  // 16-bit y (`hardware_ends`): both ends of each lane rounded
  // by the hardware (StoreIfAlike: VCVTNE2PS2BF16 for bf16, ~10 operations
  // per 2N fewer than two RoundsAlikeBF16 and the packing; VCVTPS2PH for
  // f16, where RoundsClear takes ~15 per vector). e >= kYFloor = 2^-111 on
  // every lane, except an uncentered kind's x = 0, whose y is an exact +-0
  // then (no beta) and e = 0 (-0's ends are -0 and +0: decided again). With
  // finite weights y is not NaN, and an inf y has a NaN end. So the weights
  // must be finite: LeanTerms' table is where they are (kTerms), and
  // without it the loop keeps the bounds' largest bits (MaxBits), which are
  // not finite in any lane whose weights are not (ag|g| and ab|b| are inf
  // or NaN there; an uncentered kind's x = 0 has y = 0 * g + b, NaN then):
  // then every group of the chunk goes to DecideChunk, which stores it again
  // as the software ends round it (a tie at a low end rounds to even here).
  if constexpr (kHardwareEnds<DF, TY>) {
    if (w.hardware_ends) {
      constexpr bool kPaired = kPairs<TX, TY, TP>;
      // Software-pipelined: the next 2N's results and bounds come before
      // this 2N's ends, conversions and compare in program order, so that
      // two 2N's chains (~40 cycles each: loads, t, y, e, ends,
      // VCVTNE2PS2BF16, compare) are in the out-of-order window at once:
      // 1.02x on bf16 LayerNorm at 64 x 896 (session 33).
      const auto loop = [&](auto terms) {
        constexpr bool kTerms = decltype(terms)::value;
        const hn::RebindToUnsigned<DF> du;
        auto top = hn::Zero(du);  // the bounds' largest bits (no table)
        hn::Vec<DF> va, vb, ea, eb;
        const auto bounds = [&](size_t i) {
          LeanBound2N<kLayerNorm, DF, TX, TY, TP, kTerms>(
              df, x, w, i, m, mul, add, vr, vag, vab, va, vb, ea, eb);
        };
        const auto store = [&](size_t i, hn::Vec<DF> a, hn::Vec<DF> b,
                               hn::Vec<DF> a_e, hn::Vec<DF> b_e) {
          if (HWY_UNLIKELY(!StoreIfAlike<kPaired>(df, a, a_e, b, b_e, y + i))) {
            flagged |= uint64_t{1} << ((i - begin) / FlagGroup(df));
          }
          if constexpr (!kTerms) top = MaxBits(df, MaxBits(df, top, a_e), b_e);
        };
        size_t i = begin;
        bounds(i);
        for (; i + 2 * N < end; i += 2 * N) {
          const auto a = va, b = vb, a_e = ea, b_e = eb;
          bounds(i + 2 * N);
          store(i, a, b, a_e, b_e);
        }
        store(i, va, vb, ea, eb);
        if (!kTerms && HWY_UNLIKELY(!FiniteBits(du, top))) {
          const size_t groups = (end - begin - 1) / FlagGroup(df) + 1;
          return groups == 64 ? ~uint64_t{0} : (uint64_t{1} << groups) - 1;
        }
        return flagged;
      };
      if constexpr (kLayerNorm) {
        if (w.lean_terms != nullptr && LeanTermsHold(yb) &&
            w.gamma != nullptr && w.beta != nullptr && !w.has_offset) {
          return loop(std::true_type());
        }
      }
      return loop(std::false_type());
    }
  }
#endif
  for (size_t i = begin; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb;
    hn::Mask<DF> ca, cb;
    LeanChecked2N<kLayerNorm, DF, TX, TY>(df, x, w, i, m, mul, add, vr, vag,
                                          vab, va, vb, ca, cb);
    StoreChecked2N<DF, TX, TY, TP>(df, va, vb, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, hn::And(ca, cb)))) {
      flagged |= uint64_t{1} << ((i - begin) / FlagGroup(df));
    }
  }
  return flagged;
}

// The open lanes of elements [i, end) of a checked row, decided.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void DecideChunk(DF df, const TX* x, TY* y, const Weights<TP>& w,
                              size_t i, size_t end, const RowScale& k,
                              const YBound& yb, LazyCrRow<kLayerNorm, TX>& cr,
                              internal::CrCache& cache) {
  // Where a pair is the even and the odd elements (convert-inl.h).
  constexpr bool kEvenOddPair = kPairs<TX, TY, TP> && kEvenOdd<TY>;
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto vr = hn::Set(df, yb.r), vag = hn::Set(df, yb.ag);
  const auto vab = hn::Set(df, yb.ab);
  for (; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb;
    hn::Mask<DF> ca, cb;
    LeanChecked2N<kLayerNorm, DF, TX, TY>(df, x, w, i, m, mul, add, vr, vag,
                                          vab, va, vb, ca, cb);
    StoreChecked2N<DF, TX, TY, TP>(df, va, vb, y + i);
    if (hn::AllTrue(df, hn::And(ca, cb))) continue;
    const size_t stride = kEvenOddPair ? 2 : 1;
    DecideLanes(df, hn::VecFromMask(df, hn::Not(ca)), i, N, y, w, cr, cache,
                stride);
    DecideLanes(df, hn::VecFromMask(df, hn::Not(cb)),
                kEvenOddPair ? i + 1 : i + N, N, y, w, cr, cache, stride);
  }
}

// ------------------------------------------ bf16 rows with tame weights
//
// The uncentered kinds (RMSNorm, L2) with bf16 x, y and gamma and neither
// beta nor an offset (Hugging Face's LlamaRMSNorm, Qwen2RMSNorm), and in
// the default order also with f32 x or gamma, or none (engines' f32 weights,
// F.normalize, where g = 1): v, the value to round (t = x * mul in Hugging
// Face's order, else y = t * g), has only a relative error, |v - exact v|
// <= r|v| wherever |v| >= 2^-60 (and |g| <= 2^60, so that t is far from
// underflow; f32 x and g round no differently), and r|v| is less than K
// units of v's last place for K >= r 2^24. The one midpoint of bf16
// within reach sits at 0x8000 in v's low 16 bits (the others, across a
// binade too, are 2^14 units or more away; K <= 2^12): a v whose low bits
// are more than K from it rounds, half up, to the correctly rounded value.
// That is tested on 2N lanes at once as 16-bit integers (an add and an
// unsigned compare, where the interval test takes ~20 operations per
// vector of N). In Hugging Face's order y = t * g is then exact in fp32
// (8 + 8 significant bits, |y| >= 2^-119 where |g| >= 2^-60 or g = 0) and
// its conversion is its one rounding. Lanes near a midpoint and v below
// 2^-59 flag their 2N elements, which the interval test and the
// decisions then redo: y = 0 too, but not a t that rounds to 0 (|t| <
// 2^-134, so the exact t, within 2^-150 + r|t| of it, is below 2^-134 as
// well, and its sign is x's).
inline constexpr uint16_t kTameV = 0x2200;    // bf16 2^-59
inline constexpr uint16_t kTameLow = 0x2180;  // bf16 2^-60
inline constexpr uint16_t kTameTop = 0x5D80;  // bf16 2^60

// Whether every |g| is 0 or in [2^-60, 2^60]; where so, the smallest
// nonzero |g| to *min_g (+inf where every g is 0).
template <class D16>
HWY_INLINE bool TameGamma(D16 d16, const bf16_t* gamma, size_t n,
                          float* min_g) {
  const uint16_t* g = reinterpret_cast<const uint16_t*>(gamma);
  const size_t N = hn::Lanes(d16);
  const auto abs = hn::Set(d16, 0x7FFF), one = hn::Set(d16, 1);
  // The largest |g| and the smallest |g| - 1 (0 wraps to 0xFFFF), in
  // vectors: a chain of mask ORs took ~20 ns at n = 896 (Zen 5).
  auto hi0 = hn::Zero(d16), hi1 = hi0, lo0 = hn::Set(d16, 0xFFFF), lo1 = lo0;
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto mag0 = hn::And(hn::LoadU(d16, g + i), abs);
    const auto mag1 = hn::And(hn::LoadU(d16, g + i + N), abs);
    hi0 = hn::Max(hi0, mag0);
    hi1 = hn::Max(hi1, mag1);
    lo0 = hn::Min(lo0, hn::Sub(mag0, one));
    lo1 = hn::Min(lo1, hn::Sub(mag1, one));
  }
  const auto hi = hn::Max(hi0, hi1), lo = hn::Min(lo0, lo1);
  if (!hn::AllFalse(d16, hn::Or(hn::Lt(lo, hn::Set(d16, kTameLow - 1)),
                                hn::Lt(hn::Set(d16, kTameTop), hi)))) {
    return false;
  }
  uint16_t least = hn::GetLane(hn::MinOfLanes(d16, lo));
  for (; i < n; ++i) {
    const uint16_t mag = g[i] & 0x7FFF;
    if (mag != 0 && (mag < kTameLow || mag > kTameTop)) return false;
    const uint16_t m = static_cast<uint16_t>(mag - 1);
    least = m < least ? m : least;
  }
  *min_g = SmallestMagnitude(least);
  return true;
}

#if HWY_TARGET != HWY_SCALAR
// f32 gamma for TameChunk: whether every |g| of gamma[0, n) is 0 or in
// [2^-60, 2^60] (as TameGamma; the smallest nonzero one to *min_g), and,
// where so, its first n / 2N * 2N
// values to `pairs` in the layout of bf16 pairs (convert-inl.h): of each
// 2N elements, the even ones, then the odd ones. A call's rows then load
// f32 gamma as they load bf16 x, without a shuffle per row.
template <class DF>
HWY_INLINE bool TameGammaPairs(DF df, const float* gamma, size_t n,
                               float* HWY_RESTRICT pairs, float* min_g) {
  const hn::RebindToUnsigned<DF> du;
  const size_t N = hn::Lanes(df);
  const uint32_t* g = reinterpret_cast<const uint32_t*>(gamma);
  constexpr uint32_t kLow = 0x21800000u, kTop = 0x5D800000u;  // 2^-60, 2^60
  const auto abs = hn::Set(du, 0x7FFFFFFFu), one = hn::Set(du, 1u);
  auto hi = hn::Zero(du), lo = hn::Set(du, 0xFFFFFFFFu);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto a = hn::LoadU(df, gamma + i), b = hn::LoadU(df, gamma + i + N);
    hn::StoreU(hn::ConcatEven(df, b, a), df, pairs + i);
    hn::StoreU(hn::ConcatOdd(df, b, a), df, pairs + i + N);
    const auto mag_a = hn::And(hn::BitCast(du, a), abs);
    const auto mag_b = hn::And(hn::BitCast(du, b), abs);
    hi = hn::Max(hi, hn::Max(mag_a, mag_b));
    lo = hn::Min(lo, hn::Min(hn::Sub(mag_a, one), hn::Sub(mag_b, one)));
  }
  if (!hn::AllFalse(du, hn::Or(hn::Lt(lo, hn::Set(du, kLow - 1)),
                               hn::Lt(hn::Set(du, kTop), hi)))) {
    return false;
  }
  uint32_t least = hn::GetLane(hn::MinOfLanes(du, lo));
  for (; i < n; ++i) {
    const uint32_t mag = g[i] & 0x7FFFFFFFu;
    if (mag != 0 && (mag < kLow || mag > kTop)) return false;
    least = mag - 1 < least ? mag - 1 : least;
  }
  *min_g = SmallestMagnitude(least);
  return true;
}
#endif

// K for v made from a scale rounded to fp32 from r (relative error er) and
// `roundings` fp32 products (v = x * mul, Hugging Face's t: 1; y = x * mul
// * g: 2), all normal where |v| >= 2^-59 (|t| >= 2^-119 then, as |g| <=
// 2^60): |v - exact v| <= ((1 + er)(1 + u)^(1 + roundings) - 1)|v|, which
// a margin of 2^-20 covers as rel = er + (1 + roundings) u (er taken 1%
// larger, as CheckedScale does, for its own second-order terms). False
// where the test does not apply (no bound, or K above 2^12).
inline bool TameUnitsOf(double er, int roundings, uint16_t& units) {
  const double rel = er * 1.01 + (1 + roundings) * 0x1p-24;
  const double ulps = std::ceil(rel * 0x1p24 * (1 + 0x1p-20));
  if (!(er >= 0.0 && ulps <= 4096.0)) return false;
  units = static_cast<uint16_t>(ulps);
  return true;
}

// TameChunk's gamma where it is f32 (TameGammaPairs' copy, already in the
// pairs' layout) or absent (g = 1: v = t, one rounding fewer than the
// test allows for).
struct NoGamma {};
inline constexpr NoGamma kNoGamma{};

// Elements [i, end) (end - i a multiple of 2N, at most 64 of them), stored;
// returns a bit per 2N elements (the first in bit 0) with a lane left open.
// kRoundT: Hugging Face's order (v = t; bf16 gamma only), else v = y.
// kTestTiny: also flag v below 2^-59; callers that know no nonzero t of
// the row is that small (TinyV false) leave it out, and in Hugging Face's
// order round t straight into place (fewer operations, the same bits).
// TG: gamma's type, bf16, float (pairs) or NoGamma. TX: x's, bf16 or
// float (split into the pairs' layout here: two shuffles per 2N).
#if HWY_TARGET != HWY_SCALAR
template <bool kRoundT, bool kTestTiny, class DF, typename TX, typename TG>
HWY_NOINLINE uint64_t TameChunk(DF df, const TX* HWY_RESTRICT x,
                                bf16_t* HWY_RESTRICT y,
                                const TG* HWY_RESTRICT gamma, size_t i,
                                size_t end, float mul, uint16_t units) {
  static_assert(
      !kRoundT || (std::is_same_v<TG, bf16_t> && std::is_same_v<TX, bf16_t>),
      "bf16 x and gamma only");
  const hn::RebindToUnsigned<DF> du;
  const hn::Repartition<uint16_t, DF> d16;
  const size_t N = hn::Lanes(df);
  const auto vmul = hn::Set(df, mul);
  const auto lo = hn::Set(du, 0xFFFFu), hi = hn::Set(du, 0xFFFF0000u);
  const auto half = hn::Set(du, 0x8000u);
  // (low - (0x8000 - K)) mod 2^16 <= 2K: the low bits within K of 0x8000.
  const auto shift = hn::Set(d16, static_cast<uint16_t>(units - 0x8000u));
  const auto width = hn::Set(d16, static_cast<uint16_t>(2 * units + 1));
  const auto abs = hn::Set(d16, 0x7FFF);
  // |v| below 2^-59: t but not 0 (mag - 1 wraps there), or y (0 too).
  const auto below = hn::Set(d16, kRoundT ? kTameV - 1 : kTameV);
  const auto bias = hn::Set(d16, kRoundT ? 1 : 0);
  uint64_t flagged = 0;
  for (uint64_t bit = 1; i < end; bit <<= 1, i += 2 * N) {
    hn::Vec<DF> va, vb, ga, gb;
    if constexpr (kRoundT) {  // one load each measured 2% slower aligned
      va = LoadPairA(df, x + i), vb = LoadPairB(df, x + i);
      ga = LoadPairA(df, gamma + i), gb = LoadPairB(df, gamma + i);
    } else {
      if constexpr (std::is_same_v<TX, float>) {
        const auto lo = hn::LoadU(df, x + i), hi = hn::LoadU(df, x + i + N);
        va = hn::ConcatEven(df, hi, lo), vb = hn::ConcatOdd(df, hi, lo);
      } else {
        LoadPair(df, x + i, va, vb);
      }
      if constexpr (std::is_same_v<TG, bf16_t>) {
        LoadPair(df, gamma + i, ga, gb);
      } else if constexpr (std::is_same_v<TG, float>) {
        ga = hn::LoadU(df, gamma + i), gb = hn::LoadU(df, gamma + i + N);
      }
    }
    va = hn::Mul(va, vmul);
    vb = hn::Mul(vb, vmul);
    if constexpr (!kRoundT && !std::is_same_v<TG, NoGamma>) {
      va = hn::Mul(va, ga);
      vb = hn::Mul(vb, gb);
    }
    const auto ua = hn::BitCast(du, va), ub = hn::BitCast(du, vb);
    // v's bits below bf16's, and v rounded half up, both packed as x is
    // (the even elements in the low halves).
    const auto low =
        hn::BitCast(d16, hn::Or(hn::And(ua, lo), hn::ShiftLeft<16>(ub)));
    if constexpr (kRoundT && !kTestTiny) {
      if (!hn::AllFalse(d16, hn::Lt(hn::Add(low, shift), width))) {
        flagged |= bit;
      }
      const auto ta = hn::And(hn::Add(ua, half), hi);  // t rounded half up
      const auto tb = hn::And(hn::Add(ub, half), hi);
      StorePairNormal(df, hn::Mul(hn::BitCast(df, ta), ga),
                      hn::Mul(hn::BitCast(df, tb), gb), y + i);
      continue;
    }
    const auto v16 = hn::Or(hn::ShiftRight<16>(hn::Add(ua, half)),
                            hn::And(hn::Add(ub, half), hi));
    auto open = hn::Lt(hn::Add(low, shift), width);
    if constexpr (kTestTiny) {
      const auto mag = hn::And(hn::BitCast(d16, v16), abs);
      open = hn::Or(open, hn::Lt(hn::Sub(mag, bias), below));
    } else {
      (void)abs, (void)bias, (void)below;
    }
    if (!hn::AllFalse(d16, open)) flagged |= bit;
    if constexpr (kRoundT) {
      const auto ya = hn::Mul(hn::BitCast(df, hn::ShiftLeft<16>(v16)), ga);
      const auto yb = hn::Mul(hn::BitCast(df, hn::And(v16, hi)), gb);
      StorePairNormal(df, ya, yb, y + i);
    } else {
      hn::StoreU(v16, du, reinterpret_cast<uint32_t*>(y + i));
    }
  }
  return flagged;
}
#endif

// Whether a nonzero v of the row may be below 2^-59 (true where the row's
// smallest nonzero |x| is not known): Hugging Face's t = x * mul (one
// rounding, min_g 1), or the default order's v = x * mul * g (two; min_g
// the smallest nonzero |g| of a tame gamma). Each rounding is within
// 2^-24 |v|, and 2^-59 is a bf16 value, so rounding keeps v above it;
// where false, the other v (of x = 0 or g = 0) are an exact +-0 with the
// exact y's sign, so TameChunk needs no test of tiny v (4 of its ~27
// operations a 2N).
inline bool TinyV(const RowScale& k, int roundings, float min_g = 1.0f) {
  const double margin = 1 - roundings * 0x1p-23;
  return !(static_cast<double>(k.min_x) * k.mul * min_g * margin >= 0x1p-59);
}

// Runs TameChunk on the chunks of [0, paired_end) where the call and the
// row allow it (returns false where not), and redo(i, end) on its groups
// with an open lane.
template <bool kLayerNorm, bool kRoundT, class DF, typename TX, typename TY,
          typename TP, class F>
HWY_INLINE bool TameChunks(DF df, const TX* x, TY* y, const Weights<TP>& w,
                           size_t paired_end, float mul, bool row_tame,
                           uint16_t units, bool test_tiny, const F& redo) {
#if HWY_TARGET != HWY_SCALAR
  constexpr bool kTameX =
      kRoundT ? std::is_same_v<TX, bf16_t>
              : std::is_same_v<TX, bf16_t> || std::is_same_v<TX, float>;
  if constexpr (!kLayerNorm && kTameX && std::is_same_v<TY, bf16_t>) {
    if (!w.tame_gamma || !row_tame) return false;
    const size_t group = 2 * hn::Lanes(df);
    static_assert(kLeanChunk / 8 <= 64, "a bit per 2N elements, N >= 4");
    const auto chunks = [&](auto gamma) {
      ForChunks(paired_end, [&](size_t i, size_t end) {
        const uint64_t open =
            test_tiny
                ? TameChunk<kRoundT, true>(df, x, y, gamma, i, end, mul, units)
                : TameChunk<kRoundT, false>(df, x, y, gamma, i, end, mul,
                                            units);
        ForFlaggedGroups(open, i, end, group, redo);
      });
    };
    if constexpr (std::is_same_v<TP, bf16_t>) {
      if (w.gamma != nullptr) return chunks(w.gamma), true;
    }
    if constexpr (!kRoundT) {  // tame_gamma: f32 pairs or no gamma
      if (w.gamma_pairs != nullptr) return chunks(w.gamma_pairs), true;
      if (w.gamma == nullptr) return chunks(&kNoGamma), true;
    }
    return false;
  }
#endif
  (void)df, (void)x, (void)y, (void)w, (void)paired_end, (void)mul;
  (void)row_tame, (void)units, (void)test_tiny, (void)redo;
  return false;
}

template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRowLeanChecked(DF df, const TX* x, TY* y,
                                      const Weights<TP> w, size_t n,
                                      const RowScale& k, const YBound& yb,
                                      LazyCrRow<kLayerNorm, TX>& cr) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  const size_t N = hn::Lanes(df);
  internal::CrCache cache;
  const size_t paired_end = n / (2 * N) * (2 * N);
  const auto redo = [&](size_t i, size_t end) {
    ForFlaggedGroups(LeanChunk<kLayerNorm>(df, x, y, w, i, end, k, yb), i, end,
                     FlagGroup(df), [&](size_t g0, size_t g1) {
                       DecideChunk<kLayerNorm>(df, x, y, w, g0, g1, k, yb, cr,
                                               cache);
                     });
  };
  // y's bound is r|y| + f, f for subnormal t and y only (YBoundOf).
  uint16_t units = 0;
  const bool row_tame = !kLayerNorm && TameUnitsOf(cr.ScaleError(), 2, units);
  if (!TameChunks<kLayerNorm, false>(df, x, y, w, paired_end, k.mul, row_tame,
                                     units, TinyV(k, 2, w.tame_min_g), redo)) {
    ForChunks(paired_end, redo);
  }
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto vr = hn::Set(df, yb.r), vag = hn::Set(df, yb.ag);
  const auto vab = hn::Set(df, yb.ab);
  hn::Vec<DF> v;
  size_t i = paired_end;
  for (; i + N <= n; i += N) {
    const auto clear = LeanCheckedAt<kLayerNorm, At::kFull, DF, TX, TY>(
        df, x, w, i, 0, m, mul, add, vr, vag, vab, v);
    StoreF<kQuiet>(df, v, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
      DecideLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, N, y, w, cr,
                  cache);
    }
  }
  if (i < n) {
    const auto clear = LeanCheckedAt<kLayerNorm, At::kTail, DF, TX, TY>(
        df, x, w, i, n - i, m, mul, add, vr, vag, vab, v);
    StoreTailF<kQuiet>(df, v, y + i, n - i);
    if (!hn::AllTrue(df, clear)) {
      DecideLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, n - i, y, w, cr,
                  cache);
    }
  }
}

// The 2N results of a checked row at i in Hugging Face's order (as
// Results2N moves them): for each vector (a, then b) its results, the lanes
// that round as the exact values do, t and t_clear (HFCheckedAt). Separate
// variables, not arrays: SVE's vectors and masks are sizeless.
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE void HFChecked2N(DF df, const TX* HWY_RESTRICT x,
                            const Weights<TP>& w, size_t i, hn::Vec<DF> m,
                            hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> alpha,
                            hn::Vec<DF> beta, hn::Vec<DF>& va, hn::Vec<DF>& vb,
                            hn::Vec<DF>& ta, hn::Vec<DF>& tb, hn::Mask<DF>& ca,
                            hn::Mask<DF>& cb, hn::Mask<DF>& tca,
                            hn::Mask<DF>& tcb) {
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  constexpr At kA = kPaired ? At::kPairA : At::kFull;
  constexpr At kB = kPaired ? At::kPairB : At::kFull;
  const size_t ib = kPaired ? i : i + hn::Lanes(df);
  ca = HFCheckedAt<kLayerNorm, kExactY, kA, DF, TX, TY>(
      df, x, w, i, 0, m, mul, add, alpha, beta, va, ta, tca);
  cb = HFCheckedAt<kLayerNorm, kExactY, kB, DF, TX, TY>(
      df, x, w, ib, 0, m, mul, add, alpha, beta, vb, tb, tcb);
}

// Elements [i, end) of a checked row in Hugging Face's order, 2N at a time:
// stores the results and returns the flags of the groups with a lane left
// open (as LeanChunk, and kept apart from the decisions for the same
// reason).
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE uint64_t HFChunk(DF df, const TX* HWY_RESTRICT x,
                              TY* HWY_RESTRICT y, const Weights<TP> w,
                              const size_t begin, size_t end, const RowScale& k,
                              const RowBound& bound) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  uint64_t flagged = 0;
  for (size_t i = begin; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb, ta, tb;
    hn::Mask<DF> ca, cb, tca, tcb;
    HFChecked2N<kLayerNorm, kExactY, DF, TX, TY>(df, x, w, i, m, mul, add,
                                                 alpha, beta, va, vb, ta, tb,
                                                 ca, cb, tca, tcb);
    Store2N<kPairs<TX, TY, TP>, kQuietNaNs<TP>>(df, va, vb, y + i, false);
    if (HWY_UNLIKELY(!hn::AllTrue(df, hn::And(ca, cb)))) {
      flagged |= uint64_t{1} << ((i - begin) / FlagGroup(df));
    }
  }
  return flagged;
}

// The open lanes of elements [i, end) of a checked row in Hugging Face's
// order, decided.
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE void HFDecideChunk(DF df, const TX* x, TY* y, const Weights<TP>& w,
                                size_t i, size_t end, const RowScale& k,
                                const RowBound& bound,
                                LazyCrRow<kLayerNorm, TX>& cr,
                                internal::CrCache& cache) {
  constexpr bool kEvenOddPair = kPairs<TX, TY, TP> && kEvenOdd<TY>;
  const size_t N = hn::Lanes(df);
  const size_t stride = kEvenOddPair ? 2 : 1;
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  for (; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb, ta, tb;
    hn::Mask<DF> ca, cb, tca, tcb;
    HFChecked2N<kLayerNorm, kExactY, DF, TX, TY>(df, x, w, i, m, mul, add,
                                                 alpha, beta, va, vb, ta, tb,
                                                 ca, cb, tca, tcb);
    if (hn::AllTrue(df, hn::And(ca, cb))) continue;
    DecideHFLanes(df, ca, tca, ta, i, N, y, w, cr, cache, stride);
    DecideHFLanes(df, cb, tcb, tb, kEvenOddPair ? i + 1 : i + N, N, y, w, cr,
                  cache, stride);
  }
}

// t's bound with room for the roundings of t -+ et (RoundsAlikeBF16):
// 2u|t| <= 2u(1 + u)(|d| mul + |add|), rounded up to fp32.
inline RowBound WithEnds(const RowScale& k, const RowBound& bound) {
  constexpr double c = 2 * 0x1p-24 * (1 + 0x1p-23);
  const auto up = [](double v) {
    return static_cast<float>(v * (1 + 0x1p-20));
  };
  return RowBound{up(bound.alpha + c * k.mul),
                  up(bound.beta + c * std::fabs(k.add))};
}

// A row of 16-bit y, correctly rounded, in Hugging Face's order: chunks as
// in ApplyRowLeanChecked, then vectors and the tail. x is never y.
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE void ApplyRowHFChecked(DF df, const TX* x, TY* y,
                                    const Weights<TP> w, size_t n,
                                    const RowScale& k,
                                    const RowBound& row_bound,
                                    LazyCrRow<kLayerNorm, TX>& cr) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  RowBound bound = row_bound;
  if constexpr (std::is_same_v<TX, bf16_t>) bound = WithEnds(k, bound);
  const size_t N = hn::Lanes(df);
  internal::CrCache cache;
  const size_t paired_end = n / (2 * N) * (2 * N);
  const auto redo = [&](size_t i, size_t end) {
    ForFlaggedGroups(
        HFChunk<kLayerNorm, kExactY>(df, x, y, w, i, end, k, bound), i, end,
        FlagGroup(df), [&](size_t g0, size_t g1) {
          HFDecideChunk<kLayerNorm, kExactY>(df, x, y, w, g0, g1, k, bound, cr,
                                             cache);
        });
  };
  uint16_t units = 0;
  const bool row_tame = kExactY && TameUnitsOf(cr.ScaleError(), 1, units);
  if (!TameChunks<kLayerNorm, true>(df, x, y, w, paired_end, k.mul, row_tame,
                                    units, TinyV(k, 1), redo)) {
    ForChunks(paired_end, redo);
  }
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  hn::Vec<DF> v, t;
  hn::Mask<DF> t_clear;
  for (size_t i = paired_end; i < n; i += N) {
    const size_t count = n - i < N ? n - i : N;
    hn::Mask<DF> clear;
    if (count == N) {
      clear = HFCheckedAt<kLayerNorm, kExactY, At::kFull, DF, TX, TY>(
          df, x, w, i, 0, m, mul, add, alpha, beta, v, t, t_clear);
      StoreF<kQuiet>(df, v, y + i);
    } else {
      clear = HFCheckedAt<kLayerNorm, kExactY, At::kTail, DF, TX, TY>(
          df, x, w, i, count, m, mul, add, alpha, beta, v, t, t_clear);
      StoreTailF<kQuiet>(df, v, y + i, count);
    }
    if (!hn::AllTrue(df, clear)) {
      DecideHFLanes(df, clear, t_clear, t, i, count, y, w, cr, cache, 1);
    }
  }
}

// A checked row of 16-bit y: Hugging Face's order (ApplyRowHFChecked), the
// lean form where its bound allows, else ApplyRowChecked: a loose bound, or
// a row of zero variance, whose results are exactly y = add * g + b (or are
// decided exactly): ApplyRowChecked's bound is 0 there and the lean one's
// floor would flag every lane.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void ApplyCheckedAny(DF df, const TX* x, TY* y, const Weights<TP>& w,
                                size_t n, const RowScale& k,
                                const RowBound& bound, double variance,
                                LazyCrRow<kLayerNorm, TX>& cr) {
  YBound yb;
  if constexpr (!std::is_same_v<TX, float>) {
    if (w.round) {
      if (ExactProducts(w)) {
        ApplyRowHFChecked<kLayerNorm, true>(df, x, y, w, n, k, bound, cr);
      } else {
        ApplyRowHFChecked<kLayerNorm, false>(df, x, y, w, n, k, bound, cr);
      }
      return;
    }
  }
  if (variance > 0.0 && YBoundOf(kLayerNorm, k, bound, yb)) {
    ApplyRowLeanChecked<kLayerNorm>(df, x, y, w, n, k, yb, cr);
  } else {
    ApplyRowChecked<kLayerNorm>(df, x, y, w, n, k, bound, cr);
  }
}

// q = y * inv is within e * inv + 2u|q| of y_exact / scale (inv's and the
// product's roundings): clear when no half-integer is that close.
template <class DF>
HWY_INLINE hn::Mask<DF> QuantClear(DF df, hn::Vec<DF> e, hn::Vec<DF> q,
                                   hn::Vec<DF> inv) {
  const auto eq = hn::MulAdd(hn::Mul(e, inv), hn::Set(df, 1.0f + 0x1p-20f),
                             hn::Mul(hn::Set(df, 3 * 0x1p-24f), hn::Abs(q)));
  const auto dist = hn::Abs(hn::Sub(q, hn::Round(q)));
  return hn::Lt(hn::Add(dist, eq), hn::Set(df, 0.5f));
}

// The lanes of `flags` (of the `count` elements at `at`) decided exactly.
template <class DF>
HWY_INLINE void DecideQuantLanes(DF df, hn::Vec<DF> flags, size_t at,
                                 size_t count, int8_t* y,
                                 const internal::CrRow& cr,
                                 const internal::CrWeights& crw, float scale,
                                 internal::CrCache& cache) {
  ForSetLanes(df, flags, count, [&](size_t l) {
    y[at + l] = internal::CorrectlyRoundedQ(cr, at + l, crw.G(at + l),
                                            crw.B(at + l), scale, cache);
  });
}

// int8 output of a checked row, group by group, from the exact y: bounds
// of max|y| from the fp32 results and their bounds; when they give one fp32
// scale = fl32(max|y| / 127), q = round-half-even(y / scale) by vectors,
// the lanes within their bound of a half-integer decided again. Groups whose
// scale the bounds leave open (ties for the maximum, a scale next to a
// rounding boundary, tiny or non-finite values) are decided by
// internal::CorrectlyRoundedInt8.
template <bool kLayerNorm, class DF, typename TX, typename TP>
HWY_NOINLINE void ApplyRowQuantChecked(DF df, const TX* x, int8_t* y,
                                       float* scales, size_t group,
                                       const Weights<TP> w, size_t n,
                                       const RowScale& k, const RowBound& bound,
                                       const internal::CrRow& cr,
                                       const internal::CrWeights& crw) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  internal::CrCache cache;
  hn::Vec<DF> v;
  for (size_t g0 = 0; g0 < n; g0 += group) {
    const size_t g1 = n - g0 > group ? g0 + group : n;
    float* scale = scales++;
    // Bounds of max|y|: max(|y| + e) and max(|y| - e).
    auto upper = hn::Zero(df), lower = hn::Zero(df);
    const auto inf = hn::Set(df, HUGE_VALF);
    bool finite = true;  // inf or NaN y (weights): the scalar group path
    size_t i = g0;
    for (; i + N <= g1; i += N) {
      const auto e = ResultBoundAt<kLayerNorm, At::kFull>(
          df, x, w, i, 0, m, mul, add, alpha, beta, v);
      const auto top = hn::Add(hn::Abs(v), e);
      finite = finite && hn::AllTrue(df, hn::Lt(top, inf));
      upper = hn::Max(upper, top);
      lower = hn::Max(lower, hn::Sub(hn::Abs(v), e));
    }
    if (i < g1) {
      const auto e = ResultBoundAt<kLayerNorm, At::kTail>(
          df, x, w, i, g1 - i, m, mul, add, alpha, beta, v);
      const auto valid = hn::FirstN(df, g1 - i);
      const auto top = hn::IfThenElseZero(valid, hn::Add(hn::Abs(v), e));
      finite = finite && hn::AllTrue(df, hn::Lt(top, inf));
      upper = hn::Max(upper, top);
      lower = hn::Max(lower, hn::IfThenElseZero(valid, hn::Sub(hn::Abs(v), e)));
    }
    if (!finite) {
      internal::CorrectlyRoundedInt8(cr, crw, g0, g1, y + g0, scale, cache);
      continue;
    }
    const float hi = hn::GetLane(hn::MaxOfLanes(df, upper));
    // Room for the fp32 subtractions (each rounded once).
    const float lo = hn::GetLane(hn::MaxOfLanes(df, lower)) * (1 - 0x1p-22f);
    if (hi == 0.0f) {  // every y and its bound 0: exact zeros
      *scale = 0.0f;
      std::memset(y + g0, 0, g1 - g0);
      continue;
    }
    // The largest |y| is one of the lanes with |y| + e >= lo (usually one):
    // their y in double bound it within ~1e-15, which settles fl32(max|y| /
    // 127) unless it is that close to a rounding boundary.
    double m_lo = 0.0, m_hi = 0.0;
    bool bounded = lo > 0.0f && hi < HUGE_VALF;
    for (i = g0; bounded && i < g1; i += N) {
      const size_t count = g1 - i < N ? g1 - i : N;
      hn::Vec<DF> e;
      if (count == N) {
        e = ResultBoundAt<kLayerNorm, At::kFull>(df, x, w, i, 0, m, mul, add,
                                                 alpha, beta, v);
      } else {
        e = ResultBoundAt<kLayerNorm, At::kTail>(df, x, w, i, count, m, mul,
                                                 add, alpha, beta, v);
      }
      const auto cand = hn::Ge(hn::Add(hn::Abs(v), e), hn::Set(df, lo));
      if (HWY_LIKELY(hn::AllFalse(df, cand))) continue;
      ForSetLanes(df, hn::VecFromMask(df, cand), count, [&](size_t l) {
        double yd = 0.0, ed = 0.0;
        bounded =
            bounded && internal::YWithBound(cr, i + l, crw.G(i + l),
                                            crw.B(i + l), cache, &yd, &ed);
        m_lo = std::max(m_lo, std::fabs(yd) - ed);
        m_hi = std::max(m_hi, std::fabs(yd) + ed);
      });
    }
    // Room for the division's rounding.
    const double s_lo = m_lo / 127 * (1 - 0x1p-50);
    const double s_hi = m_hi / 127 * (1 + 0x1p-50);
    const float sc = static_cast<float>(s_lo);
    if (!(bounded && m_lo > 0.0 && sc == static_cast<float>(s_hi) &&
          sc >= 0x1p-100f && sc <= 0x1p100f)) {
      internal::CorrectlyRoundedInt8(cr, crw, g0, g1, y + g0, scale, cache);
      continue;
    }
    *scale = sc;
    const auto vinv = hn::Set(df, static_cast<float>(1.0 / sc));
    for (i = g0; i + N <= g1; i += N) {
      const auto e = ResultBoundAt<kLayerNorm, At::kFull>(
          df, x, w, i, 0, m, mul, add, alpha, beta, v);
      const auto q = hn::Mul(v, vinv);
      const auto clear = QuantClear(df, e, q, vinv);
      StoreF(df, q, y + i);
      if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
        DecideQuantLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, N, y, cr,
                         crw, sc, cache);
      }
    }
    if (i < g1) {
      const auto e = ResultBoundAt<kLayerNorm, At::kTail>(
          df, x, w, i, g1 - i, m, mul, add, alpha, beta, v);
      const auto q = hn::Mul(v, vinv);
      const auto clear = QuantClear(df, e, q, vinv);
      StoreTailF(df, q, y + i, g1 - i);
      DecideQuantLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, g1 - i, y,
                       cr, crw, sc, cache);
    }
  }
}

// Rows of bf16 or f16 y, correctly rounded, one at a time. scratch holds
// a row: h = x + residual when there is no sum_out, or a copy of a row
// that y overwrites (in place).
template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowsChecked(const internal::RowArgs& a, size_t row_begin,
                                  size_t row_end) {
  constexpr bool kLayerNorm = kKind == 0;
  const hn::ScalableTag<float> df;
  const size_t n = a.cols;
  Weights<TP> w = WeightsOf<TP>(a);
  // TameChunk's gamma: bf16; in the default order also f32 (a copy in the
  // pairs' layout: on the stack up to kPairsRoom, then in scratch) and none.
  constexpr bool kTameRows =
      !kLayerNorm && std::is_same_v<TY, bf16_t> &&
      (std::is_same_v<TX, bf16_t> || std::is_same_v<TX, float>);
  constexpr bool kF32Pairs =
      kTameRows && std::is_same_v<TP, float> && HWY_TARGET != HWY_SCALAR;
  constexpr size_t kPairsRoom = 4096;
  HWY_ALIGN float stack_pairs[kF32Pairs ? kPairsRoom : 1];
  std::optional<internal::Scratch> memory;  // longer rows: no heap a call
  (void)stack_pairs;
  if constexpr (kTameRows) {
    const bool plain = w.beta == nullptr && !w.has_offset;
    if constexpr (std::is_same_v<TP, bf16_t>) {
      if (w.gamma != nullptr && plain) {
        w.tame_gamma =
            TameGamma(hn::ScalableTag<uint16_t>(), w.gamma, n, &w.tame_min_g);
      }
    }
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kF32Pairs) {
      // With f32 x the copy (~15 ns at 896) pays from a call's second row.
      const bool rows_pay =
          std::is_same_v<TX, bf16_t> || row_end - row_begin > 1;
      if (w.gamma != nullptr && plain && !w.round && rows_pay) {
        float* pairs = stack_pairs;
        if (n > kPairsRoom) {
          pairs = memory.emplace().TakeUninitialized<float>(n);
        }
        if (TameGammaPairs(df, w.gamma, n, pairs, &w.tame_min_g)) {
          w.tame_gamma = true;
          w.gamma_pairs = pairs;
        }
      }
    }
#endif
    if (w.gamma == nullptr && plain && !w.round) {
      w.tame_gamma = true;
      w.tame_min_g = 1.0f;
    }
  }
  // Weights that let LeanChunk round both ends by hardware. bf16: the
  // uncentered kinds without beta only (with beta, x = 0 has y = beta, and
  // a subnormal beta's ends would flush to zero and agree); f16 converts
  // subnormals exactly. Weights that are not finite are not scanned for
  // (two passes over gamma and beta: ~13 % of a one-row call at 896):
  // LeanTerms' table is finite only where they are, and LeanChunk's loop
  // without it sends a chunk whose bounds are not to the decisions.
  if constexpr (kHardwareEnds<decltype(df), TY>) {
    constexpr bool kAnyBeta = kLayerNorm || std::is_same_v<TY, f16_t>;
    w.hardware_ends = !w.has_offset && (kAnyBeta || w.beta == nullptr);
  }
  // LayerNorm's lean weight terms where both ends round by hardware
  // (LeanTerms), in scratch (not this frame's stack: one-row calls, which
  // do not make them, need no more stack than before).
  if constexpr (kLayerNorm && kHardwareEnds<decltype(df), TY>) {
    if (w.hardware_ends && !w.round && row_end - row_begin > 1) {
      const size_t paired_end = n / (2 * hn::Lanes(df)) * (2 * hn::Lanes(df));
      float* terms = memory.emplace().TakeUninitialized<float>(paired_end);
      if (LeanTerms<decltype(df), TX, TY>(df, w, paired_end, terms)) {
        w.lean_terms = terms;
      }
    }
  }
  constexpr size_t kRowRoom = kCheckedScratchBytes / sizeof(TX);
  HWY_ALIGN TX stack_scratch[kRowRoom];
  std::unique_ptr<TX[]> heap_scratch;
  const auto scratch = [&]() -> TX* {  // allocates only for long rows
    if (n <= kRowRoom) return stack_scratch;
    if (!heap_scratch) heap_scratch.reset(new TX[n]);
    return heap_scratch.get();
  };
  // Tame weights: the rows' smallest nonzero |x| (bf16 x) lets TameChunk
  // leave out its test of tiny t or v (TinyV).
  const bool want_min = w.tame_gamma;
  // Rows whose first statistics are fp32 (UncenteredStatsF32).
  constexpr bool kStatsF32 =
      !std::is_same_v<TY, int8_t> && !kLayerNorm && !std::is_same_v<TY, f16_t>;
  // What the statistics of every row share (StatsPlan): of the first ones
  // (UncenteredStatsF32's fp32 sums where kStatsF32, else StatsF64's
  // double sums), and of StatsF64 where kStatsF32 rows fall back to it,
  // made on first need (a plan is ~2 % of a one-row call).
  const internal::StatsPlan first_plan =
      internal::PlanStats(a.kind, n, a.eps,
                          kStatsF32 ? internal::Fp32Sums(n, kSumsF32Depth<TX>)
                                    : internal::DoubleSums(n));
  internal::StatsPlan fallback_plan;
  bool has_fallback_plan = false;
  const auto f64_plan = [&]() -> const internal::StatsPlan& {
    if (!kStatsF32) return first_plan;
    if (!has_fallback_plan) {
      fallback_plan =
          internal::PlanStats(a.kind, n, a.eps, internal::DoubleSums(n));
      has_fallback_plan = true;
    }
    return fallback_plan;
  };
  const auto x_of = [&](size_t r) {
    return static_cast<const TX*>(a.x) + r * a.x_stride;
  };
  // The statistics of a block of rows are made before any of them is
  // written: the fp32 ones of the rows that take them first (kStatsF32),
  // else the double ones; their sums row by row, then the chains that end
  // them in vector operations, a row a double lane (StatsOfLanes: 1.10x on
  // bf16 LayerNorm at 64 x 896, 1.3x at 448 x 128, where the chain made a
  // row at a time, even a row ahead, cost ~30 ns a row). Up to kLaneRows
  // rows of kStatsBlockBytes or less, which the writing then reads from
  // L1. Only without a residual, where rows read x as it is (no row of y
  // but an exact alias overlaps x).
  internal::RowStats block_stats[kLaneRows];
  float block_min_x[kLaneRows] = {};
  HWY_ALIGN double block_k[kLaneRoom] = {}, block_s[kLaneRoom] = {},
                   block_q[kLaneRoom] = {};
  const size_t stats_rows =
      a.residual != nullptr
          ? 0
          : HWY_MAX(size_t{1},
                    HWY_MIN(kLaneRows, kStatsBlockBytes / (n * sizeof(TX))));
  size_t block_begin = row_begin, block_end = row_begin;
  for (size_t r = row_begin; r < row_end; ++r) {
    const TX* x = x_of(r);
    const bool has_block = stats_rows != 0;
    if (has_block && r == block_end) {
      block_begin = r;
      block_end = HWY_MIN(row_end, r + stats_rows);
      const internal::StatsPlan& plan = first_plan;
      // (One row: the scalar chain, whose latency is shorter.)
      const bool lanes =
          block_end - r > 1 && plan.scale_form != internal::ScaleForm::kOther;
      for (size_t b = 0; b < block_end - r; ++b) {
        const TX* xb = x_of(r + b);
        if constexpr (kStatsF32) {
          block_q[b] = SquaresF32(df, xb, n, want_min, &block_min_x[b]);
        } else {
          block_k[b] =
              FirstSumsF64<kLayerNorm>(df, xb, n, block_s[b], block_q[b]);
        }
        if (!lanes) {
          block_stats[b] =
              internal::StatsFromSums(plan, block_k[b], block_s[b], block_q[b]);
        }
      }
      if (lanes) {
        StatsOfLanes(plan, block_k, block_s, block_q, block_end - r,
                     block_stats);
      }
      if constexpr (kLayerNorm) {
        for (size_t b = 0; b < block_end - r; ++b) {
          RecenterF64<kLayerNorm>(df, x_of(r + b), n, first_plan,
                                  block_stats[b]);
        }
      }
    }
    TY* y = static_cast<TY*>(a.y) + r * a.y_stride;
    TX* sum = a.sum_out ? static_cast<TX*>(a.sum_out) + r * a.sum_out_stride
                        : nullptr;
    const TX* h = x;
    if (a.residual != nullptr) {
      TX* made = sum ? sum : scratch();
      ReduceRow<false, false, false, Shift::kNone, true>(
          df, x, n, 1.0f, 0.0f,
          static_cast<const TX*>(a.residual) + r * a.residual_stride, made);
      h = made;
    } else if (sum != nullptr && sum != x) {
      std::memcpy(sum, x, n * sizeof(TX));
    }
    const uintptr_t hb = reinterpret_cast<uintptr_t>(h);
    const uintptr_t yb = reinterpret_cast<uintptr_t>(y);
    const bool h_in_scratch = a.residual != nullptr && sum == nullptr;
    if (!h_in_scratch && hb < yb + n * sizeof(TY) && yb < hb + n * sizeof(TX)) {
      h = static_cast<TX*>(std::memcpy(scratch(), h, n * sizeof(TX)));
    }
    constexpr bool kQuant = std::is_same_v<TY, int8_t>;
    float* scales = kQuant ? a.y_scale + r * a.scales_per_row : nullptr;
    RowScale k;
    RowBound bound;
    // Uncentered kinds with bf16 y: first the fp32 statistics
    // (UncenteredStatsF32), enough for most rows. LayerNorm's are not: fp32
    // sums bound the mean only within ~10u of the deviations' size, and that
    // flags lanes near y = 0 in nearly every row (bench rows: 97% of them
    // needed StatsF64). Nor are they for f16 y, whose cells are 8x narrower:
    // the fp32 sums' bound (y within ~11u) leaves ~1.8 lanes open per row
    // of N(0,1) at 896 (estimated from the bound), so ~84% of the rows made
    // StatsF64 as well.
    // (CheckedScale refuses stats that are not finite or have no bound.)
    const auto row_of = [&](const internal::RowStats& st) {
      return internal::CrRow{a.kind,     h, kDType<TX>, kDType<TX>, w.round,
                             kDType<TY>, n, a.eps,      st};
    };
    if constexpr (kStatsF32) {
      float min_x = has_block ? block_min_x[r - block_begin] : 0.0f;
      const internal::RowStats st =
          has_block
              ? block_stats[r - block_begin]
              : UncenteredStatsF32(df, h, n, first_plan, want_min, &min_x);
      if (CheckedScale(kLayerNorm, st, k, bound)) {
        k.min_x = min_x;
        SaveStats(a, r, 0.0, st.v);
        LazyCrRow<kLayerNorm, TX> cr(row_of(st), /*has_stats=*/false);
        ApplyCheckedAny(df, h, y, w, n, k, bound, st.v, cr);
        continue;
      }
    }
    // (kStatsF32: its fp32 statistics refused.)
    const internal::RowStats st =
        !kStatsF32 && has_block ? block_stats[r - block_begin]
                                : StatsF64<kLayerNorm>(df, h, n, f64_plan());
    SaveStats(a, r, st.k + st.c, st.v);
    if (!kLayerNorm && st.v == HUGE_VAL) {
      RMSNormInfRow(h, y, scales, a.quant_group, w, n);
      continue;
    }
    // NaN anywhere (LayerNorm: also inf), or an infinite 1/sqrt: NaN
    // throughout.
    if (!std::isfinite(st.v) || !std::isfinite(st.c) || !std::isfinite(st.r)) {
      FillNaN(df, y, scales, kQuant ? a.scales_per_row : 0, n);
      continue;
    }
    const internal::CrRow cr = row_of(st);
    const bool checked = CheckedScale(kLayerNorm, st, k, bound,
                                      !kQuant && !w.round && st.v > 0.0);
    if constexpr (kQuant) {
      const internal::CrWeights crw{a.gamma,  a.beta,  kDType<TP>,
                                    w.offset, w.scale, w.has_offset};
      if (checked && (std::is_same_v<TX, float> || !w.round)) {
        ApplyRowQuantChecked<kLayerNorm>(df, h, y, scales, a.quant_group, w, n,
                                         k, bound, cr, crw);
      } else {
        internal::CrCache cache;
        for (size_t g0 = 0; g0 < n; g0 += a.quant_group, ++scales) {
          const size_t g1 = n - g0 > a.quant_group ? g0 + a.quant_group : n;
          internal::CorrectlyRoundedInt8(cr, crw, g0, g1, y + g0, scales,
                                         cache);
        }
      }
    } else if (!checked) {
      internal::CrCache cache;
      for (size_t j = 0; j < n; ++j) DecideElement(w, cr, cache, j, y);
    } else {
      LazyCrRow<kLayerNorm, TX> lazy(cr, /*has_stats=*/true);
      ApplyCheckedAny(df, h, y, w, n, k, bound, st.v, lazy);
    }
  }
}

// With a residual and no sum_out: room for two rows of h on the stack, or
// on the heap for longer rows. Kept out of NormRows, whose frame stays small.
template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowPairsInScratch(const internal::RowArgs& a,
                                        size_t row_begin, size_t row_end) {
  constexpr size_t kRowRoom = kScratchBytes / 2 / sizeof(TX);
  HWY_ALIGN TX stack_scratch[2][kRowRoom];
  std::unique_ptr<TX[]> heap_scratch;
  TX* scratch[2] = {stack_scratch[0], stack_scratch[1]};
  if (a.cols > kRowRoom) {
    heap_scratch.reset(new TX[2 * a.cols]);
    scratch[0] = heap_scratch.get();
    scratch[1] = scratch[0] + a.cols;
  }
  NormRowPairs<kKind, TX, TY, TP>(a, row_begin, row_end, scratch);
}

template <int kKind, typename TX, typename TY, typename TP>
void NormRowPairsAnyScratch(const internal::RowArgs& a, size_t row_begin,
                            size_t row_end) {
  if (a.residual != nullptr && a.sum_out == nullptr) {
    NormRowPairsInScratch<kKind, TX, TY, TP>(a, row_begin, row_end);
    return;
  }
  TX* const no_scratch[2] = {nullptr, nullptr};
  NormRowPairs<kKind, TX, TY, TP>(a, row_begin, row_end, no_scratch);
}

// Where a call's y is streamed, gamma and beta are copied to x's offset of
// a line if they sit elsewhere (the same values, so the same bits): the
// write loops align x's loads (and y's stores, or shift y), and the
// weights' loads would split, which beside non-temporal stores cost
// LayerNorm f32 rows 16 bytes off with aligned weights 1.6x at 4096 rows
// of 896 (Zen 5; nothing without streaming). For ranges of 8 rows or more
// whose weights fit kMovedWeightsBytes (on the stack: calls allocate
// nothing), and only where x and y share the offset or y is shifted
// (kShiftedStream): elsewhere y is not streamed.
inline constexpr size_t kMovedWeightsBytes = 64 * 1024;

template <typename TX, typename TY, typename TP>
bool WeightsApart(const internal::RowArgs& a, size_t row_begin,
                  size_t row_end) {
  const auto off = [](const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 64;
  };
  const size_t ox = off(static_cast<const TX*>(a.x) + row_begin * a.x_stride);
  const size_t oy = off(static_cast<const TY*>(a.y) + row_begin * a.y_stride);
  const bool apart =
      (a.gamma && off(a.gamma) != ox) || (a.beta && off(a.beta) != ox);
  return apart && a.stream_y && row_end - row_begin >= 8 &&
         ox % sizeof(TP) == 0 &&
         (oy == ox || kShiftedStream<TY>)&&2 *
                 ((a.cols * sizeof(TP) + 63) / 64 * 64) <=
             kMovedWeightsBytes;
}

template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowPairsWeightsAtX(const internal::RowArgs& a,
                                         size_t row_begin, size_t row_end) {
  HWY_ALIGN unsigned char room[kMovedWeightsBytes + 64];
  const size_t ox = reinterpret_cast<uintptr_t>(static_cast<const TX*>(a.x) +
                                                row_begin * a.x_stride) %
                    64;
  const size_t bytes = a.cols * sizeof(TP);
  const size_t padded = (bytes + 63) / 64 * 64;
  internal::RowArgs b = a;
  if (a.gamma) b.gamma = std::memcpy(room + ox, a.gamma, bytes);
  if (a.beta) b.beta = std::memcpy(room + padded + ox, a.beta, bytes);
  NormRowPairsAnyScratch<kKind, TX, TY, TP>(b, row_begin, row_end);
}

template <int kKind, typename TX, typename TY, typename TP>
void NormRows(const internal::RowArgs& a, size_t row_begin, size_t row_end) {
  if constexpr (kRounds16<TY> || std::is_same_v<TY, int8_t>) {
    if (a.correct_rounding) {
      NormRowsChecked<kKind, TX, TY, TP>(a, row_begin, row_end);
      return;
    }
  }
  if (WeightsApart<TX, TY, TP>(a, row_begin, row_end)) {
    NormRowPairsWeightsAtX<kKind, TX, TY, TP>(a, row_begin, row_end);
    return;
  }
  NormRowPairsAnyScratch<kKind, TX, TY, TP>(a, row_begin, row_end);
}

// The table of one kind for this target, [x_type][y_type][param_type]
// indexed by simdnorm_dtype, filled at compile time.
template <size_t I>
using InType = std::tuple_element_t<I, std::tuple<float, bf16_t, f16_t>>;
template <size_t I>
using OutType =
    std::tuple_element_t<I, std::tuple<float, bf16_t, f16_t, int8_t>>;

// Null where the target takes another's kernel (kCompiledHere: x, and h
// made from it, and y are written; the weights are only read).
template <int kKind, typename TX, typename TY, typename TP>
constexpr internal::RowsFn RowsKernel() {
  if constexpr (kCompiledHere<TX, TY>) {
    return &NormRows<kKind, TX, TY, TP>;
  } else {
    return nullptr;
  }
}

template <int kKind>
struct KindKernels {
  internal::KindTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[I / 12][I / 3 % 4][I % 3] =
          RowsKernel<kKind, InType<I / 12>, OutType<I / 3 % 4>,
                     InType<I % 3>>()),
     ...);
  }
  constexpr KindKernels() { Fill(std::make_index_sequence<36>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_NORM_ROWS_INL_H_

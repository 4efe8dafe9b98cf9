// Per-target statistics of correctly rounded rows: sums in double (SumsF64)
// or in fp32 with their bounds, and the row's constants with the bound on
// fp32 results (CheckedScale). Part of lib/norm_rows-inl.h's kernels.
//
// bf16 and f16 outputs, by default (lib/correct_rounding.h): each row's
// statistics in double with error bounds, the results in fp32 as the fast
// rows make them (lib/row_write-inl.h) with a per-lane bound on |y - exact y|,
// and the lanes whose bound reaches a rounding boundary (rare: ~1e-4 of them)
// decided again in double, or exactly. docs/accuracy.md has the argument.

#if defined(SIMDNORM_LIB_CHECKED_STATS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_CHECKED_STATS_INL_H_
#undef SIMDNORM_LIB_CHECKED_STATS_INL_H_
#else
#define SIMDNORM_LIB_CHECKED_STATS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "lib/correct_rounding.h"
#include "lib/fast_rows-inl.h"
#include "lib/row_stats-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

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
// square rounds: 4), or of 2 VDPBF16PS (two products each, added one at a
// time), 2 adding the chains; of SumSquaresF16 (f16 x), 1.
template <typename TX>
inline constexpr int kSumsF32Depth = std::is_same_v<TX, f16_t> ? 1
                                     : sizeof(TX) == 2         ? 5
                                                               : 6;

// Whether SumSquaresF32 of TX takes VDPBF16PS (SquaresDot): bf16 x on the
// AVX512_BF16 targets. It reads subnormal bf16 as 0 and flushes subnormal
// results to 0 (Fp32Sums' flush).
template <typename TX>
inline constexpr bool kSquaresFlush =
    SIMDNORM_AVX512BF16&& std::is_same_v<TX, bf16_t>;

#if SIMDNORM_AVX512BF16
// The squares of 8N bf16 x at p (four pairs) added to four chains, a pair
// to a chain, by VDPBF16PS: both squares of a lane's two elements, each
// exact (8 x 8 significant bits), added with a rounding each, as two FMAs
// would, in one instruction where the FMAs need the pair widened first
// (LoadPair: a shift and an AND). Also the pairs' (|x| bits - 1) into
// mins (kMinX).
template <bool kMinX, class DF, class D16>
HWY_INLINE void SquaresDot(DF, D16 d16, const bf16_t* HWY_RESTRICT p, size_t N,
                           hn::Vec<DF>& q0, hn::Vec<DF>& q1, hn::Vec<DF>& q2,
                           hn::Vec<DF>& q3, hn::Vec<D16>& mins) {
  const __m512i p0 = _mm512_loadu_si512(p);
  const __m512i p1 = _mm512_loadu_si512(p + 2 * N);
  const __m512i p2 = _mm512_loadu_si512(p + 4 * N);
  const __m512i p3 = _mm512_loadu_si512(p + 6 * N);
  q0.raw = _mm512_dpbf16_ps(q0.raw, (__m512bh)p0, (__m512bh)p0);
  q1.raw = _mm512_dpbf16_ps(q1.raw, (__m512bh)p1, (__m512bh)p1);
  q2.raw = _mm512_dpbf16_ps(q2.raw, (__m512bh)p2, (__m512bh)p2);
  q3.raw = _mm512_dpbf16_ps(q3.raw, (__m512bh)p3, (__m512bh)p3);
  if constexpr (kMinX) {  // |x| - 1 wraps a zero above every other
    const auto abs = hn::Set(d16, 0x7FFF), one = hn::Set(d16, 1);
    const auto least = [&](__m512i p) {
      return hn::Sub(hn::And(hn::Vec<D16>{p}, abs), one);
    };
    mins = hn::Min(mins, hn::Min(hn::Min(least(p0), least(p1)),
                                 hn::Min(least(p2), least(p3))));
  }
}
#endif

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
#if SIMDNORM_AVX512BF16
    if constexpr (kSquaresFlush<TX>) {
      for (; i + 8 * N <= block_end; i += 8 * N) {
        SquaresDot<kMinX>(df, d16, x + i, N, q0, q1, q2, q3, mins);
      }
    }
#endif
    for (; !kSquaresFlush<TX> && i + 4 * N <= block_end; i += 4 * N) {
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
    // Up to 3 whole vectors and a partial one (zero-padded) are left, or 7
    // after SquaresDot's steps of 8N, in turn to the chains (two a chain at
    // most, after one VDPBF16PS).
    for (size_t c = 0; i < block_end; ++c) {
      const size_t count = block_end - i < N ? block_end - i : N;
      const auto v = LoadTailF(df, x + i, count);
      if (c % 4 == 0) {  // separate variables: SVE's vectors are sizeless
        q0 = hn::MulAdd(v, v, q0);
      } else if (c % 4 == 1) {
        q1 = hn::MulAdd(v, v, q1);
      } else if (c % 4 == 2) {
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

// sum(x^2) of f16 x with one fp32 rounding a pair of terms: a square is
// exact in fp32 (11 + 11 significant bits, 2^-48 <= x^2 <= 2^32), and each
// vector's squares are added to the next one's (an FMA, or an add of two
// exact products), whose sums go to double lanes (internal::Fp32Sums(n,
// 1)). r is then known within ~u/2, where SumSquaresF32's chains (depth 5)
// left ~2.6u: so few f16 lanes are then open (TameUnitsF16: K = 1) that
// f16 y takes fp32 statistics first too, as bf16 y does.
template <class DF>
HWY_NOINLINE double SumSquaresF16(DF df, const f16_t* HWY_RESTRICT x,
                                  size_t n) {
  const hn::ScalableTag<double> dd;
  const size_t N = hn::Lanes(df);
  auto lo0 = hn::Zero(dd), hi0 = lo0, lo1 = lo0, hi1 = lo0;
  size_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    const auto a = LoadF(df, x + i), b = LoadF(df, x + i + N);
    const auto c = LoadF(df, x + i + 2 * N), d = LoadF(df, x + i + 3 * N);
    AddToF64(df, hn::MulAdd(b, b, hn::Mul(a, a)), lo0, hi0);
    AddToF64(df, hn::MulAdd(d, d, hn::Mul(c, c)), lo1, hi1);
  }
  for (; i < n; i += N) {  // up to 3 vectors, zero-padded: exact squares
    const auto a = LoadTailF(df, x + i, HWY_MIN(n - i, N));
    AddToF64(df, hn::Mul(a, a), lo0, hi0);
  }
  return hn::GetLane(
      hn::SumOfLanes(dd, hn::Add(hn::Add(lo0, hi0), hn::Add(lo1, hi1))));
}

// UncenteredStatsF32's sum (for StatsOfLanes).
template <class DF, typename TX>
HWY_INLINE double SquaresF32(DF df, const TX* x, size_t n, bool want_min,
                             float* min_x) {
  *min_x = 0.0f;
  if constexpr (std::is_same_v<TX, f16_t>) {
    (void)want_min;
    return SumSquaresF16(df, x, n);
  } else if constexpr (std::is_same_v<TX, bf16_t> && HWY_TARGET != HWY_SCALAR) {
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
// per_mul: an upper bound of alpha / mul where CheckedScale made the bound
// (0 elsewhere), so that YBoundOf takes no division from the row's chain.
struct RowBound {
  float alpha, beta;
  double per_mul;
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
  const double rel = ((kMulRoundings + kTRoundings) * u + st.er) * grow;
  const double alpha = mul * rel;
  const double beta =
      (std::fabs(add) * ((1 + kTRoundings) * u + st.er) + dc * mul) * grow;
  // Bounds as normal floats, rounded up (a tiny bound is made 2^-126).
  const auto up = [](double v) {
    return v > 0.0 ? std::max(static_cast<float>(v * 1.01), 0x1p-126f) : 0.0f;
  };
  // up(alpha) <= alpha * 1.01 (1 + 2^-24), and this product's own
  // rounding is within 2^-53.
  bound = RowBound{up(alpha), up(beta), rel * (1.01 * (1 + 0x1p-22))};
  return true;
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CHECKED_STATS_INL_H_

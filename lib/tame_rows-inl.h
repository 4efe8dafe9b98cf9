// Per-target bf16 rows with tame weights, tested by v's low 16 bits
// (TameChunk), and f16 rows by its low 13 (TameChunkF16). Part of
// lib/norm_rows-inl.h's kernels.
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

#if defined(SIMDNORM_LIB_TAME_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_TAME_ROWS_INL_H_
#undef SIMDNORM_LIB_TAME_ROWS_INL_H_
#else
#define SIMDNORM_LIB_TAME_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "lib/checked_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

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

// bf16 gamma's first n / 2N * 2N values widened to `pairs`, in the layout
// of TameGammaPairs (exact: the same g, so the same bits).
template <class DF>
HWY_INLINE void WidenedPairs(DF df, const bf16_t* gamma, size_t n,
                             float* HWY_RESTRICT pairs) {
  const size_t N = hn::Lanes(df);
  for (size_t i = 0; i + 2 * N <= n; i += 2 * N) {
    hn::Vec<DF> a, b;
    LoadPair(df, gamma + i, a, b);
    hn::StoreU(a, df, pairs + i);
    hn::StoreU(b, df, pairs + i + N);
  }
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

// K, hi and lo for TameTestF16 from r and its relative error bound er:
// hi is r rounded toward zero to fp32 (so lo = r - hi, rounded, is >= 0),
// and |v - p r| is half a unit of v's last place (one more without FMA,
// where p * hi rounds too) and (er 1.01 + 2^-46) |v| (lo's and p * lo's
// roundings, ~2^-47 each; |v| < 2^24 units). A lane is clear where its
// low bits are more than that many units from the midpoint: K is its floor.
// False where the test does not apply (no bound, or K above 2^11).
inline bool TameUnitsF16(double r, double er, float& hi, float& lo,
                         uint16_t& units) {
  constexpr double kRoundings = HWY_NATIVE_FMA ? 0.5 : 1.5;
  const double ulps =
      (kRoundings + (er * 1.01 + 0x1p-46) * 0x1p24) * (1 + 0x1p-20);
  if (!(er >= 0.0 && ulps < 2048.0 && r >= 0x1p-100 && r <= 0x1p100)) {
    return false;
  }
  hi = static_cast<float>(r);
  if (static_cast<double>(hi) > r) hi = NextTowardZero(hi);
  lo = static_cast<float>(r - static_cast<double>(hi));  // exact difference
  units = static_cast<uint16_t>(ulps);
  return true;
}

// TameChunk's gamma where it is f32 (TameGammaPairs' copy, already in the
// pairs' layout) or absent (g = 1: v = t, one rounding fewer than the
// test allows for).
struct NoGamma {};
inline constexpr NoGamma kNoGamma{};

#if HWY_TARGET != HWY_SCALAR
// f(base + l) for each set lane l of `open` (rare: about one a row), from
// its bits.
template <class D, class F>
HWY_INLINE void ForOpenLanes(D d, hn::Mask<D> open, size_t base, const F& f) {
  if (hn::AllFalse(d, open)) return;
  constexpr size_t kWords = (4 * kMaxFloatLanes + 63) / 64;
  uint64_t words[kWords] = {};
  hn::StoreMaskBits(d, open, reinterpret_cast<uint8_t*>(words));
  for (size_t k = 0; k < kWords; ++k) {
    for (uint64_t bits = words[k]; bits != 0; bits &= bits - 1) {
      f(base + 64 * k + hwy::Num0BitsBelowLS1Bit_Nonzero64(bits));
    }
  }
}

// TameChunk's constants for a row: mul and the test's K (units), as
// scalars (SVE's vectors are sizeless: no members); the vectors are made
// where they are used, and leave the loops inlined there.
// kRoundT: Hugging Face's order (v = t; bf16 gamma only), else v = y.
template <bool kRoundT, class DF>
struct TameConsts {
  float mul;
  uint16_t units;
};

// v of the 2N elements at i, in the pairs' layout (even elements in va,
// odd ones in vb), and in Hugging Face's order gamma's (ga, gb).
template <bool kRoundT, class DF, typename TX, typename TG>
HWY_INLINE void TameV(DF df, const TX* HWY_RESTRICT x,
                      const TG* HWY_RESTRICT gamma, size_t i,
                      const TameConsts<kRoundT, DF>& c, hn::Vec<DF>& va,
                      hn::Vec<DF>& vb, hn::Vec<DF>& ga, hn::Vec<DF>& gb) {
  const size_t N = hn::Lanes(df);
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
  va = hn::Mul(va, hn::Set(df, c.mul));
  vb = hn::Mul(vb, hn::Set(df, c.mul));
  if constexpr (!kRoundT && !std::is_same_v<TG, NoGamma>) {
    va = hn::Mul(va, ga);
    vb = hn::Mul(vb, gb);
  }
}

// v's bits below bf16's, packed as x is (the even elements in the low
// halves).
template <bool kRoundT, class DF>
HWY_INLINE hn::Vec<hn::Repartition<uint16_t, DF>> TameLow(
    const TameConsts<kRoundT, DF>& c, hn::Vec<hn::RebindToUnsigned<DF>> ua,
    hn::Vec<hn::RebindToUnsigned<DF>> ub) {
  (void)c;
  const hn::RebindToUnsigned<DF> du;
  return hn::BitCast(
      hn::Repartition<uint16_t, DF>(),
      hn::OrAnd(hn::ShiftLeft<16>(ub), ua, hn::Set(du, 0xFFFFu)));
}

// v (va, vb) rounded to bf16, packed as x is.
template <bool kRoundT, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> TameV16(
    const TameConsts<kRoundT, DF>& c, hn::Vec<DF> va, hn::Vec<DF> vb) {
  const hn::RebindToUnsigned<DF> du;
#if SIMDNORM_AVX512BF16
  // The hardware's rounding (to nearest even, where the integer steps
  // round half up: they differ only on a tie, low = 0x8000, which the test
  // flags) in 2 operations for 4. It reads a subnormal v as zero, but such
  // a v is below 2^-59: kTestTiny flags it, and without kTestTiny there is
  // none (TinyV).
  if constexpr (kZmm<DF>) {
    return hn::BitCast(
        du, hn::Vec<hn::Repartition<uint16_t, DF>>{PairBF16(va.raw, vb.raw)});
  }
#endif
  (void)c;
  const auto ua = hn::BitCast(du, va), ub = hn::BitCast(du, vb);
  const auto half = hn::Set(du, 0x8000u);
  return hn::Or(hn::ShiftRight<16>(hn::Add(ua, half)),
                hn::And(hn::Add(ub, half), hn::Set(du, 0xFFFF0000u)));
}

// The 16-bit lanes (in element order) the tame test leaves open: low within
// K of 0x8000, and with kTestTiny a rounded v16 below 2^-59.
template <bool kRoundT, bool kTestTiny, class DF>
HWY_INLINE hn::Mask<hn::Repartition<uint16_t, DF>> TameOpen(
    const TameConsts<kRoundT, DF>& c,
    hn::Vec<hn::Repartition<uint16_t, DF>> low,
    hn::Vec<hn::RebindToUnsigned<DF>> v16) {
  const hn::Repartition<uint16_t, DF> d16;
  // (low - (0x8000 - K)) mod 2^16 <= 2K: the low bits within K of 0x8000.
  const auto shift = hn::Set(d16, static_cast<uint16_t>(c.units - 0x8000u));
  const auto width = hn::Set(d16, static_cast<uint16_t>(2 * c.units + 1));
  auto open = hn::Lt(hn::Add(low, shift), width);
  if constexpr (kTestTiny) {
    // |v| below 2^-59: t but not 0 (mag - 1 wraps there), or y (0 too).
    const auto below = hn::Set(d16, kRoundT ? kTameV - 1 : kTameV);
    const auto mag = hn::And(hn::BitCast(d16, v16), hn::Set(d16, 0x7FFF));
    open = hn::Or(open,
                  hn::Lt(hn::Sub(mag, hn::Set(d16, kRoundT ? 1 : 0)), below));
  } else {
    (void)v16;
  }
  return open;
}

// Elements [i, end) (end - i a multiple of 2N, at most 64 of them), stored;
// returns a bit per 2N elements (the first in bit 0) with a lane left open.
// kTestTiny: also flag v below 2^-59; callers that know no nonzero t of
// the row is that small (TinyV false) leave it out, and in Hugging Face's
// order round t straight into place (fewer operations, the same bits).
// TG: gamma's type, bf16, float (pairs) or NoGamma. TX: x's, bf16 or
// float (split into the pairs' layout here: two shuffles per 2N).
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
  const TameConsts<kRoundT, DF> c{mul, units};
  uint64_t flagged = 0;
  for (uint64_t bit = 1; i < end; bit <<= 1, i += 2 * N) {
    hn::Vec<DF> va, vb, ga, gb;
    TameV<kRoundT>(df, x, gamma, i, c, va, vb, ga, gb);
    const auto ua = hn::BitCast(du, va), ub = hn::BitCast(du, vb);
    const auto low = TameLow(c, ua, ub);
    const auto half = hn::Set(du, 0x8000u), hi = hn::Set(du, 0xFFFF0000u);
    if constexpr (kRoundT && !kTestTiny) {
      if (!hn::AllFalse(d16, TameOpen<kRoundT, false>(c, low, ua))) {
        flagged |= bit;
      }
      const auto ta = hn::And(hn::Add(ua, half), hi);  // t rounded half up
      const auto tb = hn::And(hn::Add(ub, half), hi);
      StorePairNormal(df, hn::Mul(hn::BitCast(df, ta), ga),
                      hn::Mul(hn::BitCast(df, tb), gb), y + i);
      continue;
    }
    const auto v16 = TameV16(c, va, vb);
    if (!hn::AllFalse(d16, TameOpen<kRoundT, kTestTiny>(c, low, v16))) {
      flagged |= bit;
    }
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

// The lanes of the 2N elements at i (in the default order) that TameChunk
// left open, each to decide(element): the others are stored right.
template <bool kTestTiny, class DF, typename TX, typename TG, class F>
HWY_NOINLINE void DecideTameOpen(DF df, const TX* HWY_RESTRICT x,
                                 const TG* HWY_RESTRICT gamma, size_t i,
                                 float mul, uint16_t units, const F& decide) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Repartition<uint16_t, DF> d16;
  const TameConsts<false, DF> c{mul, units};
  hn::Vec<DF> va, vb, ga, gb;
  TameV<false>(df, x, gamma, i, c, va, vb, ga, gb);
  const auto low = TameLow(c, hn::BitCast(du, va), hn::BitCast(du, vb));
  ForOpenLanes(d16, TameOpen<false, kTestTiny>(c, low, TameV16(c, va, vb)), i,
               decide);
}
#endif

#if SIMDNORM_HW_F16
// Whether every f16 g of gamma[0, n) is finite (TameChunkF16's gamma).
template <class D16>
HWY_INLINE bool FiniteF16(D16 d16, const f16_t* gamma, size_t n) {
  const uint16_t* g = reinterpret_cast<const uint16_t*>(gamma);
  const size_t N = hn::Lanes(d16);
  const auto abs = hn::Set(d16, 0x7FFF);
  auto hi = hn::Zero(d16);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hi = hn::Max(hi, hn::And(hn::LoadU(d16, g + i), abs));
  }
  uint16_t top = hn::GetLane(hn::MaxOfLanes(d16, hi));
  for (; i < n; ++i) top = HWY_MAX(top, static_cast<uint16_t>(g[i] & 0x7FFF));
  return top < 0x7C00;
}

// The tame test for f16 y (RMSNorm, L2; f16 x, f16 or no gamma, neither
// beta nor an offset, the default order). p = x * g is exact in fp32 (11 +
// 11 significant bits, |p| in [2^-48, 2^32] or 0), and v = fma(p, hi, p *
// lo), with hi + lo = r split by TameUnitsF16, is within half a unit of
// its last place of p (hi + lo) (one rounding; p * lo's is ~2^-47 |v|),
// so |v - exact y| < 1 unit wherever r's own error is below ~2^-26 (double
// statistics: ~2^-43). v's bits below f16's are its low 13, whose one
// midpoint within reach sits at 0x1000 (the others, across a binade too,
// are 2^12 units or more away): a v whose low bits are more than K units
// from it (K = 0: only a v on the midpoint is open, ~1 lane in 8192 where
// two fp32 products with r rounded to fp32 left ~9 open) rounds, to
// nearest even by the hardware (VCVTPS2PH, FCVT), to the correctly rounded
// value. Flagged as well: v below 2^-14 but not 0 (f16's subnormals, a
// grid of their own). A zero v (x = 0 or g = 0) is an exact +-0 with the
// exact y's sign (lo >= 0: -0 * lo is -0). An underflow of p * lo is
// 2^-150 at most, nothing beside |v| >= 2^-14, and |v| <= 65504 sqrt(n)
// (|x r| <= sqrt(n): no overflow).
// Elements [i, end), end - i a multiple of 2N, stored; returns a bit per
// 2N elements with a lane left open. One conversion a vector where the
// lean loop's two ends take two (VCVTPS2PH: Zen 5 issues one every other
// cycle).
// (Scalars: SVE's vectors are sizeless, no members.)
template <class DF>
struct TameTestF16 {
  using DU = hn::RebindToUnsigned<DF>;
  float hi, lo;
  uint16_t units;
  // v = fma(p, hi, p * lo), p = x * g, of the N elements at i.
  template <typename TG>
  HWY_INLINE hn::Vec<DF> V(DF df, const f16_t* HWY_RESTRICT x,
                           const TG* HWY_RESTRICT gamma, size_t i) const {
    auto p = LoadF(df, x + i);
    if constexpr (std::is_same_v<TG, NoGamma>) {
      (void)gamma;
    } else {
      p = hn::Mul(p, LoadF(df, gamma + i));
    }
    return hn::MulAdd(p, hn::Set(df, hi), hn::Mul(p, hn::Set(df, lo)));
  }
  HWY_INLINE hn::Mask<DU> Open(hn::Vec<DF> v) const {
    const DU du;
    const auto u = hn::BitCast(du, v);
    // ((bits + 0x1000 + K) mod 2^13) <= 2K: the low 13 bits within K of
    // 0x1000; or 0 < |v| < 2^-14.
    const auto shift = hn::Set(du, 0x1000u + units);
    const auto width = hn::Set(du, 2u * units + 1);
    const auto tiny = hn::Set(du, 0x38800000u - 1);  // 2^-14, less 0
    return hn::Or(
        hn::Lt(hn::And(hn::Add(u, shift), hn::Set(du, 0x1FFFu)), width),
        hn::Lt(hn::Sub(hn::And(u, hn::Set(du, 0x7FFFFFFFu)), hn::Set(du, 1u)),
               tiny));
  }
};

template <class DF, typename TG>
HWY_NOINLINE uint64_t TameChunkF16(DF df, const f16_t* HWY_RESTRICT x,
                                   f16_t* HWY_RESTRICT y,
                                   const TG* HWY_RESTRICT gamma, size_t i,
                                   size_t end, float hi, float lo,
                                   uint16_t units) {
  const hn::RebindToUnsigned<DF> du;
  const hn::Rebind<f16_t, DF> dh;
  const size_t N = hn::Lanes(df);
  const TameTestF16<DF> test{hi, lo, units};
  uint64_t flagged = 0;
  for (uint64_t bit = 1; i < end; bit <<= 1, i += 2 * N) {
    const auto va = test.V(df, x, gamma, i), vb = test.V(df, x, gamma, i + N);
    hn::StoreU(hn::DemoteTo(dh, va), dh, y + i);
    hn::StoreU(hn::DemoteTo(dh, vb), dh, y + i + N);
    if (!hn::AllFalse(du, hn::Or(test.Open(va), test.Open(vb)))) {
      flagged |= bit;
    }
  }
  return flagged;
}

// The lanes of the 2N elements at i that TameChunkF16 left open, each to
// decide(element): the others are stored right.
template <class DF, typename TG, class F>
HWY_NOINLINE void DecideTameOpenF16(DF df, const f16_t* HWY_RESTRICT x,
                                    const TG* HWY_RESTRICT gamma, size_t i,
                                    float hi, float lo, uint16_t units,
                                    const F& decide) {
  const size_t N = hn::Lanes(df);
  const TameTestF16<DF> test{hi, lo, units};
  for (size_t at = i; at < i + 2 * N; at += N) {
    ForOpenLanes(hn::RebindToUnsigned<DF>(),
                 test.Open(test.V(df, x, gamma, at)), at, decide);
  }
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
// row allow it (returns false where not); then, in Hugging Face's order,
// redo(i, end) on its groups with an open lane, and in the default order
// redo(j) on each open lane's element j (DecideTameOpen: the tame test's
// open lanes only, without the group's second pass). mul: the row's scale;
// f16 rows: r's high part, with mul_lo its low one (TameUnitsF16).
template <bool kLayerNorm, bool kRoundT, class DF, typename TX, typename TY,
          typename TP, class F>
HWY_INLINE bool TameChunks(DF df, const TX* x, TY* y, const Weights<TP>& w,
                           size_t paired_end, float mul, float mul_lo,
                           bool row_tame, uint16_t units, bool test_tiny,
                           const F& redo) {
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
        if constexpr (kRoundT) {
          ForFlaggedGroups(open, i, end, group, redo);
        } else {
          ForFlaggedGroups(open, i, end, group, [&](size_t g0, size_t) {
            if (test_tiny) {
              DecideTameOpen<true>(df, x, gamma, g0, mul, units, redo);
            } else {
              DecideTameOpen<false>(df, x, gamma, g0, mul, units, redo);
            }
          });
        }
      });
    };
    if constexpr (!kRoundT) {  // tame_gamma: f32 pairs, else bf16 or none
      if (w.gamma_pairs != nullptr) return chunks(w.gamma_pairs), true;
    }
    if constexpr (std::is_same_v<TP, bf16_t>) {
      if (w.gamma != nullptr) return chunks(w.gamma), true;
    }
    if constexpr (!kRoundT) {
      if (w.gamma == nullptr) return chunks(&kNoGamma), true;
    }
    return false;
  }
#if SIMDNORM_HW_F16
  if constexpr (!kLayerNorm && !kRoundT && std::is_same_v<TX, f16_t> &&
                std::is_same_v<TY, f16_t> && std::is_same_v<TP, f16_t>) {
    if (!w.tame_gamma || !row_tame) return false;
    const auto chunks = [&](auto gamma) {
      ForChunks(paired_end, [&](size_t i, size_t end) {
        ForFlaggedGroups(
            TameChunkF16(df, x, y, gamma, i, end, mul, mul_lo, units), i, end,
            2 * hn::Lanes(df), [&](size_t g0, size_t) {
              DecideTameOpenF16(df, x, gamma, g0, mul, mul_lo, units, redo);
            });
      });
    };
    if (w.gamma_f32 != nullptr) return chunks(w.gamma_f32), true;
    if (w.gamma != nullptr) return chunks(w.gamma), true;
    return chunks(&kNoGamma), true;
  }
#endif
#endif
  (void)df, (void)x, (void)y, (void)w, (void)paired_end, (void)mul,
      (void)mul_lo;
  (void)row_tame, (void)units, (void)test_tiny, (void)redo;
  return false;
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_TAME_ROWS_INL_H_

// Per-target test of which fp32 results round to the same bf16 or fp16 value
// as their exact counterparts (lib/correct_rounding.h): v is the computed
// value, e a bound on |v - exact|. A lane is clear when no rounding
// boundary (a midpoint between two neighbours of the 16-bit type, or the
// overflow threshold) and no sign change lies within e of v.

#if defined(SIMDNORM_LIB_ROUNDING_CHECK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_ROUNDING_CHECK_INL_H_
#undef SIMDNORM_LIB_ROUNDING_CHECK_INL_H_
#else
#define SIMDNORM_LIB_ROUNDING_CHECK_INL_H_
#endif

#include <type_traits>

#include "hwy/highway.h"
#include "lib/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// Lanes that round as their exact values do: no rounding boundary and no
// sign change within e of v. e must cover every rounding of v, subnormal
// ones included (callers add a floor where v may be subnormal).
//
// Only the midpoint m just above v's truncation can be within reach: the
// others are at least a quarter of the 16-bit spacing away, which is more
// than |v| * 2^-10 (bf16, 8 bits) or |v| * 2^-13 (fp16, 11 bits), so e is
// required to stay below half that (which also keeps zero out of reach). v
// and m share their exponent, so v - m is exact (Sterbenz). fp16
// subnormals (below 2^-14) have a fixed spacing of 2^-24: their midpoint
// is found with a floor. inf and NaN lanes are never clear (their m is
// NaN), nor those at fp16's top (65504 and beyond).
template <typename T, class DF>
HWY_INLINE hn::Mask<DF> RoundsClear(DF df, hn::Vec<DF> v, hn::Vec<DF> e) {
  const hn::RebindToUnsigned<DF> du;
  const auto a = hn::Abs(v);
  constexpr bool kBF16 = std::is_same_v<T, bf16_t>;
  auto m = hn::BitCast(
      df, hn::OrAnd(hn::Set(du, kBF16 ? 0x8000u : 0x1000u), hn::BitCast(du, a),
                    hn::Set(du, kBF16 ? 0xFFFF0000u : 0xFFFFE000u)));
  if constexpr (!kBF16) {
    const auto sub = hn::Mul(
        hn::Add(hn::Floor(hn::Mul(a, hn::Set(df, 0x1p24f))), hn::Set(df, 0.5f)),
        hn::Set(df, 0x1p-24f));
    m = hn::IfThenElse(hn::Lt(a, hn::Set(df, 0x1p-14f)), sub, m);
  }
  const auto reach = hn::Mul(a, hn::Set(df, kBF16 ? 0x1p-11f : 0x1p-14f));
  auto clear = hn::And(hn::Gt(hn::Abs(hn::Sub(a, m)), e), hn::Le(e, reach));
  if constexpr (!kBF16)
    clear = hn::And(clear, hn::Lt(a, hn::Set(df, 65504.0f)));
  return clear;
}

// bf16 only, a cheaper test than RoundsClear that also rounds: the lanes
// where lo = v - e and hi = v + e round to the same bf16 value, and that
// value in `rounded` (widened; meaningless on the other lanes). Adding
// 0x8000 to the bits of a finite float and clearing the low half rounds
// its magnitude with ties away from zero (overflowing to infinity); adding
// 0x7FFF, with ties toward zero. With lo rounded the first way and hi the
// second, ends that round alike lie in one bf16 value's interval of
// magnitudes, closed only at the end where the first rule includes a
// midpoint; the exact value, strictly inside (lo, hi) (or equal to v = lo
// = hi where e = 0), is then strictly between two midpoints and rounds to
// nearest-even as the ends do. A v on a midpoint with e = 0 is never
// clear. Callers make e cover the two roundings of v -+ e (2u|v| more).
// A NaN v (non-finite weights) is never clear, nor an inf (its lo is
// inf - inf). The rounded ends are compared as floats: ends of opposite
// signs round alike only if both are below 2^-134, which e's terms
// relative to |v| cannot reach and its floors (2^-126 and up:
// CheckedScale, YBound) exceed. An exact +-0 (e = 0) keeps its sign
// through lo = v - 0.
template <uint32_t kHalf, class DF>
HWY_INLINE hn::Vec<DF> RoundedEnd(DF df, hn::Vec<DF> end) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::Add(hn::BitCast(du, end), hn::Set(du, kHalf));
  return hn::BitCast(df, hn::And(bits, hn::Set(du, 0xFFFF0000u)));
}
//
// A NaN whose low half is not zero (from f32 or f16 weights) can carry into
// the sign: -0 at both ends; such NaNs are excluded (kNaNLowBits). NaNs
// from bf16 operands and the default NaN have a zero low half: their ends
// stay NaN, never alike, and the test needs no NaN check (2 operations less
// per vector).
template <bool kNaNLowBits = true, class DF>
HWY_INLINE hn::Mask<DF> RoundsAlikeBF16(DF df, hn::Vec<DF> v, hn::Vec<DF> e,
                                        hn::Vec<DF>& rounded) {
  rounded = RoundedEnd<0x8000u>(df, hn::Sub(v, e));
  const auto alike = hn::Eq(rounded, RoundedEnd<0x7FFFu>(df, hn::Add(v, e)));
  if constexpr (kNaNLowBits) return hn::And(alike, hn::Eq(v, v));
  (void)df;
  return alike;
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_ROUNDING_CHECK_INL_H_

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
      df, hn::Or(hn::And(hn::BitCast(du, a),
                         hn::Set(du, kBF16 ? 0xFFFF0000u : 0xFFFFE000u)),
                 hn::Set(du, kBF16 ? 0x8000u : 0x1000u)));
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

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_ROUNDING_CHECK_INL_H_

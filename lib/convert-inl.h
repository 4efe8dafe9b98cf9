// Per-target loads and stores of rows as float vectors: float as is, bf16
// widened exactly, results narrowed to bf16 with round-to-nearest-even.
//
// Pairs: the main loops move 2N elements at a time as two float vectors.
// For float they are the two halves in order. For bf16 they are the even
// and the odd elements of one 2N-element load (the low and high halves of
// each 32-bit lane), which widen with one shift or mask and narrow back
// with a shift and an OR: no lane shuffles. Element order does not matter
// to sums, and a row whose x, y and weights all pair the same way can be
// normalized pair by pair.
//
// Tails shorter than a vector go through a stack buffer, so no vector load
// or store ever touches memory outside the row.

#if defined(SIMDNORM_LIB_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_CONVERT_INL_H_
#undef SIMDNORM_LIB_CONVERT_INL_H_
#else
#define SIMDNORM_LIB_CONVERT_INL_H_
#endif

#include <cstring>
#include <type_traits>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using bf16_t = hwy::bfloat16_t;

// Enough room for one vector of float lanes on any target.
inline constexpr size_t kMaxFloatLanes = HWY_MAX_BYTES / sizeof(float);

HWY_INLINE float ToFloat(float v) { return v; }
HWY_INLINE float ToFloat(bf16_t v) { return hwy::F32FromBF16(v); }

template <class DF>
HWY_INLINE hn::Vec<DF> LoadF(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}

// bf16 is the top half of a binary32: widening is a 16-bit shift, exact.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadF(DF df, const bf16_t* HWY_RESTRICT p) {
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du32;
  const auto bits =
      hn::PromoteTo(du32, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(df, hn::ShiftLeft<16>(bits));
}

template <class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  hn::StoreU(v, df, p);
}

// The bits of v rounded to bf16 precision, in the top half of each lane.
// Highway 1.0.3's DemoteTo(bf16) only truncates, so the rounding is done
// here: adding 0x7FFF plus the lowest kept bit carries into the kept bits
// exactly when the dropped half is above one half, or equal to it with an
// odd kept part (round to nearest, ties to even). Overflow rounds to
// infinity as it should; NaN stays NaN (made quiet, as the carry could
// otherwise turn a NaN with a large payload into infinity or zero).
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundedToBF16Bits(DF df,
                                                               hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  (void)df;
  const auto bits = hn::BitCast(du32, v);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1));
  const auto rounded = hn::Add(bits, hn::Add(hn::Set(du32, 0x7FFF), odd));
  const auto quiet_nan = hn::Or(bits, hn::Set(du32, 0x00400000));
  return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet_nan, rounded);
}

template <class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, bf16_t* HWY_RESTRICT p) {
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> d16;
  const auto top =
      hn::BitCast(di32, hn::ShiftRight<16>(RoundedToBF16Bits(df, v)));
  hn::StoreU(hn::DemoteTo(d16, top), d16, reinterpret_cast<uint16_t*>(p));
}

// ------------------------------ Pairs of vectors (2N elements)

template <typename T>
inline constexpr bool kEvenOdd = std::is_same_v<T, bf16_t>;

// The first and second vector of the pair at p.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadPairA(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadPairB(DF df, const float* HWY_RESTRICT p) {
  return hn::LoadU(df, p + hn::Lanes(df));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadPairA(DF df, const bf16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
  const auto u = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(p));
  return hn::BitCast(df, hn::ShiftLeft<16>(u));  // even elements
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadPairB(DF df, const bf16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
  const auto u = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(p));
  return hn::BitCast(df, hn::And(u, hn::Set(du32, 0xFFFF0000u)));  // odd
}

template <class DF>
HWY_INLINE void StorePair(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                          float* HWY_RESTRICT p) {
  hn::StoreU(a, df, p);
  hn::StoreU(b, df, p + hn::Lanes(df));
}
template <class DF>
HWY_INLINE void StorePair(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                          bf16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
  const auto even = hn::ShiftRight<16>(RoundedToBF16Bits(df, a));
  const auto odd =
      hn::And(RoundedToBF16Bits(df, b), hn::Set(du32, 0xFFFF0000u));
  hn::StoreU(hn::Or(even, odd), du32, reinterpret_cast<uint32_t*>(p));
}

// ------------------------------ Tails

// Loads the first `count` (< Lanes) elements; the other lanes are zero.
template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadTailF(DF df, const T* HWY_RESTRICT p, size_t count) {
  HWY_ALIGN T buf[kMaxFloatLanes] = {};
  std::memcpy(buf, p, count * sizeof(T));
  return LoadF(df, buf);
}

// Stores the first `count` (< Lanes) lanes of v.
template <class DF, typename T>
HWY_INLINE void StoreTailF(DF df, hn::Vec<DF> v, T* HWY_RESTRICT p,
                           size_t count) {
  HWY_ALIGN T buf[kMaxFloatLanes];
  StoreF(df, v, buf);
  std::memcpy(p, buf, count * sizeof(T));
}

}  // namespace HWY_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CONVERT_INL_H_

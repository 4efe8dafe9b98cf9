// Per-target loads and stores of rows as float vectors: float as is, bf16
// and f16 widened exactly, results narrowed to them with round-to-nearest-
// even, and int8 stores of already-scaled values.
//
// Pairs: the main loops move 2N elements at a time as two float vectors.
// For float they are the two halves in order. For bf16 they are the even
// and the odd elements of one 2N-element load (the low and high halves of
// each 32-bit lane), which widen and narrow with in-lane integer work: no
// lane shuffles. bf16 and f16 pair alike. Element order does not matter
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
#include "lib/kernel_table.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using bf16_t = hwy::bfloat16_t;
using f16_t = hwy::float16_t;

// binary16 through the hardware: F16C's vcvtph2ps / vcvtps2ph on AVX2 and
// AVX-512 (every x86 target from AVX2 up, AVX3_ZEN4 and AVX3_SPR of newer
// Highways included), FCVT on NEON and SVE, as Highway's PromoteTo and
// DemoteTo emit them there: exact widening and round-to-nearest-even
// narrowing, subnormals included (FPCR's default, which Arm programs keep).
// They keep NaN payloads, which the stores below replace by the default
// NaN, as the integer path of the other targets gives. Elsewhere (SSE4,
// SSSE3, SCALAR and EMU128: Highway 1.0.3 emulates the conversions by
// truncation) the integer path below.
#undef SIMDNORM_HW_F16
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define SIMDNORM_HW_F16 1
#elif HWY_ARCH_ARM_A64 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
#define SIMDNORM_HW_F16 1
#else
#define SIMDNORM_HW_F16 0
#endif

// bf16 narrowing by the AVX512_BF16 instructions (VCVTNE2PS2BF16,
// VCVTNEPS2BF16) on the targets that have them: simdnorm's AVX3_BF16
// (kernels_avx3_bf16.cc) and, with a Highway that has them, AVX3_ZEN4 and
// AVX3_SPR (unless that Highway leaves AVX512_BF16 out of their attributes,
// HWY_AVX3_ENABLE_AVX512BF16 0). Elsewhere the integer rounding below.
#undef SIMDNORM_AVX512BF16
#if defined(HWY_AVX3_ENABLE_AVX512BF16) && !HWY_AVX3_ENABLE_AVX512BF16
#define SIMDNORM_AVX512BF16 0
#elif defined(SIMDNORM_WITH_AVX512BF16) && HWY_TARGET == HWY_AVX3
#define SIMDNORM_AVX512BF16 1
#elif defined(HWY_AVX3_ZEN4) && HWY_TARGET == HWY_AVX3_ZEN4
#define SIMDNORM_AVX512BF16 1
#elif defined(HWY_AVX3_SPR) && HWY_TARGET == HWY_AVX3_SPR
#define SIMDNORM_AVX512BF16 1
#else
#define SIMDNORM_AVX512BF16 0
#endif

// Whether a kernel that writes values of the types Ts is compiled for the
// target at hand. simdnorm's own AVX3_BF16 build (avx3_bf16_target.h)
// differs from AVX3 only in its bf16 stores (the conversions above), so
// its tables hold the kernels that write bf16, and isa.cc takes AVX3's
// kernels, the same code, for the others: half the compile time of that
// build, and 1.4 MB less library. Every other target compiles every kernel.
template <typename... Ts>
inline constexpr bool kCompiledHere =
#if defined(SIMDNORM_WITH_AVX512BF16)
    (std::is_same_v<Ts, bf16_t> || ...);
#else
    true;
#endif

// Enough room for one vector of float lanes on any target.
inline constexpr size_t kMaxFloatLanes = HWY_MAX_BYTES / sizeof(float);

// ------------------------------ binary16 <-> binary32, exact, in u32 lanes
//
// Highway 1.0.3 emulates f16 conversions without F16C by truncation and
// maps inf/NaN to finite values, so both directions are done here with
// integer and float steps that are exact on every target.

// The float whose binary16 bits are the low 16 bits of each lane of h
// (the high bits must be zero). Finite values: the exponent and fraction
// moved into binary32 position are the value times 2^-112, exactly (a
// subnormal half becomes a subnormal float), so one multiply by 2^112
// restores it. inf/NaN get the all-ones exponent, payload kept.
template <class DF>
HWY_INLINE hn::Vec<DF> F32FromF16Bits(DF df,
                                      hn::Vec<hn::RebindToUnsigned<DF>> h) {
  const hn::RebindToUnsigned<DF> du;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto em = hn::And(h, hn::Set(du, 0x7FFFu));
  const auto shifted = hn::ShiftLeft<13>(em);
  const auto finite =
      hn::BitCast(du, hn::Mul(hn::BitCast(df, shifted), hn::Set(df, 0x1p112f)));
  const auto special = hn::Or(shifted, hn::Set(du, 0x7F800000u));
  const auto is_special = hn::Gt(em, hn::Set(du, 0x7BFFu));  // inf, NaN
  return hn::BitCast(df,
                     hn::Or(sign, hn::IfThenElse(is_special, special, finite)));
}

// The binary16 bits of v rounded to nearest-even, in the low 16 bits of
// each lane. Normal results: rebias the exponent and add 0xFFF plus the
// lowest kept bit before dropping 13 bits (the carry rounds, also into the
// exponent, up to infinity at 65520). Subnormal results: adding 0.5 puts
// the value's 2^-24 steps into the float's last bits, and the float add
// itself rounds to nearest-even. NaN stays NaN (quiet).
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> F16BitsFromF32(DF df,
                                                            hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto sign = hn::ShiftRight<16>(hn::Xor(bits, abs));
  const auto odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 1u));
  const auto normal = hn::ShiftRight<13>(
      hn::Add(abs, hn::Add(hn::Set(du, 0xC8000FFFu), odd)));  // -112 << 23
  const auto half = hn::Set(df, 0.5f);
  const auto sub = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), half)),
                           hn::BitCast(du, half));
  const auto big = hn::IfThenElse(hn::Gt(abs, hn::Set(du, 0x7F800000u)),
                                  hn::Set(du, 0x7E00u), hn::Set(du, 0x7C00u));
  auto r = hn::IfThenElse(hn::Gt(hn::Set(du, 0x38800000u), abs), sub, normal);
  r = hn::IfThenElse(hn::Gt(abs, hn::Set(du, 0x477FFFFFu)), big, r);
  return hn::Or(r, sign);
}

HWY_INLINE float ToFloat(float v) { return v; }
HWY_INLINE float ToFloat(bf16_t v) { return hwy::F32FromBF16(v); }
HWY_INLINE float ToFloat(f16_t v) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du;
  uint16_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return hn::GetLane(F32FromF16Bits(df, hn::Set(du, bits)));
}

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
HWY_INLINE hn::Vec<DF> LoadF(DF df, const f16_t* HWY_RESTRICT p) {
#if SIMDNORM_HW_F16
  return hn::PromoteTo(df, hn::LoadU(hn::Rebind<f16_t, DF>(), p));
#else
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du32;
  return F32FromF16Bits(
      df, hn::PromoteTo(du32,
                        hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p))));
#endif
}

// The bits of v rounded to bf16 precision, in the top half of each lane.
// Highway 1.0.3's DemoteTo(bf16) only truncates, so the rounding is done
// here: adding 0x7FFF plus the lowest kept bit carries into the kept bits
// exactly when the dropped half is above one half, or equal to it with an
// odd kept part (round to nearest, ties to even). Overflow rounds to
// infinity as it should. A NaN whose dropped half is not zero could carry
// into infinity or zero, so with kQuietNaN NaN lanes are made quiet and kept.
// Callers pass false where every NaN that can reach v has a zero low half
// (widened bf16 values, and the default NaN of invalid operations): it saves
// two operations per vector.
template <bool kQuietNaN = true, class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundedToBF16Bits(DF df,
                                                               hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du32;
  (void)df;
  const auto bits = hn::BitCast(du32, v);
  const auto odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1));
  const auto rounded = hn::Add(bits, hn::Add(hn::Set(du32, 0x7FFF), odd));
  if constexpr (!kQuietNaN) return rounded;
  const auto quiet_nan = hn::Or(bits, hn::Set(du32, 0x00400000));
  return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet_nan, rounded);
}

#if SIMDNORM_AVX512BF16
// The hardware conversions round to nearest-even and make NaNs quiet
// keeping the top of their payload (the same bits as RoundedToBF16Bits
// with kQuietNaN; without it, NaNs have a zero low half and are quiet), but
// take subnormal inputs as zero. So the callers below redo a vector in
// software when any of its results is a signed zero: only zero and
// subnormal inputs give one, and only subnormals differ (all 2^32 inputs
// checked on Sapphire Rapids). They take whole 512-bit vectors only.
template <class DF>
inline constexpr bool kZmm = std::is_same_v<hn::Vec<DF>, hn::Vec512<float>>;

// bf16 of each lane of v, in order (a cast: GCC 12 and clang give the
// intrinsics' result a vector type of shorts, GCC 13 of __bf16).
HWY_INLINE __m256i NarrowBF16(__m512 v) {
  return (__m256i)_mm512_cvtneps_pbh(v);
}

// A pair's bf16 in one conversion: words 0-15 are b's, 16-31 a's.
HWY_INLINE __m512i BothBF16(__m512 a, __m512 b) {
  return (__m512i)_mm512_cvtne2ps_pbh(a, b);
}

// BothBF16's words in the pair's layout: a_i in word 2i, b_i in 2i + 1.
HWY_INLINE __m512i Interleaved(__m512i both) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      16, 0, 17, 1, 18, 2,  19, 3,  20, 4,  21, 5,  22, 6,  23, 7,
      24, 8, 25, 9, 26, 10, 27, 11, 28, 12, 29, 13, 30, 14, 31, 15};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), both);
}

// A pair's bf16 in one conversion, in the pair's layout.
HWY_INLINE __m512i PairBF16(__m512 a, __m512 b) {
  return Interleaved(BothBF16(a, b));
}

// Whether any 16-bit result is +-0.
HWY_INLINE bool AnySignedZero(__m256i bits) {
  return _mm256_testn_epi16_mask(bits, _mm256_set1_epi16(0x7FFF)) != 0;
}
HWY_INLINE bool AnySignedZero(__m512i bits) {
  return _mm512_testn_epi16_mask(bits, _mm512_set1_epi16(0x7FFF)) != 0;
}
#endif

// Stores narrow to the pointer's type; kQuietNaN as for RoundedToBF16Bits
// (only bf16 stores use it).
template <bool kQuietNaN = true, class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, float* HWY_RESTRICT p) {
  hn::StoreU(v, df, p);
}

template <bool kQuietNaN = true, class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, bf16_t* HWY_RESTRICT p) {
#if SIMDNORM_AVX512BF16
  if constexpr (kZmm<DF>) {
    const __m256i bits = NarrowBF16(v.raw);
    if (HWY_LIKELY(!AnySignedZero(bits))) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bits);
      return;
    }
  }
#endif
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> d16;
  const auto top = hn::BitCast(
      di32, hn::ShiftRight<16>(RoundedToBF16Bits<kQuietNaN>(df, v)));
  hn::StoreU(hn::DemoteTo(d16, top), d16, reinterpret_cast<uint16_t*>(p));
}

template <bool kQuietNaN = true, class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> v, f16_t* HWY_RESTRICT p) {
#if SIMDNORM_HW_F16
  // NaN lanes become the quiet NaN without payload (0x7E00, sign kept).
  const hn::RebindToUnsigned<DF> du;
  const auto quiet = hn::OrAnd(hn::Set(du, 0x7FC00000u), hn::BitCast(du, v),
                               hn::Set(du, 0x80000000u));
  v = hn::IfThenElse(hn::IsNaN(v), hn::BitCast(df, quiet), v);
  hn::StoreU(hn::DemoteTo(hn::Rebind<f16_t, DF>(), v), hn::Rebind<f16_t, DF>(),
             p);
#else
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToSigned<DF> di32;
  hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di32, F16BitsFromF32(df, v))), d16,
             reinterpret_cast<uint16_t*>(p));
#endif
}

// v rounded to the precision of T and widened back (exact for float).
template <typename T, class DF>
HWY_INLINE hn::Vec<DF> RoundTo(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  if constexpr (std::is_same_v<T, bf16_t>) {
    return hn::BitCast(
        df, hn::And(RoundedToBF16Bits<false>(df, v), hn::Set(du, 0xFFFF0000u)));
  } else if constexpr (std::is_same_v<T, f16_t>) {
#if SIMDNORM_HW_F16  // v is finite here (the normalized value of a row)
    const hn::Rebind<f16_t, DF> d16;
    return hn::PromoteTo(df, hn::DemoteTo(d16, v));
#else
    return F32FromF16Bits(df, F16BitsFromF32(df, v));
#endif
  } else {
    return v;
  }
}

// Stores q, already scaled to [-127.x, 127.x], as int8: rounded to
// nearest-even (the default rounding mode) and clamped to [-127, 127].
template <bool kQuietNaN = true, class DF>
HWY_INLINE void StoreF(DF df, hn::Vec<DF> q, int8_t* HWY_RESTRICT p) {
  const hn::Rebind<int8_t, DF> d8;
  const auto limit = hn::Set(df, 127.0f);
  const auto clamped = hn::Min(hn::Max(q, hn::Neg(limit)), limit);
  hn::StoreU(hn::DemoteTo(d8, hn::NearestInt(clamped)), d8, p);
}

// ------------------------------ Pairs of vectors (2N elements)

// With the hardware conversions, f16 converts by whole vectors and pairs
// like float.
template <typename T>
inline constexpr bool kEvenOdd = std::is_same_v<T, bf16_t> ||
                                 (!SIMDNORM_HW_F16 && std::is_same_v<T, f16_t>);

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
HWY_INLINE hn::Vec<DF> LoadPairA(DF df, const f16_t* HWY_RESTRICT p) {
#if SIMDNORM_HW_F16
  return LoadF(df, p);
#else
  const hn::RebindToUnsigned<DF> du32;
  const auto u = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(p));
  return F32FromF16Bits(df, hn::And(u, hn::Set(du32, 0xFFFFu)));
#endif
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadPairB(DF df, const f16_t* HWY_RESTRICT p) {
#if SIMDNORM_HW_F16
  return LoadF(df, p + hn::Lanes(df));
#else
  const hn::RebindToUnsigned<DF> du32;
  const auto u = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(p));
  return F32FromF16Bits(df, hn::ShiftRight<16>(u));
#endif
}

// Both vectors of the pair at p; bf16 from one load into a register. GCC
// folds a load into each instruction that uses it, also when two do
// (LoadPairA's shift and LoadPairB's AND): two loads of the same bytes,
// and a load that splits a cache line takes two of the core's load slots
// (bf16 RMSNorm rows 16 bytes off ran 1.03-1.05x slower for it). An
// empty asm statement that may change the register keeps it one load on
// x86. Not in LoadPairA and LoadPairB themselves: where they are called
// apart, unfolded loads cost LayerNorm's write loop 2-4%.
template <class DF, typename T>
HWY_INLINE void LoadPair(DF df, const T* HWY_RESTRICT p, hn::Vec<DF>& a,
                         hn::Vec<DF>& b) {
  if constexpr (std::is_same_v<T, bf16_t>) {
    const hn::RebindToUnsigned<DF> du32;
    auto u = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(p));
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128 && \
    (HWY_COMPILER_GCC || HWY_COMPILER_CLANG)
    asm("" : "+v"(u.raw));
#endif
    a = hn::BitCast(df, hn::ShiftLeft<16>(u));
    b = hn::BitCast(df, hn::And(u, hn::Set(du32, 0xFFFF0000u)));
  } else {
    a = LoadPairA(df, p);
    b = LoadPairB(df, p);
  }
}

// v to p, with a normal store or (kStream) a non-temporal one, which writes
// the cache line to memory without reading it first and needs p aligned to
// the vector's bytes.
template <bool kStream, class D>
HWY_INLINE void StoreVec(hn::Vec<D> v, D d, hn::TFromD<D>* HWY_RESTRICT p) {
  if constexpr (kStream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// Stores the pair (a, b) to p; kQuietNaN as for RoundedToBF16Bits.
template <bool kQuietNaN = true, bool kStream = false, class DF>
HWY_INLINE void StorePair(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                          float* HWY_RESTRICT p) {
  StoreVec<kStream>(a, df, p);
  StoreVec<kStream>(b, df, p + hn::Lanes(df));
}
template <bool kQuietNaN = true, bool kStream = false, class DF>
HWY_INLINE void StorePair(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                          bf16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
#if SIMDNORM_AVX512BF16
  if constexpr (kZmm<DF>) {
    const __m512i pairs = PairBF16(a.raw, b.raw);
    if (HWY_LIKELY(!AnySignedZero(pairs))) {
      StoreVec<kStream>(hn::Vec512<uint32_t>{pairs}, du32,
                        reinterpret_cast<uint32_t*>(p));
      return;
    }
  }
#endif
  const auto even = hn::ShiftRight<16>(RoundedToBF16Bits<kQuietNaN>(df, a));
  const auto odd =
      hn::And(RoundedToBF16Bits<kQuietNaN>(df, b), hn::Set(du32, 0xFFFF0000u));
  StoreVec<kStream>(hn::Or(even, odd), du32, reinterpret_cast<uint32_t*>(p));
}
template <bool kQuietNaN = true, bool kStream = false, class DF>
HWY_INLINE void StorePair(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                          f16_t* HWY_RESTRICT p) {
#if SIMDNORM_HW_F16  // in order, with cached stores (half vectors)
  StoreF(df, a, p);
  StoreF(df, b, p + hn::Lanes(df));
#else
  const hn::RebindToUnsigned<DF> du32;
  const auto bits =
      hn::Or(F16BitsFromF32(df, a), hn::ShiftLeft<16>(F16BitsFromF32(df, b)));
  StoreVec<kStream>(bits, du32, reinterpret_cast<uint32_t*>(p));
#endif
}

// A pair stored as StorePair stores it, where no lane is NaN or subnormal
// (which the hardware conversion reads as zero), so without StorePair's
// check: Hugging Face's y = t * g in TameChunk, zero or normal wherever its
// lane is not redone.
template <class DF>
HWY_INLINE void StorePairNormal(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                                bf16_t* HWY_RESTRICT p) {
#if SIMDNORM_AVX512BF16
  if constexpr (kZmm<DF>) {
    _mm512_storeu_si512(reinterpret_cast<void*>(p), PairBF16(a.raw, b.raw));
    return;
  }
#endif
  StorePair<false>(df, a, b, p);
}

#if SIMDNORM_AVX512BF16
// The 2N results (a, b), each lane within its bound (ea, eb) of the exact
// value and the bound covering the roundings of v -+ e (as for
// RoundsAlikeBF16), rounded by the hardware: rounding is monotonic, so
// where a - ea and a + ea round to the same bf16 the exact value between
// them does too. Stores the low ends' bf16 (kPaired: the pair's layout,
// a_i in word 2i and b_i in 2i + 1; else a then b, in order) and returns
// whether every lane's two ends agreed. For finite a and b with e >=
// 2^-126 on every lane (callers' floors): the conversion reads a
// subnormal end as zero, and ends that straddle zero keep opposite signs
// (-0 and +0 differ), so a flushed end never agrees where it should not;
// an inf has a NaN end.
template <bool kPaired>
HWY_INLINE bool StoreIfAlikeBF16(__m512 a, __m512 ea, __m512 b, __m512 eb,
                                 bf16_t* HWY_RESTRICT p) {
  // BothBF16(b, a) holds a in words 0-15 and b in 16-31: y's order.
  const __m512 a_lo = _mm512_sub_ps(a, ea), b_lo = _mm512_sub_ps(b, eb);
  const __m512 a_hi = _mm512_add_ps(a, ea), b_hi = _mm512_add_ps(b, eb);
  const __m512i lo = kPaired ? BothBF16(a_lo, b_lo) : BothBF16(b_lo, a_lo);
  const __m512i hi = kPaired ? BothBF16(a_hi, b_hi) : BothBF16(b_hi, a_hi);
  _mm512_storeu_si512(reinterpret_cast<void*>(p),
                      kPaired ? Interleaved(lo) : lo);
  return _mm512_cmpneq_epi16_mask(lo, hi) == 0;
}
#endif

#if SIMDNORM_HW_F16
// f16 as StoreIfAlikeBF16 for bf16: both ends of each lane rounded by the
// hardware (VCVTPS2PH, FCVT: round-to-nearest-even, monotonic, f16
// subnormals exact; an fp32 subnormal end, rounded or read as zero, gives
// +-0 either way), the low ends' f16 stored in order (a then b, whatever
// kPaired) and whether every lane's ends agreed. Ends that straddle zero
// give -0 and +0, which differ; an inf has a NaN end. For a and b that are
// not NaN (finite weights).
template <bool kPaired, class DF>
HWY_INLINE bool StoreIfAlike(DF df, hn::Vec<DF> a, hn::Vec<DF> ea,
                             hn::Vec<DF> b, hn::Vec<DF> eb,
                             f16_t* HWY_RESTRICT p) {
  const hn::Rebind<f16_t, DF> dh;
  const hn::Rebind<uint16_t, DF> du16;
  const auto bits = [&](hn::Vec<DF> v) {
    return hn::BitCast(du16, hn::DemoteTo(dh, v));
  };
  const auto a_lo = bits(hn::Sub(a, ea)), b_lo = bits(hn::Sub(b, eb));
  const auto alike = hn::And(hn::Eq(a_lo, bits(hn::Add(a, ea))),
                             hn::Eq(b_lo, bits(hn::Add(b, eb))));
  uint16_t* q = reinterpret_cast<uint16_t*>(p);
  hn::StoreU(a_lo, du16, q);
  hn::StoreU(b_lo, du16, q + hn::Lanes(df));
  return hn::AllTrue(du16, alike);
}
#endif

#if SIMDNORM_AVX512BF16
template <bool kPaired, class DF>
HWY_INLINE bool StoreIfAlike(DF /*df*/, hn::Vec<DF> a, hn::Vec<DF> ea,
                             hn::Vec<DF> b, hn::Vec<DF> eb,
                             bf16_t* HWY_RESTRICT p) {
  return StoreIfAlikeBF16<kPaired>(a.raw, ea.raw, b.raw, eb.raw, p);
}
#endif

// Whether StoreIfAlike rounds both ends of y's bounds by hardware for y of
// type TY: bf16 with AVX512_BF16, whole 512-bit vectors; f16 with
// SIMDNORM_HW_F16.
template <class DF, typename TY>
inline constexpr bool kHardwareEnds =
#if SIMDNORM_AVX512BF16
    (kZmm<DF> && std::is_same_v<TY, bf16_t>) ||
#endif
    (SIMDNORM_HW_F16 && std::is_same_v<TY, f16_t>);

// Stores of results already rounded to bf16 (their low halves are zero, as
// RoundsAlikeBF16 gives them): the top halves moved into place, no
// rounding. A pair as StorePair places it; one vector in order.
template <class DF>
HWY_INLINE void StoreRoundedPair(DF df, hn::Vec<DF> a, hn::Vec<DF> b,
                                 bf16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
  (void)df;
  const auto bits =
      hn::Or(hn::ShiftRight<16>(hn::BitCast(du32, a)), hn::BitCast(du32, b));
  hn::StoreU(bits, du32, reinterpret_cast<uint32_t*>(p));
}
template <class DF>
HWY_INLINE void StoreRounded(DF df, hn::Vec<DF> v, bf16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<DF> du32;
  const hn::RebindToSigned<DF> di32;
  const hn::Rebind<uint16_t, DF> d16;
  (void)df;
  const auto top = hn::ShiftRight<16>(hn::BitCast(du32, v));
  hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di32, top)), d16,
             reinterpret_cast<uint16_t*>(p));
}

// ------------------------------ Tails

// Whether the tails below move T's lanes by masked loads and stores
// instead of a memcpy call, which spilled the caller's vectors around it
// and, read back at once, stalled store-to-load forwarding (a 7x7 plane of
// bf16 BatchNorm spent a fifth of its time there). Only where the masked
// forms touch no byte of a masked-off lane (no fault, no write): AVX-512BW
// for 8- to 32-bit lanes, SVE's predicated loads and stores, AVX2's
// VPMASKMOV for 32-bit ones. Elsewhere Highway may emulate them with a
// whole-vector access.
#if (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3) || HWY_TARGET == HWY_SVE || \
    HWY_TARGET == HWY_SVE_256 || HWY_TARGET == HWY_SVE2 ||               \
    HWY_TARGET == HWY_SVE2_128
template <typename T>
inline constexpr bool kMaskedTail = true;
#elif HWY_ARCH_X86 && HWY_TARGET == HWY_AVX2
template <typename T>
inline constexpr bool kMaskedTail = sizeof(T) == 4;
#else
template <typename T>
inline constexpr bool kMaskedTail = false;
#endif

// Loads the first `count` (<= Lanes) elements; the other lanes are zero.
// A whole vector is loaded as it is: the copy, read back at once, stalls
// store-to-load forwarding (~10 ns a row on Zen 5, LeadSharesSign's).
template <class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadTailF(DF df, const T* HWY_RESTRICT p, size_t count) {
  if (count == hn::Lanes(df)) return LoadF(df, p);
  HWY_ALIGN T buf[kMaxFloatLanes];
  if constexpr (kMaskedTail<T>) {
    // The buffer is written and read whole, so the load is forwarded.
    using U = hwy::UnsignedFromSize<sizeof(T)>;
    const hn::Rebind<U, DF> du;
    hn::Store(hn::MaskedLoad(hn::FirstN(du, count), du,
                             reinterpret_cast<const U*>(p)),
              du, reinterpret_cast<U*>(buf));
  } else {
    std::memset(buf, 0, sizeof(buf));
    std::memcpy(buf, p, count * sizeof(T));
  }
  return LoadF(df, buf);
}

// Stores the first `count` (< Lanes) lanes of v.
template <bool kQuietNaN = true, class DF, typename T>
HWY_INLINE void StoreTailF(DF df, hn::Vec<DF> v, T* HWY_RESTRICT p,
                           size_t count) {
  HWY_ALIGN T buf[kMaxFloatLanes];
  StoreF<kQuietNaN>(df, v, buf);
  if constexpr (kMaskedTail<T>) {
    using U = hwy::UnsignedFromSize<sizeof(T)>;
    const hn::Rebind<U, DF> du;
    hn::BlendedStore(hn::Load(du, reinterpret_cast<const U*>(buf)),
                     hn::FirstN(du, count), du, reinterpret_cast<U*>(p));
  } else {
    std::memcpy(p, buf, count * sizeof(T));
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CONVERT_INL_H_

// The bits of floats and of the two 16-bit float formats (bf16, f16):
// exact widening, rounding a double once, NaN and finiteness tests, and the
// ordering in which neighbouring values differ by 1 (ulp distances).
#ifndef SIMDNORM_TESTS_SUPPORT_HALF_H_
#define SIMDNORM_TESTS_SUPPORT_HALF_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_test {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline float FloatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// The two 16-bit float formats. Both are sign-magnitude with the biased
// exponent above the stored mantissa bits, like IEEE binary32, so one set of
// functions serves both:
//  - bf16: the top half of a binary32; 8 significant bits, normal
//    exponents -126..127, subnormals below 2^-126.
//  - f16: IEEE binary16; 11 significant bits, normal exponents -14..15,
//    subnormals below 2^-14, largest finite 65504.
enum class Half { kBf16, kF16 };

struct HalfFormat {
  const char* name;
  int digits;      // significant bits, the implicit leading one included
  int emin, emax;  // exponents of the smallest and largest normal binades
  uint16_t inf;    // bits of +infinity (= the exponent field's mask)
  uint16_t qnan;   // the default quiet NaN
};

inline constexpr HalfFormat kBf16Format{"bf16", 8, -126, 127, 0x7F80u, 0x7FC0u};
inline constexpr HalfFormat kF16Format{"f16", 11, -14, 15, 0x7C00u, 0x7E00u};

constexpr const HalfFormat& FormatOf(Half h) {
  return h == Half::kBf16 ? kBf16Format : kF16Format;
}
// The format of a 16-bit dtype (anything but F16 gives bf16).
inline Half HalfOf(simdnorm_dtype t) {
  return t == SIMDNORM_F16 ? Half::kF16 : Half::kBf16;
}

inline bool HalfIsNaN(Half h, uint16_t b) {
  return (b & 0x7FFFu) > FormatOf(h).inf;
}
inline bool HalfIsFinite(Half h, uint16_t b) {
  const uint16_t inf = FormatOf(h).inf;
  return (b & inf) != inf;
}

// The value of a 16-bit float, exactly (both formats widen exactly to
// float, and to double).
double HalfToDouble(Half h, uint16_t b);

// Rounds a double to the format ONCE (nearest, ties to even), without going
// through float (double -> float -> 16 bits would round twice). Overflow
// gives infinity, subnormals are kept, NaN gives the default quiet NaN
// with d's sign (with nan_sign false: positive, as simdnorm-accuracy has
// always written it).
uint16_t RoundToHalf(Half h, double d, bool nan_sign = true);

// Position of a 16-bit float on the number line as an integer (+0 and -0
// both 0), so that neighbours differ by 1 and ulp distances are differences.
// The same for both formats. Branch-free: the sign is a coin toss in the
// hot loops of simdnorm-accuracy.
inline int32_t HalfOrdered(uint16_t b) {
  const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
  const int32_t neg = -static_cast<int32_t>(b >> 15);  // 0 or -1
  return (mag ^ neg) - neg;
}
// The inverse of HalfOrdered (0 gives +0).
inline uint16_t HalfFromOrdered(int32_t o) {
  return static_cast<uint16_t>(o >= 0 ? o : (0x8000 | -o));
}

// bf16
inline float Bf16ToFloat(uint16_t b) {
  return simdnorm::bf16::from_bits(b).to_float();
}
inline uint16_t Bf16Bits(float f) { return simdnorm::bf16::from_float(f).bits; }
inline bool Bf16IsNaN(uint16_t b) { return HalfIsNaN(Half::kBf16, b); }
inline bool Bf16IsFinite(uint16_t b) { return HalfIsFinite(Half::kBf16, b); }
inline int32_t Bf16Ordered(uint16_t b) { return HalfOrdered(b); }
inline int32_t Bf16UlpDistance(uint16_t a, uint16_t b) {
  return std::abs(HalfOrdered(a) - HalfOrdered(b));
}
// What a truncating conversion (Highway's DemoteTo) produces.
inline uint16_t Bf16Truncate(float f) {
  return static_cast<uint16_t>(FloatBits(f) >> 16);
}
inline uint16_t RoundToBf16(double d) { return RoundToHalf(Half::kBf16, d); }

// f16 (IEEE binary16)
inline float F16ToFloat(uint16_t b) {
  return static_cast<float>(HalfToDouble(Half::kF16, b));  // exact
}
inline uint16_t RoundToF16(double d) { return RoundToHalf(Half::kF16, d); }
// float -> f16, nearest-even (float -> double is exact: one rounding).
inline uint16_t F16Bits(float f) { return RoundToF16(f); }
inline bool F16IsNaN(uint16_t b) { return HalfIsNaN(Half::kF16, b); }
inline bool F16IsFinite(uint16_t b) { return HalfIsFinite(Half::kF16, b); }

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_HALF_H_

// Shared vocabulary of simdnorm-accuracy: dtypes, bf16 and f16 bit helpers,
// bounds.
#ifndef SIMDNORM_TOOLS_ACCURACY_COMMON_H_
#define SIMDNORM_TOOLS_ACCURACY_COMMON_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/vocabulary.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_accuracy {

using simdnorm_tools::default_variants;
using simdnorm_tools::dtype_name;
using simdnorm_tools::kind_name;
using simdnorm_tools::parse_dtype;
using simdnorm_tools::parse_variant;
using simdnorm_tools::Variant;

// The core's contract, checked on every library row (never loosened here).
constexpr double kF32MaxScaledUlps = 32.0;
// bf16 and f16 output: correctly rounded (the default), so every element
// equals the exact result rounded once, on every ISA.
constexpr double kBf16MinExactShare = 1.0;
constexpr double kBf16MaxUlps = 1.0;
// f16 output: the same rule as bf16, in f16 ulps.
constexpr double kF16MinExactShare = 1.0;
constexpr double kF16MaxUlps = 1.0;
// int8 output: each group's scale within 1e-6 relative of the float64 one,
// each q within 1 of the float64 q = RNE(y64 / scale64).
constexpr double kI8MaxScaleRelErr = 1e-6;
constexpr double kI8MaxQDiff = 1.0;

// Data types of x, y and the weights (gamma, beta) of one call.
struct Dtypes {
  simdnorm_dtype x = SIMDNORM_F32;
  simdnorm_dtype y = SIMDNORM_F32;
  simdnorm_dtype w = SIMDNORM_F32;
};

inline bool operator==(const Dtypes& a, const Dtypes& b) {
  return a.x == b.x && a.y == b.y && a.w == b.w;
}

// bf16 and f16: 16-bit floats, held as their bits.
inline bool is_half(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 || t == SIMDNORM_F16;
}

// "x/y/w", e.g. "bf16/f32/f32".
inline std::string dtypes_label(const Dtypes& d) {
  return std::string(dtype_name(d.x)) + "/" + dtype_name(d.y) + "/" +
         dtype_name(d.w);
}

inline float bf16_to_float(uint16_t b) {
  return simdnorm::bf16::from_bits(b).to_float();
}

// Float to bf16, round to nearest-even (exact when f is a bf16 value).
inline uint16_t bf16_round(float f) {
  return simdnorm::bf16::from_float(f).bits;
}

// Float to bf16 by dropping the low 16 bits (the shortcut the library avoids).
inline uint16_t bf16_truncate(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return static_cast<uint16_t>(u >> 16);
}

// A float64 value rounded ONCE to bf16, to nearest-even, with bf16's own
// subnormal range and overflow to infinity (no detour through float, which
// would round twice).
uint16_t bf16_round_once(double d);

// Position of a bf16 value in the ordering of bf16 values: consecutive
// values differ by 1, +0 and -0 both map to 0. Not meaningful for NaN.
inline int32_t bf16_order(uint16_t b) {
  // Branch-free (the sign is a coin toss in the hot loops): mag or -mag.
  const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
  const int32_t neg = -static_cast<int32_t>(b >> 15);  // 0 or -1
  return (mag ^ neg) - neg;
}

inline bool bf16_is_nan(uint16_t b) { return (b & 0x7FFFu) > 0x7F80u; }

// IEEE binary16: widening is exact (subnormals too; NaN stays NaN).
float f16_to_float(uint16_t b);

// A float64 value rounded ONCE to f16, to nearest-even: subnormals kept
// (step 2^-24), magnitudes >= 65520 to infinity, NaN to the quiet NaN.
uint16_t f16_round_once(double d);

inline bool f16_is_nan(uint16_t b) { return (b & 0x7FFFu) > 0x7C00u; }

// The 16-bit formats by dtype (t is BF16 or F16). Both are sign-magnitude,
// so bf16_order orders f16 values too.
inline float half_to_float(simdnorm_dtype t, uint16_t b) {
  return t == SIMDNORM_F16 ? f16_to_float(b) : bf16_to_float(b);
}
inline uint16_t half_round_once(simdnorm_dtype t, double d) {
  return t == SIMDNORM_F16 ? f16_round_once(d) : bf16_round_once(d);
}
inline bool half_is_nan(simdnorm_dtype t, uint16_t b) {
  return t == SIMDNORM_F16 ? f16_is_nan(b) : bf16_is_nan(b);
}
// 2^-(significant bits - 1): the ulp of 1 in t (F32, BF16 or F16).
inline double ulp_of_one(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 ? 0x1.0p-7
                            : (t == SIMDNORM_F16 ? 0x1.0p-10 : 0x1.0p-23);
}

// v rounded once to t (F32, BF16 or F16), as a double.
inline double round_to(simdnorm_dtype t, double v) {
  if (t == SIMDNORM_F32) return static_cast<float>(v);
  return half_to_float(t, half_round_once(t, v));
}

// The shortest decimal that reads back as the same float ("1e-05").
inline std::string shortest_float(float v) {
  char buf[40];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_COMMON_H_

// Shared vocabulary of simdnorm-accuracy: dtypes, bf16 bit helpers, bounds.
#ifndef SIMDNORM_TOOLS_ACCURACY_COMMON_H_
#define SIMDNORM_TOOLS_ACCURACY_COMMON_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace simdnorm_accuracy {

// The core's contract, checked on every library row (never loosened here).
constexpr double kF32MaxScaledUlps = 32.0;
constexpr double kBf16MinExactShare = 0.999;
constexpr double kBf16MaxUlps = 1.0;

// Data types of x, y and the weights (gamma, beta) of one call.
struct Dtypes {
  simdnorm_dtype x = SIMDNORM_F32;
  simdnorm_dtype y = SIMDNORM_F32;
  simdnorm_dtype w = SIMDNORM_F32;
};

inline bool operator==(const Dtypes& a, const Dtypes& b) {
  return a.x == b.x && a.y == b.y && a.w == b.w;
}

inline const char* dtype_name(simdnorm_dtype t) {
  return t == SIMDNORM_BF16 ? "bf16" : "f32";
}

inline const char* kind_name(simdnorm_kind k) {
  return k == SIMDNORM_RMSNORM ? "rmsnorm" : "layernorm";
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
  return (b & 0x8000u) ? -static_cast<int32_t>(b & 0x7FFFu)
                       : static_cast<int32_t>(b);
}

inline bool bf16_is_nan(uint16_t b) { return (b & 0x7FFFu) > 0x7F80u; }

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

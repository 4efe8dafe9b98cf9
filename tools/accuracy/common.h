// simdnorm-accuracy's bounds, and the exact roundings its truth needs.
#ifndef SIMDNORM_TOOLS_ACCURACY_COMMON_H_
#define SIMDNORM_TOOLS_ACCURACY_COMMON_H_

#include <cstdint>
#include <string>

#include "common/vocabulary.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm_accuracy {

using simdnorm_tools::dtype_name;
using simdnorm_tools::Dtypes;
using simdnorm_tools::half_to_float;
using simdnorm_tools::is_half;
using simdnorm_tools::kind_info;
using simdnorm_tools::kind_name;
using simdnorm_tools::Variant;

// The core's contract, checked on every library row (never loosened here).
constexpr double kF32MaxScaledUlps = 32.0;
// bf16 and f16 output: correctly rounded (the default), so every element
// equals the exact result rounded once, on every ISA.
constexpr double kHalfMinExactShare = 1.0;
constexpr double kHalfMaxUlps = 1.0;
// int8 output: each group's scale within 1e-6 relative of the float64 one,
// each q within 1 of the float64 q = RNE(y64 / scale64).
constexpr double kI8MaxScaleRelErr = 1e-6;
constexpr double kI8MaxQDiff = 1.0;

// "x/y/w", e.g. "bf16/f32/f32".
std::string dtypes_label(const Dtypes& d);

// A float64 value rounded ONCE to t (BF16 or F16), to nearest-even, with
// the format's own subnormals and overflow to infinity (no detour through
// float, which would round twice); NaN to the quiet NaN.
uint16_t half_round_once(simdnorm_dtype t, double d);

// v rounded once to t (F32, BF16 or F16), as a double.
double round_to(simdnorm_dtype t, double v);

// Position of a bf16 or f16 value (both sign-magnitude) in the ordering of
// the format's values: consecutive values differ by 1, +0 and -0 both map
// to 0. Not meaningful for NaN.
inline int32_t half_order(uint16_t b) {
  // Branch-free (the sign is a coin toss in the hot loops): mag or -mag.
  const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
  const int32_t neg = -static_cast<int32_t>(b >> 15);  // 0 or -1
  return (mag ^ neg) - neg;
}

inline bool half_is_nan(simdnorm_dtype t, uint16_t b) {
  return (b & 0x7FFFu) > (t == SIMDNORM_F16 ? 0x7C00u : 0x7F80u);
}

// The shortest decimal that reads back as the same float ("1e-05").
std::string shortest_float(float v);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_COMMON_H_

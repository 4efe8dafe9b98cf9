// simdnorm-accuracy's bounds, the exact roundings its truth needs, and the
// operands of one checked call in their storage types with what the
// variants make of the float64 truth: the fused add's h, Gemma's scale,
// Hugging Face's rounding of xhat, int8's quantization.
#ifndef SIMDNORM_TOOLS_ACCURACY_NUMERICS_H_
#define SIMDNORM_TOOLS_ACCURACY_NUMERICS_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/vocabulary.h"

namespace simdnorm_accuracy {

using simdnorm_tools::Dtypes;
using simdnorm_tools::dtype_name;
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

std::string dtypes_label(const Dtypes& d);  // "x/y/w", e.g. "bf16/f32/f32"
// The shortest decimal that reads back as the same float ("1e-05").
std::string shortest_float(float v);

// A float64 value rounded ONCE to t (BF16 or F16), to nearest-even, with
// the format's own subnormals and overflow to infinity (no detour through
// float, which would round twice); NaN to the quiet NaN.
uint16_t half_round_once(simdnorm_dtype t, double d);
// v rounded once to t (F32, BF16 or F16), as a double.
double round_to(simdnorm_dtype t, double v);
inline bool half_is_nan(simdnorm_dtype t, uint16_t b) {
  return (b & 0x7FFFu) > (t == SIMDNORM_F16 ? 0x7C00u : 0x7F80u);
}
// Position of a bf16 or f16 value (both sign-magnitude) among the format's
// values: consecutive values differ by 1, +0 and -0 both map to 0.
inline int32_t half_order(uint16_t b) {
  // Branch-free (the sign is a coin toss in the hot loops): mag or -mag.
  const int32_t mag = static_cast<int32_t>(b & 0x7FFFu);
  const int32_t neg = -static_cast<int32_t>(b >> 15);  // 0 or -1
  return (mag ^ neg) - neg;
}

// Values of one dtype (F32, BF16 or F16): f holds them widened to float,
// bits the stored 16-bit values of the half types.
struct Operand {
  simdnorm_dtype type = SIMDNORM_F32;
  std::vector<float> f;
  std::vector<uint16_t> bits;
  const void* data() const {
    return is_half(type) ? static_cast<const void*>(bits.data()) : f.data();
  }
};
// v rounded to t (first to bf16 when bf16q: the quantized copies).
Operand quantize(const std::vector<float>& v, simdnorm_dtype t, bool bf16q);
// h = a + b computed exactly and rounded once to a.type (through double:
// double rounding is innocuous for sums of floats of at most 24 bits).
Operand rounded_sum(const Operand& a, const Operand& b);

// Weights after quantization to their dtype. Gemma's are drawn around 0
// (gamma - 1 of the plain ones), and scale = fl32(gamma_offset + gamma).
struct Weights {
  Operand gamma, beta;
  std::vector<float> scale;  // what multiplies xhat: the metrics' gamma
};
Weights make_weights_for(simdnorm_dtype w, size_t cols, uint64_t seed,
                         float gamma_offset);

// Hugging Face's order: truth[i] = round_x(xhat[i]) * scale + beta, exact
// products in float64. Where x is bf16 or f16 and the fp32 bound around
// xhat (32 * 2^-23 * max(1, |xhat|)) contains a rounding boundary of x,
// [lo, hi] is the interval of admissible results, else lo = hi = NaN.
// For f32 x no interval (lo, hi left empty).
void hf_round_truth(simdnorm_dtype x_type, const double* xhat,
                    const float* scale, const float* beta, size_t rows,
                    size_t cols, double* truth, std::vector<double>* lo,
                    std::vector<double>* hi);
// Whether element i has an interval [lo[i], hi[i]] of admissible truths.
inline bool has_interval(const double* lo, size_t i) {
  return lo != nullptr && !std::isnan(lo[i]);
}

// The float64 truth of an int8 output: per group (rows x groups, row-major)
// the scale and its admissible interval, per element q64 and its interval.
struct I8Truth {
  size_t group = 0, groups_per_row = 0;
  std::vector<double> scale, scale_lo, scale_hi;  // NaN: group excluded
  std::vector<int16_t> q, q_lo, q_hi;
  size_t group_of(size_t i, size_t cols) const {
    return (i / cols) * groups_per_row + (i % cols) / group;
  }
};
// Quantizes the truth as the contract says (interval bounds lo/hi may be
// null; where given and not NaN, they widen the admissible q and scales).
I8Truth quantize_truth(const double* truth, const double* lo, const double* hi,
                       size_t rows, size_t cols, size_t group);

// Elements i < n of a and b (type t) that differ (any NaN equals any NaN).
size_t count_differences(simdnorm_dtype t, const void* a, const void* b,
                         size_t n);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_NUMERICS_H_

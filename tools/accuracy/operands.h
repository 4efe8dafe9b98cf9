// The operands of one checked call, in their storage types, and what the
// variants make of the float64 truth: the fused add's h, Gemma's scale,
// Hugging Face's rounding of xhat, int8's quantization.
#ifndef SIMDNORM_TOOLS_ACCURACY_OPERANDS_H_
#define SIMDNORM_TOOLS_ACCURACY_OPERANDS_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common.h"

namespace simdnorm_accuracy {

// Values of one dtype (F32, BF16 or F16): f holds them widened to float,
// bits the stored 16-bit values of the half types.
struct Operand {
  simdnorm_dtype type = SIMDNORM_F32;
  std::vector<float> f;
  std::vector<uint16_t> bits;
  const void* data() const {
    return is_half(type) ? static_cast<const void*>(bits.data())
                         : static_cast<const void*>(f.data());
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

// Whether element i has an interval [lo[i], hi[i]] of admissible truths.
inline bool has_interval(const double* lo, size_t i) {
  return lo != nullptr && !std::isnan(lo[i]);
}

// Elements i < n of a and b (type t) that differ (any NaN equals any NaN).
size_t count_differences(simdnorm_dtype t, const void* a, const void* b,
                         size_t n);

}  // namespace simdnorm_accuracy

#endif  // SIMDNORM_TOOLS_ACCURACY_OPERANDS_H_

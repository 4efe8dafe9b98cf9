// The comparison of the library's outputs with the float64 reference: the
// bounds of the spec (docs/accuracy.md), the checkers of one element (fp32,
// bf16/f16, Hugging Face's rounding of xhat) or one int8 group, and the
// statistics they accumulate over a test.
#ifndef SIMDNORM_TESTS_SUPPORT_CHECKS_H_
#define SIMDNORM_TESTS_SUPPORT_CHECKS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "simdnorm/simdnorm.h"
#include "support/half.h"

namespace simdnorm_test {

// The size of the terms of y = xhat * gamma + beta that the fp32 bound is
// relative to (docs/accuracy.md, "scaled ulps").
inline double Terms(double xhat, double gamma, double beta) {
  return std::fabs(gamma) * std::max(1.0, std::fabs(xhat)) + std::fabs(beta);
}

// The fp32 error bound of the spec, relative to the float64 truth.
inline double F32Bound(double xhat, double gamma, double beta) {
  return 32.0 * std::ldexp(1.0, -23) * Terms(xhat, gamma, beta);
}

// The scale the contract applies: fl32(gamma_offset + gamma), and gamma
// itself (even -0) when the offset is 0.
inline double EffectiveScale(float gamma_offset, double gamma) {
  if (gamma_offset == 0.0f) return gamma;
  return static_cast<float>(gamma_offset + static_cast<float>(gamma));
}

// True when two elements of type t hold the same bits, or both a NaN.
bool SameElement(simdnorm_dtype t, const unsigned char* a,
                 const unsigned char* b);

// The bf16 rule (and the f16 rule: the same with f16's format). The spec's
// literal rule is: every element within 1 bf16 ulp of the reference rounded
// once, and exactly equal to it in >= 99.9% of the elements of a test. Two
// parts of it cannot be met by any kernel that computes in fp32 (even one
// whose fp32 result is the truth correctly rounded), so by default the suite
// applies it as follows:
//  - Where the output cancels (y = xhat*gamma + beta much smaller than
//    |gamma xhat| + |beta|), an fp32 error within the spec's fp32 bound B is
//    many bf16 ulps of y. So an element also passes when it is the rounding
//    of some value within B of the truth: got in [RNE(ref-B), RNE(ref+B)]
//    (infinity included when RNE(ref+B) is infinite: f16 overflows at 65520).
//  - Where [ref-B, ref+B] holds a bf16 rounding boundary, an fp32 kernel
//    cannot know on which side the truth lies (with bf16 gamma/beta and
//    xhat = +-1, g + b is often exactly a bf16 tie). The 99.9% rate is
//    counted over the other elements, where every result within the fp32
//    bound rounds to the reference: truncation still fails it (~50%).
// SIMDNORM_TEST_LITERAL_BF16=1 applies the literal rule instead (to f16
// output too).
bool LiteralBf16Rule();

// Accumulated over one test.
struct Stats {
  size_t f32_checked = 0;
  double f32_worst = 0.0;   // max |y - ref| / bound
  size_t bf16_checked = 0;  // finite references
  size_t bf16_exact = 0;
  size_t bf16_window_only = 0;  // > 1 ulp off, within the fp32-bound window
  size_t bf16_conditioned = 0;  // no rounding boundary within +-B of ref
  size_t bf16_conditioned_exact = 0;
  int32_t bf16_worst_ulps = 0;
  // The same for f16 output.
  size_t f16_checked = 0;
  size_t f16_exact = 0;
  size_t f16_window_only = 0;
  size_t f16_conditioned = 0;
  size_t f16_conditioned_exact = 0;
  int32_t f16_worst_ulps = 0;
  // I8 output (CheckI8Group).
  size_t i8_groups = 0;          // groups with a finite non-zero scale
  size_t i8_scaled_only = 0;     // scale > 1e-6 off, within the scaled rule
  size_t i8_special_groups = 0;  // groups of zeros or with a non-finite max
  size_t i8_q_checked = 0;       // q of the i8_groups
  size_t i8_q_exact = 0;         // equal to the float64 q
  double i8_worst_scale = 0.0;   // max |scale - scale64| / scale64
  size_t nan_checked = 0;        // elements whose reference is NaN
  size_t failures = 0;           // elements (or buffers) out of spec
  size_t reported = 0;           // failures reported in detail

  // Set by families where many exact results sit on a bf16 rounding tie
  // (see RunFamily in hard_rows_test.cc).
  bool ties_expected = false;

  // The counters of one 16-bit output format.
  struct HalfTally {
    size_t& checked;
    size_t& exact;
    size_t& window_only;
    size_t& conditioned;
    size_t& conditioned_exact;
    int32_t& worst_ulps;
  };
  HalfTally Tally(Half h);

  // >= 99.9% of all bf16 (f16) outputs equal the once-rounded reference.
  // Where ties are expected, the share is taken over the elements that have
  // no rounding boundary within the fp32 bound of the truth.
  bool HalfRateOk(Half h) const;
  bool Bf16RateOk() const { return HalfRateOk(Half::kBf16); }
  bool F16RateOk() const { return HalfRateOk(Half::kF16); }
  // A failure is reported in detail for the first few only.
  bool ShouldReport() {
    ++failures;
    return reported++ < 8;
  }
};

// fp32 output element against the float64 truth. False (with *why) when out
// of spec. A NaN reference needs a NaN; an infinite one a non-finite value.
bool CheckF32(float got, double ref, double xhat, double gamma, double beta,
              Stats* st, std::string* why);

// 16-bit float output element: `want` is the reference rounded once to the
// format (from simdnorm_normalize_reference), `ref` the float64 truth,
// `bound` the fp32 bound of the element (F32Bound). See LiteralBf16Rule for
// the rule.
bool CheckHalf(Half h, uint16_t got, uint16_t want, double ref, double bound,
               Stats* st, std::string* why);

inline bool CheckBf16(uint16_t got, uint16_t want, double ref, double bound,
                      Stats* st, std::string* why) {
  return CheckHalf(Half::kBf16, got, want, ref, bound, st, why);
}
inline bool CheckF16(uint16_t got, uint16_t want, double ref, double bound,
                     Stats* st, std::string* why) {
  return CheckHalf(Half::kF16, got, want, ref, bound, st, why);
}

// The rule of SIMDNORM_ROUND_NORMALIZED, y = round_y(round_x(xhat) * scale
// + beta). The kernel computes xhat in fp32 and rounds that to x_type; where
// the true xhat T lies within the fp32 bound Bx = F32Bound(T, 1, 0) of an
// x_type rounding boundary it may round to the neighbour of round_x(T). So
// an element passes when, for SOME r = round_x(v) with |v - T| <= Bx, it
// passes the normal output rule (CheckF32 / CheckHalf) against the truth
// r * scale + beta (float64), with the fp32 bound F32Bound(r, scale, beta)
// on top. Those r are a run of consecutive x_type values, usually one or
// two; when the run is long (x_type F32, or T within Bx of 0) it is taken
// as the interval it spans (the outputs of neighbouring r are then much
// closer together than the output bound). `got`: the output's bits (float
// bits for F32); `want`: the reference's once-rounded output bits (16-bit
// y: the exact share is counted against it); `ref`: the reference's
// unrounded y (NaN or infinite: the usual non-finite rules).
bool CheckRoundNormalized(simdnorm_dtype x_type, simdnorm_dtype y_type,
                          uint32_t got, uint16_t want, double ref, double T,
                          double scale, double beta, Stats* st,
                          std::string* why);

// I8 output, one group of n elements. y64: the float64 truth (unrounded y,
// reference_f64) of the group; terms: Terms(xhat, scale, beta) of each
// element (NULL: the literal rule only); ref_q, ref_scale: the reference's
// stored q and scale (simdnorm_normalize_reference); got_q, got_scale: the
// library's. With s64 = max|y64| / 127 (float64):
//  - s64 finite and > 0: |got_scale - s64| <= 1e-6 s64 and every q within 1
//    of the reference's q. Like the bf16 rule, the 1e-6 is applied to the
//    scaled magnitude of the largest element, 1e-6 max(|y|, Terms) / 127:
//    where that y cancels (|y| far below |gamma| max(1, |xhat|) + |beta|,
//    e.g. a short last group, or |xhat| << 1 in LayerNorm, whose xhat has
//    an absolute fp32 error), an fp32 kernel cannot reach 1e-6 of |y| (an
//    fp32 xhat alone is off by ~2^-24 max(1, |xhat|)). Elsewhere Terms ~ |y|
//    and the rule is the literal one. SIMDNORM_TEST_LITERAL_BF16=1 applies
//    the literal 1e-6 s64 everywhere;
//  - s64 == 0 (a group of zeros): got_scale == 0 and every q == 0;
//  - s64 NaN (a NaN in the row): got_scale NaN; s64 infinite: got_scale
//    +inf; every q == 0.
// The premise is checked too: the reference's stored scale must be the
// exact max|y| / 127 rounded to float (within half an fp32 ulp of s64, or
// the scale's rule where y cancels) and its q = RNE(y / that scale) clamped
// to [-127, 127] from the exact y (within 1 of it from y64).
bool CheckI8Group(const int8_t* got_q, float got_scale, const int8_t* ref_q,
                  float ref_scale, const double* y64, const double* terms,
                  size_t n, Stats* st, std::string* why);

// The literal rule only (no Terms known): |got_scale - s64| <= 1e-6 s64.
inline bool CheckI8Group(const int8_t* got_q, float got_scale,
                         const int8_t* ref_q, float ref_scale,
                         const double* y64, size_t n, Stats* st,
                         std::string* why) {
  return CheckI8Group(got_q, got_scale, ref_q, ref_scale, y64, nullptr, n, st,
                      why);
}

}  // namespace simdnorm_test

#endif  // SIMDNORM_TESTS_SUPPORT_CHECKS_H_

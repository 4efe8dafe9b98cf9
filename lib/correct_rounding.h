// Correctly rounded bf16 and fp16 outputs (docs/accuracy.md, "Correct
// rounding"): the exact result of the contract rounded once to nearest-even,
// so every ISA and machine writes the same bits.
//
// The kernels compute in fp32 with a per-element error bound and send the
// few elements whose bound reaches a rounding boundary here. This file
// decides them: first in double with a rigorous bound (from the row's
// double statistics and their error bounds, RowStats), and where even that
// straddles a boundary (an exact tie, or closer than ~1e-15), exactly with
// dyadic integers (lib/dyadic.h). The float64 reference uses the same code
// for its 16-bit outputs.
#ifndef SIMDNORM_LIB_CORRECT_ROUNDING_H_
#define SIMDNORM_LIB_CORRECT_ROUNDING_H_

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "lib/dyadic.h"
#include "lib/ops.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm {
namespace internal {

// A row's statistics in double with bounds on their errors against the
// exact values of the row as given: k the shift of the sums, c = mean(x -
// k) (centered kinds; else k = c = 0), v = sum((x - center)^2) within dv,
// and r = 1 / D(v), the kind's denominator (lib/ops.h), within relative
// error er; er < 0: no usable bound (the row's elements are decided
// exactly).
struct RowStats {
  double k, c, v, dc, dv, r, er;
};

// How the sums of StatsFromSums were made: each d = x - k rounded once, to
// within ud |d|; s = sum d within gamma_s sum|d| of the sum of those d, and
// q = sum d^2 within gamma_q sum d^2 + floor_q of theirs (floor_q: products
// that underflowed).
struct SumModel {
  double ud, gamma_s, gamma_q, floor_q;
};

// The model of sums made in double, in any order, from float x and k.
SumModel DoubleSums(size_t n);

// The model of sums made in fp32 (unit 2^-24, fp32 d = x - k) with at most
// `depth` roundings per term, then added up in double. flush: the fp32
// operations read subnormal inputs as 0 and flush subnormal results to 0
// (VDPBF16PS), so that each may lose up to 2^-126, not 2^-150.
SumModel Fp32Sums(size_t n, int depth, bool flush = false);

// What StatsFromSums needs of a call beside a row's sums: the kind, n, eps,
// the sums' model and the bound factors made of them alone, made once a
// call (its rows share them; each was a division or a few products a row).
struct StatsPlan {
  int kind;
  bool centered;
  ScaleForm scale_form;   // ScaleFormOf(kind)
  double nd, inv_n, eps;  // n, 1 / n rounded once, eps
  SumModel m;
  double q_up;   // 1 + 2 gamma_q + 4u: an upper bound of the squares' sum
  double g_sum;  // gamma_s + ud: the sum's error and each d's rounding
  double g_sq;   // gamma_q + 2.01 ud: the same for the squares
};
StatsPlan PlanStats(int kind, size_t n, float eps, const SumModel& m);

// RowStats of a kind (simdnorm_kind) from sums over the n elements d = x -
// k: s = sum d, q = sum d^2. Uncentered kinds: k = 0 and s unused.
RowStats StatsFromSums(const StatsPlan& p, double k, double s, double q);
inline RowStats StatsFromSums(int kind, size_t n, float eps, double k, double s,
                              double q, const SumModel& m) {
  return StatsFromSums(PlanStats(kind, n, eps, m), k, s, q);
}

// Whether LayerNorm's shift k is so far from the mean that the variance
// lost more than 2^-40 to cancellation: then k + c is the better shift.
inline bool ShouldRecenter(bool centered, const RowStats& st) {
  return centered && st.c != 0.0 && (st.er < 0.0 || st.er > 0x1p-40);
}
bool ShouldRecenter(int kind, const RowStats& st);

// One row as the contract sees it (h = x + residual where there is one).
// Its element j is x[(j / run) * run_stride + (j % run) * step]: a
// contiguous row by default; a GroupNorm group in NHWC (runs of cg
// channels, c apart) or a BatchNorm channel (runs of hw, or every c-th
// element) otherwise.
struct CrRow {
  int kind;       // simdnorm_kind
  const void* x;  // n elements of x_storage
  simdnorm_dtype x_storage;
  simdnorm_dtype x_type;  // the type xhat is rounded to with round_normalized
  bool round_normalized;
  simdnorm_dtype y_type;  // BF16 or F16
  size_t n;
  float eps;
  RowStats st;
  size_t run = SIZE_MAX, step = 1, run_stride = 0;
};

// Element j of a row as a float (exact).
float RowElement(const CrRow& row, size_t j);

// A LayerNorm row of x (GroupNorm's groups, BatchNorm's channels: the
// contract's order, without Hugging Face's rounding) with 16-bit y.
inline CrRow LayerNormRow(const void* x, simdnorm_dtype x_storage,
                          simdnorm_dtype y_type, size_t n, float eps,
                          const RowStats& st) {
  return CrRow{
      SIMDNORM_LAYERNORM, x, x_storage, x_storage, false, y_type, n, eps, st};
}

// Whether a row's results are NaN throughout: a NaN (LayerNorm: or inf)
// element, or an infinite 1/sqrt.
inline bool NaNStats(const RowStats& st) {
  return !std::isfinite(st.v) || !std::isfinite(st.c) || !std::isfinite(st.r);
}

// S = sum x and Q = sum x^2 of a row, exactly, and d = (n D)^2 (xhat =
// n (x - center) / sqrt(d), correct_rounding.cc's XhatOf).
struct ExactSums {
  Dyadic n, s, q, d;
};

// The exact sums of a row, made on first need (once per row), in place.
// given: GivenMoments' mean, var and eps, from which they are made (most
// inference channels never need them). Their room is left uninitialized
// until then (Exact() constructs them): four Dyadics are 1152 bytes of
// zeros, which every row's cache wrote and a few rows in a thousand read.
// (A std::optional was zeroed whole by GCC 12: `rep stos`, 0.95x.)
struct CrCache {
  bool has_exact = false;
  bool given = false;
  float mean = 0.0f, var = 0.0f, eps = 0.0f;
  alignas(ExactSums) unsigned char exact_room[sizeof(ExactSums)];
};

// BatchNorm inference, whose statistics are given: xhat = (x - mean) /
// sqrt(var + eps) is a LayerNorm row of one element with the exact sums S
// = mean and d = var + eps (XhatOf's p0 = x - S). kFinite: *st and *cache
// are that row's (r and its bound in double; the exact sums, made on first
// need); the row's x may be any elements (CrRow's accessor) and its n is
// 1. kNaN: var + eps is not positive or is NaN, or mean is NaN: a NaN
// channel. kInfinite: mean or var + eps is infinite; then every y is
// exactly InferenceInDouble's (x - mean is inf, or xhat is +-0, or NaN).
enum class Moments { kFinite, kNaN, kInfinite };
// Inline: called once per BatchNorm plane, whose caller read *st back at
// once as wider loads than the call's stores (a forwarding stall).
inline Moments GivenMoments(float mean, float var, float eps, RowStats* st,
                            CrCache* cache) {
  const double d = static_cast<double>(var) + static_cast<double>(eps);
  if (std::isnan(mean) || !(d > 0.0)) return Moments::kNaN;
  if (std::isinf(mean) || std::isinf(d)) return Moments::kInfinite;
  // d, its square root and 1 / that: each rounded once (relative 2^-53),
  // so r is within (1 + u)^3 / sqrt(1 - u) - 1 < 4u of 1 / sqrt(var +
  // eps). A positive d is exact's sign: a sum of two doubles is 0 only
  // when exactly 0.
  *st = RowStats{mean, 0.0, d, 0.0, 0.0, 1.0 / std::sqrt(d), 4 * 0x1p-53};
  cache->has_exact = false;
  cache->given = true;
  cache->mean = mean;
  cache->var = var;
  cache->eps = eps;
  return Moments::kFinite;
}

double InferenceInDouble(float x, float mean, float var, float eps, float g,
                         float b);

// Bits of the correctly rounded y_j = xhat_j * g + b (g the fp32 scale,
// with the offset added; b = beta or -0).
uint16_t CorrectlyRoundedBits(const CrRow& row, size_t j, float g, float b,
                              CrCache& cache);

// CorrectlyRoundedBits' first step alone (the same code): true, with the
// bits, where the row's statistics and their bounds decide y_j in double;
// false where they leave it open (or y_j is not a finite x's xhat * g + b
// in the default order). Rows that came with their fp32 statistics try it
// before they make their double ones (LazyCrRow): the looser bound
// decides most of their open lanes.
bool DecidedInDouble(const CrRow& row, size_t j, float g, float b,
                     uint16_t* bits);

// Bits of t * g + b rounded once to y_type (BF16 or F16), for t of at most
// 11 significant bits: Hugging Face's order once t, xhat rounded to x_type,
// is known. Exact, by TwoSum in double.
uint16_t RoundProductSum(simdnorm_dtype y_type, double t, float g, float b);

// The weights of a row as the kernels form them: g = gamma (+ offset, in
// fp32) or `scale` without gamma; b = beta or -0.
struct CrWeights {
  const void* gamma;
  const void* beta;
  simdnorm_dtype type;
  float offset, scale;
  bool has_offset;
  float G(size_t j) const;
  float B(size_t j) const;
};

// int8 output of the elements [j0, j1) of a row, from the exact y: *scale =
// fl32(max|y| / 127) (0 for a group of zeros; inf or NaN where a weight is
// not finite, with q = 0) and q = round-half-even(y / *scale) in [-127,
// 127].
void CorrectlyRoundedInt8(const CrRow& row, const CrWeights& w, size_t j0,
                          size_t j1, int8_t* q, float* scale, CrCache& cache);

// y_j in double, within *e of the exact value; false when the row's
// statistics have no usable bound.
bool YWithBound(const CrRow& row, size_t j, float g, float b, CrCache& cache,
                double* y, double* e);

// q_j = round-half-even(y_j / scale) in [-127, 127] from the exact y_j, for
// a positive finite fp32 scale (the kernels' lanes that a vector test could
// not decide).
int8_t CorrectlyRoundedQ(const CrRow& row, size_t j, float g, float b,
                         float scale, CrCache& cache);

// Rows whose y values are exact doubles (RMSNorm of a row with an inf and no
// NaN: xhat is +-0, or NaN at the inf): the 16-bit bits of y (NaN: the
// default NaN), and int8 of a group of m such values as above.
uint16_t RoundExactValue(simdnorm_dtype t, double y);
void Int8FromExactValues(const double* y, size_t m, int8_t* q, float* scale);

// xhat_j rounded once to row.x_type (BF16 or F16), as a double: Hugging
// Face's order rounds it before the scale.
double RoundedXhat(const CrRow& row, size_t j, CrCache& cache);

// RowStats of a row by a scalar loop (the reference's; the kernels sum in
// vectors, with the same bounds).
RowStats RowStatsScalar(int kind, const void* x, simdnorm_dtype t, size_t n,
                        float eps);

// Element j of a row of F32, BF16 or F16 as a float (exact).
float LoadAsFloat(const void* x, simdnorm_dtype t, size_t j);

// A double rounded once to nearest-even bf16 / binary16 bits.
uint16_t RoundToBF16Bits(double v);
uint16_t RoundToF16Bits(double v);
double F16BitsToDouble(uint16_t b);

}  // namespace internal
}  // namespace simdnorm

#endif  // SIMDNORM_LIB_CORRECT_ROUNDING_H_

// Per-target write loops of correctly rounded rows (16-bit y): each
// lane's result in fp32 with a bound on its error, the full bound
// (ApplyRowChecked) or the lean one (YBound, LeanChunk, both ends rounded
// by the hardware where it can), and the open lanes decided again
// (DecideChunk). Part of lib/norm_rows-inl.h's kernels; the statistics
// and their bounds are in lib/checked_stats-inl.h.

#if defined(SIMDNORM_LIB_CHECKED_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_CHECKED_ROWS_INL_H_
#undef SIMDNORM_LIB_CHECKED_ROWS_INL_H_
#else
#define SIMDNORM_LIB_CHECKED_ROWS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/highway.h"
#include "lib/checked_stats-inl.h"
#include "lib/correct_rounding.h"
#include "lib/rounding_check-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// t = xhat of x in fp32 and the bound et on |t - exact xhat|
// (CheckedScale's constants).
template <bool kLayerNorm, class DF>
HWY_INLINE void TermsOf(DF df, hn::Vec<DF> xv, hn::Vec<DF> m, hn::Vec<DF> mul,
                        hn::Vec<DF> add, hn::Vec<DF> alpha, hn::Vec<DF> beta,
                        hn::Vec<DF>& t, hn::Vec<DF>& et) {
  hn::Vec<DF> d = xv;
  if constexpr (kLayerNorm) {
    d = hn::Sub(xv, m);
    t = hn::MulAdd(d, mul, add);
  } else {
    (void)m;
    (void)add;
    t = hn::Mul(xv, mul);
  }
  et = hn::MulAdd(hn::Abs(d), alpha, beta);
  if constexpr (!kLayerNorm) {  // x != 0: t may be subnormal
    et = hn::Add(et, hn::IfThenElseZero(hn::Ne(d, hn::Zero(df)),
                                        hn::Set(df, 0x1p-126f)));
  }
}

// The terms of one vector of a checked row: t, the bound et on |t - exact
// xhat| (CheckedScale), and the weights.
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TP>
HWY_INLINE void TermsAt(DF df, const TX* HWY_RESTRICT x, const Weights<TP>& w,
                        size_t i, size_t count, hn::Vec<DF> m, hn::Vec<DF> mul,
                        hn::Vec<DF> add, hn::Vec<DF> alpha, hn::Vec<DF> beta,
                        hn::Vec<DF>& t, hn::Vec<DF>& et, hn::Vec<DF>& g,
                        hn::Vec<DF>& b) {
  WeightsAt<kAt>(df, w, i, count, g, b);
  TermsOf<kLayerNorm>(df, LoadAt<kAt>(df, x + i, count), m, mul, add, alpha,
                      beta, t, et);
}

// y = t * g + b and the bound on |y - exact y| from t's bound et (see
// ResultBoundAt).
template <class DF>
HWY_INLINE hn::Vec<DF> ResultBound(DF df, hn::Vec<DF> t, hn::Vec<DF> et,
                                   hn::Vec<DF> g, hn::Vec<DF> b,
                                   hn::Vec<DF>& y) {
  const auto cu = hn::Set(df, static_cast<float>(0x1p-24 * 1.01));
  y = GammaBeta(df, t, g, b);
  const auto gw = hn::Add(hn::Abs(g), hn::Set(df, 0x1p-23f));
  return hn::MulAdd(gw, et, hn::Mul(cu, hn::Abs(y)));
}

// y = t * g + b and the bound on |y - exact y|: y's own rounding, and |g|
// times t's bound, where |g| + 2^-23 keeps the bound nonzero where t is
// inexact and g is 0 or tiny (the sign of a zero y) and at least 2^-149 (a
// subnormal y's rounding), as t's bound is at least 2^-126 there
// (CheckedScale). Not 2^-24: 2^-24 * 2^-126 = 2^-150 rounds to 0 in fp32
// (a tie, to even), and a constant row of -2^-149 (its shift moved to -0)
// then stored -0 where the truth is +0 (found by the fuzzer).
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TP>
HWY_INLINE hn::Vec<DF> ResultBoundAt(DF df, const TX* HWY_RESTRICT x,
                                     const Weights<TP>& w, size_t i,
                                     size_t count, hn::Vec<DF> m,
                                     hn::Vec<DF> mul, hn::Vec<DF> add,
                                     hn::Vec<DF> alpha, hn::Vec<DF> beta,
                                     hn::Vec<DF>& y) {
  hn::Vec<DF> t, et, g, b;
  TermsAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add, alpha, beta, t, et,
                           g, b);
  return ResultBound(df, t, et, g, b, y);
}

// One vector of a checked row: its results y, and the lanes that round as
// the exact values do (the others are decided again).
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE hn::Mask<DF> CheckedAt(DF df, const TX* HWY_RESTRICT x,
                                  const Weights<TP>& w, size_t i, size_t count,
                                  hn::Vec<DF> m, hn::Vec<DF> mul,
                                  hn::Vec<DF> add, hn::Vec<DF> alpha,
                                  hn::Vec<DF> beta, hn::Vec<DF>& y) {
  const auto e = ResultBoundAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add,
                                                alpha, beta, y);
  auto clear = RoundsClear<TY>(df, y, e);
  if constexpr (kAt == At::kTail) {
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
  }
  return clear;
}

// Hugging Face's order: t = xhat rounded to x's type, then y = t * g + b.
// With 16-bit weights and neither beta nor an offset, y = t * g has at most
// 11 + 11 significant bits: exact in fp32 unless it is below 2^-100 (a
// subnormal product may round), so its conversion rounds the exact value
// once and only t's rounding needs the check (kExactY).
template <typename TP>
HWY_INLINE bool ExactProducts(const Weights<TP>& w) {
  return !std::is_same_v<TP, float> && w.beta == nullptr && !w.has_offset;
}

// One vector of a checked row in Hugging Face's order: its results y, the
// lanes that round as the exact values do, t and the lanes where t is
// known right (`t_clear`).
template <bool kLayerNorm, bool kExactY, At kAt, class DF, typename TX,
          typename TY, typename TP>
HWY_INLINE hn::Mask<DF> HFCheckedAt(DF df, const TX* HWY_RESTRICT x,
                                    const Weights<TP>& w, size_t i,
                                    size_t count, hn::Vec<DF> m,
                                    hn::Vec<DF> mul, hn::Vec<DF> add,
                                    hn::Vec<DF> alpha, hn::Vec<DF> beta,
                                    hn::Vec<DF>& y, hn::Vec<DF>& tx,
                                    hn::Mask<DF>& t_clear) {
  hn::Vec<DF> t, et, g, b;
  TermsAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add, alpha, beta, t, et,
                           g, b);
  if constexpr (std::is_same_v<TX, bf16_t>) {  // et has WithEnds' room
    // t is finite: the row has no NaN or inf, and mul and add are finite.
    t_clear = RoundsAlikeBF16</*kNaNLowBits=*/false>(df, t, et, tx);
  } else {
    tx = RoundTo<TX>(df, t);
    t_clear = RoundsClear<TX>(df, t, et);
  }
  hn::Mask<DF> y_clear;
  if constexpr (kExactY) {
    (void)b;  // -0: t * g + -0 == t * g
    y = hn::Mul(tx, g);
    y_clear = hn::Or(hn::Ge(hn::Abs(y), hn::Set(df, 0x1p-100f)),
                     hn::Eq(tx, hn::Zero(df)));
  } else {
    const auto cu = hn::Set(df, static_cast<float>(0x1p-24 * 1.01));
    y = GammaBeta(df, tx, g, b);
    // Only y's rounding is left; a floor where t is not 0 for a subnormal y.
    const auto ey = hn::MulAdd(
        cu, hn::Abs(y),
        hn::IfThenElseZero(hn::Ne(tx, hn::Zero(df)), hn::Set(df, 0x1p-126f)));
    y_clear = RoundsClear<TY>(df, y, ey);
#if HWY_NATIVE_FMA
    if (HWY_UNLIKELY(!hn::AllTrue(df, y_clear))) {
      // Mostly exact ties (~1/128 of lanes with 16-bit t and weights):
      // where y = t * g + b is exact in fp32, its conversion rounds it to
      // nearest-even and needs no check. Exact: the product's error
      // (TwoProduct by FMA) and the sum's (TwoSum, Knuth) are 0, with y
      // far from underflow, where those errors would not show.
      const auto p = hn::Mul(tx, g);
      const auto pe = hn::MulSub(tx, g, p);
      const auto s = hn::Add(p, b);
      const auto bb = hn::Sub(s, p);
      const auto se = hn::Add(hn::Sub(p, hn::Sub(s, bb)), hn::Sub(b, bb));
      const auto ay = hn::Abs(y);
      const auto exact =
          hn::And(hn::And(hn::Eq(pe, hn::Zero(df)), hn::Eq(se, hn::Zero(df))),
                  hn::And(hn::Ge(ay, hn::Set(df, 0x1p-100f)),
                          hn::Le(ay, hn::Set(df, 0x1p100f))));
      y_clear = hn::Or(y_clear, exact);
    }
#endif
  }
  auto clear = hn::And(t_clear, y_clear);
  if constexpr (kAt == At::kTail) {
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
  }
  return clear;
}

// Element j of a row decided by lib/correct_rounding.h, its weights as
// WeightsAt forms them.
template <typename TP>
HWY_INLINE void WeightsOfElement(const Weights<TP>& w, size_t j, float& g,
                                 float& b) {
  g = w.scale;
  if (w.gamma) {
    g = ToFloat(w.gamma[j]);
    if (w.has_offset) g = g + w.offset;
  }
  b = w.beta ? ToFloat(w.beta[j]) : -0.0f;
}

template <typename TY, typename TP>
HWY_INLINE void DecideElement(const Weights<TP>& w, const internal::CrRow& cr,
                              internal::CrCache& cache, size_t j, TY* y) {
  float g, b;
  WeightsOfElement(w, j, g, b);
  const uint16_t bits = internal::CorrectlyRoundedBits(cr, j, g, b, cache);
  std::memcpy(y + j, &bits, sizeof(bits));
}

// RMSNorm of a row with an inf and no NaN: 1/sqrt is 0, so xhat is +-0 (x's
// sign), NaN at the inf, and y = xhat * g + b is known exactly.
template <typename TX, typename TY, typename TP>
HWY_NOINLINE void RMSNormInfRow(const TX* h, TY* y, float* scales, size_t group,
                                const Weights<TP>& w, size_t n) {
  std::vector<double> v(n);
  for (size_t j = 0; j < n; ++j) {
    const float x = ToFloat(h[j]);
    float g, b;
    WeightsOfElement(w, j, g, b);
    v[j] = (std::isinf(x) ? NAN : std::copysign(0.0, x)) * g + b;
  }
  if constexpr (std::is_same_v<TY, int8_t>) {
    for (size_t g0 = 0; g0 < n; g0 += group) {
      const size_t m = n - g0 > group ? group : n - g0;
      internal::Int8FromExactValues(v.data() + g0, m, y + g0, scales++);
    }
  } else {
    for (size_t j = 0; j < n; ++j) {
      const uint16_t bits = internal::RoundExactValue(kDType<TY>, v[j]);
      std::memcpy(y + j, &bits, sizeof(bits));
    }
  }
}

// Calls f(l) for each lane l < count of `flags` (from VecFromMask) that is
// set: the rare lanes a vector test leaves to the scalar decisions.
template <class DF, class F>
HWY_NOINLINE void ForSetLanes(DF df, hn::Vec<DF> flags, size_t count,
                              const F& f) {
  HWY_ALIGN float lanes[kMaxFloatLanes];
  hn::Store(flags, df, lanes);
  for (size_t l = 0; l < count; ++l) {
    uint32_t set;
    std::memcpy(&set, &lanes[l], sizeof(set));
    if (set != 0) f(l);
  }
}

// A checked row's CrRow; its double statistics (StatsF64) are made when a
// lane first needs them, unless the row came with them.
template <bool kLayerNorm, typename TX>
class LazyCrRow {
 public:
  LazyCrRow(const internal::CrRow& row, bool has_stats)
      : row_(row), has_stats_(has_stats) {}
  const internal::CrRow& Get() {
    if (!has_stats_) {
      row_.st = StatsF64<kLayerNorm>(
          hn::ScalableTag<float>(), static_cast<const TX*>(row_.x), row_.n,
          internal::PlanStats(row_.kind, row_.n, row_.eps,
                              internal::DoubleSums(row_.n)));
      has_stats_ = true;
    }
    return row_;
  }
  // The relative error bound of the r the row's scale was rounded from (the
  // statistics it came with: read it before Get() makes the double ones).
  double ScaleError() const { return row_.st.er; }
  // That r, the row's scale from the same statistics.
  double Scale() const { return row_.st.r; }
  // Element j of y decided: from the statistics the row came with where it
  // has no double ones yet and they decide it, else from the double ones.
  // (RMSNorm bf16 at 64 x 896, N(0,1): one row in seven has an open lane,
  // and its fp32 statistics decide all of them in 8 rows of 9, each saving
  // a pass of double sums over the row.)
  template <typename TP, typename TY>
  void Decide(const Weights<TP>& w, internal::CrCache& cache, size_t j, TY* y) {
    if (!has_stats_) {
      float g, b;
      WeightsOfElement(w, j, g, b);
      uint16_t bits;
      if (internal::DecidedInDouble(row_, j, g, b, &bits)) {
        std::memcpy(y + j, &bits, sizeof(bits));
        return;
      }
    }
    DecideElement(w, Get(), cache, j, y);
  }

 private:
  internal::CrRow row_;
  bool has_stats_;
};

// Decides the elements i + stride * l of the set lanes l of `flags`.
template <class DF, typename TY, typename TP, class CR>
HWY_INLINE void DecideLanes(DF df, hn::Vec<DF> flags, size_t i, size_t count,
                            TY* y, const Weights<TP>& w, CR& cr,
                            internal::CrCache& cache, size_t stride = 1) {
  ForSetLanes(df, flags, count,
              [&](size_t l) { cr.Decide(w, cache, i + stride * l, y); });
}

// The open lanes (not `clear`) of a checked vector in Hugging Face's
// order, elements i + stride * l. A lane whose t (xhat rounded to x's
// type) is known right (`t_clear`) has only y = t * g + b's rounding left:
// decided from t alone (internal::RoundProductSum), without the row's
// double statistics.
template <class DF, typename TY, typename TP, class CR>
HWY_INLINE void DecideHFLanes(DF df, hn::Mask<DF> clear, hn::Mask<DF> t_clear,
                              hn::Vec<DF> t, size_t i, size_t count, TY* y,
                              const Weights<TP>& w, CR& cr,
                              internal::CrCache& cache, size_t stride) {
  const auto products = hn::AndNot(clear, t_clear);
  if (!hn::AllFalse(df, products)) {
    HWY_ALIGN float tl[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(t, df, tl);
    ForSetLanes(df, hn::VecFromMask(df, products), count, [&](size_t l) {
      const size_t j = i + stride * l;
      float g, b;
      WeightsOfElement(w, j, g, b);
      const uint16_t bits = internal::RoundProductSum(kDType<TY>, tl[l], g, b);
      std::memcpy(y + j, &bits, sizeof(bits));
    });
  }
  DecideLanes(df, hn::VecFromMask(df, hn::Not(hn::Or(clear, t_clear))), i,
              count, y, w, cr, cache, stride);
}

// Elements [i, n) of a checked row one vector at a time: checked_at(tag,
// i, count, v), tag a std::integral_constant of At (kFull, then kTail for
// the last count lanes), gives the vector's results in v and the lanes
// that round as the exact values do; v is stored and the other lanes are
// decided exactly.
template <class DF, typename TY, typename TP, class CrRow, class CheckedFn>
HWY_INLINE void StoreCheckedVectors(DF df, size_t i, size_t n, TY* y,
                                    const Weights<TP>& w, CrRow& cr,
                                    internal::CrCache& cache,
                                    const CheckedFn& checked_at) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  const size_t N = hn::Lanes(df);
  hn::Vec<DF> v;
  for (; i + N <= n; i += N) {
    const auto clear =
        checked_at(std::integral_constant<At, At::kFull>(), i, 0, v);
    StoreF<kQuiet>(df, v, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
      DecideLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, N, y, w, cr,
                  cache);
    }
  }
  if (i < n) {
    const auto clear =
        checked_at(std::integral_constant<At, At::kTail>(), i, n - i, v);
    StoreTailF<kQuiet>(df, v, y + i, n - i);
    if (!hn::AllTrue(df, clear)) {
      DecideLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, n - i, y, w, cr,
                  cache);
    }
  }
}

// A row of 16-bit y, correctly rounded, one vector at a time (the rows the
// lean form below does not take). x is never y (NormRowsChecked copies a
// row normalized in place).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRowChecked(DF df, const TX* x, TY* y,
                                  const Weights<TP> w, size_t n,
                                  const RowScale& k, const RowBound& bound,
                                  LazyCrRow<kLayerNorm, TX>& cr) {
  internal::CrCache cache;
  StoreCheckedVectors(
      df, 0, n, y, w, cr, cache,
      [&](auto at, size_t i, size_t count, hn::Vec<DF>& v) {
        return CheckedAt<kLayerNorm, decltype(at)::value, DF, TX, TY>(
            df, x, w, i, count, hn::Set(df, k.m), hn::Set(df, k.mul),
            hn::Set(df, k.add), hn::Set(df, bound.alpha),
            hn::Set(df, bound.beta), v);
      });
}

// The bound of a checked row's results in a form that costs fewer
// operations per vector: |y - exact y| <= r|y| + ag|g| + ab|b| + f, from
// CheckedScale's |t - xhat| <= alpha|d| + beta and |d| mul <= (|t| +
// |add|)(1 + 2u) (t's rounding): |t - xhat| <= a1|t| + b1, then y = t g + b
// rounded once (twice without FMA) and |g t| <= |y| (1 + 2u) + |b|. The
// floor f = 2^-100 |g| + 2^-111 covers a subnormal t's rounding (2^-150 at
// most) and a subnormal y's, and keeps every |y| < 2^-100 out of
// RoundsClear's reach. It is needed only where t or y may be inexact: where
// d != 0, or everywhere when add != 0. LayerNorm rows with add == 0 take
// ApplyRowChecked; RMSNorm (add = 0) masks f with x != 0, so that x = 0
// gives an exact, unflagged +-0. The floors are normal floats: subnormal
// arithmetic takes microcode assists on x86 (it made rows 7x slower). r
// stays below 2^-13, so that RoundsClear's reach is left to the absolute
// terms; it has 2u more for the roundings of y -+ e (RoundsAlikeBF16).
struct YBound {
  float r, ag, ab;
};

inline constexpr float kTFloor = 0x1p-100f, kYFloor = 0x1p-111f;

inline bool YBoundOf(bool layernorm, const RowScale& k, const RowBound& bound,
                     YBound& yb) {
  if (layernorm && k.add == 0.0f) return false;
  constexpr double u = 0x1p-24;
  constexpr double kExtra = HWY_NATIVE_FMA ? 0.0 : u;  // t * g rounded
  const double per_d = bound.per_mul > 0.0
                           ? bound.per_mul
                           : static_cast<double>(bound.alpha) / k.mul;
  const double a1 = per_d * (1 + 3 * u);
  double b1 = bound.beta + per_d * std::fabs(k.add) * (1 + 3 * u);
  if (layernorm) {
    b1 += kTFloor;
  } else if (b1 != 0.0) {
    return false;  // RMSNorm's t = x * mul: no shift, no beta
  }
  const double r = (a1 + 3 * u + 2 * kExtra) * (1 + 3 * u) * 1.01;
  if (!(r <= 0x1p-13)) return false;
  yb = YBound{static_cast<float>(r), static_cast<float>(b1 * 1.01),
              static_cast<float>((a1 + kExtra) * 1.01)};
  return true;
}

// LayerNorm's weight terms ag|g| + ab|b| + kYFloor are the same in every
// row but for ag and ab, which barely move: ab is ~3.1u (t's relative
// error and y's roundings), ag ~2^-50 (the mean's error). So a call of more
// than one row makes them once (LeanTerms) with kLeanAg and kLeanAb, and
// every row whose ag and ab are within those takes them as its bound's
// terms (rounding is monotone: terms made so are at least the row's own).
// That saves 2 FMAs and 2 ANDs a vector of LeanChunk's loop, which issues
// ~3 vector operations a cycle on Zen 5 (docs/performance.md, session 33).
inline constexpr float kLeanAg = 0x1p-30f;
inline constexpr float kLeanAb = HWY_NATIVE_FMA ? 0x1.cp-23f : 0x1.ap-22f;

// The weight terms ag|g| + ab|b| + kYFloor of LayerNorm's lean bound, by
// the same fp32 operations wherever they are made (LeanTerms' table holds
// for a row because rounding is monotone in ag and ab).
template <class DF>
HWY_INLINE hn::Vec<DF> WeightTerms(DF df, hn::Vec<DF> ag, hn::Vec<DF> ab,
                                   hn::Vec<DF> g, hn::Vec<DF> b) {
  return hn::MulAdd(ag, hn::Abs(g),
                    hn::MulAdd(ab, hn::Abs(b), hn::Set(df, kYFloor)));
}

inline bool LeanTermsHold(const YBound& yb) {
  return yb.ag <= kLeanAg && yb.ab <= kLeanAb;
}

// MaxBits raises top to the bits of v's lanes as unsigned integers, and
// FiniteBits says whether all it saw were those of finite values: for v >=
// 0 or NaN (the bounds e), a NaN's bits, whatever its sign, lie above
// +inf's, and every finite v's below.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> MaxBits(
    DF df, hn::Vec<hn::RebindToUnsigned<DF>> top, hn::Vec<DF> v) {
  (void)df;
  return hn::Max(top, hn::BitCast(hn::RebindToUnsigned<DF>(), v));
}
template <class DU>
HWY_INLINE bool FiniteBits(DU du, hn::Vec<DU> top) {
  return hn::AllTrue(du, hn::Lt(top, hn::Set(du, 0x7F800000u)));
}

// The terms of elements [0, paired_end) of a row, 2N at a time as
// LeanBound2N reads them: vector a's at i, vector b's at i + N. Whether
// they are all finite, as they are exactly where gamma and beta are.
template <class DF, typename TX, typename TY, typename TP>
HWY_INLINE bool LeanTerms(DF df, const Weights<TP>& w, size_t paired_end,
                          float* HWY_RESTRICT terms) {
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  constexpr At kA = kPaired ? At::kPairA : At::kFull;
  constexpr At kB = kPaired ? At::kPairB : At::kFull;
  const hn::RebindToUnsigned<DF> du;
  const size_t N = hn::Lanes(df);
  const auto ag = hn::Set(df, kLeanAg), ab = hn::Set(df, kLeanAb);
  auto top = hn::Zero(du);
  for (size_t i = 0; i < paired_end; i += 2 * N) {
    hn::Vec<DF> g, b;
    WeightsAt<kA>(df, w, i, 0, g, b);
    const auto ta = WeightTerms(df, ag, ab, g, b);
    WeightsAt<kB>(df, w, kPaired ? i : i + N, 0, g, b);
    const auto tb = WeightTerms(df, ag, ab, g, b);
    hn::StoreU(ta, df, terms + i);
    hn::StoreU(tb, df, terms + i + N);
    top = MaxBits(df, MaxBits(df, top, ta), tb);
  }
  return FiniteBits(du, top);
}

// One vector of a checked row (without Hugging Face's rounding): its
// results y, and their bound e (YBound) as the return value. kTerms:
// LayerNorm's weight terms from w.lean_terms (LeanTerms' layout), with
// gamma and beta and no offset.
template <bool kLayerNorm, At kAt, bool kTerms = false, class DF, typename TX,
          typename TP>
HWY_INLINE hn::Vec<DF> LeanBoundAt(DF df, const TX* HWY_RESTRICT x,
                                   const Weights<TP>& w, size_t i, size_t count,
                                   hn::Vec<DF> m, hn::Vec<DF> mul,
                                   hn::Vec<DF> add, hn::Vec<DF> vr,
                                   hn::Vec<DF> vag, hn::Vec<DF> vab,
                                   hn::Vec<DF>& y) {
  hn::Vec<DF> g, b;
  if constexpr (kTerms) {  // gamma and beta, no offset: no tests
    g = LoadAt<kAt>(df, w.gamma + i, count);
    b = LoadAt<kAt>(df, w.beta + i, count);
  } else {
    WeightsAt<kAt>(df, w, i, count, g, b);
  }
  const auto xv = LoadAt<kAt>(df, x + i, count);
  hn::Vec<DF> t, weights;
  if constexpr (kLayerNorm && kTerms) {
    static_assert(kAt != At::kTail, "whole vectors only");
    (void)vag, (void)vab;
    t = hn::MulAdd(hn::Sub(xv, m), mul, add);
    weights = hn::LoadU(
        df, w.lean_terms + (kAt == At::kPairB ? i + hn::Lanes(df) : i));
  } else if constexpr (kLayerNorm) {
    t = hn::MulAdd(hn::Sub(xv, m), mul, add);
    weights = WeightTerms(df, vag, vab, g, b);
  } else {  // ag = 0: beta = add = 0
    (void)m;
    (void)add;
    (void)vag;
    t = hn::Mul(xv, mul);
    const auto floor = hn::IfThenElseZero(
        hn::Ne(xv, hn::Zero(df)),
        hn::MulAdd(hn::Set(df, kTFloor), hn::Abs(g), hn::Set(df, kYFloor)));
    weights = hn::MulAdd(vab, hn::Abs(b), floor);
  }
  y = GammaBeta(df, t, g, b);
  return hn::MulAdd(vr, hn::Abs(y), weights);
}

// The lanes of y (bound e, LeanBoundAt) that round as the exact values
// do; bf16 y comes back rounded (RoundsAlikeBF16).
template <At kAt, class DF, typename TY, typename TP>
HWY_INLINE hn::Mask<DF> LeanClear(DF df, hn::Vec<DF>& y, hn::Vec<DF> e,
                                  size_t count) {
  hn::Mask<DF> clear;
  if constexpr (std::is_same_v<TY, bf16_t>) {
    clear = RoundsAlikeBF16<kQuietNaNs<TP>>(df, y, e, y);
  } else {
    clear = RoundsClear<TY>(df, y, e);
  }
  if constexpr (kAt == At::kTail) {
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
  }
  return clear;
}

// One vector of a checked row (without Hugging Face's rounding): its
// results y and the lanes that round as the exact values do (YBound).
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE hn::Mask<DF> LeanCheckedAt(DF df, const TX* HWY_RESTRICT x,
                                      const Weights<TP>& w, size_t i,
                                      size_t count, hn::Vec<DF> m,
                                      hn::Vec<DF> mul, hn::Vec<DF> add,
                                      hn::Vec<DF> vr, hn::Vec<DF> vag,
                                      hn::Vec<DF> vab, hn::Vec<DF>& y) {
  const auto e = LeanBoundAt<kLayerNorm, kAt>(df, x, w, i, count, m, mul, add,
                                              vr, vag, vab, y);
  return LeanClear<kAt, DF, TY, TP>(df, y, e, count);
}

// The 2N results of a checked row at i (as Results2N moves them: pairs
// where x, y and the weights pair alike, else two vectors in order) and
// their bounds (LeanBoundAt).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP,
          bool kTerms = false>
HWY_INLINE void LeanBound2N(DF df, const TX* HWY_RESTRICT x,
                            const Weights<TP>& w, size_t i, hn::Vec<DF> m,
                            hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> vr,
                            hn::Vec<DF> vag, hn::Vec<DF> vab, hn::Vec<DF>& va,
                            hn::Vec<DF>& vb, hn::Vec<DF>& ea, hn::Vec<DF>& eb) {
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  constexpr At kA = kPaired ? At::kPairA : At::kFull;
  constexpr At kB = kPaired ? At::kPairB : At::kFull;
  const size_t ib = kPaired ? i : i + hn::Lanes(df);
  ea = LeanBoundAt<kLayerNorm, kA, kTerms>(df, x, w, i, 0, m, mul, add, vr, vag,
                                           vab, va);
  eb = LeanBoundAt<kLayerNorm, kB, kTerms>(df, x, w, ib, 0, m, mul, add, vr,
                                           vag, vab, vb);
}

// The 2N results of a checked row at i (LeanBound2N), and the lanes of
// each vector that round as the exact values do.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void LeanChecked2N(DF df, const TX* HWY_RESTRICT x,
                              const Weights<TP>& w, size_t i, hn::Vec<DF> m,
                              hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> vr,
                              hn::Vec<DF> vag, hn::Vec<DF> vab, hn::Vec<DF>& va,
                              hn::Vec<DF>& vb, hn::Mask<DF>& ca,
                              hn::Mask<DF>& cb) {
  hn::Vec<DF> ea, eb;
  LeanBound2N<kLayerNorm, DF, TX, TY>(df, x, w, i, m, mul, add, vr, vag, vab,
                                      va, vb, ea, eb);
  ca = LeanClear<At::kFull, DF, TY, TP>(df, va, ea, 0);
  cb = LeanClear<At::kFull, DF, TY, TP>(df, vb, eb, 0);
}

// A row of 16-bit y, correctly rounded, without Hugging Face's rounding:
// chunks of kLeanChunk elements 2N at a time (pairs where x, y and the
// weights pair alike, as the fast kernels move them), the rare group
// with an open lane checked again with the decisions; then vectors and the
// tail. x is never y.
inline constexpr size_t kLeanChunk = 512;

// Calls f(i, end) for each chunk [i, end) of [0, paired_end).
template <class F>
HWY_INLINE void ForChunks(size_t paired_end, const F& f) {
  for (size_t i = 0; i < paired_end; i += kLeanChunk) {
    f(i, paired_end - i > kLeanChunk ? i + kLeanChunk : paired_end);
  }
}

// A chunk's open lanes are flagged by groups of FlagGroup elements, a bit
// each (the first in bit 0), so that only those groups are checked again
// (a chunk at a time, LayerNorm bf16 redid ~28 % of its elements).
inline constexpr size_t kMaxFlags = 64;
template <class DF>
HWY_INLINE size_t FlagGroup(DF df) {
  return HWY_MAX(2 * hn::Lanes(df), kLeanChunk / kMaxFlags);
}

// Calls f(g0, g1) for each group [g0, g1) of the chunk [i, end) flagged.
template <class F>
HWY_INLINE void ForFlaggedGroups(uint64_t flagged, size_t i, size_t end,
                                 size_t group, const F& f) {
  for (; flagged != 0; flagged &= flagged - 1) {
    const size_t g0 = i + hwy::Num0BitsBelowLS1Bit_Nonzero64(flagged) * group;
    f(g0, HWY_MIN(g0 + group, end));
  }
}

// The 2N bf16 results of LeanChecked2N at p.
template <class DF, typename TX, typename TY, typename TP>
HWY_INLINE void StoreChecked2N(DF df, hn::Vec<DF> va, hn::Vec<DF> vb,
                               TY* HWY_RESTRICT p) {
  const size_t N = hn::Lanes(df);
  if constexpr (std::is_same_v<TY, bf16_t>) {  // rounded (RoundsAlikeBF16)
    if constexpr (kPairs<TX, TY, TP>) {
      StoreRoundedPair(df, va, vb, p);
    } else {
      StoreRounded(df, va, p);
      StoreRounded(df, vb, p + N);
    }
  } else {
    Store2N<kPairs<TX, TY, TP>, kQuietNaNs<TP>>(df, va, vb, p, false);
  }
}

// Elements [i, end) of a checked row, 2N at a time (end - i a multiple of
// 2N, at most kLeanChunk): stores the results and returns the flags of the
// groups with a lane left open. Kept apart from the decisions, so that its
// loop makes no calls and keeps its constants in registers (with the calls
// in the same function, GCC 12 reloaded them from the stack: 1.8x the
// instructions).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE uint64_t LeanChunk(DF df, const TX* HWY_RESTRICT x,
                                TY* HWY_RESTRICT y, const Weights<TP> w,
                                const size_t begin, size_t end,
                                const RowScale& k, const YBound& yb) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto vr = hn::Set(df, yb.r), vag = hn::Set(df, yb.ag);
  const auto vab = hn::Set(df, yb.ab);
  uint64_t flagged = 0;
#if SIMDNORM_AVX512BF16 || SIMDNORM_HW_F16
  // 16-bit y (`hardware_ends`): both ends of each lane rounded
  // by the hardware (StoreIfAlike: VCVTNE2PS2BF16 for bf16, ~10 operations
  // per 2N fewer than two RoundsAlikeBF16 and the packing; VCVTPS2PH for
  // f16, where RoundsClear takes ~15 per vector). e >= kYFloor = 2^-111 on
  // every lane, except an uncentered kind's x = 0, whose y is an exact +-0
  // then (no beta) and e = 0 (-0's ends are -0 and +0: decided again). With
  // finite weights y is not NaN, and an inf y has a NaN end. So the weights
  // must be finite: LeanTerms' table is where they are (kTerms), and
  // without it the loop keeps the bounds' largest bits (MaxBits), which are
  // not finite in any lane whose weights are not (ag|g| and ab|b| are inf
  // or NaN there; an uncentered kind's x = 0 has y = 0 * g + b, NaN then):
  // then every group of the chunk goes to DecideChunk, which stores it again
  // as the software ends round it (a tie at a low end rounds to even here).
  if constexpr (kHardwareEnds<DF, TY>) {
    if (w.hardware_ends) {
      constexpr bool kPaired = kPairs<TX, TY, TP>;
      // Software-pipelined: the next 2N's results and bounds come before
      // this 2N's ends, conversions and compare in program order, so that
      // two 2N's chains (~40 cycles each: loads, t, y, e, ends,
      // VCVTNE2PS2BF16, compare) are in the out-of-order window at once:
      // 1.02x on bf16 LayerNorm at 64 x 896 (session 33).
      const auto loop = [&](auto terms) {
        constexpr bool kTerms = decltype(terms)::value;
        const hn::RebindToUnsigned<DF> du;
        auto top = hn::Zero(du);  // the bounds' largest bits (no table)
        hn::Vec<DF> va, vb, ea, eb;
        const auto bounds = [&](size_t i) {
          LeanBound2N<kLayerNorm, DF, TX, TY, TP, kTerms>(
              df, x, w, i, m, mul, add, vr, vag, vab, va, vb, ea, eb);
        };
        const auto store = [&](size_t i, hn::Vec<DF> a, hn::Vec<DF> b,
                               hn::Vec<DF> a_e, hn::Vec<DF> b_e) {
          if (HWY_UNLIKELY(!StoreIfAlike<kPaired>(df, a, a_e, b, b_e, y + i))) {
            flagged |= uint64_t{1} << ((i - begin) / FlagGroup(df));
          }
          if constexpr (!kTerms) top = MaxBits(df, MaxBits(df, top, a_e), b_e);
        };
        size_t i = begin;
        bounds(i);
        for (; i + 2 * N < end; i += 2 * N) {
          const auto a = va, b = vb, a_e = ea, b_e = eb;
          bounds(i + 2 * N);
          store(i, a, b, a_e, b_e);
        }
        store(i, va, vb, ea, eb);
        if (!kTerms && HWY_UNLIKELY(!FiniteBits(du, top))) {
          const size_t groups = (end - begin - 1) / FlagGroup(df) + 1;
          return groups == 64 ? ~uint64_t{0} : (uint64_t{1} << groups) - 1;
        }
        return flagged;
      };
      if constexpr (kLayerNorm) {
        if (w.lean_terms != nullptr && LeanTermsHold(yb) &&
            w.gamma != nullptr && w.beta != nullptr && !w.has_offset) {
          return loop(std::true_type());
        }
      }
      return loop(std::false_type());
    }
  }
#endif
  for (size_t i = begin; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb;
    hn::Mask<DF> ca, cb;
    LeanChecked2N<kLayerNorm, DF, TX, TY>(df, x, w, i, m, mul, add, vr, vag,
                                          vab, va, vb, ca, cb);
    StoreChecked2N<DF, TX, TY, TP>(df, va, vb, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, hn::And(ca, cb)))) {
      flagged |= uint64_t{1} << ((i - begin) / FlagGroup(df));
    }
  }
  return flagged;
}

// The open lanes of elements [i, end) of a checked row, decided.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void DecideChunk(DF df, const TX* x, TY* y, const Weights<TP>& w,
                              size_t i, size_t end, const RowScale& k,
                              const YBound& yb, LazyCrRow<kLayerNorm, TX>& cr,
                              internal::CrCache& cache) {
  // Where a pair is the even and the odd elements (convert-inl.h).
  constexpr bool kEvenOddPair = kPairs<TX, TY, TP> && kEvenOdd<TY>;
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto vr = hn::Set(df, yb.r), vag = hn::Set(df, yb.ag);
  const auto vab = hn::Set(df, yb.ab);
  for (; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb;
    hn::Mask<DF> ca, cb;
    LeanChecked2N<kLayerNorm, DF, TX, TY>(df, x, w, i, m, mul, add, vr, vag,
                                          vab, va, vb, ca, cb);
    StoreChecked2N<DF, TX, TY, TP>(df, va, vb, y + i);
    if (hn::AllTrue(df, hn::And(ca, cb))) continue;
    const size_t stride = kEvenOddPair ? 2 : 1;
    DecideLanes(df, hn::VecFromMask(df, hn::Not(ca)), i, N, y, w, cr, cache,
                stride);
    DecideLanes(df, hn::VecFromMask(df, hn::Not(cb)),
                kEvenOddPair ? i + 1 : i + N, N, y, w, cr, cache, stride);
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CHECKED_ROWS_INL_H_

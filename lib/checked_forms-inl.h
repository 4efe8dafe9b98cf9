// Per-target correctly rounded rows by form: the lean bound after the
// tame test (ApplyRowLeanChecked), Hugging Face's order (ApplyRowHFChecked),
// the choice between them and the full bound (ApplyCheckedAny), and int8
// y (ApplyRowQuantChecked). Part of lib/norm_rows-inl.h's kernels.

#if defined(SIMDNORM_LIB_CHECKED_FORMS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_CHECKED_FORMS_INL_H_
#undef SIMDNORM_LIB_CHECKED_FORMS_INL_H_
#else
#define SIMDNORM_LIB_CHECKED_FORMS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "lib/correct_rounding.h"
#include "lib/tame_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// The lean bound's verdict on the lanes the tame test leaves open
// (TameChunks, the default order). The test's window, K units of v's last
// place, is r|v| for a v at the top of its binade and up to twice that
// below it; the lean bound is r|y| for the same bits (y = x * mul * g, two
// fp32 products as v), so it closes some of the open lanes (a decision
// costs ~25 ns, one group's LeanChecked2N a few). Element j: stored as
// DecideChunk would store it where the lean bound holds (the lanes it
// clears round as the exact values do); false where it does not.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
class LeanOpenLanes {
 public:
  LeanOpenLanes(DF df, const TX* x, const Weights<TP>& w, const RowScale& k,
                const YBound& yb)
      : df_(df), x_(x), w_(w), k_(k), yb_(yb) {}

  bool Store(size_t j, TY* y) {
    const size_t N = hn::Lanes(df_);
    const size_t g0 = j / (2 * N) * (2 * N), at = j - g0;
    if (g0 != group_) Check(g0);
    // Lane of element g0 + at: pairs (even elements in a, odd in b) or
    // two vectors in order, as LeanChecked2N loads them (DecideChunk).
    constexpr bool kEvenOddPair = kPairs<TX, TY, TP> && kEvenOdd<TY>;
    const size_t lane = kEvenOddPair ? (at & 1) * N + at / 2 : at;
    uint32_t clear;
    std::memcpy(&clear, &clear_[lane], sizeof(clear));
    if (clear == 0) return false;
    y[j] = rounded_[at];
    return true;
  }

 private:
  void Check(size_t g0) {
    hn::Vec<DF> va, vb;
    hn::Mask<DF> ca, cb;
    LeanChecked2N<kLayerNorm, DF, TX, TY>(
        df_, x_, w_, g0, hn::Set(df_, k_.m), hn::Set(df_, k_.mul),
        hn::Set(df_, k_.add), hn::Set(df_, yb_.r), hn::Set(df_, yb_.ag),
        hn::Set(df_, yb_.ab), va, vb, ca, cb);
    StoreChecked2N<DF, TX, TY, TP>(df_, va, vb, rounded_);
    hn::Store(hn::VecFromMask(df_, ca), df_, clear_);
    hn::Store(hn::VecFromMask(df_, cb), df_, clear_ + hn::Lanes(df_));
    group_ = g0;
  }

  DF df_;
  const TX* x_;
  const Weights<TP>& w_;
  const RowScale& k_;
  const YBound& yb_;
  size_t group_ = ~size_t{0};
  HWY_ALIGN float clear_[2 * kMaxFloatLanes];
  TY rounded_[2 * kMaxFloatLanes];
};

template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRowLeanChecked(DF df, const TX* x, TY* y,
                                      const Weights<TP> w, size_t n,
                                      const RowScale& k, const YBound& yb,
                                      LazyCrRow<kLayerNorm, TX>& cr) {
  const size_t N = hn::Lanes(df);
  internal::CrCache cache;
  const size_t paired_end = n / (2 * N) * (2 * N);
  const auto decide = [&](size_t g0, size_t g1) {
    DecideChunk<kLayerNorm>(df, x, y, w, g0, g1, k, yb, cr, cache);
  };
  const auto redo = [&](size_t i, size_t end) {
    ForFlaggedGroups(LeanChunk<kLayerNorm>(df, x, y, w, i, end, k, yb), i, end,
                     FlagGroup(df), decide);
  };
  // y's bound is r|y| + f, f for subnormal t and y only (YBoundOf). The
  // tame test's open lanes go to the lean bound, then to the decisions;
  // f16's (TameTestF16) straight to the decisions: only a v on a midpoint
  // is open there, which the lean bound (~6u) never clears.
  constexpr bool kF16 = std::is_same_v<TY, f16_t>;
  uint16_t units = 0;
  float mul = k.mul, mul_lo = 0.0f;
  const bool row_tame =
      !kLayerNorm &&
      (kF16 ? TameUnitsF16(cr.Scale(), cr.ScaleError(), mul, mul_lo, units)
            : TameUnitsOf(cr.ScaleError(), 2, units));
  LeanOpenLanes<kLayerNorm, DF, TX, TY, TP> lean(df, x, w, k, yb);
  const auto decide_lane = [&](size_t j) {
    if (kF16 || !lean.Store(j, y)) cr.Decide(w, cache, j, y);
  };
  if (!TameChunks<kLayerNorm, false>(df, x, y, w, paired_end, mul, mul_lo,
                                     row_tame, units, TinyV(k, 2, w.tame_min_g),
                                     decide_lane)) {
    ForChunks(paired_end, redo);
  }
  StoreCheckedVectors(
      df, paired_end, n, y, w, cr, cache,
      [&](auto at, size_t i, size_t count, hn::Vec<DF>& v) {
        return LeanCheckedAt<kLayerNorm, decltype(at)::value, DF, TX, TY>(
            df, x, w, i, count, hn::Set(df, k.m), hn::Set(df, k.mul),
            hn::Set(df, k.add), hn::Set(df, yb.r), hn::Set(df, yb.ag),
            hn::Set(df, yb.ab), v);
      });
}

// The 2N results of a checked row at i in Hugging Face's order (as
// Results2N moves them): for each vector (a, then b) its results, the lanes
// that round as the exact values do, t and t_clear (HFCheckedAt). Separate
// variables, not arrays: SVE's vectors and masks are sizeless.
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE void HFChecked2N(DF df, const TX* HWY_RESTRICT x,
                            const Weights<TP>& w, size_t i, hn::Vec<DF> m,
                            hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> alpha,
                            hn::Vec<DF> beta, hn::Vec<DF>& va, hn::Vec<DF>& vb,
                            hn::Vec<DF>& ta, hn::Vec<DF>& tb, hn::Mask<DF>& ca,
                            hn::Mask<DF>& cb, hn::Mask<DF>& tca,
                            hn::Mask<DF>& tcb) {
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  constexpr At kA = kPaired ? At::kPairA : At::kFull;
  constexpr At kB = kPaired ? At::kPairB : At::kFull;
  const size_t ib = kPaired ? i : i + hn::Lanes(df);
  ca = HFCheckedAt<kLayerNorm, kExactY, kA, DF, TX, TY>(
      df, x, w, i, 0, m, mul, add, alpha, beta, va, ta, tca);
  cb = HFCheckedAt<kLayerNorm, kExactY, kB, DF, TX, TY>(
      df, x, w, ib, 0, m, mul, add, alpha, beta, vb, tb, tcb);
}

// Elements [i, end) of a checked row in Hugging Face's order, 2N at a time:
// stores the results and returns the flags of the groups with a lane left
// open (as LeanChunk, and kept apart from the decisions for the same
// reason).
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE uint64_t HFChunk(DF df, const TX* HWY_RESTRICT x,
                              TY* HWY_RESTRICT y, const Weights<TP> w,
                              const size_t begin, size_t end, const RowScale& k,
                              const RowBound& bound) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  uint64_t flagged = 0;
  for (size_t i = begin; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb, ta, tb;
    hn::Mask<DF> ca, cb, tca, tcb;
    HFChecked2N<kLayerNorm, kExactY, DF, TX, TY>(df, x, w, i, m, mul, add,
                                                 alpha, beta, va, vb, ta, tb,
                                                 ca, cb, tca, tcb);
    Store2N<kPairs<TX, TY, TP>, kQuietNaNs<TP>>(df, va, vb, y + i, false);
    if (HWY_UNLIKELY(!hn::AllTrue(df, hn::And(ca, cb)))) {
      flagged |= uint64_t{1} << ((i - begin) / FlagGroup(df));
    }
  }
  return flagged;
}

// The open lanes of elements [i, end) of a checked row in Hugging Face's
// order, decided.
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE void HFDecideChunk(DF df, const TX* x, TY* y, const Weights<TP>& w,
                                size_t i, size_t end, const RowScale& k,
                                const RowBound& bound,
                                LazyCrRow<kLayerNorm, TX>& cr,
                                internal::CrCache& cache) {
  constexpr bool kEvenOddPair = kPairs<TX, TY, TP> && kEvenOdd<TY>;
  const size_t N = hn::Lanes(df);
  const size_t stride = kEvenOddPair ? 2 : 1;
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  for (; i < end; i += 2 * N) {
    hn::Vec<DF> va, vb, ta, tb;
    hn::Mask<DF> ca, cb, tca, tcb;
    HFChecked2N<kLayerNorm, kExactY, DF, TX, TY>(df, x, w, i, m, mul, add,
                                                 alpha, beta, va, vb, ta, tb,
                                                 ca, cb, tca, tcb);
    if (hn::AllTrue(df, hn::And(ca, cb))) continue;
    DecideHFLanes(df, ca, tca, ta, i, N, y, w, cr, cache, stride);
    DecideHFLanes(df, cb, tcb, tb, kEvenOddPair ? i + 1 : i + N, N, y, w, cr,
                  cache, stride);
  }
}

// t's bound with room for the roundings of t -+ et (RoundsAlikeBF16):
// 2u|t| <= 2u(1 + u)(|d| mul + |add|), rounded up to fp32.
inline RowBound WithEnds(const RowScale& k, const RowBound& bound) {
  constexpr double c = 2 * 0x1p-24 * (1 + 0x1p-23);
  const auto up = [](double v) {
    return static_cast<float>(v * (1 + 0x1p-20));
  };
  return RowBound{up(bound.alpha + c * k.mul),
                  up(bound.beta + c * std::fabs(k.add)), 0.0};
}

// A row of 16-bit y, correctly rounded, in Hugging Face's order: chunks as
// in ApplyRowLeanChecked, then vectors and the tail. x is never y.
template <bool kLayerNorm, bool kExactY, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE void ApplyRowHFChecked(DF df, const TX* x, TY* y,
                                    const Weights<TP> w, size_t n,
                                    const RowScale& k,
                                    const RowBound& row_bound,
                                    LazyCrRow<kLayerNorm, TX>& cr) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  RowBound bound = row_bound;
  if constexpr (std::is_same_v<TX, bf16_t>) bound = WithEnds(k, bound);
  const size_t N = hn::Lanes(df);
  internal::CrCache cache;
  const size_t paired_end = n / (2 * N) * (2 * N);
  const auto redo = [&](size_t i, size_t end) {
    ForFlaggedGroups(
        HFChunk<kLayerNorm, kExactY>(df, x, y, w, i, end, k, bound), i, end,
        FlagGroup(df), [&](size_t g0, size_t g1) {
          HFDecideChunk<kLayerNorm, kExactY>(df, x, y, w, g0, g1, k, bound, cr,
                                             cache);
        });
  };
  uint16_t units = 0;
  const bool row_tame = kExactY && TameUnitsOf(cr.ScaleError(), 1, units);
  if (!TameChunks<kLayerNorm, true>(df, x, y, w, paired_end, k.mul, 0.0f,
                                    row_tame, units, TinyV(k, 1), redo)) {
    ForChunks(paired_end, redo);
  }
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  hn::Vec<DF> v, t;
  hn::Mask<DF> t_clear;
  for (size_t i = paired_end; i < n; i += N) {
    const size_t count = n - i < N ? n - i : N;
    hn::Mask<DF> clear;
    if (count == N) {
      clear = HFCheckedAt<kLayerNorm, kExactY, At::kFull, DF, TX, TY>(
          df, x, w, i, 0, m, mul, add, alpha, beta, v, t, t_clear);
      StoreF<kQuiet>(df, v, y + i);
    } else {
      clear = HFCheckedAt<kLayerNorm, kExactY, At::kTail, DF, TX, TY>(
          df, x, w, i, count, m, mul, add, alpha, beta, v, t, t_clear);
      StoreTailF<kQuiet>(df, v, y + i, count);
    }
    if (!hn::AllTrue(df, clear)) {
      DecideHFLanes(df, clear, t_clear, t, i, count, y, w, cr, cache, 1);
    }
  }
}

// A checked row of 16-bit y: Hugging Face's order (ApplyRowHFChecked), the
// lean form where its bound allows, else ApplyRowChecked: a loose bound, or
// a row of zero variance, whose results are exactly y = add * g + b (or are
// decided exactly): ApplyRowChecked's bound is 0 there and the lean one's
// floor would flag every lane.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void ApplyCheckedAny(DF df, const TX* x, TY* y, const Weights<TP>& w,
                                size_t n, const RowScale& k,
                                const RowBound& bound, double variance,
                                LazyCrRow<kLayerNorm, TX>& cr) {
  YBound yb;
  if constexpr (!std::is_same_v<TX, float>) {
    if (w.round) {
      if (ExactProducts(w)) {
        ApplyRowHFChecked<kLayerNorm, true>(df, x, y, w, n, k, bound, cr);
      } else {
        ApplyRowHFChecked<kLayerNorm, false>(df, x, y, w, n, k, bound, cr);
      }
      return;
    }
  }
  if (variance > 0.0 && YBoundOf(kLayerNorm, k, bound, yb)) {
    ApplyRowLeanChecked<kLayerNorm>(df, x, y, w, n, k, yb, cr);
  } else {
    ApplyRowChecked<kLayerNorm>(df, x, y, w, n, k, bound, cr);
  }
}

// q = y * inv is within e * inv + 2u|q| of y_exact / scale (inv's and the
// product's roundings): clear when no half-integer is that close.
template <class DF>
HWY_INLINE hn::Mask<DF> QuantClear(DF df, hn::Vec<DF> e, hn::Vec<DF> q,
                                   hn::Vec<DF> inv) {
  const auto eq = hn::MulAdd(hn::Mul(e, inv), hn::Set(df, 1.0f + 0x1p-20f),
                             hn::Mul(hn::Set(df, 3 * 0x1p-24f), hn::Abs(q)));
  const auto dist = hn::Abs(hn::Sub(q, hn::Round(q)));
  return hn::Lt(hn::Add(dist, eq), hn::Set(df, 0.5f));
}

// The lanes of `flags` (of the `count` elements at `at`) decided exactly.
template <class DF>
HWY_INLINE void DecideQuantLanes(DF df, hn::Vec<DF> flags, size_t at,
                                 size_t count, int8_t* y,
                                 const internal::CrRow& cr,
                                 const internal::CrWeights& crw, float scale,
                                 internal::CrCache& cache) {
  ForSetLanes(df, flags, count, [&](size_t l) {
    y[at + l] = internal::CorrectlyRoundedQ(cr, at + l, crw.G(at + l),
                                            crw.B(at + l), scale, cache);
  });
}

// int8 output of a checked row, group by group, from the exact y: bounds
// of max|y| from the fp32 results and their bounds; when they give one fp32
// scale = fl32(max|y| / 127), q = round-half-even(y / scale) by vectors,
// the lanes within their bound of a half-integer decided again. Groups whose
// scale the bounds leave open (ties for the maximum, a scale next to a
// rounding boundary, tiny or non-finite values) are decided by
// internal::CorrectlyRoundedInt8.
template <bool kLayerNorm, class DF, typename TX, typename TP>
HWY_NOINLINE void ApplyRowQuantChecked(DF df, const TX* x, int8_t* y,
                                       float* scales, size_t group,
                                       const Weights<TP> w, size_t n,
                                       const RowScale& k, const RowBound& bound,
                                       const internal::CrRow& cr,
                                       const internal::CrWeights& crw) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto alpha = hn::Set(df, bound.alpha), beta = hn::Set(df, bound.beta);
  internal::CrCache cache;
  hn::Vec<DF> v;
  for (size_t g0 = 0; g0 < n; g0 += group) {
    const size_t g1 = n - g0 > group ? g0 + group : n;
    float* scale = scales++;
    // Bounds of max|y|: max(|y| + e) and max(|y| - e).
    auto upper = hn::Zero(df), lower = hn::Zero(df);
    const auto inf = hn::Set(df, HUGE_VALF);
    bool finite = true;  // inf or NaN y (weights): the scalar group path
    size_t i = g0;
    for (; i + N <= g1; i += N) {
      const auto e = ResultBoundAt<kLayerNorm, At::kFull>(
          df, x, w, i, 0, m, mul, add, alpha, beta, v);
      const auto top = hn::Add(hn::Abs(v), e);
      finite = finite && hn::AllTrue(df, hn::Lt(top, inf));
      upper = hn::Max(upper, top);
      lower = hn::Max(lower, hn::Sub(hn::Abs(v), e));
    }
    if (i < g1) {
      const auto e = ResultBoundAt<kLayerNorm, At::kTail>(
          df, x, w, i, g1 - i, m, mul, add, alpha, beta, v);
      const auto valid = hn::FirstN(df, g1 - i);
      const auto top = hn::IfThenElseZero(valid, hn::Add(hn::Abs(v), e));
      finite = finite && hn::AllTrue(df, hn::Lt(top, inf));
      upper = hn::Max(upper, top);
      lower = hn::Max(lower, hn::IfThenElseZero(valid, hn::Sub(hn::Abs(v), e)));
    }
    if (!finite) {
      internal::CorrectlyRoundedInt8(cr, crw, g0, g1, y + g0, scale, cache);
      continue;
    }
    const float hi = hn::GetLane(hn::MaxOfLanes(df, upper));
    // Room for the fp32 subtractions (each rounded once).
    const float lo = hn::GetLane(hn::MaxOfLanes(df, lower)) * (1 - 0x1p-22f);
    if (hi == 0.0f) {  // every y and its bound 0: exact zeros
      *scale = 0.0f;
      std::memset(y + g0, 0, g1 - g0);
      continue;
    }
    // The largest |y| is one of the lanes with |y| + e >= lo (usually one):
    // their y in double bound it within ~1e-15, which settles fl32(max|y| /
    // 127) unless it is that close to a rounding boundary.
    double m_lo = 0.0, m_hi = 0.0;
    bool bounded = lo > 0.0f && hi < HUGE_VALF;
    for (i = g0; bounded && i < g1; i += N) {
      const size_t count = g1 - i < N ? g1 - i : N;
      hn::Vec<DF> e;
      if (count == N) {
        e = ResultBoundAt<kLayerNorm, At::kFull>(df, x, w, i, 0, m, mul, add,
                                                 alpha, beta, v);
      } else {
        e = ResultBoundAt<kLayerNorm, At::kTail>(df, x, w, i, count, m, mul,
                                                 add, alpha, beta, v);
      }
      const auto cand = hn::Ge(hn::Add(hn::Abs(v), e), hn::Set(df, lo));
      if (HWY_LIKELY(hn::AllFalse(df, cand))) continue;
      ForSetLanes(df, hn::VecFromMask(df, cand), count, [&](size_t l) {
        double yd = 0.0, ed = 0.0;
        bounded =
            bounded && internal::YWithBound(cr, i + l, crw.G(i + l),
                                            crw.B(i + l), cache, &yd, &ed);
        m_lo = std::max(m_lo, std::fabs(yd) - ed);
        m_hi = std::max(m_hi, std::fabs(yd) + ed);
      });
    }
    // Room for the division's rounding.
    const double s_lo = m_lo / 127 * (1 - 0x1p-50);
    const double s_hi = m_hi / 127 * (1 + 0x1p-50);
    const float sc = static_cast<float>(s_lo);
    if (!(bounded && m_lo > 0.0 && sc == static_cast<float>(s_hi) &&
          sc >= 0x1p-100f && sc <= 0x1p100f)) {
      internal::CorrectlyRoundedInt8(cr, crw, g0, g1, y + g0, scale, cache);
      continue;
    }
    *scale = sc;
    const auto vinv = hn::Set(df, static_cast<float>(1.0 / sc));
    for (i = g0; i + N <= g1; i += N) {
      const auto e = ResultBoundAt<kLayerNorm, At::kFull>(
          df, x, w, i, 0, m, mul, add, alpha, beta, v);
      const auto q = hn::Mul(v, vinv);
      const auto clear = QuantClear(df, e, q, vinv);
      StoreF(df, q, y + i);
      if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
        DecideQuantLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, N, y, cr,
                         crw, sc, cache);
      }
    }
    if (i < g1) {
      const auto e = ResultBoundAt<kLayerNorm, At::kTail>(
          df, x, w, i, g1 - i, m, mul, add, alpha, beta, v);
      const auto q = hn::Mul(v, vinv);
      const auto clear = QuantClear(df, e, q, vinv);
      StoreTailF(df, q, y + i, g1 - i);
      DecideQuantLanes(df, hn::VecFromMask(df, hn::Not(clear)), i, g1 - i, y,
                       cr, crw, sc, cache);
    }
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CHECKED_FORMS_INL_H_

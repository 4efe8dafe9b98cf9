// Correctly rounded bf16 and f16 y for the channel kinds (GroupNorm,
// InstanceNorm, BatchNorm): the rows' machinery (norm_rows-inl.h, "correctly
// rounded rows"; lib/correct_rounding.h) over sets of elements that are not
// one contiguous row.
//
// A group (or a training channel) is a LayerNorm row whose elements may be
// strided: its statistics are made in double with StatsFromSums' bounds
// (any order of the sums is covered), CheckedScale gives the fp32 constants
// and the per-element bound, and each vector's results are tested by
// RoundsClear; the rare open lanes are decided by CorrectlyRoundedBits on a
// CrRow whose accessor walks the set (run, step, run_stride). Inference
// normalizes by the given running statistics: a row of one element with
// exact sums (GivenMoments). A unit whose constants have no bound decides
// every element; a NaN unit is the default quiet NaN.
//
// The decisions read x after y was stored: in place, the caller hands in a
// copy of the unit's x.

#if defined(SIMDNORM_LIB_CHANNEL_CHECKED_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_CHANNEL_CHECKED_INL_H_
#undef SIMDNORM_LIB_CHANNEL_CHECKED_INL_H_
#else
#define SIMDNORM_LIB_CHANNEL_CHECKED_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>

#include "hwy/highway.h"
#include "lib/correct_rounding.h"
#include "lib/norm_rows-inl.h"
#include "lib/rounding_check-inl.h"
#include "lib/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// The default quiet NaN in every lane.
template <class DF>
HWY_INLINE hn::Vec<DF> QuietNaN(DF df) {
  return hn::BitCast(
      df, hn::Set(hn::RebindToUnsigned<DF>(), uint32_t{0x7FC00000u}));
}

// How a checked unit is written: by vectors with the bound, every element
// decided (no bound: CheckedScale refused, or inference's infinite
// moments), or NaN throughout.
enum class Unit { kChecked, kDecideAll, kNaN };

// A unit's fp32 constants: t = (x - m) * mul + add within alpha |x - m| +
// beta of the exact xhat (CheckedScale).
// lean: the cheaper bound |y - exact y| <= r|y| + ag|g| + ab|b| + floor
// (YBound) holds, and r, ag, ab are set.
struct CheckedConsts {
  float m, mul, add, alpha, beta;
  bool lean = false;
  float r = NAN, ag = 0.0f, ab = 0.0f;
};

// The absolute part of a lean bound for weights g, b: ag|g| + ab|b| +
// kYFloor in double, rounded up to fp32 (NaN when k is not lean).
inline float LeanWeights(const CheckedConsts& k, float g, float b) {
  if (!k.lean) return NAN;
  const double w = static_cast<double>(k.ag) * std::fabs(g) +
                   static_cast<double>(k.ab) * std::fabs(b) + kYFloor;
  return static_cast<float>(w * (1 + 0x1p-20));
}

// The lean bound's absolute part where d = x - m is 0. With beta = 0
// (add = 0 and an exact mean: inference's given moments), t = +-0 is
// exactly xhat there and only y's own rounding is left, which r|y| covers
// (r >= 1.01u): 0, as CheckedVector's bound is, so that x = running_mean
// (zeros with a zero mean) is not sent to the decisions. Else w.
inline float LeanWeightsAtZero(const CheckedConsts& k, float g, float b) {
  return k.lean && k.beta == 0.0f ? 0.0f : LeanWeights(k, g, b);
}

// Whether StoreLean's bf16 ends hold for a channel with weight b and
// LeanWeightsAtZero w0: VCVTNEPS2BF16 reads a subnormal end as zero, so
// each lane needs e >= 2^-111 (LeanWeights has it; w0 > 0), or, where w0
// = 0, y = b exactly at d = 0 and b is 0 or normal: its ends are then
// rounded as b itself is (a -0 has the ends -0 and +0, which disagree and
// send the lane to the decisions). Inference's given moments have w0 = 0
// in every channel: without this they took the software test (3.4x f32's
// time for bf16 BatchNorm inference, 8x64x56x56).
inline bool Bf16EndsHold(float w0, float b) {
  return w0 > 0.0f || b == 0.0f || !(std::fabs(b) < 0x1p-126f);
}

// The mode and constants of a LayerNorm-like unit from its statistics.
inline Unit CheckedUnit(const internal::RowStats& st, CheckedConsts* c) {
  // NaN or inf in the unit, or an infinite 1/sqrt: NaN throughout.
  if (internal::NaNStats(st)) return Unit::kNaN;
  RowScale k;
  RowBound bound;
  if (!CheckedScale(true, st, k, bound)) return Unit::kDecideAll;
  *c = CheckedConsts{k.m, k.mul, k.add, bound.alpha, bound.beta};
  // As ApplyCheckedAny: zero variance (exact results, a zero bound) and add
  // = 0 keep the full bound.
  // YBoundOf declines add = 0 (the rows keep the full bound there, whose
  // beta may be 0); its bound for |add| = 2^-126 is larger (b1 grows with
  // |add|), so it holds for add = 0 too.
  RowScale kb = k;
  if (kb.add == 0.0f) kb.add = 0x1p-126f;
  YBound yb;
  if (st.v > 0.0 && YBoundOf(true, kb, bound, yb)) {
    c->lean = true;
    c->r = yb.r;
    c->ag = yb.ag;
    c->ab = yb.ab;
  }
  return Unit::kChecked;
}

// Whether a set's shift is so far from its mean that a second pass pays:
// r's error er enters the bound as er against the 3u of the fp32 results
// (CheckedScale's alpha), so er <= 2^-32 costs at most 0.2 % more open
// lanes. The rows' 2^-40 (ShouldRecenter) sends every set of more than
// ~2^13 elements through a second pass: DoubleSums' own error, n 2^-53,
// is above it whatever the shift.
inline bool SetShouldRecenter(const internal::RowStats& st) {
  return st.c != 0.0 && (st.er < 0.0 || st.er > 0x1p-32);
}

// The statistics of a LayerNorm-like set of n elements from
// sums(k, &s, &q) = sum(x - k), sum((x - k)^2) in double (DoubleSums'
// model), shifted by k0 and again by the mean when k0 was too far from it
// (SetShouldRecenter).
template <class Sums>
HWY_INLINE internal::RowStats StatsOfSet(size_t n, float eps, float k0,
                                         const Sums& sums) {
  const internal::StatsPlan plan =
      internal::PlanStats(SIMDNORM_LAYERNORM, n, eps, internal::DoubleSums(n));
  double s, q;
  sums(k0, &s, &q);
  internal::RowStats st = internal::StatsFromSums(plan, k0, s, q);
  if (SetShouldRecenter(st)) {
    const float k = static_cast<float>(st.k + st.c);
    sums(k, &s, &q);
    st = internal::StatsFromSums(plan, k, s, q);
  }
  return st;
}

// For channels [j0, j1) over `rows` positions `stride` elements apart:
// sum[j] += sum(x - k[j]) and sq[j] += sum((x - k[j])^2), in double lanes
// (exact differences of floats, then one rounding each). Blocks of 32
// positions, two channel vectors' accumulators in registers.
template <class DF, typename TX>
HWY_NOINLINE void ChannelSumsF64(DF, const TX* x, size_t stride, size_t rows,
                                 size_t j0, size_t j1, const float* k,
                                 double* sum, double* sq) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dfh;
  const size_t M = hn::Lanes(dd);
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = j0; j < j1; j += 2 * M) {
      const size_t count0 = j1 - j < M ? j1 - j : M;
      const size_t count1 = j1 - j > M ? HWY_MIN(M, j1 - j - M) : 0;
      const auto k0 = hn::PromoteTo(dd, LoadTailF(dfh, k + j, count0));
      const auto k1 =
          count1 ? hn::PromoteTo(dd, LoadTailF(dfh, k + j + M, count1)) : k0;
      auto s0 = hn::Zero(dd), q0 = s0, s1 = s0, q1 = s0;
      for (size_t p = p0; p < p1; ++p) {
        const TX* r = x + p * stride + j;
        // The loads walk columns, which the hardware prefetchers do not
        // follow: the same channels a block ahead (as ChannelSums).
        if (p + 32 < rows) {
          hwy::Prefetch(r + 32 * stride);
          if (count1) hwy::Prefetch(r + 32 * stride + M);
        }
        const auto d0 =
            hn::Sub(hn::PromoteTo(dd, count0 == M ? LoadF(dfh, r)
                                                  : LoadTailF(dfh, r, count0)),
                    k0);
        s0 = hn::Add(s0, d0);
        q0 = hn::MulAdd(d0, d0, q0);
        if (count1) {
          const auto d1 = hn::Sub(
              hn::PromoteTo(dd, count1 == M ? LoadF(dfh, r + M)
                                            : LoadTailF(dfh, r + M, count1)),
              k1);
          s1 = hn::Add(s1, d1);
          q1 = hn::MulAdd(d1, d1, q1);
        }
      }
      // Lanes past j1 summed zeros minus k: never stored.
      HWY_ALIGN double buf[4 * kMaxFloatLanes];
      hn::Store(s0, dd, buf);
      hn::Store(q0, dd, buf + M);
      hn::Store(s1, dd, buf + 2 * M);
      hn::Store(q1, dd, buf + 3 * M);
      for (size_t l = 0; l < count0; ++l) {
        sum[j + l] += buf[l];
        sq[j + l] += buf[M + l];
      }
      for (size_t l = 0; l < count1; ++l) {
        sum[j + M + l] += buf[2 * M + l];
        sq[j + M + l] += buf[3 * M + l];
      }
    }
  }
}

// The elements of `count` lanes of y at p that `clear` leaves open,
// decided: decide(l) gives the bits of lane l.
template <class DF, typename TY, class Decide>
HWY_NOINLINE void DecideOpen(DF df, hn::Mask<DF> clear, size_t count, TY* y,
                             const Decide& decide) {
  ForSetLanes(df, hn::VecFromMask(df, hn::Not(clear)), count, [&](size_t l) {
    const uint16_t bits = decide(l);
    std::memcpy(y + l, &bits, sizeof(bits));
  });
}

// One checked vector: y and the lanes that round as the exact values do.
template <typename TY, class DF>
HWY_INLINE hn::Mask<DF> CheckedVector(DF df, hn::Vec<DF> xv, hn::Vec<DF> m,
                                      hn::Vec<DF> mul, hn::Vec<DF> add,
                                      hn::Vec<DF> alpha, hn::Vec<DF> beta,
                                      hn::Vec<DF> g, hn::Vec<DF> b,
                                      hn::Vec<DF>& y) {
  hn::Vec<DF> t, et;
  TermsOf<true>(df, xv, m, mul, add, alpha, beta, t, et);
  return RoundsClear<TY>(df, y, ResultBound(df, t, et, g, b, y));
}

// One vector of a lean unit (CheckedConsts::lean): t and y as
// CheckedVector computes them, and the bound e = r|y| + w, w = LeanWeights
// (w0 = LeanWeightsAtZero where d = 0): 4 operations a vector against
// CheckedVector's 9. Like the rows' YBound, r has room for the roundings
// of y -+ e. !kAtZero: no lane has d = 0 with w0 != w (AtZero), so w0 is
// not selected. kMerged: mul holds s = mul * g (MergedScale), and y = d s
// + b, one FMA.
template <bool kAtZero = true, bool kMerged = false, class DF>
HWY_INLINE void LeanResult(DF df, hn::Vec<DF> xv, hn::Vec<DF> m,
                           hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF> r,
                           hn::Vec<DF> w, hn::Vec<DF> w0, hn::Vec<DF> g,
                           hn::Vec<DF> b, hn::Vec<DF>& y, hn::Vec<DF>& e) {
  const auto d = hn::Sub(xv, m);
  if constexpr (kMerged) {
    (void)add;
    (void)g;
    y = hn::MulAdd(d, mul, b);
  } else {
    y = GammaBeta(df, hn::MulAdd(d, mul, add), g, b);
  }
  const auto wd = kAtZero ? hn::IfThenElse(hn::Eq(d, hn::Zero(df)), w0, w) : w;
  e = hn::MulAdd(r, hn::Abs(y), wd);
}

// Whether LeanResult may take y = d s + b with s = mul * g in fp32
// (kMerged): with add = 0 (BatchNorm inference; units whose mean is exact
// in fp32), t g = fl(d mul) g, and d s = d mul g (1 + delta), |delta| <= u
// where s is a normal float (or g = 0): the same relative error as t's
// rounding, so the lean bound holds for the one FMA as for t = d mul and
// y = t g + b. Only without d = 0 lanes at w0 (!AtZero): a zero d s may
// carry the other sign of zero than t g, and the ends then straddle zero
// (e >= w > 0) and send it to the decisions. Saves an FMA a vector.
template <class DF>
HWY_INLINE bool MergedScale(DF df, hn::Vec<DF> mul, hn::Vec<DF> add,
                            hn::Vec<DF> g, hn::Vec<DF>& s) {
  s = hn::Mul(mul, g);
  const auto as = hn::Abs(s);
  return HWY_NATIVE_FMA && hn::AllTrue(df, hn::Eq(add, hn::Zero(df))) &&
         hn::AllTrue(df, hn::Lt(as, hn::Set(df, HUGE_VALF))) &&
         hn::AllTrue(df, hn::Or(hn::Eq(g, hn::Zero(df)),
                                hn::Ge(as, hn::Set(df, 0x1p-126f))));
}

// Whether LeanResult must select w0 for a unit of TX elements with mean m:
// w0 differs from w and some x equals m (d = x - m is 0 only there; a
// bf16 x only where m is a bf16 value, as a trained running mean rarely
// is). Saves a compare and a blend a vector of bf16 BatchNorm inference.
template <typename TX>
inline bool AtZero(float m, float w, float w0) {
  if (w0 == w) return false;
  if constexpr (std::is_same_v<TX, bf16_t>) {
    uint32_t bits;
    std::memcpy(&bits, &m, sizeof(bits));
    return (bits & 0xFFFFu) == 0;
  }
  return true;
}

// 16-bit y of a lean vector with finite weights (and for bf16
// Bf16EndsHold), as the rows' StoreIfAlike (where kHardwareEnds: f16 by
// VCVTPS2PH or FCVT, bf16 by VCVTNEPS2BF16 on the AVX512_BF16 targets): both
// ends y -+ e rounded by the hardware (monotonic), the low ends stored, and
// true where every lane's ends agree (then the exact value between them rounds
// alike). Else *clear gets the lanes that did (an inf y has a NaN end and never
// does). ~5 operations a vector against RoundsClear's ~15 (f16) or
// RoundsAlikeBF16's ~10 and the packing (bf16). bf16 needs e >= 2^-111 on every
// lane, or an exact normal or zero y where e = 0 (Bf16EndsHold): the conversion
// reads a subnormal end as zero, and such an end then differs from the
// other (2e apart, nonzero).
#if SIMDNORM_HW_F16
template <class DF>
HWY_INLINE bool StoreLean(DF df, hn::Vec<DF> y, hn::Vec<DF> e,
                          f16_t* HWY_RESTRICT p, hn::Mask<DF>* clear) {
  const hn::Rebind<f16_t, DF> dh;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::RebindToUnsigned<DF> du;
  const auto lo = hn::BitCast(du16, hn::DemoteTo(dh, hn::Sub(y, e)));
  const auto hi = hn::BitCast(du16, hn::DemoteTo(dh, hn::Add(y, e)));
  hn::StoreU(lo, du16, reinterpret_cast<uint16_t*>(p));
  if (HWY_LIKELY(hn::AllTrue(du16, hn::Eq(lo, hi)))) return true;
  *clear =
      hn::RebindMask(df, hn::Eq(hn::PromoteTo(du, lo), hn::PromoteTo(du, hi)));
  return false;
}
#endif
#if SIMDNORM_AVX512BF16
template <class DF>
HWY_INLINE bool StoreLean(DF /*df*/, hn::Vec<DF> y, hn::Vec<DF> e,
                          bf16_t* HWY_RESTRICT p, hn::Mask<DF>* clear) {
  const __m256i lo = NarrowBF16(_mm512_sub_ps(y.raw, e.raw));
  const __m256i hi = NarrowBF16(_mm512_add_ps(y.raw, e.raw));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), lo);
  const __mmask16 alike = _mm256_cmpeq_epi16_mask(lo, hi);
  if (HWY_LIKELY(alike == 0xFFFF)) return true;
  *clear = hn::Mask<DF>{alike};
  return false;
}

// StoreLean of two bf16 vectors, a's to pa and b's to pb (kContiguous: pb
// = pa + 16, one store), with one VCVTNE2PS2BF16 per end for both where
// StoreLean takes one conversion per end and vector: Zen 5 converts ~1
// vector a cycle, and those conversions bounded bf16 BatchNorm inference.
// True where every lane of both agreed; else DecideLean2 tests each again.
template <bool kContiguous>
HWY_INLINE bool StoreLean2(__m512 a, __m512 ea, __m512 b, __m512 eb,
                           bf16_t* HWY_RESTRICT pa, bf16_t* HWY_RESTRICT pb) {
  if constexpr (kContiguous) {
    (void)pb;
    return StoreIfAlikeBF16<false>(a, ea, b, eb, pa);
  } else {
    // a in words 0-15, b in 16-31.
    const __m512i lo = BothBF16(_mm512_sub_ps(b, eb), _mm512_sub_ps(a, ea));
    const __m512i hi = BothBF16(_mm512_add_ps(b, eb), _mm512_add_ps(a, ea));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pa),
                        _mm512_castsi512_si256(lo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(pb),
                        _mm512_extracti64x4_epi64(lo, 1));
    return _mm512_cmpneq_epi16_mask(lo, hi) == 0;
  }
}

// Calls pairs(at_zero, merge), a lean loop, with its form as compile-time
// constants: w0 selected where a lane may have d = 0 (AtZero), else the
// one FMA where MergedScale allows it.
template <class Pairs>
HWY_INLINE void WithLeanForm(bool at_zero, bool merged, const Pairs& pairs) {
  if (at_zero) {
    pairs(std::true_type(), std::false_type());
  } else if (merged) {
    pairs(std::false_type(), std::true_type());
  } else {
    pairs(std::false_type(), std::false_type());
  }
}

// Two lean vectors whose ends did not all agree in StoreLean2: each stored
// and tested again by StoreLean, its open lanes decided (decide_a(l),
// decide_b(l) give lane l's bits).
template <class DF, class DecideA, class DecideB>
HWY_NOINLINE void DecideLean2(DF df, hn::Vec<DF> a, hn::Vec<DF> ea,
                              hn::Vec<DF> b, hn::Vec<DF> eb, bf16_t* pa,
                              bf16_t* pb, const DecideA& decide_a,
                              const DecideB& decide_b) {
  const size_t N = hn::Lanes(df);
  hn::Mask<DF> clear;
  if (!StoreLean(df, a, ea, pa, &clear)) DecideOpen(df, clear, N, pa, decide_a);
  if (!StoreLean(df, b, eb, pb, &clear)) DecideOpen(df, clear, N, pb, decide_b);
}
#endif

template <typename TY, class DF>
HWY_INLINE hn::Mask<DF> LeanVector(DF df, hn::Vec<DF> xv, hn::Vec<DF> m,
                                   hn::Vec<DF> mul, hn::Vec<DF> add,
                                   hn::Vec<DF> r, hn::Vec<DF> w, hn::Vec<DF> w0,
                                   hn::Vec<DF> g, hn::Vec<DF> b,
                                   hn::Vec<DF>& y) {
  hn::Vec<DF> e;
  LeanResult(df, xv, m, mul, add, r, w, w0, g, b, y, e);
  if constexpr (std::is_same_v<TY, bf16_t>) {
    return RoundsAlikeBF16(df, y, e, y);  // y is rounded (stores keep it)
  } else {
    return RoundsClear<TY>(df, y, e);
  }
}

// One vector of a checked unit by its bound: the lean one (kLean: r, w,
// w0) or the full one (alpha, beta in r, w).
template <bool kLean, typename TY, class DF>
HWY_INLINE hn::Mask<DF> UnitVector(DF df, hn::Vec<DF> xv, hn::Vec<DF> m,
                                   hn::Vec<DF> mul, hn::Vec<DF> add,
                                   hn::Vec<DF> r, hn::Vec<DF> w, hn::Vec<DF> w0,
                                   hn::Vec<DF> g, hn::Vec<DF> b,
                                   hn::Vec<DF>& y) {
  if constexpr (kLean) {
    return LeanVector<TY>(df, xv, m, mul, add, r, w, w0, g, b, y);
  } else {
    (void)w0;
    return CheckedVector<TY>(df, xv, m, mul, add, r, w, g, b, y);
  }
}

// n contiguous elements of one channel (weights g, b) of a checked unit;
// decide(i) gives the bits of element i. kLean: k.lean's bound.
template <bool kLean, class DF, typename TX, typename TY, class Decide>
HWY_NOINLINE void ApplyPlaneChecked(DF df, const TX* x, TY* y, size_t n,
                                    const CheckedConsts& k, float g, float b,
                                    const Decide& decide) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add);
  const auto r = hn::Set(df, kLean ? k.r : k.alpha);
  // Once per plane: GroupNorm's planes may be 64 elements (8x8).
  const float ws = kLean ? LeanWeights(k, g, b) : k.beta;
  const float w0s = LeanWeightsAtZero(k, g, b);
  const auto w = hn::Set(df, ws), w0 = hn::Set(df, w0s);
  const auto vg = hn::Set(df, g), vb = hn::Set(df, b);
  hn::Vec<DF> v;
  // 16-bit y with finite weights: both ends by the hardware (StoreLean).
  [[maybe_unused]] const bool ends =
      kLean && kHardwareEnds<DF, TY> && std::isfinite(g) && std::isfinite(b) &&
      (std::is_same_v<TY, f16_t> || Bf16EndsHold(w0s, b));
  size_t i = 0;
#if SIMDNORM_AVX512BF16
  // bf16: two vectors a conversion (StoreLean2).
  if constexpr (kLean && kHardwareEnds<DF, TY> && std::is_same_v<TY, bf16_t>) {
    hn::Vec<DF> s = mul;  // MergedScale sets it
    const auto pairs = [&](auto at_zero, auto merge) {
      constexpr bool kAtZero = decltype(at_zero)::value;
      constexpr bool kMerged = decltype(merge)::value;
      const auto vm = kMerged ? s : mul;
      for (; i + 2 * N <= n; i += 2 * N) {
        hn::Vec<DF> v0, v1, e0, e1;
        LeanResult<kAtZero, kMerged>(df, LoadF(df, x + i), m, vm, add, r, w, w0,
                                     vg, vb, v0, e0);
        LeanResult<kAtZero, kMerged>(df, LoadF(df, x + i + N), m, vm, add, r, w,
                                     w0, vg, vb, v1, e1);
        if (HWY_UNLIKELY(!StoreLean2<true>(v0.raw, e0.raw, v1.raw, e1.raw,
                                           y + i, y + i + N))) {
          const size_t at = i;
          DecideLean2(
              df, v0, e0, v1, e1, y + at, y + at + N,
              [&](size_t l) { return decide(at + l); },
              [&](size_t l) { return decide(at + N + l); });
        }
      }
    };
    if (ends) {
      const bool at_zero = AtZero<TX>(k.m, ws, w0s);
      WithLeanForm(at_zero, !at_zero && MergedScale(df, mul, add, vg, s),
                   pairs);
    }
  }
#endif
  for (; i + N <= n; i += N) {
#if SIMDNORM_HW_F16 || SIMDNORM_AVX512BF16
    if constexpr (kLean && kHardwareEnds<DF, TY>) {
      if (ends) {
        hn::Vec<DF> e;
        LeanResult(df, LoadF(df, x + i), m, mul, add, r, w, w0, vg, vb, v, e);
        hn::Mask<DF> clear;
        if (HWY_UNLIKELY(!StoreLean(df, v, e, y + i, &clear))) {
          const size_t at = i;
          DecideOpen(df, clear, N, y + at,
                     [&](size_t l) { return decide(at + l); });
        }
        continue;
      }
    }
#endif
    const auto clear = UnitVector<kLean, TY>(df, LoadF(df, x + i), m, mul, add,
                                             r, w, w0, vg, vb, v);
    StoreF(df, v, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
      const size_t at = i;  // a copy: i stays in a register
      DecideOpen(df, clear, N, y + at,
                 [&](size_t l) { return decide(at + l); });
    }
  }
  if (i < n) {
    const size_t count = n - i;
    auto clear = UnitVector<kLean, TY>(df, LoadTailF(df, x + i, count), m, mul,
                                       add, r, w, w0, vg, vb, v);
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
    StoreTailF(df, v, y + i, count);
    if (!hn::AllTrue(df, clear)) {
      const size_t at = i;  // i's address would keep it in memory
      DecideOpen(df, clear, count, y + at,
                 [&](size_t l) { return decide(at + l); });
    }
  }
}

// A unit's contiguous elements by its mode: checked, decided one by one,
// or NaN.
template <class DF, typename TX, typename TY, class Decide>
HWY_INLINE void ApplyPlaneUnit(DF df, Unit mode, const TX* x, TY* y, size_t n,
                               const CheckedConsts& k, float g, float b,
                               const Decide& decide) {
  if (mode == Unit::kChecked && k.lean) {
    ApplyPlaneChecked<true>(df, x, y, n, k, g, b, decide);
  } else if (mode == Unit::kChecked) {
    ApplyPlaneChecked<false>(df, x, y, n, k, g, b, decide);
  } else if (mode == Unit::kNaN) {
    FillNaN(df, y, static_cast<float*>(nullptr), 0, n);
  } else {
    for (size_t i = 0; i < n; ++i) {
      const uint16_t bits = decide(i);
      std::memcpy(y + i, &bits, sizeof(bits));
    }
  }
}

// Per-channel constants of channels-last checked results (cp floats each,
// as ChannelScratch: a vector from any channel fits). kDecideAll channels
// get NaN bounds (no lane is clear), kNaN channels the nan flag. r and w
// w0 are the lean bound's (LeanWeights, LeanWeightsAtZero; NaN where it
// does not hold), full flags checked channels without it, bf16_ends those
// whose bf16 ends hold (Bf16EndsHold), at_zero those whose lean results
// select w0 (AtZero; x of type TX).
struct CheckedChannels {
  size_t cp;
  float *m, *mul, *add, *alpha, *beta, *g, *b, *nan, *r, *w, *w0, *full,
      *bf16_ends, *at_zero;

  CheckedChannels(size_t c, size_t lanes, internal::Scratch& scratch)
      : cp((c + lanes - 1) / lanes * lanes + lanes) {
    float* f = scratch.Take<float>(14 * cp);
    for (float** p : {&m, &mul, &add, &alpha, &beta, &g, &b, &nan, &r, &w, &w0,
                      &full, &bf16_ends, &at_zero}) {
      *p = f;
      f += cp;
    }
  }

  template <typename TX>
  void Set(size_t j, Unit mode, const CheckedConsts& k, float gj, float bj) {
    const CheckedConsts open{0.0f, 0.0f, 0.0f, NAN, NAN};
    const CheckedConsts& c = mode == Unit::kChecked ? k : open;
    m[j] = c.m;
    mul[j] = c.mul;
    add[j] = c.add;
    alpha[j] = c.alpha;
    beta[j] = c.beta;
    g[j] = gj;
    b[j] = bj;
    nan[j] = mode == Unit::kNaN ? 1.0f : 0.0f;
    r[j] = c.r;
    w[j] = LeanWeights(c, gj, bj);
    w0[j] = LeanWeightsAtZero(c, gj, bj);
    full[j] = mode == Unit::kChecked && !k.lean ? 1.0f : 0.0f;
    bf16_ends[j] = Bf16EndsHold(w0[j], bj) ? 1.0f : 0.0f;
    at_zero[j] = AtZero<TX>(m[j], w[j], w0[j]) ? 1.0f : 0.0f;
  }

  // Whether channels [0, c) may all take the lean bound.
  bool AllLean(size_t c) const {
    for (size_t j = 0; j < c; ++j) {
      if (full[j] != 0.0f) return false;
    }
    return true;
  }
};

// Whether lean channels [j, j + N) of t round both ends of their bounds by
// the hardware (StoreLean): none NaN, finite weights and bounds (kDecideAll
// channels have NaN bounds, whose ends would agree), and for bf16 y
// Bf16EndsHold.
template <typename TY, class DF>
HWY_INLINE bool LeanEndsAt(DF df, const CheckedChannels& t, size_t j) {
  const auto finite = [&](const float* p) {
    return hn::AllTrue(
        df, hn::Lt(hn::Abs(hn::LoadU(df, p + j)), hn::Set(df, HUGE_VALF)));
  };
  return hn::AllTrue(df, hn::Eq(hn::LoadU(df, t.nan + j), hn::Zero(df))) &&
         finite(t.g) && finite(t.b) && finite(t.r) && finite(t.w) &&
         finite(t.w0) &&
         (std::is_same_v<TY, f16_t> ||
          hn::AllTrue(df,
                      hn::Ne(hn::LoadU(df, t.bf16_ends + j), hn::Zero(df))));
}

// Channels-last checked results: `rows` rows of c channels, x_stride and
// y_stride elements apart; decide(p, j) gives the bits of row p, channel
// j. Blocks of 32 rows, each channel vector's constants in registers (as
// ApplyNhwc). kLean: every channel's bound is the lean one (AllLean).
template <bool kLean, class DF, typename TX, typename TY, class Decide>
HWY_NOINLINE void ApplyNhwcCheckedAs(DF df, const TX* x, size_t x_stride, TY* y,
                                     size_t y_stride, size_t c, size_t rows,
                                     const CheckedChannels& t,
                                     const Decide& decide) {
  const size_t N = hn::Lanes(df);
  const auto qnan = QuietNaN(df);
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = 0; j < c; j += N) {
      const size_t count = c - j < N ? c - j : N;
      const auto nan = hn::Ne(hn::LoadU(df, t.nan + j), hn::Zero(df));
      // Lanes past c count as clear (and are not stored).
      const auto done = hn::Or(nan, hn::Not(hn::FirstN(df, count)));
      const auto m = hn::LoadU(df, t.m + j), mul = hn::LoadU(df, t.mul + j);
      const auto add = hn::LoadU(df, t.add + j);
      // Lean: alpha and beta hold r and w.
      const auto alpha = hn::LoadU(df, (kLean ? t.r : t.alpha) + j);
      const auto beta = hn::LoadU(df, (kLean ? t.w : t.beta) + j);
      const auto g = hn::LoadU(df, t.g + j), b = hn::LoadU(df, t.b + j);
      const auto w0 = kLean ? hn::LoadU(df, t.w0 + j) : beta;
      // 16-bit y, a whole vector of channels: both ends by the hardware.
      [[maybe_unused]] const bool ends = kLean && kHardwareEnds<DF, TY> &&
                                         count == N && LeanEndsAt<TY>(df, t, j);
      size_t p = p0;
#if SIMDNORM_AVX512BF16
      // bf16: two positions a conversion (StoreLean2).
      if constexpr (kLean && kHardwareEnds<DF, TY> &&
                    std::is_same_v<TY, bf16_t>) {
        hn::Vec<DF> s = mul;  // MergedScale sets it
        const bool merged = ends && MergedScale(df, mul, add, g, s);
        const auto pairs = [&](auto at_zero, auto merge) {
          constexpr bool kAtZero = decltype(at_zero)::value;
          constexpr bool kMerged = decltype(merge)::value;
          const auto vm = kMerged ? s : mul;
          for (; p + 2 <= p1; p += 2) {
            const TX* xr = x + p * x_stride + j;
            TY* yr = y + p * y_stride + j;
            if (p + 33 < rows) {
              hwy::Prefetch(xr + 32 * x_stride);
              hwy::Prefetch(xr + 33 * x_stride);
            }
            hn::Vec<DF> v0, v1, e0, e1;
            LeanResult<kAtZero, kMerged>(df, LoadF(df, xr), m, vm, add, alpha,
                                         beta, w0, g, b, v0, e0);
            LeanResult<kAtZero, kMerged>(df, LoadF(df, xr + x_stride), m, vm,
                                         add, alpha, beta, w0, g, b, v1, e1);
            if (HWY_UNLIKELY(!StoreLean2<false>(v0.raw, e0.raw, v1.raw, e1.raw,
                                                yr, yr + y_stride))) {
              // p and j by value: their addresses would keep them in memory.
              DecideLean2(
                  df, v0, e0, v1, e1, yr, yr + y_stride,
                  [&decide, p, j](size_t l) { return decide(p, j + l); },
                  [&decide, p, j](size_t l) { return decide(p + 1, j + l); });
            }
          }
        };
        if (ends) {
          WithLeanForm(!hn::AllTrue(df, hn::Eq(hn::LoadU(df, t.at_zero + j),
                                               hn::Zero(df))),
                       merged, pairs);
        }
      }
#endif
      for (; p < p1; ++p) {
        const TX* xr = x + p * x_stride + j;
        TY* yr = y + p * y_stride + j;
        if (p + 32 < rows) hwy::Prefetch(xr + 32 * x_stride);
        hn::Vec<DF> v;
#if SIMDNORM_HW_F16 || SIMDNORM_AVX512BF16
        if constexpr (kLean && kHardwareEnds<DF, TY>) {
          if (ends) {
            hn::Vec<DF> e;
            LeanResult(df, LoadF(df, xr), m, mul, add, alpha, beta, w0, g, b, v,
                       e);
            hn::Mask<DF> clear;
            if (HWY_UNLIKELY(!StoreLean(df, v, e, yr, &clear))) {
              DecideOpen(df, clear, N, yr, [&decide, p, j](size_t l) {
                return decide(p, j + l);
              });
            }
            continue;
          }
        }
#endif
        const auto xv = LoadTailF(df, xr, count);
        const auto clear =
            hn::Or(UnitVector<kLean, TY>(df, xv, m, mul, add, alpha, beta, w0,
                                         g, b, v),
                   done);
        v = hn::IfThenElse(nan, qnan, v);
        if (count == N) {
          StoreF(df, v, yr);
        } else {
          StoreTailF(df, v, yr, count);
        }
        if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
          DecideOpen(df, clear, count, yr,
                     [&decide, p, j](size_t l) { return decide(p, j + l); });
        }
      }
    }
  }
}

#if SIMDNORM_AVX512BF16
// Whether every channel of a channels-last unit takes ApplyNhwcMerged: c a
// multiple of 2N, every channel lean with its ends by the hardware
// (LeanEndsAt), no d = 0 at w0 (AtZero) and the one-FMA form (MergedScale).
template <class DF>
HWY_INLINE bool AllMerged(DF df, const CheckedChannels& t, size_t c) {
  const size_t N = hn::Lanes(df);
  if (c % (2 * N) != 0 || !t.AllLean(c)) return false;
  for (size_t j = 0; j < c; j += N) {
    hn::Vec<DF> s;
    if (!LeanEndsAt<bf16_t>(df, t, j) ||
        !hn::AllTrue(df, hn::Eq(hn::LoadU(df, t.at_zero + j), hn::Zero(df))) ||
        !MergedScale(df, hn::LoadU(df, t.mul + j), hn::LoadU(df, t.add + j),
                     hn::LoadU(df, t.g + j), s)) {
      return false;
    }
  }
  return true;
}

// Channels-last bf16 results where AllMerged holds (BatchNorm inference
// with trained running means): 2N channels of a position at a time, one
// 64-byte line of y per StoreLean2, blocks of 32 positions with the
// channels' constants in registers.
template <class DF, typename TX, class Decide>
HWY_NOINLINE void ApplyNhwcMerged(DF df, const TX* x, size_t x_stride,
                                  bf16_t* y, size_t y_stride, size_t c,
                                  size_t rows, const CheckedChannels& t,
                                  const Decide& decide) {
  const size_t N = hn::Lanes(df);
  for (size_t p0 = 0; p0 < rows; p0 += 32) {
    const size_t p1 = rows - p0 > 32 ? p0 + 32 : rows;
    for (size_t j = 0; j < c; j += 2 * N) {
      const auto m0 = hn::LoadU(df, t.m + j), m1 = hn::LoadU(df, t.m + j + N);
      const auto s0 = hn::Mul(hn::LoadU(df, t.mul + j), hn::LoadU(df, t.g + j));
      const auto s1 =
          hn::Mul(hn::LoadU(df, t.mul + j + N), hn::LoadU(df, t.g + j + N));
      const auto b0 = hn::LoadU(df, t.b + j), b1 = hn::LoadU(df, t.b + j + N);
      const auto r0 = hn::LoadU(df, t.r + j), r1 = hn::LoadU(df, t.r + j + N);
      const auto w0 = hn::LoadU(df, t.w + j), w1 = hn::LoadU(df, t.w + j + N);
      for (size_t p = p0; p < p1; ++p) {
        const TX* xr = x + p * x_stride + j;
        bf16_t* yr = y + p * y_stride + j;
        if (p + 32 < rows) hwy::Prefetch(xr + 32 * x_stride);
        hn::Vec<DF> v0, v1, e0, e1;
        LeanResult<false, true>(df, LoadF(df, xr), m0, s0, s0, r0, w0, w0, s0,
                                b0, v0, e0);
        LeanResult<false, true>(df, LoadF(df, xr + N), m1, s1, s1, r1, w1, w1,
                                s1, b1, v1, e1);
        if (HWY_UNLIKELY(!StoreLean2<true>(v0.raw, e0.raw, v1.raw, e1.raw, yr,
                                           yr + N))) {
          DecideLean2(
              df, v0, e0, v1, e1, yr, yr + N,
              [&decide, p, j](size_t l) { return decide(p, j + l); },
              [&decide, p, j, N](size_t l) { return decide(p, j + N + l); });
        }
      }
    }
  }
}
#endif

template <class DF, typename TX, typename TY, class Decide>
HWY_INLINE void ApplyNhwcChecked(DF df, const TX* x, size_t x_stride, TY* y,
                                 size_t y_stride, size_t c, size_t rows,
                                 const CheckedChannels& t,
                                 const Decide& decide) {
#if SIMDNORM_AVX512BF16
  if constexpr (kHardwareEnds<DF, TY> && std::is_same_v<TY, bf16_t>) {
    if (AllMerged(df, t, c)) {
      ApplyNhwcMerged(df, x, x_stride, y, y_stride, c, rows, t, decide);
      return;
    }
  }
#endif
  if (t.AllLean(c)) {
    ApplyNhwcCheckedAs<true>(df, x, x_stride, y, y_stride, c, rows, t, decide);
  } else {
    ApplyNhwcCheckedAs<false>(df, x, x_stride, y, y_stride, c, rows, t, decide);
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CHANNEL_CHECKED_INL_H_

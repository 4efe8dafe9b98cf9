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

#include "hwy/highway.h"
#include "lib/correct_rounding.h"
#include "lib/norm_rows-inl.h"
#include "lib/rounding_check-inl.h"

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
struct CheckedConsts {
  float m, mul, add, alpha, beta;
};

// The mode and constants of a LayerNorm-like unit from its statistics.
inline Unit CheckedUnit(const internal::RowStats& st, CheckedConsts* c) {
  // NaN or inf in the unit, or an infinite 1/sqrt: NaN throughout.
  if (internal::NaNStats(st)) return Unit::kNaN;
  RowScale k;
  RowBound bound;
  if (!CheckedScale(true, st, k, bound)) return Unit::kDecideAll;
  *c = CheckedConsts{k.m, k.mul, k.add, bound.alpha, bound.beta};
  return Unit::kChecked;
}

// The statistics of a LayerNorm-like set of n elements from
// sums(k, &s, &q) = sum(x - k), sum((x - k)^2) in double (DoubleSums'
// model), shifted by k0 and again by the mean when k0 was too far from it.
template <class Sums>
HWY_INLINE internal::RowStats StatsOfSet(size_t n, float eps, float k0,
                                         const Sums& sums) {
  const internal::SumModel model = internal::DoubleSums(n);
  double s, q;
  sums(k0, &s, &q);
  internal::RowStats st =
      internal::StatsFromSums(SIMDNORM_LAYERNORM, n, eps, k0, s, q, model);
  if (internal::ShouldRecenter(SIMDNORM_LAYERNORM, st)) {
    const float k = static_cast<float>(st.k + st.c);
    sums(k, &s, &q);
    st = internal::StatsFromSums(SIMDNORM_LAYERNORM, n, eps, k, s, q, model);
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

// n contiguous elements of one channel (weights g, b) of a checked unit;
// decide(i) gives the bits of element i.
template <class DF, typename TX, typename TY, class Decide>
HWY_NOINLINE void ApplyPlaneChecked(DF df, const TX* x, TY* y, size_t n,
                                    const CheckedConsts& k, float g, float b,
                                    const Decide& decide) {
  const size_t N = hn::Lanes(df);
  const auto m = hn::Set(df, k.m), mul = hn::Set(df, k.mul);
  const auto add = hn::Set(df, k.add), alpha = hn::Set(df, k.alpha);
  const auto beta = hn::Set(df, k.beta);
  const auto vg = hn::Set(df, g), vb = hn::Set(df, b);
  hn::Vec<DF> v;
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto clear = CheckedVector<TY>(df, LoadF(df, x + i), m, mul, add,
                                         alpha, beta, vg, vb, v);
    StoreF(df, v, y + i);
    if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
      DecideOpen(df, clear, N, y + i, [&](size_t l) { return decide(i + l); });
    }
  }
  if (i < n) {
    const size_t count = n - i;
    auto clear = CheckedVector<TY>(df, LoadTailF(df, x + i, count), m, mul, add,
                                   alpha, beta, vg, vb, v);
    clear = hn::Or(clear, hn::Not(hn::FirstN(df, count)));
    StoreTailF(df, v, y + i, count);
    if (!hn::AllTrue(df, clear)) {
      DecideOpen(df, clear, count, y + i,
                 [&](size_t l) { return decide(i + l); });
    }
  }
}

// A unit's contiguous elements by its mode: checked, decided one by one,
// or NaN.
template <class DF, typename TX, typename TY, class Decide>
HWY_INLINE void ApplyPlaneUnit(DF df, Unit mode, const TX* x, TY* y, size_t n,
                               const CheckedConsts& k, float g, float b,
                               const Decide& decide) {
  if (mode == Unit::kChecked) {
    ApplyPlaneChecked(df, x, y, n, k, g, b, decide);
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
// get NaN bounds (no lane is clear), kNaN channels the nan flag.
struct CheckedChannels {
  size_t cp;
  std::unique_ptr<float[]> floats;
  float *m, *mul, *add, *alpha, *beta, *g, *b, *nan;

  CheckedChannels(size_t c, size_t lanes)
      : cp((c + lanes - 1) / lanes * lanes + lanes),
        floats(new float[8 * cp]()) {
    float* f = floats.get();
    for (float** p : {&m, &mul, &add, &alpha, &beta, &g, &b, &nan}) {
      *p = f;
      f += cp;
    }
  }

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
  }
};

// Channels-last checked results: `rows` rows of c channels, x_stride and
// y_stride elements apart; decide(p, j) gives the bits of row p, channel
// j. Blocks of 32 rows, each channel vector's constants in registers (as
// ApplyNhwc).
template <class DF, typename TX, typename TY, class Decide>
HWY_NOINLINE void ApplyNhwcChecked(DF df, const TX* x, size_t x_stride, TY* y,
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
      const auto alpha = hn::LoadU(df, t.alpha + j);
      const auto beta = hn::LoadU(df, t.beta + j);
      const auto g = hn::LoadU(df, t.g + j), b = hn::LoadU(df, t.b + j);
      for (size_t p = p0; p < p1; ++p) {
        const TX* xr = x + p * x_stride + j;
        TY* yr = y + p * y_stride + j;
        if (p + 32 < rows) hwy::Prefetch(xr + 32 * x_stride);
        const auto xv = count == N ? LoadF(df, xr) : LoadTailF(df, xr, count);
        hn::Vec<DF> v;
        const auto clear = hn::Or(
            CheckedVector<TY>(df, xv, m, mul, add, alpha, beta, g, b, v), done);
        v = hn::IfThenElse(nan, qnan, v);
        if (count == N) {
          StoreF(df, v, yr);
        } else {
          StoreTailF(df, v, yr, count);
        }
        if (HWY_UNLIKELY(!hn::AllTrue(df, clear))) {
          DecideOpen(df, clear, count, yr,
                     [&](size_t l) { return decide(p, j + l); });
        }
      }
    }
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_CHANNEL_CHECKED_INL_H_

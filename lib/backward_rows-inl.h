// Per-target backward row kernels (simdnorm_backward), written once with
// Highway, for every kind: the kind enters only through the row's
// statistics (the forward's, norm_rows-inl.h) and two per-row scalars.
//
// Each row, in three passes over it (two when the forward's saved
// statistics come with the call: SavedGradRow):
// 1. the forward's statistics of x (Scale: shifted by x[0], fp32 blocks
//    added in double, rows rescaled by a power of two against overflow and
//    underflow of the sums of squares), giving xhat = (x * s - m) * mul +
//    add exactly as the forward computes it, and second = sum((x -
//    center)^2) in double, from which r = 1 / denominator and the weight w
//    (ops.h) come in double;
// 2. S1 = sum(g) and S2 = sum(g * xhat), g = dy * scale, in fp32 blocks of
//    32 vectors added in double (as the forward's sums);
// 3. dx = r * ((g - a) - xhat * c) with a = S1 / n (centered kinds; else
//    0) and c = w * S2, and, for dgamma and dbeta, the block's sums of
//    dy * xhat and dy (fp32, in row order). Out of the caches it also asks
//    for the next row's x and dy and streams f32 dx (Far).
// r is applied as rf * p2 (p2 a power of two, 1 unless r is beyond 2^+-100)
// so that a row of tiny values, whose r exceeds FLT_MAX, still has a finite
// dx. docs/accuracy.md ("Backward") bounds the error.
//
// A row whose statistics, S1 or S2 are not finite (x or dy with an inf or
// NaN, or var + eps = 0) gets dx = the default quiet NaN throughout; its
// terms of dgamma and dbeta are still added (dy * xhat, NaN where xhat is).

#if defined(SIMDNORM_LIB_BACKWARD_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_BACKWARD_ROWS_INL_H_
#undef SIMDNORM_LIB_BACKWARD_ROWS_INL_H_
#else
#define SIMDNORM_LIB_BACKWARD_ROWS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "lib/backward.h"
#include "lib/convert-inl.h"
#include "lib/norm_rows-inl.h"
#include "lib/ops.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// The per-row constants of the backward pass (see top).
struct GradRow {
  RowScale k;  // xhat = (x * s - m) * mul + add
  float a, c;  // dx = rf * p2 * ((g - a) - xhat * c)
  float rf, p2;
  bool nan;  // dx is NaN throughout
};

// xhat of one vector, as the forward computes it (x * 1 - m is x - m with
// one rounding; x * s is exact; add is -0 for uncentered kinds, so that
// t * mul + -0 == t * mul).
template <class V>
HWY_INLINE V XhatOf(V x, V s, V m, V mul, V add) {
  return hn::MulAdd(hn::MulSub(x, s, m), mul, add);
}

// The scale of the vector at i.
template <At kAt, class DF>
HWY_INLINE hn::Vec<DF> ScaleAt(DF df, const float* scale, float scale_const,
                               size_t i, size_t count) {
  if (scale == nullptr) return hn::Set(df, scale_const);
  return LoadAt<kAt>(df, scale + i, count);
}

// Pass 2's step: S1 += g, S2 += g * xhat and, with kSum3, S3 += xhat
// (lanes past a tail are zero).
template <bool kSum3, At kAt, class DF, typename TX, typename TDY>
HWY_INLINE void GradSumsAt(DF df, const TX* HWY_RESTRICT x,
                           const TDY* HWY_RESTRICT dy, const float* scale,
                           float scale_const, size_t i, size_t count,
                           hn::Vec<DF> s, hn::Vec<DF> m, hn::Vec<DF> mul,
                           hn::Vec<DF> add, hn::Vec<DF>& s1, hn::Vec<DF>& s2,
                           hn::Vec<DF>& s3) {
  auto xhat = XhatOf(LoadAt<kAt>(df, x + i, count), s, m, mul, add);
  const auto g = hn::Mul(LoadAt<kAt>(df, dy + i, count),
                         ScaleAt<kAt>(df, scale, scale_const, i, count));
  if constexpr (kAt == At::kTail) {
    xhat = hn::IfThenElseZero(hn::FirstN(df, count), xhat);
  }
  s1 = hn::Add(s1, g);
  s2 = hn::MulAdd(g, xhat, s2);
  if constexpr (kSum3) s3 = hn::Add(s3, xhat);
}

// S1 and S2 only (the channel kinds' sums loops call this).
template <At kAt, class DF, typename TX, typename TDY>
HWY_INLINE void GradSumsAt(DF df, const TX* HWY_RESTRICT x,
                           const TDY* HWY_RESTRICT dy, const float* scale,
                           float scale_const, size_t i, size_t count,
                           hn::Vec<DF> s, hn::Vec<DF> m, hn::Vec<DF> mul,
                           hn::Vec<DF> add, hn::Vec<DF>& s1, hn::Vec<DF>& s2) {
  GradSumsAt<false, kAt>(df, x, dy, scale, scale_const, i, count, s, m, mul,
                         add, s1, s2, s2);  // (no third sum: s2 untouched)
}

// S1 = sum(g), S2 = sum(g * xhat) and, with kSum3, S3 = sum(xhat) over a
// row: two fp32 chains each over blocks of 32 vectors, each block's sum
// added in double.
template <bool kSum3, class DF, typename TX, typename TDY>
HWY_NOINLINE void GradSums(DF df, const TX* HWY_RESTRICT x,
                           const TDY* HWY_RESTRICT dy, const float* scale,
                           float scale_const, size_t n, const RowScale& k,
                           double& sum1, double& sum2, double& sum3) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  sum1 = sum2 = sum3 = 0.0;
  size_t i = 0;
  while (i < n) {
    auto a1 = hn::Zero(df), b1 = hn::Zero(df);
    auto a2 = hn::Zero(df), b2 = hn::Zero(df);
    auto a3 = hn::Zero(df), b3 = hn::Zero(df);
    const size_t block_end = n - i > 32 * N ? i + 32 * N : n;
    for (; i + 2 * N <= block_end; i += 2 * N) {
      GradSumsAt<kSum3, At::kFull>(df, x, dy, scale, scale_const, i, 0, s, m,
                                   mul, add, a1, a2, a3);
      GradSumsAt<kSum3, At::kFull>(df, x, dy, scale, scale_const, i + N, 0, s,
                                   m, mul, add, b1, b2, b3);
    }
    if (i + N <= block_end) {
      GradSumsAt<kSum3, At::kFull>(df, x, dy, scale, scale_const, i, 0, s, m,
                                   mul, add, a1, a2, a3);
      i += N;
    }
    if (i < block_end) {
      GradSumsAt<kSum3, At::kTail>(df, x, dy, scale, scale_const, i,
                                   block_end - i, s, m, mul, add, b1, b2, b3);
      i = block_end;
    }
    sum1 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a1, b1)));
    sum2 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a2, b2)));
    if constexpr (kSum3)
      sum3 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a3, b3)));
  }
}

// S1 and S2 only (the channel kinds' backward passes call this).
template <class DF, typename TX, typename TDY>
HWY_INLINE void GradSums(DF df, const TX* HWY_RESTRICT x,
                         const TDY* HWY_RESTRICT dy, const float* scale,
                         float scale_const, size_t n, const RowScale& k,
                         double& sum1, double& sum2) {
  double unused;
  GradSums<false>(df, x, dy, scale, scale_const, n, k, sum1, sum2, unused);
}

// r as rf * p2: p2 = 1 for r in [2^-100, 2^100], else the power of two
// that brings rf to [1, 2) (r beyond FLT_MAX for rows of tiny values).
inline void SplitMultiplier(double r, float& rf, float& p2) {
  if (!(r >= 0x1p-100 && r <= 0x1p100) && std::isfinite(r) && r > 0.0) {
    int e;
    std::frexp(r, &e);  // r = f * 2^e, f in [0.5, 1)
    e -= 1;
    e = e > 127 ? 127 : (e < -126 ? -126 : e);
    p2 = std::ldexp(1.0f, e);
    rf = static_cast<float>(std::ldexp(r, -e));
    return;
  }
  rf = static_cast<float>(r);
  p2 = 1.0f;
}

// The row's constants from S1, S2 and r (see top), with weight w of S2.
inline void FinishGradRow(bool centered, double n, double sum1, double sum2,
                          double r, double w, GradRow& row) {
  row.a = static_cast<float>(centered ? sum1 / n : 0.0);
  row.c = static_cast<float>(w * sum2);
  SplitMultiplier(r, row.rf, row.p2);
  row.nan = NaNRow(row.k) || !std::isfinite(r) || !std::isfinite(sum1) ||
            !std::isfinite(sum2) || !std::isfinite(row.a) ||
            !std::isfinite(row.c);
}

// Passes 1 and 2 from the forward's saved statistics (BackwardArgs::mean,
// rstd), in one pass: S1 = sum(g), sum(d) and sum(g * d), d = x - mean in
// fp32 (uncentered kinds: d = x). The saved mean is rounded to fp32, up to
// 2^-24 |mean| off: against a small deviation (a row 1e4 + 0.01 N(0,1))
// that is 5 % of xhat. So what it missed, c = sum(d) / n, is removed as
// the forward removes it: xhat = (d - c) * rstd, and S2 = sum(g * xhat) =
// rstd * (sum(g * d) - c * S1). d is exact near the mean (Sterbenz), and
// |c| is within the mean's rounding, so nothing cancels badly. LayerNorm
// and RMSNorm weigh S2 by 1 / n (ops.cc); L2 takes no saved statistics
// (validate.cc). False when the saved values are not usable (not finite,
// rstd not > 0): the caller recomputes.
template <class DF, typename TX, typename TDY>
HWY_INLINE bool SavedGradRow(DF df, const internal::BackwardArgs& a, size_t r,
                             const TX* x, const TDY* dy, bool centered,
                             GradRow& row) {
  const float rstd = a.rstd[r];
  const float mean = centered ? a.mean[r] : 0.0f;
  if (!(rstd > 0.0f && rstd <= 0x1p100f && std::isfinite(mean))) return false;
  const size_t n = a.cols;
  const double nd = static_cast<double>(n);
  double sum1, sum_gd, sum_d;
  const RowScale d_of{1.0f, mean, 1.0f, 0.0f};  // XhatOf(x) = x - mean
  if (centered) {
    GradSums<true>(df, x, dy, a.scale, a.scale_const, n, d_of, sum1, sum_gd,
                   sum_d);
  } else {
    GradSums<false>(df, x, dy, a.scale, a.scale_const, n, d_of, sum1, sum_gd,
                    sum_d);
  }
  const double c = centered ? sum_d / nd : 0.0;
  // + 0.0f as in the forward (CheckedScale): a zero add is +0; uncentered
  // kinds' -0 keeps t * mul + -0 == t * mul.
  const float add = centered ? static_cast<float>(-c * rstd) + 0.0f : -0.0f;
  row.k = RowScale{1.0f, mean, rstd, add};
  const double sum2 = rstd * (sum_gd - c * sum1);
  FinishGradRow(centered, nd, sum1, sum2, rstd, 1.0 / nd, row);
  return true;
}

// Passes 1 and 2 of row r (see top).
template <class DF, typename TX, typename TDY>
HWY_INLINE GradRow GradRowOf(DF df, const internal::BackwardArgs& a, size_t r,
                             const TX* x, const TDY* dy) {
  const size_t n = a.cols;
  const internal::Op& op = internal::kOps[a.kind];
  const bool centered = op.info.centered != 0;
  GradRow row;
  if (a.rstd != nullptr && SavedGradRow(df, a, r, x, dy, centered, row)) {
    return row;
  }
  row.k = centered ? Scale<true>(df, x, static_cast<const TX*>(nullptr),
                                 static_cast<TX*>(nullptr), n, a.eps, a.kind)
                   : Scale<false>(df, x, static_cast<const TX*>(nullptr),
                                  static_cast<TX*>(nullptr), n, a.eps, a.kind);
  if (!centered) row.k.add = -0.0f;
  double sum1, sum2;
  GradSums(df, x, dy, a.scale, a.scale_const, n, row.k, sum1, sum2);
  const double nd = static_cast<double>(n), eps = a.eps;
  FinishGradRow(centered, nd, sum1, sum2,
                1.0 / op.denominator(row.k.second, nd, eps),
                op.sum_weight(row.k.second, nd, eps), row);
  return row;
}

// Passes 1 and 2 of one row, and of two rows in one call (their work
// overlaps). Not inlined into BackwardRows: these depend on x's and dy's
// types only, so one copy serves the three dx types (inlined, they were
// two thirds of the backward kernels' code and compile time).
template <typename TX, typename TDY>
HWY_NOINLINE GradRow GradRow1(const internal::BackwardArgs& a, size_t r) {
  const hn::ScalableTag<float> df;
  return GradRowOf(df, a, r, static_cast<const TX*>(a.x) + r * a.x_stride,
                   static_cast<const TDY*>(a.dy) + r * a.dy_stride);
}

template <typename TX, typename TDY>
HWY_NOINLINE void GradRow2(const internal::BackwardArgs& a, size_t r,
                           GradRow& row0, GradRow& row1) {
  const hn::ScalableTag<float> df;
  const TX* x = static_cast<const TX*>(a.x) + r * a.x_stride;
  const TDY* dy = static_cast<const TDY*>(a.dy) + r * a.dy_stride;
  row0 = GradRowOf(df, a, r, x, dy);
  row1 = GradRowOf(df, a, r + 1, x + a.x_stride, dy + a.dy_stride);
}

// Stores v at i (all lanes, or the tail's count); kStream (f32 only): a
// non-temporal store, p + i aligned to the vector.
template <At kAt, bool kStream = false, class DF, typename T>
HWY_INLINE void StoreAt(DF df, hn::Vec<DF> v, T* p, size_t i, size_t count) {
  if constexpr (kAt == At::kTail) {
    StoreTailF(df, v, p + i, count);
  } else if constexpr (kStream) {
    hn::Stream(v, df, p + i);
  } else {
    StoreF(df, v, p + i);
  }
}

// dx at i from the vector's xhat, dy and scale; kP2: rf * p2 with p2 != 1
// (a product by p2 = 1 is exact, so skipping it changes no bit).
template <At kAt, bool kP2, bool kStream = false, class DF, typename TDX>
HWY_INLINE void DxAt(DF df, hn::Vec<DF> xhat, hn::Vec<DF> dyv,
                     hn::Vec<DF> scale, TDX* dx, size_t i, size_t count,
                     hn::Vec<DF> va, hn::Vec<DF> vc, hn::Vec<DF> rf,
                     hn::Vec<DF> p2) {
  const auto g = hn::Mul(dyv, scale);
  auto v = hn::Mul(hn::NegMulAdd(xhat, vc, hn::Sub(g, va)), rf);
  if constexpr (kP2) v = hn::Mul(v, p2);
  StoreAt<kAt, kStream>(df, v, dx, i, count);
}

// Pass 3's step at i for one row: dx (kWriteDx) and the block's sums.
template <At kAt, bool kWriteDx, bool kP2 = true, bool kStream = false,
          class DF, typename TX, typename TDY, typename TDX>
HWY_INLINE void GradAt(DF df, const TX* HWY_RESTRICT x, const TDY* dy, TDX* dx,
                       const float* scale, float scale_const, float* dgamma,
                       float* dbeta, size_t i, size_t count, hn::Vec<DF> s,
                       hn::Vec<DF> m, hn::Vec<DF> mul, hn::Vec<DF> add,
                       hn::Vec<DF> va, hn::Vec<DF> vc, hn::Vec<DF> rf,
                       hn::Vec<DF> p2) {
  // Every load before the store to dx (as GradAt2).
  const auto xhat = XhatOf(LoadAt<kAt>(df, x + i, count), s, m, mul, add);
  const auto dyv = LoadAt<kAt>(df, dy + i, count);
  const auto g0 = dgamma ? LoadAt<kAt>(df, dgamma + i, count) : hn::Zero(df);
  const auto b0 = dbeta ? LoadAt<kAt>(df, dbeta + i, count) : hn::Zero(df);
  if constexpr (kWriteDx) {
    DxAt<kAt, kP2, kStream>(df, xhat, dyv,
                            ScaleAt<kAt>(df, scale, scale_const, i, count), dx,
                            i, count, va, vc, rf, p2);
  }
  if (dgamma != nullptr) {
    StoreAt<kAt>(df, hn::MulAdd(dyv, xhat, g0), dgamma, i, count);
  }
  if (dbeta != nullptr) StoreAt<kAt>(df, hn::Add(dyv, b0), dbeta, i, count);
}

// How pass 3 meets memory: in the caches (kNear), or out of them (the
// call moves more than they keep: BackwardArgs::far), where it asks for the
// next row's x and dy while it writes this row's dx, so that reads overlap
// the writes (kPrefetch), and with f32 dx also writes dx by non-temporal
// stores, which do not read its lines first (kStream).
enum class Far { kNear, kPrefetch, kStream };

// Pass 3 over a row. dx may be dy: each vector is loaded before it is
// stored. next_x and next_dy: the row that follows (kFar != kNear).
template <bool kWriteDx, bool kP2 = true, Far kFar = Far::kNear, class DF,
          typename TX, typename TDY, typename TDX>
HWY_NOINLINE void GradApply(DF df, const internal::BackwardArgs& a, const TX* x,
                            const TDY* dy, TDX* dx, const GradRow& row,
                            float* dgamma, float* dbeta,
                            const TX* next_x = nullptr,
                            const TDY* next_dy = nullptr) {
  const size_t N = hn::Lanes(df), n = a.cols;
  const auto s = hn::Set(df, row.k.s), m = hn::Set(df, row.k.m);
  const auto mul = hn::Set(df, row.k.mul), add = hn::Set(df, row.k.add);
  const auto va = hn::Set(df, row.a), vc = hn::Set(df, row.c);
  const auto rf = hn::Set(df, row.rf), p2 = hn::Set(df, row.p2);
  const float* scale = a.scale;  // copies: a store to dx may alias a's
  const float scale_const = a.scale_const;
  size_t i = 0;
  if constexpr (kFar == Far::kStream) {
    // The elements before dx's first vector boundary with cached stores
    // (rows of a std::vector sit 16 bytes off), the rest streamed. Pass 3
    // is elementwise: where the vectors start changes no bit.
    const size_t head = std::min(
        n, (N - reinterpret_cast<uintptr_t>(dx) / sizeof(float) % N) % N);
    if (head != 0) {
      GradAt<At::kTail, kWriteDx, kP2>(df, x, dy, dx, scale, scale_const,
                                       dgamma, dbeta, 0, head, s, m, mul, add,
                                       va, vc, rf, p2);
      i = head;
    }
  }
  for (; i + N <= n; i += N) {
    if constexpr (kFar != Far::kNear) {
      hwy::Prefetch(next_x + i);
      hwy::Prefetch(next_dy + i);
    }
    GradAt<At::kFull, kWriteDx, kP2, kFar == Far::kStream>(
        df, x, dy, dx, scale, scale_const, dgamma, dbeta, i, 0, s, m, mul, add,
        va, vc, rf, p2);
  }
  if (i < n) {
    GradAt<At::kTail, kWriteDx, kP2>(df, x, dy, dx, scale, scale_const, dgamma,
                                     dbeta, i, n - i, s, m, mul, add, va, vc,
                                     rf, p2);
  }
}

// Pass 3's step at i for two rows, both written (GradApply2).
template <At kAt, bool kP2, class DF, typename TX, typename TDY, typename TDX>
HWY_INLINE void GradAt2(DF df, const float* scale, float scale_const,
                        const TX* HWY_RESTRICT x0, const TDY* dy0, TDX* dx0,
                        const TX* HWY_RESTRICT x1, const TDY* dy1, TDX* dx1,
                        float* dgamma, float* dbeta, size_t i, size_t count,
                        hn::Vec<DF> m0, hn::Vec<DF> mul0, hn::Vec<DF> add0,
                        hn::Vec<DF> va0, hn::Vec<DF> vc0, hn::Vec<DF> rf0,
                        hn::Vec<DF> m1, hn::Vec<DF> mul1, hn::Vec<DF> add1,
                        hn::Vec<DF> va1, hn::Vec<DF> vc1, hn::Vec<DF> rf1,
                        hn::Vec<DF> s, hn::Vec<DF> p20, hn::Vec<DF> p21) {
  // Every load before the first store: dx0 may be dy0 (in place), and the
  // compiler must assume a store to dx may change the weights' scale or
  // dgamma and dbeta (it reloaded them after each one, and the scale twice).
  const auto xhat0 = XhatOf(LoadAt<kAt>(df, x0 + i, count), s, m0, mul0, add0);
  const auto dyv0 = LoadAt<kAt>(df, dy0 + i, count);
  const auto xhat1 = XhatOf(LoadAt<kAt>(df, x1 + i, count), s, m1, mul1, add1);
  const auto dyv1 = LoadAt<kAt>(df, dy1 + i, count);
  const auto sc = ScaleAt<kAt>(df, scale, scale_const, i, count);
  const auto g0 = dgamma ? LoadAt<kAt>(df, dgamma + i, count) : hn::Zero(df);
  const auto b0 = dbeta ? LoadAt<kAt>(df, dbeta + i, count) : hn::Zero(df);
  DxAt<kAt, kP2>(df, xhat0, dyv0, sc, dx0, i, count, va0, vc0, rf0, p20);
  DxAt<kAt, kP2>(df, xhat1, dyv1, sc, dx1, i, count, va1, vc1, rf1, p21);
  if (dgamma != nullptr) {
    const auto sum = hn::MulAdd(dyv0, xhat0, g0);
    StoreAt<kAt>(df, hn::MulAdd(dyv1, xhat1, sum), dgamma, i, count);
  }
  if (dbeta != nullptr) {
    StoreAt<kAt>(df, hn::Add(dyv1, hn::Add(dyv0, b0)), dbeta, i, count);
  }
}

// Pass 3 over two rows with finite constants and the same shift s (passes
// 1 and 2 read only their own row, so an in-place dx is still safe): each
// vector of dgamma and dbeta is loaded and stored once for both rows, row
// 0's term added before row 1's as two GradApply calls would (the same
// bits). At 64 rows of 896 f32 that is a third fewer loads and stores in
// this pass.
template <bool kP2, class DF, typename TX, typename TDY, typename TDX>
HWY_NOINLINE void GradApply2(DF df, const internal::BackwardArgs& a,
                             const TX* x0, const TDY* dy0, TDX* dx0,
                             const GradRow& row0, const TX* x1, const TDY* dy1,
                             TDX* dx1, const GradRow& row1, float* dgamma,
                             float* dbeta) {
  const size_t N = hn::Lanes(df), n = a.cols;
  const auto s = hn::Set(df, row0.k.s);
  const auto m0 = hn::Set(df, row0.k.m), mul0 = hn::Set(df, row0.k.mul);
  const auto add0 = hn::Set(df, row0.k.add), va0 = hn::Set(df, row0.a);
  const auto vc0 = hn::Set(df, row0.c), rf0 = hn::Set(df, row0.rf);
  const auto m1 = hn::Set(df, row1.k.m), mul1 = hn::Set(df, row1.k.mul);
  const auto add1 = hn::Set(df, row1.k.add), va1 = hn::Set(df, row1.a);
  const auto vc1 = hn::Set(df, row1.c), rf1 = hn::Set(df, row1.rf);
  const auto p20 = hn::Set(df, row0.p2), p21 = hn::Set(df, row1.p2);
  const float* scale = a.scale;  // copies: a store to dx may alias a's
  const float scale_const = a.scale_const;
  size_t i = 0;
  for (; i + N <= n; i += N) {
    GradAt2<At::kFull, kP2>(df, scale, scale_const, x0, dy0, dx0, x1, dy1, dx1,
                            dgamma, dbeta, i, 0, m0, mul0, add0, va0, vc0, rf0,
                            m1, mul1, add1, va1, vc1, rf1, s, p20, p21);
  }
  if (i < n) {
    GradAt2<At::kTail, kP2>(df, scale, scale_const, x0, dy0, dx0, x1, dy1, dx1,
                            dgamma, dbeta, i, n - i, m0, mul0, add0, va0, vc0,
                            rf0, m1, mul1, add1, va1, vc1, rf1, s, p20, p21);
  }
}

// Pass 3 of one row (GradApply, or the NaN row's sums and fill); next_x
// and next_dy: the row that follows, or this one if none does.
template <class DF, typename TX, typename TDY, typename TDX>
HWY_INLINE void GradRowApply(DF df, const internal::BackwardArgs& a,
                             const TX* x, const TDY* dy, TDX* dx,
                             const GradRow& row, float* dgamma, float* dbeta,
                             const TX* next_x, const TDY* next_dy) {
  if (HWY_LIKELY(!row.nan)) {
    if (row.p2 != 1.0f) {
      GradApply<true, true>(df, a, x, dy, dx, row, dgamma, dbeta);
    } else if (!a.far) {
      GradApply<true, false>(df, a, x, dy, dx, row, dgamma, dbeta);
    } else {
      // Non-temporal stores for f32 dx aligned to a float (streamed from
      // its first vector boundary on: GradApply); 16-bit dx only prefetch.
      if constexpr (std::is_same_v<TDX, float>) {
        if (reinterpret_cast<uintptr_t>(dx) % sizeof(float) == 0) {
          GradApply<true, false, Far::kStream>(df, a, x, dy, dx, row, dgamma,
                                               dbeta, next_x, next_dy);
          return;
        }
      }
      GradApply<true, false, Far::kPrefetch>(df, a, x, dy, dx, row, dgamma,
                                             dbeta, next_x, next_dy);
    }
    return;
  }
  // dy is read before dx (which may be dy) is written.
  if (dgamma != nullptr || dbeta != nullptr) {
    GradApply<false, false>(df, a, x, dy, dx, row, dgamma, dbeta);
  }
  FillNaN(df, dx, static_cast<float*>(nullptr), 0, a.cols);
}

template <typename TX, typename TDY, typename TDX>
HWY_NOINLINE void BackwardRows(const internal::BackwardArgs& a,
                               size_t row_begin, size_t row_end, float* dgamma,
                               float* dbeta) {
  const hn::ScalableTag<float> df;
  const size_t n = a.cols;
  if (dgamma != nullptr) std::memset(dgamma, 0, n * sizeof(float));
  if (dbeta != nullptr) std::memset(dbeta, 0, n * sizeof(float));
  const auto x_of = [&](size_t r) {
    return static_cast<const TX*>(a.x) + r * a.x_stride;
  };
  const auto dy_of = [&](size_t r) {
    return static_cast<const TDY*>(a.dy) + r * a.dy_stride;
  };
  const auto dx_of = [&](size_t r) {
    return static_cast<TDX*>(a.dx) + r * a.dx_stride;
  };
  size_t r = row_begin;
  // Two rows at a time where asked (BackwardArgs::pair_rows) and both are
  // finite (their passes 1 and 2 read only their own x and dy, so an
  // in-place dx is still safe).
  for (; a.pair_rows && r + 2 <= row_end; r += 2) {
    GradRow row0, row1;
    GradRow2<TX, TDY>(a, r, row0, row1);
    if (HWY_LIKELY(!row0.nan && !row1.nan && row0.k.s == row1.k.s)) {
      if (row0.p2 == 1.0f && row1.p2 == 1.0f) {
        GradApply2<false>(df, a, x_of(r), dy_of(r), dx_of(r), row0, x_of(r + 1),
                          dy_of(r + 1), dx_of(r + 1), row1, dgamma, dbeta);
      } else {
        GradApply2<true>(df, a, x_of(r), dy_of(r), dx_of(r), row0, x_of(r + 1),
                         dy_of(r + 1), dx_of(r + 1), row1, dgamma, dbeta);
      }
      continue;
    }
    GradRowApply(df, a, x_of(r), dy_of(r), dx_of(r), row0, dgamma, dbeta,
                 x_of(r + 1), dy_of(r + 1));
    GradRowApply(df, a, x_of(r + 1), dy_of(r + 1), dx_of(r + 1), row1, dgamma,
                 dbeta, x_of(r + 1), dy_of(r + 1));
  }
  for (; r < row_end; ++r) {
    const GradRow row = GradRow1<TX, TDY>(a, r);
    const size_t next = r + 1 < row_end ? r + 1 : r;
    GradRowApply(df, a, x_of(r), dy_of(r), dx_of(r), row, dgamma, dbeta,
                 x_of(next), dy_of(next));
  }
  if (a.far) hwy::FlushStream();  // order the streamed stores
}

// Null where the target takes another's kernel (kCompiledHere: dx is
// written; x and dy are only read).
template <typename TX, typename TDY, typename TDX>
constexpr internal::BackwardRowsFn BackwardKernel() {
  if constexpr (kCompiledHere<TDX>) {
    return &BackwardRows<TX, TDY, TDX>;
  } else {
    return nullptr;
  }
}

// This target's table, [x_type][dy_type][dx_type] indexed by
// simdnorm_dtype, filled at compile time.
struct BackwardKernels {
  internal::BackwardTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[I / 9][I / 3 % 3][I % 3] =
          BackwardKernel<InType<I / 9>, InType<I / 3 % 3>, InType<I % 3>>()),
     ...);
  }
  constexpr BackwardKernels() { Fill(std::make_index_sequence<27>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_BACKWARD_ROWS_INL_H_

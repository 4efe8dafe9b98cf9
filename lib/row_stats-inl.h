// Per-target StatsFromSums (lib/correct_rounding.h) of several rows at
// once, a row a double lane: the chain that ends each row's statistics
// (the sums' bounds, a square root, a division and r's bound, ~40 scalar
// double operations) costs a bf16 LayerNorm row at hidden 896 ~30 ns of
// the FP pipes' time when made row by row, which the rows' vector loops
// could not hide; a block of rows shares one chain of vector operations.
//
// A lane runs the operations of the scalar StatsFromSums and the kind's
// scale (lib/ops.cc: MeanSquareRootScale or NormOrEpsScale, and
// InvSqrtError) in their order, NaN and inf included (std::max(a, b) is
// a < b ? b : a here too). Keep the two in step. GCC's default for C++
// (-ffp-contract=fast) may fuse a product and a sum into one FMA where the
// target has it (the AVX3 builds do, for the bounds and w = mean + eps),
// rounding once where the scalar code, built without FMA, rounds twice:
// the bounds stay valid (a fused operation errs less than the two it
// replaces), and nothing that leaves the kernels moves: 16-bit and int8 y
// are correctly rounded, and the saved mean (k + s/n) and rstd (from v =
// var n, or the exact sum of squares) come from no fused operation. Kinds
// of another scale (ScaleForm::kOther) take the scalar code.

#if defined(SIMDNORM_LIB_ROW_STATS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_ROW_STATS_INL_H_
#undef SIMDNORM_LIB_ROW_STATS_INL_H_
#else
#define SIMDNORM_LIB_ROW_STATS_INL_H_
#endif

#include <cstddef>

#include "hwy/highway.h"
#include "lib/correct_rounding.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// The most rows StatsOfLanes takes; its arrays hold kLaneRows + 8 (a
// vector of up to 8 lanes may start at any row below kLaneRows).
inline constexpr size_t kLaneRows = 8;
inline constexpr size_t kLaneRoom = kLaneRows + 8;

// InvSqrtError (lib/ops.cc) of each lane.
template <class DD>
HWY_INLINE hn::Vec<DD> InvSqrtErrorLanes(DD dd, hn::Vec<DD> w, hn::Vec<DD> dw,
                                         hn::Vec<DD> r) {
  constexpr double kU = 0x1p-53;
  const auto rho = hn::Mul(
      hn::Mul(hn::Add(dw, hn::Mul(hn::Set(dd, 2 * kU), w)), hn::Mul(r, r)),
      hn::Set(dd, 1 + 8 * kU));
  const auto usable = hn::And(hn::And(hn::Gt(w, hn::Zero(dd)), hn::IsFinite(r)),
                              hn::Le(rho, hn::Set(dd, 0x1p-10)));
  return hn::IfThenElse(
      usable, hn::Add(hn::Mul(hn::Set(dd, 0.51), rho), hn::Set(dd, 3 * kU)),
      hn::Set(dd, -1.0));
}

// st[i] = StatsFromSums(p, k[i], s[i], q[i]) for i < count <= kLaneRows,
// for kinds whose p.scale_form is not kOther. k, s, q: kLaneRoom entries
// (those past count any finite values).
HWY_INLINE void StatsOfLanes(const internal::StatsPlan& p, const double* k,
                             const double* s, const double* q, size_t count,
                             internal::RowStats* st) {
  const hn::CappedTag<double, kLaneRows> dd;
  const size_t M = hn::Lanes(dd);
  constexpr double kU = 0x1p-53;
  const auto zero = hn::Zero(dd);
  const auto inv_n = hn::Set(dd, p.inv_n), nd = hn::Set(dd, p.nd);
  const auto floor_q = hn::Set(dd, p.m.floor_q);
  // (Initialized: GCC cannot tell that the loop below writes every lane
  // the last one reads.)
  HWY_ALIGN double c_out[kLaneRoom] = {}, dc_out[kLaneRoom] = {},
                   v_out[kLaneRoom] = {}, dv_out[kLaneRoom] = {},
                   r_out[kLaneRoom] = {}, er_out[kLaneRoom] = {};
  for (size_t i = 0; i < count; i += M) {
    const auto vq = hn::LoadU(dd, q + i);
    const auto q1 = hn::Mul(hn::Add(vq, floor_q), hn::Set(dd, p.q_up));
    hn::Vec<decltype(dd)> c = zero, dc = zero, second, ds;
    if (p.centered) {
      const auto abs_mean =
          hn::Mul(hn::Sqrt(hn::Mul(q1, inv_n)), hn::Set(dd, 1 + 4 * kU));
      c = hn::Mul(hn::LoadU(dd, s + i), inv_n);
      const auto abs_c = hn::Abs(c);
      dc = hn::Add(hn::Mul(hn::Mul(hn::Set(dd, p.g_sum), abs_mean),
                           hn::Set(dd, 1 + 4 * kU)),
                   hn::Mul(hn::Set(dd, 3 * kU), abs_c));
      const auto dq = hn::Add(hn::Mul(hn::Set(dd, p.g_sq), q1), floor_q);
      const auto mean_sq = hn::Mul(vq, inv_n);
      const auto cc = hn::Mul(c, c);
      const auto diff = hn::Sub(mean_sq, cc);
      const auto var = hn::IfThenElse(hn::Lt(diff, zero), zero, diff);
      const auto dvar = hn::Add(
          hn::Mul(hn::Add(hn::Mul(dq, inv_n),
                          hn::Mul(dc, hn::Add(hn::Add(abs_c, abs_c), dc))),
                  hn::Set(dd, 1 + 12 * kU)),
          hn::Mul(hn::Set(dd, 6 * kU), hn::Add(mean_sq, cc)));
      second = hn::Mul(var, nd);
      ds = hn::Add(hn::Mul(hn::Mul(dvar, nd), hn::Set(dd, 1 + 2 * kU)),
                   hn::Mul(hn::Set(dd, kU), second));
    } else {
      second = vq;
      ds = hn::Mul(hn::Add(hn::Mul(hn::Set(dd, p.m.gamma_q), q1), floor_q),
                   hn::Set(dd, 1 + 2 * kU));
    }
    hn::Vec<decltype(dd)> r, er;
    if (p.scale_form == internal::ScaleForm::kMeanSquareRoot) {
      const auto mean = hn::Mul(second, inv_n);
      const auto w = hn::Add(mean, hn::Set(dd, p.eps));
      r = hn::Div(hn::Set(dd, 1.0), hn::Sqrt(w));
      const auto dw =
          hn::Add(hn::Mul(hn::Mul(ds, inv_n), hn::Set(dd, 1 + 6 * kU)),
                  hn::Mul(hn::Set(dd, 3 * kU), mean));
      er = InvSqrtErrorLanes(dd, w, dw, r);
    } else {  // NormOrEpsScale
      const auto eps = hn::Set(dd, p.eps);
      const auto root = hn::Sqrt(second);
      r = hn::Div(hn::Set(dd, 1.0),
                  hn::IfThenElse(hn::Lt(root, eps), eps, root));
      er = InvSqrtErrorLanes(dd, second,
                             hn::Add(ds, hn::Mul(hn::Set(dd, kU), second)), r);
      if (p.eps > 0) {
        const auto below =
            hn::Lt(hn::Mul(hn::Add(second, ds), hn::Set(dd, 1 + 4 * kU)),
                   hn::Set(dd, p.eps * p.eps));
        er = hn::IfThenElse(below, hn::Set(dd, kU), er);
      }
    }
    hn::Store(c, dd, c_out + i);
    hn::Store(dc, dd, dc_out + i);
    hn::Store(second, dd, v_out + i);
    hn::Store(ds, dd, dv_out + i);
    hn::Store(r, dd, r_out + i);
    hn::Store(er, dd, er_out + i);
  }
  for (size_t i = 0; i < count; ++i) {
    st[i] = internal::RowStats{p.centered ? k[i] : 0.0,
                               c_out[i],
                               v_out[i],
                               dc_out[i],
                               dv_out[i],
                               r_out[i],
                               er_out[i]};
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_ROW_STATS_INL_H_

// The channel kinds' backward passes on the forward's saved statistics
// (GroupNorm's mean and rstd per (sample, group), BatchNorm training's
// save_mean and save_invstd per channel) in place of the statistics pass,
// as backward_rows-inl.h's SavedGradRow does for a row.
//
// The sums pass runs with xhat's constants set to d = x - mean (DiffScale:
// XhatOf(x) = (x * 1 - mean) * 1 + 0, one rounding, exact near the mean by
// Sterbenz's lemma) and also sums d. The saved mean is rounded to fp32, up
// to 2^-24 |mean| off, which against a small deviation (a set 1e4 + N(0,
// 1) / 100) is 5 % of xhat; c = mean(d) is what it missed, and it is
// removed as the forward removes the error of its own shift:
//   xhat = (d - c) * rstd,  sum(w * xhat) = rstd * (sum(w * d) - c * sum(w))
// for the weights w of each sum (g, or dy). |c| is within the mean's
// rounding, so that subtraction cancels no more than sum(w * xhat) itself
// does, and the recomputing path's bound holds (docs/accuracy.md, "Saved
// statistics").

#if defined(SIMDNORM_LIB_SAVED_STATS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_SAVED_STATS_INL_H_
#undef SIMDNORM_LIB_SAVED_STATS_INL_H_
#else
#define SIMDNORM_LIB_SAVED_STATS_INL_H_
#endif

#include <cmath>

#include "hwy/highway.h"
#include "lib/norm_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// Whether a saved pair can stand for a set's statistics: a finite mean and
// an rstd in (0, 2^100] (as the rows': beyond that SplitMultiplier would
// rescale; NaN and inf are the forward's NaN sets and var + eps = 0, which
// the recomputing path handles).
inline bool UsableSaved(float mean, float rstd) {
  return rstd > 0.0f && rstd <= 0x1p100f && std::isfinite(mean);
}

// xhat's constants in the sums pass: XhatOf(x) = x - mean.
inline RowScale DiffScale(float mean) {
  return RowScale{1.0f, mean, 1.0f, 0.0f};
}

// A set's constants once sum(d) over its m elements is known.
struct SavedSet {
  RowScale k;  // xhat = (x * 1 - mean) * rstd + add, add = -c * rstd
  double c;    // mean(d): what the fp32 mean missed
  double r;    // rstd
};

inline SavedSet SavedSetOf(float mean, float rstd, double sum_d, double m) {
  const double c = sum_d / m;
  // + 0.0f: a zero add is +0, as the rows' (SavedGradRow).
  const float add = static_cast<float>(-c * rstd) + 0.0f;
  return SavedSet{RowScale{1.0f, mean, rstd, add}, c, rstd};
}

// sum(w * xhat) from sum(w) and sum(w * d) (see top).
inline double SavedXhatSum(const SavedSet& set, double sum_w, double sum_wd) {
  return set.r * (sum_wd - set.c * sum_w);
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_SAVED_STATS_INL_H_

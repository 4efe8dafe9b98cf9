// Per-target BatchNorm kernels (simdnorm_batch_norm), written once with
// Highway on GroupNorm's pieces (group_rows-inl.h).
//
// Training statistics are LayerNorm's, taken over a channel's n * hw
// elements: one pass over d = x - k, k the channel's first element (NHWC:
// the mean of its first 16), fp32
// partial sums of bounded length added in double, trusted while the sum of
// squares is in a safe range and E[d]^2 <= 4 var; otherwise the general
// path (a power of two s bringing max|x| to [1, 2), then the corrected
// two-pass algorithm on x * s). NCHW: a channel is n rows of hw, c * hw
// apart, each reduced as a LayerNorm row (ReduceRow: blocks of 32 vectors)
// and added in double. NHWC: a block of channels is GroupNorm's NHWC
// sample with one channel per group and n * hw positions (ChannelSums:
// blocks of 32 positions).
//
// Inference: y = ((x - rm) * r) * gamma + beta with r = 1 / sqrt(rv + eps)
// computed in double and rounded once to fp32; x - rm is one fp32
// rounding (x * 1 - rm), exact when x is within a factor 2 of rm. So the
// error is |d| * 3u from d, r and the product, plus the final FMA's u|y|:
// about 2 scaled ulps of (|gamma| * max(1, |xhat|) + |beta|), far inside
// the registry's f32 bound. The folded form fma(x, gamma * r, beta - rm *
// gamma * r) would err by u * |rm * gamma * r|, which for rm = 1e4 and
// rv = 1e-4 (x = 1e4 + 1e-2 N(0, 1)) is ~1e6 u against |xhat| ~ 1.
//
// Both apply y = GroupResult with a channel's (s, m, mul, add): training
// LayerNorm's, inference (1, rm, r, -0). A channel whose statistics are NaN
// or whose multiplier is infinite is the default quiet NaN throughout.

#if defined(SIMDNORM_LIB_BATCH_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_BATCH_ROWS_INL_H_
#undef SIMDNORM_LIB_BATCH_ROWS_INL_H_
#else
#define SIMDNORM_LIB_BATCH_ROWS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "hwy/highway.h"
#include "lib/batch_norm.h"
#include "lib/group_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// Inference: a channel's (s, m, mul, add) from its running statistics
// (also the backward's, batch_backward-inl.h).
inline RowScale InferenceScale(const float* running_mean,
                               const float* running_var, float eps, size_t ch) {
  const double r = 1.0 / std::sqrt(static_cast<double>(running_var[ch]) +
                                   static_cast<double>(eps));
  // rv + eps 0, negative or NaN: r is inf or NaN, a NaN channel (NaNRow).
  return RowScale{1.0f, running_mean[ch],
                  std::isnan(r) ? static_cast<float>(r) : MulToFloat(r), -0.0f,
                  0.0};
}

// NCHW: the sums over a channel's n rows (hw elements, row_stride apart),
// each row reduced as LayerNorm's, added in double.
template <bool kSum, bool kSq, bool kMax, Shift kShift, class DF, typename TX>
RowSums ChannelRowSums(DF df, const TX* x, size_t n, size_t hw,
                       size_t row_stride, float s, float k) {
  RowSums out;
  for (size_t i = 0; i < n; ++i) {
    const RowSums r =
        ReduceRow<kSum, kSq, kMax, kShift>(df, x + i * row_stride, hw, s, k);
    out.sum += r.sum;
    out.sum_sq += r.sum_sq;
    out.max_abs = std::fmax(out.max_abs, r.max_abs);
  }
  return out;
}

// NCHW training: a channel's statistics, as LayerNormScale over its rows;
// *mean its mean in double.
template <class DF, typename TX>
RowScale ChannelScaleNchw(DF df, const TX* x, size_t n, size_t hw,
                          size_t row_stride, float eps, double* mean) {
  const double m = static_cast<double>(n) * hw, inv_m = 1.0 / m;
  const double e = static_cast<double>(eps);
  const float k = ToFloat(x[0]);
  const RowSums d = ChannelRowSums<true, true, false, Shift::kSub>(
      df, x, n, hw, row_stride, 1.0f, k);
  const double mean_d = d.sum * inv_m, var = d.sum_sq * inv_m - mean_d * mean_d;
  if (SafeSumOfSquares(d.sum_sq) && mean_d * mean_d <= 4.0 * var) {
    *mean = static_cast<double>(k) + mean_d;
    const double mul = 1.0 / std::sqrt(var + e);
    return RowScale{1.0f, k, static_cast<float>(mul),
                    static_cast<float>(-mean_d * mul), var * m};
  }
  // General path (LayerNormScaleGeneral over the rows).
  const float s = ScaleFor(ChannelRowSums<false, false, true, Shift::kNone>(
                               df, x, n, hw, row_stride, 1.0f, 0.0f)
                               .max_abs);
  const RowSums first = ChannelRowSums<true, false, false, Shift::kScaleSub>(
      df, x, n, hw, row_stride, s, k * s);
  const float m0 =
      static_cast<float>(static_cast<double>(k) * s + first.sum * inv_m);
  const RowSums dev = ChannelRowSums<true, true, false, Shift::kScaleSub>(
      df, x, n, hw, row_stride, s, m0);
  const double c = dev.sum * inv_m, sd = static_cast<double>(s);
  const double var_s = std::fmax(dev.sum_sq * inv_m - c * c, 0.0) / (sd * sd);
  const double mul = 1.0 / (std::sqrt(var_s + e) * sd);
  *mean = (static_cast<double>(m0) + c) / sd;
  return RowScale{s, m0, MulToFloat(mul), static_cast<float>(-c * mul),
                  var_s * m};
}

// NCHW inference: units are the n * c planes of hw elements in memory
// order (a channel's planes are c * hw apart: walking them channel by
// channel made short planes, 14x14 and below, 3.8x memcpy's time, each
// plane a new stream for the prefetchers). A plane's constants are a
// division and a square root of its channel's running statistics.
template <typename TX, typename TY, class DF>
HWY_INLINE void BatchNchwInference(DF df, const internal::BatchArgs& a,
                                   size_t begin, size_t end) {
  // With more than one plane of a channel in the range (n > 1), each
  // channel's constants are made once, at its first plane (so that they
  // overlap that plane's work, as they do without the table); s = 0 (the
  // table's zeros) until then, InferenceScale's s is 1.
  internal::Scratch scratch;
  RowScale* scales = end - begin > a.c ? scratch.Take<RowScale>(a.c) : nullptr;
  for (size_t u = begin; u < end; ++u) {
    const size_t ch = u % a.c;
    const TX* x = static_cast<const TX*>(a.x) + u * a.hw;
    TY* y = static_cast<TY*>(a.y) + u * a.hw;
    RowScale k;
    if (scales == nullptr) {
      k = InferenceScale(a.running_mean, a.running_var, a.eps, ch);
    } else {
      if (scales[ch].s == 0.0f) {
        scales[ch] = InferenceScale(a.running_mean, a.running_var, a.eps, ch);
      }
      k = scales[ch];
    }
    if (HWY_UNLIKELY(NaNRow(k))) {
      FillNaN(df, y, static_cast<float*>(nullptr), 0, a.hw);
    } else {
      ApplyChannels(df, x, y, a.gamma + ch, a.beta + ch, 1, a.hw, k);
    }
  }
}

template <typename TX, typename TY, class DF>
HWY_NOINLINE void BatchNchwChecked(DF df, const internal::BatchArgs& a,
                                   size_t begin, size_t end);
template <typename TX, typename TY, class DF>
HWY_NOINLINE void BatchNhwcChecked(DF df, const internal::BatchArgs& a,
                                   size_t begin, size_t end);

template <typename TX, typename TY>
HWY_NOINLINE void BatchNchw(const internal::BatchArgs& a, size_t begin,
                            size_t end) {
  const hn::ScalableTag<float> df;
  if constexpr (kRounds16<TY>) {
    if (a.correct_rounding) return BatchNchwChecked<TX, TY>(df, a, begin, end);
  }
  if (!a.training) return BatchNchwInference<TX, TY>(df, a, begin, end);
  const size_t row_stride = a.c * a.hw;
  for (size_t ch = begin; ch < end; ++ch) {
    const TX* x = static_cast<const TX*>(a.x) + ch * a.hw;
    TY* y = static_cast<TY*>(a.y) + ch * a.hw;
    const RowScale k =
        ChannelScaleNchw(df, x, a.n, a.hw, row_stride, a.eps, &a.mean[ch]);
    a.var[ch] = k.second / (static_cast<double>(a.n) * a.hw);
    const bool nan = NaNRow(k);
    for (size_t i = 0; i < a.n; ++i) {
      if (HWY_UNLIKELY(nan)) {
        FillNaN(df, y + i * row_stride, static_cast<float*>(nullptr), 0, a.hw);
      } else {
        ApplyChannels(df, x + i * row_stride, y + i * row_stride, a.gamma + ch,
                      a.beta + ch, 1, a.hw, k);
      }
    }
  }
}

// NHWC inference: units are blocks of positions in memory order, every
// channel's constants set once per call (walking blocks of 16 channels
// read each cache line of x once per block: 2.5-4x memcpy's time). The
// same operations per element as channel blocks, so the same bits.
template <typename TX, typename TY, class DF>
HWY_INLINE void BatchNhwcInference(DF df, const internal::BatchArgs& a,
                                   size_t begin, size_t end) {
  const size_t c = a.c, rows = a.n * a.hw;
  internal::Scratch scratch;
  ChannelScratch t(c, hn::Lanes(df), scratch);
  RowScale* k = scratch.Take<RowScale>(c);
  for (size_t ch = 0; ch < c; ++ch) {
    k[ch] = InferenceScale(a.running_mean, a.running_var, a.eps, ch);
  }
  SetChannels(t, k, c, 1);
  float* g = scratch.Take<float>(2 * t.cp);
  float* b = g + t.cp;
  std::copy(a.gamma, a.gamma + c, g);
  std::copy(a.beta, a.beta + c, b);
  const size_t p0 = begin * internal::kBatchInferenceRows;
  const size_t p1 = std::min(rows, end * internal::kBatchInferenceRows);
  ApplyNhwc(df, static_cast<const TX*>(a.x) + p0 * c,
            static_cast<TY*>(a.y) + p0 * c, c, c, p1 - p0, t, g, b);
}

template <typename TX, typename TY>
HWY_NOINLINE void BatchNhwc(const internal::BatchArgs& a, size_t begin,
                            size_t end) {
  const hn::ScalableTag<float> df;
  if constexpr (kRounds16<TY>) {
    if (a.correct_rounding) return BatchNhwcChecked<TX, TY>(df, a, begin, end);
  }
  if (!a.training) return BatchNhwcInference<TX, TY>(df, a, begin, end);
  const size_t N = hn::Lanes(df), rows = a.n * a.hw;
  internal::Scratch scratch;
  ChannelScratch t(internal::kBatchBlock, N, scratch);
  RowScale k[internal::kBatchBlock];
  float* g = scratch.Take<float>(2 * t.cp);
  float* b = g + t.cp;
  for (size_t u = begin; u < end; ++u) {
    const size_t c0 = u * internal::kBatchBlock;
    const size_t cb = std::min(internal::kBatchBlock, a.c - c0);
    const TX* x = static_cast<const TX*>(a.x) + c0;
    TY* y = static_cast<TY*>(a.y) + c0;
    std::copy(a.gamma + c0, a.gamma + c0 + cb, g);
    std::copy(a.beta + c0, a.beta + c0 + cb, b);
    if (a.training) {
      // GroupNorm's NHWC statistics with one channel per group.
      const internal::GroupArgs ga{cb,  rows,    cb,      1,    a.x,
                                   a.y, nullptr, nullptr, a.eps};
      NhwcStats(df, ga, x, a.c, t, k, a.mean + c0);
      for (size_t j = 0; j < cb; ++j) {
        a.var[c0 + j] = k[j].second / static_cast<double>(rows);
      }
    } else {
      for (size_t j = 0; j < cb; ++j) {
        k[j] = InferenceScale(a.running_mean, a.running_var, a.eps, c0 + j);
      }
    }
    SetChannels(t, k, cb, 1);
    ApplyNhwc(df, x, y, cb, a.c, rows, t, g, b);
  }
}

// ------------------------------------------ correctly rounded 16-bit y
// (channel_checked-inl.h). Training: a channel is a LayerNorm row of n *
// hw elements (NCHW: runs of hw, c * hw apart; NHWC: every c-th element).
// Inference: GivenMoments' one-element row per channel, its element read
// where the lane is.

// An inference channel: its mode, constants, CrRow (x: the channel's
// first element, `step` apart) and cache.
struct InferenceChannel {
  Unit mode;
  CheckedConsts k;
  internal::CrRow cr;
  internal::CrCache cache;
  bool infinite;  // GivenMoments' kInfinite: InferenceInDouble is exact
};

template <typename TX, typename TY>
void SetInferenceChannel(const internal::BatchArgs& a, size_t ch, const TX* x,
                         size_t step, InferenceChannel* ic) {
  internal::RowStats st{};
  const internal::Moments mo = internal::GivenMoments(
      a.running_mean[ch], a.running_var[ch], a.eps, &st, &ic->cache);
  ic->infinite = mo == internal::Moments::kInfinite;
  ic->mode = mo == internal::Moments::kNaN        ? Unit::kNaN
             : mo == internal::Moments::kInfinite ? Unit::kDecideAll
                                                  : CheckedUnit(st, &ic->k);
  ic->cr = GroupCrRow<TX, TY>(x, 1, a.eps, st);
  ic->cr.step = step;
}

// What the lean loops need of an inference channel (InferenceChannel's
// mode and constants): the same for each of its planes.
struct PlaneSetup {
  bool made = false;
  Unit mode = Unit::kNaN;
  CheckedConsts k{};
};

// Element j of an inference channel, decided.
template <typename TX>
uint16_t InferenceBits(const internal::BatchArgs& a, size_t ch,
                       InferenceChannel& ic, size_t j) {
  const float g = a.gamma[ch], b = a.beta[ch];
  if (ic.infinite) {
    return internal::RoundExactValue(
        ic.cr.y_type, internal::InferenceInDouble(
                          internal::RowElement(ic.cr, j), a.running_mean[ch],
                          a.running_var[ch], a.eps, g, b));
  }
  return internal::CorrectlyRoundedBits(ic.cr, j, g, b, ic.cache);
}

template <typename TX, typename TY, class DF>
HWY_NOINLINE void BatchNchwChecked(DF df, const internal::BatchArgs& a,
                                   size_t begin, size_t end) {
  std::unique_ptr<TX[]> copy;
  if (!a.training) {
    // A channel's mode and constants come from its running statistics
    // alone: where the range holds more than one plane of a channel (n > 1)
    // they are made once (the set-up cost as much as a 7x7 plane's
    // elements). A plane's decisions set up its CrRow on first need.
    internal::Scratch scratch;
    PlaneSetup* setups =
        end - begin > a.c ? scratch.Take<PlaneSetup>(a.c) : nullptr;
    InferenceChannel ic;
    for (size_t u = begin; u < end; ++u) {
      const size_t ch = u % a.c;
      TY* y = static_cast<TY*>(a.y) + u * a.hw;
      const TX* x =
          UnitX(static_cast<const TX*>(a.x) + u * a.hw, y, a.hw, copy);
      bool ready = false;
      const auto set_up = [&] {
        SetInferenceChannel<TX, TY>(a, ch, x, 1, &ic);
        ready = true;
      };
      const Unit* mode = &ic.mode;
      const CheckedConsts* k = &ic.k;
      if (setups == nullptr) {
        set_up();
      } else {
        PlaneSetup& s = setups[ch];
        if (!s.made) {
          set_up();
          s = PlaneSetup{true, ic.mode, ic.k};
        }
        mode = &s.mode;
        k = &s.k;
      }
      ApplyPlaneUnit(df, *mode, x, y, a.hw, *k, a.gamma[ch], a.beta[ch],
                     [&](size_t i) {
                       if (!ready) set_up();
                       return InferenceBits<TX>(a, ch, ic, i);
                     });
    }
    return;
  }
  const size_t plane_stride = a.c * a.hw, count = a.n * a.hw;
  for (size_t ch = begin; ch < end; ++ch) {
    const TX* x = static_cast<const TX*>(a.x) + ch * a.hw;
    TY* y = static_cast<TY*>(a.y) + ch * a.hw;
    size_t x_stride = plane_stride;
    if (static_cast<const void*>(x) == static_cast<const void*>(y)) {
      // In place: the channel's planes gathered, hw apart.
      if (!copy) copy.reset(new TX[count]);
      for (size_t i = 0; i < a.n; ++i) {
        std::memcpy(copy.get() + i * a.hw, x + i * plane_stride,
                    a.hw * sizeof(TX));
      }
      x = copy.get();
      x_stride = a.hw;
    }
    const internal::RowStats st = StatsOfSet(
        count, a.eps, ToFloat(x[0]), [&](float k, double* s, double* q) {
          *s = *q = 0.0;
          for (size_t i = 0; i < a.n; ++i) {
            double si, qi;
            SumsF64(df, x + i * x_stride, a.hw, k, si, qi);
            *s += si;
            *q += qi;
          }
        });
    a.mean[ch] = st.k + st.c;
    a.var[ch] = st.v / static_cast<double>(count);
    CheckedConsts k{};
    const Unit mode = CheckedUnit(st, &k);
    internal::CrRow cr = GroupCrRow<TX, TY>(x, count, a.eps, st);
    cr.run = a.hw;
    cr.run_stride = x_stride;
    internal::CrCache cache;
    const float g = a.gamma[ch], b = a.beta[ch];
    for (size_t i = 0; i < a.n; ++i) {
      const size_t at = i * a.hw;
      ApplyPlaneUnit(df, mode, x + i * x_stride, y + i * plane_stride, a.hw, k,
                     g, b, [&](size_t e) {
                       return internal::CorrectlyRoundedBits(cr, at + e, g, b,
                                                             cache);
                     });
    }
  }
}

template <typename TX, typename TY, class DF>
HWY_NOINLINE void BatchNhwcChecked(DF df, const internal::BatchArgs& a,
                                   size_t begin, size_t end) {
  const size_t c = a.c, rows = a.n * a.hw;
  std::unique_ptr<TX[]> copy;
  if (!a.training) {
    const size_t p0 = begin * internal::kBatchInferenceRows;
    const size_t p1 = std::min(rows, end * internal::kBatchInferenceRows);
    TY* y = static_cast<TY*>(a.y) + p0 * c;
    const TX* x =
        UnitX(static_cast<const TX*>(a.x) + p0 * c, y, (p1 - p0) * c, copy);
    internal::Scratch scratch;
    CheckedChannels t(c, hn::Lanes(df), scratch);
    std::unique_ptr<InferenceChannel[]> ic(new InferenceChannel[c]);
    for (size_t ch = 0; ch < c; ++ch) {
      SetInferenceChannel<TX, TY>(a, ch, x + ch, c, &ic[ch]);
      t.Set<TX>(ch, ic[ch].mode, ic[ch].k, a.gamma[ch], a.beta[ch]);
    }
    ApplyNhwcChecked(df, x, c, y, c, c, p1 - p0, t, [&](size_t p, size_t ch) {
      return InferenceBits<TX>(a, ch, ic[ch], p);
    });
    return;
  }
  const size_t block = internal::kBatchBlock;
  internal::Scratch scratch;
  CheckedChannels t(block, hn::Lanes(df), scratch);
  float shift[internal::kBatchBlock];
  double sum[internal::kBatchBlock], sq[internal::kBatchBlock];
  internal::CrRow cr[internal::kBatchBlock];
  for (size_t u = begin; u < end; ++u) {
    const size_t c0 = u * block, cb = std::min(block, c - c0);
    const TX* x = static_cast<const TX*>(a.x) + c0;
    TY* y = static_cast<TY*>(a.y) + c0;
    size_t x_stride = c;
    if (static_cast<const void*>(x) == static_cast<const void*>(y)) {
      // In place: the block's columns gathered, cb apart.
      if (!copy) copy.reset(new TX[rows * block]);
      for (size_t p = 0; p < rows; ++p) {
        std::memcpy(copy.get() + p * cb, x + p * c, cb * sizeof(TX));
      }
      x = copy.get();
      x_stride = cb;
    }
    for (size_t j = 0; j < cb; ++j) shift[j] = ToFloat(x[j]);
    std::fill(sum, sum + cb, 0.0);
    std::fill(sq, sq + cb, 0.0);
    ChannelSumsF64(df, x, x_stride, rows, 0, cb, shift, sum, sq);
    for (size_t j = 0; j < cb; ++j) {
      const internal::RowStats st =
          StatsOfSet(rows, a.eps, shift[j], [&](float k, double* s, double* q) {
            if (k != shift[j]) {  // shifted again: this channel once more
              shift[j] = k;
              sum[j] = sq[j] = 0.0;
              ChannelSumsF64(df, x, x_stride, rows, j, j + 1, shift, sum, sq);
            }
            *s = sum[j];
            *q = sq[j];
          });
      a.mean[c0 + j] = st.k + st.c;
      a.var[c0 + j] = st.v / static_cast<double>(rows);
      CheckedConsts k{};
      t.Set<TX>(j, CheckedUnit(st, &k), k, a.gamma[c0 + j], a.beta[c0 + j]);
      cr[j] = GroupCrRow<TX, TY>(x + j, rows, a.eps, st);
      cr[j].step = x_stride;
    }
    internal::CrCache cache[internal::kBatchBlock];
    ApplyNhwcChecked(df, x, x_stride, y, c, cb, rows, t,
                     [&](size_t p, size_t j) {
                       return internal::CorrectlyRoundedBits(cr[j], p, t.g[j],
                                                             t.b[j], cache[j]);
                     });
  }
}

// This target's table, [layout][x_type][y_type], filled at compile time.
// Null where the target takes another's kernel (kCompiledHere: y, and
// copies of x, are written).
template <bool kNhwc, typename TX, typename TY>
constexpr internal::BatchFn BatchKernel() {
  if constexpr (!kCompiledHere<TX, TY>) {
    return nullptr;
  } else if constexpr (kNhwc) {
    return &BatchNhwc<TX, TY>;
  } else {
    return &BatchNchw<TX, TY>;
  }
}

struct BatchKernels {
  internal::BatchTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[0][I / 3][I % 3] =
          BatchKernel<false, InType<I / 3>, InType<I % 3>>()),
     ...);
    ((table[1][I / 3][I % 3] =
          BatchKernel<true, InType<I / 3>, InType<I % 3>>()),
     ...);
  }
  constexpr BatchKernels() { Fill(std::make_index_sequence<9>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_BATCH_ROWS_INL_H_

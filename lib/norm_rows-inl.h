// Per-target LayerNorm and RMSNorm row kernels, written once with Highway:
// the entry points (NormRows, the kernel table KindKernels) over the parts
// this file includes, each of which includes the one before it:
//   lib/row_sums-inl.h       fp32 sums of a row (the statistics pass)
//   lib/row_write-inl.h      the write pass from a row's scale
//   lib/fast_rows-inl.h      rows whose y is the fp32 result rounded once
//   lib/checked_stats-inl.h  correctly rounded rows: statistics and bounds
//   lib/checked_rows-inl.h   correctly rounded rows: the checked loops
//   lib/tame_rows-inl.h      bf16 rows tested by v's low 16 bits
//   lib/checked_forms-inl.h  the checked row's forms, and int8 y
//
// Numerics (docs/accuracy.md has the long version):
// - LayerNorm statistics come from d = x - K with K = x[0]. When |mean| >>
//   std the subtraction is exact (Sterbenz), so accuracy does not depend on
//   the mean. One pass gives sum(d) and sum(d^2); var = E[d^2] - E[d]^2 is
//   trusted while E[d]^2 <= 4 var (K within two standard deviations of the
//   mean: at most ~2 bits cancel). Other rows take the general path, the
//   corrected two-pass algorithm (Chan, Golub & LeVeque, "Algorithms for
//   computing the sample variance", 1983): m0 = K + E[x - K], then sums of
//   d = x - m0 and d^2, the correction E[d] removing what m0 missed.
// - Outputs are (d - E[d]) * r by FMA, never x * r - mean * r, whose error
//   would grow with |mean| / std.
// - Sums of squares overflow for |x| ~ 1e20 and vanish for |x| ~ 1e-20.
//   When the one-pass sum of squares is outside a safe range, the row is
//   processed as x * s, with s a power of two (exact) bringing max|x| to
//   [1, 2).
// - Vector sums run in fp32 over blocks of 32 vectors and are added in
//   float64, so their error does not grow with the row length; per-row
//   scalars (mean, variance, 1/sqrt) are float64.
// - A NaN anywhere in a row makes its statistics NaN; such rows (and rows
//   whose 1/sqrt is infinite: var + eps = 0, where the truth is 0/0) are
//   written as the default quiet NaN, so the output bits never depend on
//   which NaN payload an add happened to propagate. Rows never share state:
//   any partition of rows gives the same bits.

#if defined(SIMDNORM_LIB_NORM_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_NORM_ROWS_INL_H_
#undef SIMDNORM_LIB_NORM_ROWS_INL_H_
#else
#define SIMDNORM_LIB_NORM_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "hwy/highway.h"
#include "lib/checked_forms-inl.h"
#include "lib/kernel_table.h"
#include "lib/scratch.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// 16-bit gamma of the tame rows is widened to f32 once for calls of this
// many rows or more (bf16: measured in NormRowsChecked; f16: 1.01-1.05x
// at 16 rows, Zen 5).
inline constexpr size_t kWidenRows = 16;

// Rows of bf16 or f16 y, correctly rounded, one at a time. scratch holds
// a row: h = x + residual when there is no sum_out, or a copy of a row
// that y overwrites (in place).
template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowsChecked(const internal::RowArgs& a, size_t row_begin,
                                  size_t row_end) {
  constexpr bool kLayerNorm = kKind == 0;
  const hn::ScalableTag<float> df;
  const size_t n = a.cols;
  Weights<TP> w = WeightsOf<TP>(a);
  // TameChunk's gamma: bf16; in the default order also f32 and none, and
  // f32 or bf16 gamma is copied as f32 in the pairs' layout (on the stack
  // up to kPairsRoom, then in scratch; bf16 only for calls of 16 rows or
  // more).
  constexpr bool kTameRows =
      !kLayerNorm && std::is_same_v<TY, bf16_t> &&
      (std::is_same_v<TX, bf16_t> || std::is_same_v<TX, float>);
  constexpr bool kF32Pairs =
      kTameRows && !std::is_same_v<TP, f16_t> && HWY_TARGET != HWY_SCALAR;
  constexpr bool kTameF16 =
      SIMDNORM_HW_F16 && !kLayerNorm && std::is_same_v<TX, f16_t> &&
      std::is_same_v<TY, f16_t> && std::is_same_v<TP, f16_t>;
  constexpr size_t kPairsRoom = 4096;
  HWY_ALIGN float stack_pairs[kF32Pairs || kTameF16 ? kPairsRoom : 1];
  std::optional<internal::Scratch> memory;  // longer rows: no heap a call
  (void)stack_pairs;
  if constexpr (kTameRows) {
    const bool plain = w.beta == nullptr && !w.has_offset;
    if constexpr (std::is_same_v<TP, bf16_t>) {
      if (w.gamma != nullptr && plain) {
        w.tame_gamma =
            TameGamma(hn::ScalableTag<uint16_t>(), w.gamma, n, &w.tame_min_g);
      }
    }
#if HWY_TARGET != HWY_SCALAR
    if constexpr (kF32Pairs && std::is_same_v<TP, bf16_t>) {
      // bf16 gamma widened once a call in the default order, so that each
      // row loads its pairs without the shift and the AND a 2N: for calls
      // of 16 rows or more (at 896 on Zen 5, against not widening: 2 rows
      // 0.95x, 4-8 rows 0.97-1.01x, 16 rows 1.00-1.02x, 64 rows 1.02-1.03x).
      if (w.tame_gamma && !w.round && row_end - row_begin >= kWidenRows) {
        float* pairs = stack_pairs;
        if (n > kPairsRoom) {
          pairs = memory.emplace().TakeUninitialized<float>(n);
        }
        WidenedPairs(df, w.gamma, n, pairs);
        w.gamma_pairs = pairs;
      }
    }
    if constexpr (kF32Pairs && std::is_same_v<TP, float>) {
      // With f32 x the copy (~15 ns at 896) pays from a call's second row.
      const bool rows_pay =
          std::is_same_v<TX, bf16_t> || row_end - row_begin > 1;
      if (w.gamma != nullptr && plain && !w.round && rows_pay) {
        float* pairs = stack_pairs;
        if (n > kPairsRoom) {
          pairs = memory.emplace().TakeUninitialized<float>(n);
        }
        if (TameGammaPairs(df, w.gamma, n, pairs, &w.tame_min_g)) {
          w.tame_gamma = true;
          w.gamma_pairs = pairs;
        }
      }
    }
#endif
    if (w.gamma == nullptr && plain && !w.round) {
      w.tame_gamma = true;
      w.tame_min_g = 1.0f;
    }
  }
#if SIMDNORM_HW_F16
  // TameChunkF16: f16 x, y and gamma (or none), finite; gamma widened to
  // f32 once a call of kWidenRows or more, so that rows load it without a
  // conversion a vector (the same values: the same bits).
  if constexpr (kTameF16) {
    w.tame_gamma = w.beta == nullptr && !w.has_offset && !w.round &&
                   (w.gamma == nullptr ||
                    FiniteF16(hn::ScalableTag<uint16_t>(), w.gamma, n));
    if (w.tame_gamma && w.gamma != nullptr &&
        row_end - row_begin >= kWidenRows) {
      float* wide = stack_pairs;
      if (n > kPairsRoom) wide = memory.emplace().TakeUninitialized<float>(n);
      const size_t N = hn::Lanes(df);
      for (size_t i = 0; i + N <= n; i += N) {
        hn::Store(LoadF(df, w.gamma + i), df, wide + i);
      }
      w.gamma_f32 = wide;
    }
  }
#endif
  // Weights that let LeanChunk round both ends by hardware. bf16: the
  // uncentered kinds without beta only (with beta, x = 0 has y = beta, and
  // a subnormal beta's ends would flush to zero and agree); f16 converts
  // subnormals exactly. Weights that are not finite are not scanned for
  // (two passes over gamma and beta: ~13 % of a one-row call at 896):
  // LeanTerms' table is finite only where they are, and LeanChunk's loop
  // without it sends a chunk whose bounds are not to the decisions.
  if constexpr (kHardwareEnds<decltype(df), TY>) {
    constexpr bool kAnyBeta = kLayerNorm || std::is_same_v<TY, f16_t>;
    w.hardware_ends = !w.has_offset && (kAnyBeta || w.beta == nullptr);
  }
  // LayerNorm's lean weight terms where both ends round by hardware
  // (LeanTerms), in scratch (not this frame's stack: one-row calls, which
  // do not make them, need no more stack than before).
  if constexpr (kLayerNorm && kHardwareEnds<decltype(df), TY>) {
    if (w.hardware_ends && !w.round && row_end - row_begin > 1) {
      const size_t paired_end = n / (2 * hn::Lanes(df)) * (2 * hn::Lanes(df));
      float* terms = memory.emplace().TakeUninitialized<float>(paired_end);
      if (LeanTerms<decltype(df), TX, TY>(df, w, paired_end, terms)) {
        w.lean_terms = terms;
      }
    }
  }
  constexpr size_t kRowRoom = kCheckedScratchBytes / sizeof(TX);
  HWY_ALIGN TX stack_scratch[kRowRoom];
  std::unique_ptr<TX[]> heap_scratch;
  const auto scratch = [&]() -> TX* {  // allocates only for long rows
    if (n <= kRowRoom) return stack_scratch;
    if (!heap_scratch) heap_scratch.reset(new TX[n]);
    return heap_scratch.get();
  };
  // Tame weights: the rows' smallest nonzero |x| (bf16 x) lets TameChunk
  // leave out its test of tiny t or v (TinyV).
  const bool want_min = w.tame_gamma;
  // Rows whose first statistics are fp32 (UncenteredStatsF32): f16 y from
  // f16 x only (below).
  constexpr bool kStatsF32 =
      !std::is_same_v<TY, int8_t> && !kLayerNorm &&
      (!std::is_same_v<TY, f16_t> || std::is_same_v<TX, f16_t>);
  // What the statistics of every row share (StatsPlan): of the first ones
  // (UncenteredStatsF32's fp32 sums where kStatsF32, else StatsF64's
  // double sums), and of StatsF64 where kStatsF32 rows fall back to it,
  // made on first need (a plan is ~2 % of a one-row call).
  const internal::StatsPlan first_plan = internal::PlanStats(
      a.kind, n, a.eps,
      kStatsF32 ? internal::Fp32Sums(n, kSumsF32Depth<TX>, kSquaresFlush<TX>)
                : internal::DoubleSums(n));
  internal::StatsPlan fallback_plan;
  bool has_fallback_plan = false;
  const auto f64_plan = [&]() -> const internal::StatsPlan& {
    if (!kStatsF32) return first_plan;
    if (!has_fallback_plan) {
      fallback_plan =
          internal::PlanStats(a.kind, n, a.eps, internal::DoubleSums(n));
      has_fallback_plan = true;
    }
    return fallback_plan;
  };
  const auto x_of = [&](size_t r) {
    return static_cast<const TX*>(a.x) + r * a.x_stride;
  };
  // The statistics of a block of rows are made before any of them is
  // written: the fp32 ones of the rows that take them first (kStatsF32),
  // else the double ones; their sums row by row, then the chains that end
  // them in vector operations, a row a double lane (StatsOfLanes: 1.10x on
  // bf16 LayerNorm at 64 x 896, 1.3x at 448 x 128, where the chain made a
  // row at a time, even a row ahead, cost ~30 ns a row). Up to kLaneRows
  // rows of kStatsBlockBytes or less, which the writing then reads from
  // L1. Only without a residual, where rows read x as it is (no row of y
  // but an exact alias overlaps x).
  internal::RowStats block_stats[kLaneRows];
  float block_min_x[kLaneRows] = {};
  HWY_ALIGN double block_k[kLaneRoom] = {}, block_s[kLaneRoom] = {},
                   block_q[kLaneRoom] = {};
  const size_t stats_rows =
      a.residual != nullptr
          ? 0
          : HWY_MAX(size_t{1},
                    HWY_MIN(kLaneRows, kStatsBlockBytes / (n * sizeof(TX))));
  size_t block_begin = row_begin, block_end = row_begin;
  for (size_t r = row_begin; r < row_end; ++r) {
    const TX* x = x_of(r);
    const bool has_block = stats_rows != 0;
    if (has_block && r == block_end) {
      block_begin = r;
      block_end = HWY_MIN(row_end, r + stats_rows);
      const internal::StatsPlan& plan = first_plan;
      // (One row: the scalar chain, whose latency is shorter.)
      const bool lanes =
          block_end - r > 1 && plan.scale_form != internal::ScaleForm::kOther;
      for (size_t b = 0; b < block_end - r; ++b) {
        const TX* xb = x_of(r + b);
        if constexpr (kStatsF32) {
          block_q[b] = SquaresF32(df, xb, n, want_min, &block_min_x[b]);
        } else {
          block_k[b] =
              FirstSumsF64<kLayerNorm>(df, xb, n, block_s[b], block_q[b]);
        }
        if (!lanes) {
          block_stats[b] =
              internal::StatsFromSums(plan, block_k[b], block_s[b], block_q[b]);
        }
      }
      if (lanes) {
        StatsOfLanes(plan, block_k, block_s, block_q, block_end - r,
                     block_stats);
      }
      if constexpr (kLayerNorm) {
        for (size_t b = 0; b < block_end - r; ++b) {
          RecenterF64<kLayerNorm>(df, x_of(r + b), n, first_plan,
                                  block_stats[b]);
        }
      }
    }
    TY* y = static_cast<TY*>(a.y) + r * a.y_stride;
    TX* sum = a.sum_out ? static_cast<TX*>(a.sum_out) + r * a.sum_out_stride
                        : nullptr;
    const TX* h = x;
    if (a.residual != nullptr) {
      TX* made = sum ? sum : scratch();
      ReduceRow<false, false, false, Shift::kNone, true>(
          df, x, n, 1.0f, 0.0f,
          static_cast<const TX*>(a.residual) + r * a.residual_stride, made);
      h = made;
    } else if (sum != nullptr && sum != x) {
      std::memcpy(sum, x, n * sizeof(TX));
    }
    const uintptr_t hb = reinterpret_cast<uintptr_t>(h);
    const uintptr_t yb = reinterpret_cast<uintptr_t>(y);
    const bool h_in_scratch = a.residual != nullptr && sum == nullptr;
    if (!h_in_scratch && hb < yb + n * sizeof(TY) && yb < hb + n * sizeof(TX)) {
      h = static_cast<TX*>(std::memcpy(scratch(), h, n * sizeof(TX)));
    }
    constexpr bool kQuant = std::is_same_v<TY, int8_t>;
    float* scales = kQuant ? a.y_scale + r * a.scales_per_row : nullptr;
    RowScale k;
    RowBound bound;
    // Uncentered kinds with 16-bit y: first the fp32 statistics
    // (UncenteredStatsF32), enough for most rows. LayerNorm's are not: fp32
    // sums bound the mean only within ~10u of the deviations' size, and that
    // flags lanes near y = 0 in nearly every row (bench rows: 97% of them
    // needed StatsF64). f16 y, whose cells are 8x narrower, takes them from
    // f16 x only, whose squares are summed in pairs (SumSquaresF16: r within
    // ~u/2); with SumSquaresF32's chains (~2.6u) ~1.8 lanes were open per
    // row of N(0,1) at 896, and ~84% of the rows made StatsF64 as well.
    // (CheckedScale refuses stats that are not finite or have no bound.)
    const auto row_of = [&](const internal::RowStats& st) {
      return internal::CrRow{a.kind,     h, kDType<TX>, kDType<TX>, w.round,
                             kDType<TY>, n, a.eps,      st};
    };
    if constexpr (kStatsF32) {
      float min_x = has_block ? block_min_x[r - block_begin] : 0.0f;
      const internal::RowStats st =
          has_block
              ? block_stats[r - block_begin]
              : UncenteredStatsF32(df, h, n, first_plan, want_min, &min_x);
      if (CheckedScale(kLayerNorm, st, k, bound)) {
        k.min_x = min_x;
        SaveStats(a, r, 0.0, st.v);
        LazyCrRow<kLayerNorm, TX> cr(row_of(st), /*has_stats=*/false);
        ApplyCheckedAny(df, h, y, w, n, k, bound, st.v, cr);
        continue;
      }
    }
    // (kStatsF32: its fp32 statistics refused.)
    const internal::RowStats st =
        !kStatsF32 && has_block ? block_stats[r - block_begin]
                                : StatsF64<kLayerNorm>(df, h, n, f64_plan());
    SaveStats(a, r, st.k + st.c, st.v);
    if (!kLayerNorm && st.v == HUGE_VAL) {
      RMSNormInfRow(h, y, scales, a.quant_group, w, n);
      continue;
    }
    // NaN anywhere (LayerNorm: also inf), or an infinite 1/sqrt: NaN
    // throughout.
    if (!std::isfinite(st.v) || !std::isfinite(st.c) || !std::isfinite(st.r)) {
      FillNaN(df, y, scales, kQuant ? a.scales_per_row : 0, n);
      continue;
    }
    const internal::CrRow cr = row_of(st);
    const bool checked = CheckedScale(kLayerNorm, st, k, bound,
                                      !kQuant && !w.round && st.v > 0.0);
    if constexpr (kQuant) {
      const internal::CrWeights crw{a.gamma,  a.beta,  kDType<TP>,
                                    w.offset, w.scale, w.has_offset};
      if (checked && (std::is_same_v<TX, float> || !w.round)) {
        ApplyRowQuantChecked<kLayerNorm>(df, h, y, scales, a.quant_group, w, n,
                                         k, bound, cr, crw);
      } else {
        internal::CrCache cache;
        for (size_t g0 = 0; g0 < n; g0 += a.quant_group, ++scales) {
          const size_t g1 = n - g0 > a.quant_group ? g0 + a.quant_group : n;
          internal::CorrectlyRoundedInt8(cr, crw, g0, g1, y + g0, scales,
                                         cache);
        }
      }
    } else if (!checked) {
      internal::CrCache cache;
      for (size_t j = 0; j < n; ++j) DecideElement(w, cr, cache, j, y);
    } else {
      LazyCrRow<kLayerNorm, TX> lazy(cr, /*has_stats=*/true);
      ApplyCheckedAny(df, h, y, w, n, k, bound, st.v, lazy);
    }
  }
}

// With a residual and no sum_out: room for two rows of h on the stack, or
// on the heap for longer rows. Kept out of NormRows, whose frame stays small.
template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowPairsInScratch(const internal::RowArgs& a,
                                        size_t row_begin, size_t row_end) {
  constexpr size_t kRowRoom = kScratchBytes / 2 / sizeof(TX);
  HWY_ALIGN TX stack_scratch[2][kRowRoom];
  std::unique_ptr<TX[]> heap_scratch;
  TX* scratch[2] = {stack_scratch[0], stack_scratch[1]};
  if (a.cols > kRowRoom) {
    heap_scratch.reset(new TX[2 * a.cols]);
    scratch[0] = heap_scratch.get();
    scratch[1] = scratch[0] + a.cols;
  }
  NormRowPairs<kKind, TX, TY, TP>(a, row_begin, row_end, scratch);
}

template <int kKind, typename TX, typename TY, typename TP>
void NormRowPairsAnyScratch(const internal::RowArgs& a, size_t row_begin,
                            size_t row_end) {
  if (a.residual != nullptr && a.sum_out == nullptr) {
    NormRowPairsInScratch<kKind, TX, TY, TP>(a, row_begin, row_end);
    return;
  }
  TX* const no_scratch[2] = {nullptr, nullptr};
  NormRowPairs<kKind, TX, TY, TP>(a, row_begin, row_end, no_scratch);
}

// Where a call's y is streamed, gamma and beta are copied to x's offset of
// a line if they sit elsewhere (the same values, so the same bits): the
// write loops align x's loads (and y's stores, or shift y), and the
// weights' loads would split, which beside non-temporal stores cost
// LayerNorm f32 rows 16 bytes off with aligned weights 1.6x at 4096 rows
// of 896 (Zen 5; nothing without streaming). For ranges of 8 rows or more
// whose weights fit kMovedWeightsBytes (on the stack: calls allocate
// nothing), and only where x and y share the offset or y is shifted
// (kShiftedStream): elsewhere y is not streamed.
inline constexpr size_t kMovedWeightsBytes = 64 * 1024;

template <typename TX, typename TY, typename TP>
bool WeightsApart(const internal::RowArgs& a, size_t row_begin,
                  size_t row_end) {
  const auto off = [](const void* p) {
    return reinterpret_cast<uintptr_t>(p) % 64;
  };
  const size_t ox = off(static_cast<const TX*>(a.x) + row_begin * a.x_stride);
  const size_t oy = off(static_cast<const TY*>(a.y) + row_begin * a.y_stride);
  const bool apart =
      (a.gamma && off(a.gamma) != ox) || (a.beta && off(a.beta) != ox);
  return apart && a.stream_y && row_end - row_begin >= 8 &&
         ox % sizeof(TP) == 0 &&
         (oy == ox || kShiftedStream<TY>)&&2 *
                 ((a.cols * sizeof(TP) + 63) / 64 * 64) <=
             kMovedWeightsBytes;
}

template <int kKind, typename TX, typename TY, typename TP>
HWY_NOINLINE void NormRowPairsWeightsAtX(const internal::RowArgs& a,
                                         size_t row_begin, size_t row_end) {
  HWY_ALIGN unsigned char room[kMovedWeightsBytes + 64];
  const size_t ox = reinterpret_cast<uintptr_t>(static_cast<const TX*>(a.x) +
                                                row_begin * a.x_stride) %
                    64;
  const size_t bytes = a.cols * sizeof(TP);
  const size_t padded = (bytes + 63) / 64 * 64;
  internal::RowArgs b = a;
  if (a.gamma) b.gamma = std::memcpy(room + ox, a.gamma, bytes);
  if (a.beta) b.beta = std::memcpy(room + padded + ox, a.beta, bytes);
  NormRowPairsAnyScratch<kKind, TX, TY, TP>(b, row_begin, row_end);
}

template <int kKind, typename TX, typename TY, typename TP>
void NormRows(const internal::RowArgs& a, size_t row_begin, size_t row_end) {
  if constexpr (kRounds16<TY> || std::is_same_v<TY, int8_t>) {
    if (a.correct_rounding) {
      NormRowsChecked<kKind, TX, TY, TP>(a, row_begin, row_end);
      return;
    }
  }
  if (WeightsApart<TX, TY, TP>(a, row_begin, row_end)) {
    NormRowPairsWeightsAtX<kKind, TX, TY, TP>(a, row_begin, row_end);
    return;
  }
  NormRowPairsAnyScratch<kKind, TX, TY, TP>(a, row_begin, row_end);
}

// The table of one kind for this target, [x_type][y_type][param_type]
// indexed by simdnorm_dtype, filled at compile time.
template <size_t I>
using InType = std::tuple_element_t<I, std::tuple<float, bf16_t, f16_t>>;
template <size_t I>
using OutType =
    std::tuple_element_t<I, std::tuple<float, bf16_t, f16_t, int8_t>>;

// Null where the target takes another's kernel (kCompiledHere: x, and h
// made from it, and y are written; the weights are only read).
template <int kKind, typename TX, typename TY, typename TP>
constexpr internal::RowsFn RowsKernel() {
  if constexpr (kCompiledHere<TX, TY>) {
    return &NormRows<kKind, TX, TY, TP>;
  } else {
    return nullptr;
  }
}

template <int kKind>
struct KindKernels {
  internal::KindTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[I / 12][I / 3 % 4][I % 3] =
          RowsKernel<kKind, InType<I / 12>, OutType<I / 3 % 4>,
                     InType<I % 3>>()),
     ...);
  }
  constexpr KindKernels() { Fill(std::make_index_sequence<36>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_NORM_ROWS_INL_H_

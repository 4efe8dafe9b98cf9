// Per-target write pass of a row from its scale (RowScale): y = xhat *
// gamma + beta in fp32, rounded once to y's type, two rows at once where
// they share an alignment, the head peeled to aligned stores, streamed or
// not, and int8 y by groups. Part of lib/norm_rows-inl.h's kernels.

#if defined(SIMDNORM_LIB_ROW_WRITE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_ROW_WRITE_INL_H_
#undef SIMDNORM_LIB_ROW_WRITE_INL_H_
#else
#define SIMDNORM_LIB_ROW_WRITE_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "lib/kernel_table.h"
#include "lib/row_sums-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// A row's normalization as xhat = Shifted(x) * mul + add, with
// LayerNorm: Shifted(x) = x * s - m, m the (scaled) shift, add = -E[d] * mul;
// RMSNorm:   Shifted(x) = x * s, add = 0. Unscaled rows have s = 1.
struct RowScale {
  float s, m, mul, add;
  // sum((x - center)^2) of the unscaled row, in double: the kind's
  // denominator (ops.h) is a function of it; the backward pass uses it.
  double second = 0.0;
  double mean = 0.0;  // the row's mean in double (LayerNorm; else 0)
  // The row's smallest nonzero |x| where the statistics pass found it (bf16
  // rows of the uncentered checked kinds; +inf for a row of zeros), else 0.
  float min_x = 0.0f;
};

template <bool kLayerNorm, bool kScaled, class V>
HWY_INLINE V Normalized(V v, V s, V m, V mul, V add) {
  constexpr Shift kShift = !kLayerNorm
                               ? (kScaled ? Shift::kScaleSub : Shift::kNone)
                               : (kScaled ? Shift::kScaleSub : Shift::kSub);
  if constexpr (kLayerNorm) {
    return hn::MulAdd(Shifted<kShift>(v, s, m), mul, add);
  } else {
    return hn::Mul(Shifted<kShift>(v, s, hn::Zero(hn::DFromV<V>())), mul);
  }
}

// t * gamma + beta with one rounding where the target has FMA. Without
// FMA it is a multiply and an add, and t * gamma may overflow although the
// sum is finite (weights near FLT_MAX): such lanes are redone halved, which
// is exact for them (their product is far above the subnormal range).
template <class DF>
HWY_INLINE hn::Vec<DF> GammaBeta(DF df, hn::Vec<DF> t, hn::Vec<DF> g,
                                 hn::Vec<DF> b) {
#if HWY_NATIVE_FMA
  (void)df;
  return hn::MulAdd(t, g, b);
#else
  const auto product = hn::Mul(t, g);
  const auto y = hn::Add(product, b);
  const auto overflow = hn::IsInf(product);
  if (HWY_LIKELY(hn::AllFalse(df, overflow))) return y;
  const auto half = hn::Set(df, 0.5f);
  const auto halved = hn::Add(hn::Mul(t, hn::Mul(g, half)), hn::Mul(b, half));
  return hn::IfThenElse(overflow, hn::Add(halved, halved), y);
#endif
}

// Where a vector of a row is: a whole vector, the even or odd half of a
// pair (convert-inl.h), or the zero-padded tail of `count` elements.
enum class At { kFull, kPairA, kPairB, kTail };

template <At kAt, class DF, typename T>
HWY_INLINE hn::Vec<DF> LoadAt(DF df, const T* HWY_RESTRICT p, size_t count) {
  if constexpr (kAt == At::kFull) {
    return LoadF(df, p);
  } else if constexpr (kAt == At::kPairA) {
    return LoadPairA(df, p);
  } else if constexpr (kAt == At::kPairB) {
    return LoadPairB(df, p);
  } else {
    return LoadTailF(df, p, count);
  }
}

// What one call applies to every row. The result is always
// t * g + b with one rounding (GammaBeta), which covers every case exactly:
// g = offset + gamma (fp32), or the constant `scale` = 1 + offset without
// gamma; b = beta, or -0 without it (t * g + -0 == t * g, and t * 1 + b ==
// t + b, bit for bit). A zero offset is not added (gamma + 0 would turn a
// gamma of -0 into +0). Which operands exist is a predictable branch per
// vector, not a template: the kernels stay few.
template <typename TP>
struct Weights {
  const TP* gamma;
  const TP* beta;
  float offset;
  float scale;
  bool has_offset;
  bool round;  // xhat rounded to x's type first (Hugging Face's order)
  bool tame_gamma = false;  // TameChunk (or TameChunkF16) may run
  float tame_min_g = 0.0f;  // then the smallest nonzero |g| (1: no gamma)
  const float* gamma_pairs = nullptr;  // f32 gamma for it (TameGammaPairs)
  const float* gamma_f32 = nullptr;    // f16 gamma widened (TameChunkF16)
  bool hardware_ends = false;  // LeanChunk may round both ends by hardware
  // LayerNorm's lean bound's weight terms, made once a call (LeanTerms).
  const float* lean_terms = nullptr;
};

// The weights of a call.
template <typename TP>
Weights<TP> WeightsOf(const internal::RowArgs& a) {
  return Weights<TP>{static_cast<const TP*>(a.gamma),
                     static_cast<const TP*>(a.beta),
                     a.gamma_offset,
                     1.0f + a.gamma_offset,
                     a.gamma_offset != 0.0f,
                     a.round_normalized};
}

// bf16 results are rounded by integer steps that need NaN lanes made quiet
// unless every NaN that can reach them has a zero low half. In a row that
// is not NaN, NaN results only come from the weights (t is finite), so
// only f32 and f16 weights need it; bf16 weights widen with a zero low
// half and invalid operations give the default NaN.
template <typename TP>
inline constexpr bool kQuietNaNs = !std::is_same_v<TP, bf16_t>;

// The weights g and b of the vector of a row at i.
template <At kAt, class DF, typename TP>
HWY_INLINE void WeightsAt(DF df, const Weights<TP>& w, size_t i, size_t count,
                          hn::Vec<DF>& g, hn::Vec<DF>& b) {
  g = hn::Set(df, w.scale);
  if (w.gamma) {
    g = LoadAt<kAt>(df, w.gamma + i, count);
    if (w.has_offset) g = hn::Add(g, hn::Set(df, w.offset));
  }
  b = hn::Set(df, -0.0f);
  if (w.beta) b = LoadAt<kAt>(df, w.beta + i, count);
}

// The normalized value t of the vector of a row at i (before the weights).
template <bool kLayerNorm, bool kScaled, At kAt, class DF, typename TX>
HWY_INLINE hn::Vec<DF> NormalizedAt(DF df, const TX* HWY_RESTRICT x, bool round,
                                    size_t i, size_t count, hn::Vec<DF> s,
                                    hn::Vec<DF> m, hn::Vec<DF> mul,
                                    hn::Vec<DF> add) {
  auto t = Normalized<kLayerNorm, kScaled>(LoadAt<kAt>(df, x + i, count), s, m,
                                           mul, add);
  if constexpr (!std::is_same_v<TX, float>) {
    if (round) t = RoundTo<TX>(df, t);
  }
  return t;
}

// The result y (fp32) of the vector of a row at i.
template <bool kLayerNorm, bool kScaled, At kAt, class DF, typename TX,
          typename TP>
HWY_INLINE hn::Vec<DF> ResultAt(DF df, const TX* HWY_RESTRICT x,
                                const Weights<TP>& w, size_t i, size_t count,
                                hn::Vec<DF> s, hn::Vec<DF> m, hn::Vec<DF> mul,
                                hn::Vec<DF> add) {
  hn::Vec<DF> g, b;
  WeightsAt<kAt>(df, w, i, count, g, b);
  const auto t = NormalizedAt<kLayerNorm, kScaled, kAt>(df, x, w.round, i,
                                                        count, s, m, mul, add);
  return GammaBeta(df, t, g, b);
}

// Whether x, y and the weights pair alike (convert-inl.h): then the main
// loops move pairs.
template <typename TX, typename TY, typename TP>
inline constexpr bool kPairs =
    kEvenOdd<TX> == kEvenOdd<TY>&& kEvenOdd<TX> == kEvenOdd<TP>;

// The main loops' store of 2N results at y: a pair (convert-inl.h) when
// x, y and the weights pair alike, else two vectors in order; with
// `stream` (f32 or paired output only) non-temporal.
template <bool kPaired, bool kQuiet, class DF, typename TY>
HWY_INLINE void Store2N(DF df, hn::Vec<DF> a, hn::Vec<DF> b, TY* HWY_RESTRICT y,
                        bool stream) {
  if constexpr (kPaired || std::is_same_v<TY, float>) {
    if (stream) {
      StorePair<kQuiet, true>(df, a, b, y);
    } else {
      StorePair<kQuiet>(df, a, b, y);
    }
  } else {
    (void)stream;
    StoreF<kQuiet>(df, a, y);
    StoreF<kQuiet>(df, b, y + hn::Lanes(df));
  }
}

// Loads and stores that split a cache line cost up to twice as much as
// aligned ones (docs/performance.md), and callers' rows are often off a
// line (std::vector's by 16 bytes). So the write loops peel a head: the
// row's first 2N results are stored unaligned, and the loop goes on from
// the element where the row's accesses are aligned (to a vector of floats'
// bytes). Every result is computed the same way wherever it is (element by
// element), so the bits never depend on the address.

// Elements before p + head is aligned (< 2N); 0 when p is aligned or not a
// multiple of its element size (nothing to align to).
template <typename T>
HWY_INLINE size_t HeadToAlign(size_t bytes, const T* p) {
  const size_t off = reinterpret_cast<uintptr_t>(p) % bytes;
  return off % sizeof(T) != 0 ? 0 : (bytes - off) % bytes / sizeof(T);
}

// Rows whose y sits at another offset of a line than x have split loads or
// split stores, and neither goes with non-temporal stores (split streaming
// stores cost more than cached ones; split loads beside them made 4096
// rows 1.5x slower). So where y (f32) is streamed, the peel aligns x, the
// results are computed at x's aligned positions, and each aligned vector
// of y is made of two consecutive results by a two-source permute
// (vpermt2ps): aligned loads of x, aligned non-temporal stores, the same
// values; the weights are loaded where they are (copied to x's offset
// first for most calls: WeightsApart). AVX-512 only (elsewhere
// kShiftedStream is false and nothing here runs).
template <typename TY>
inline constexpr bool kShiftedStream =
    SIMDNORM_SHIFTED_STREAM&& std::is_same_v<TY, float>;

// The peel of a row: the head that aligns y's stores, or the one that
// aligns x's loads when x and the weights share an offset that y does not
// (three split loads cost more than one split store on Zen 5), or y is
// streamed through shifted vectors (kShiftedStream). 0 for rows
// shorter than head + 2N. A few integer operations: it runs for every row.
// When y is streamed, its head reaches a cache line where 2N results can
// (AVX2's f32): a line written partly by cached and partly by non-temporal
// stores is flushed half full, which made AVX2 rows 16 bytes off 3x slower
// than aligned ones at 4096 rows on Zen 4.
template <class DF, typename TX, typename TY, typename TP>
HWY_INLINE size_t PeelHead(DF df, const TX* x, const TY* y,
                           const Weights<TP>& w, size_t n, bool stream) {
  const size_t bytes = hn::Lanes(df) * sizeof(float);
  const size_t ox = reinterpret_cast<uintptr_t>(x) % bytes;
  const size_t oy = reinterpret_cast<uintptr_t>(y) % bytes;
  const size_t og = w.gamma ? reinterpret_cast<uintptr_t>(w.gamma) % bytes : ox;
  const size_t ob = w.beta ? reinterpret_cast<uintptr_t>(w.beta) % bytes : ox;
  if ((ox | oy | og | ob) == 0) return 0;
  const bool x_side =
      ox != oy && ((og == ox && ob == ox) ||
                   (stream && kShiftedStream<TY> && hn::Lanes(df) == 16));
  const size_t y_bytes =
      stream
          ? HWY_MAX(bytes, HWY_MIN(size_t{64}, 2 * hn::Lanes(df) * sizeof(TY)))
          : bytes;
  const size_t head = x_side ? HeadToAlign(bytes, x) : HeadToAlign(y_bytes, y);
  return head + 2 * hn::Lanes(df) <= n ? head : 0;
}

// Whether p is aligned to a vector of floats' bytes. Non-temporal stores
// need y aligned, and are used only where x's loads are aligned too: with
// split loads of x they made 4096 rows 1.5x slower here.
template <class DF, typename TY>
HWY_INLINE bool StreamAligned(DF df, const TY* p) {
  return reinterpret_cast<uintptr_t>(p) % (hn::Lanes(df) * sizeof(float)) == 0;
}

// Rows of at least 2N elements are written in three parts: a peeled head
// (see PeelHead), the aligned main loop, and the row's last 2N results,
// computed before any store (in place, their loads must come first) and
// stored last, over results already stored with the same values. So no
// row needs a partial vector (a copy through a stack buffer) unless it is
// shorter than 2N.
//
// StoreHead stores the head: the row's first vector of results at y (two
// when the head is longer than a vector), or, when the rest of the row is
// streamed, only its first `head` (< 2N) elements, so that no cached store
// touches a line written with non-temporal stores (which would cost a flush of
// that line).
template <bool kQuiet, class DF, typename TY>
HWY_INLINE void StoreHead(DF df, hn::Vec<DF> h0, hn::Vec<DF> h1,
                          TY* HWY_RESTRICT y, size_t head, bool stream) {
  const size_t N = hn::Lanes(df);
  if (!stream) {
    StoreF<kQuiet>(df, h0, y);
    if (head > N) StoreF<kQuiet>(df, h1, y + N);
  } else if (head < N) {
    StoreTailF<kQuiet>(df, h0, y, head);
  } else {
    StoreF<kQuiet>(df, h0, y);
    if (head > N) StoreTailF<kQuiet>(df, h1, y + N, head - N);
  }
}

// StoreEnd stores the row's last results, e1 (elements n - N to n) and, if
// the `count` elements not yet stored are more than N, e0 (n - 2N to n - N);
// with streaming exactly those `count` elements.
template <bool kQuiet, class DF, typename TY>
HWY_INLINE void StoreEnd(DF df, hn::Vec<DF> e0, hn::Vec<DF> e1,
                         TY* HWY_RESTRICT y, size_t n, size_t count,
                         bool stream) {
  const size_t N = hn::Lanes(df);
  if (!stream) {
    if (count > N) StoreF<kQuiet>(df, e0, y + n - 2 * N);
    StoreF<kQuiet>(df, e1, y + n - N);
    return;
  }
  HWY_ALIGN TY buf[2 * kMaxFloatLanes];
  StoreF<kQuiet>(df, e0, buf);
  StoreF<kQuiet>(df, e1, buf + N);
  std::memcpy(y + n - count, buf + 2 * N - count, count * sizeof(TY));
}

#if SIMDNORM_SHIFTED_STREAM
// Floats of y + i past a line where x + i is at a line's start and y + i
// (f32) is not, with at least 3N elements left and the head (see
// StreamShifted) at most 2N long; else 0 (the plain loops).
template <class DF, typename TX>
HWY_INLINE size_t ShiftedLag(DF df, const TX* x, const float* y, size_t i,
                             size_t n) {
  const size_t N = hn::Lanes(df);
  const uintptr_t oy = reinterpret_cast<uintptr_t>(y + i) % 64;
  if (N != 16 || !StreamAligned(df, x + i) || oy % sizeof(float) != 0) {
    return 0;
  }
  const size_t lag = oy / sizeof(float);
  return i + 3 * N <= n && i + N - lag <= 2 * N ? lag : 0;
}

// Streams the results of kRows rows from x's aligned position i on, where
// y + i is `lag` floats past a line: at(j, r) gives each row's 16 results
// at j. Returns the end of what is stored: y's elements from i + 16 - lag
// (the first line of y after i; the caller's head stores those before) up
// to the value returned, less than 2N from n.
template <size_t kRows, class F>
HWY_INLINE size_t StreamShifted(float* const (&y)[kRows], size_t i, size_t n,
                                size_t lag, const F& at) {
  constexpr size_t N = 16;
  const __m512i idx = _mm512_add_epi32(
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
      _mm512_set1_epi32(static_cast<int>(N - lag)));
  __m512 prev[kRows], a[kRows], b[kRows];
  at(i, prev);
  size_t k = i;
  for (; k + 3 * N <= n; k += 2 * N) {
    at(k + N, a);
    at(k + 2 * N, b);
    for (size_t r = 0; r < kRows; ++r) {
      _mm512_stream_ps(y[r] + k + N - lag,
                       _mm512_permutex2var_ps(prev[r], idx, a[r]));
      _mm512_stream_ps(y[r] + k + 2 * N - lag,
                       _mm512_permutex2var_ps(a[r], idx, b[r]));
      prev[r] = b[r];
    }
  }
  if (k + 2 * N <= n) {
    at(k + N, a);
    for (size_t r = 0; r < kRows; ++r) {
      _mm512_stream_ps(y[r] + k + N - lag,
                       _mm512_permutex2var_ps(prev[r], idx, a[r]));
    }
    k += N;
  }
  return k + N - lag;
}
#endif

// The 2N results of a row at i, as the main loops store them (Store2N): a
// pair when x, y and the weights pair alike, else two vectors in order.
template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TY,
          typename TP>
HWY_INLINE void Results2N(DF df, const TX* HWY_RESTRICT x, const Weights<TP>& w,
                          size_t i, hn::Vec<DF> s, hn::Vec<DF> m,
                          hn::Vec<DF> mul, hn::Vec<DF> add, hn::Vec<DF>& a,
                          hn::Vec<DF>& b) {
  if constexpr (kPairs<TX, TY, TP>) {
    a = ResultAt<kLayerNorm, kScaled, At::kPairA>(df, x, w, i, 0, s, m, mul,
                                                  add);
    b = ResultAt<kLayerNorm, kScaled, At::kPairB>(df, x, w, i, 0, s, m, mul,
                                                  add);
  } else {
    a = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i, 0, s, m, mul,
                                                 add);
    b = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i + hn::Lanes(df), 0,
                                                 s, m, mul, add);
  }
}

// y = Normalized(x) * scale + beta over a row. The weights come by value:
// a local copy that stores to y cannot alias, so their broadcasts stay out
// of the loop. x and y may be the same row (in place): each vector is
// loaded before it is stored, the peeled head is stored after the loads of
// the first aligned step, whose elements it overlaps, and the row's end is
// loaded first (see StoreHead). The row's constants are broadcast once
// (vectors cannot live in structs on SVE).
template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TY,
          typename TP>
HWY_NOINLINE void ApplyRow(DF df, const TX* x, TY* y, const Weights<TP> w,
                           size_t n, const RowScale& k, bool stream) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  if (n < 2 * N) {  // a vector and a partial one at most
    size_t i = 0;
    if (N <= n) {
      StoreF<kQuiet>(df,
                     ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, 0, 0, s,
                                                              m, mul, add),
                     y);
      i = N;
    }
    if (i < n) {
      StoreTailF<kQuiet>(df,
                         ResultAt<kLayerNorm, kScaled, At::kTail>(
                             df, x, w, i, n - i, s, m, mul, add),
                         y + i, n - i);
    }
    return;
  }
  size_t i = PeelHead(df, x, y, w, n, stream);
#if SIMDNORM_SHIFTED_STREAM
  if constexpr (kShiftedStream<TY>) {
    const size_t lag = stream ? ShiftedLag(df, x, y, i, n) : 0;
    if (lag != 0) {  // the ends computed first, as below
      const auto at = [&](size_t j) {
        return ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, j, 0, s, m,
                                                        mul, add);
      };
      const auto e0 = at(n - 2 * N), e1 = at(n - N), h0 = at(0), h1 = at(N);
      StoreHead<kQuiet>(df, h0, h1, y, i + N - lag, true);
      float* const rows[1] = {y};
      const size_t end = StreamShifted(
          rows, i, n, lag, [&](size_t j, __m512(&r)[1]) { r[0] = at(j).raw; });
      StoreEnd<kQuiet>(df, e0, e1, y, n, n - end, true);
      return;
    }
  }
#endif
  stream = stream && StreamAligned(df, y + i) && StreamAligned(df, x + i);
  // What the loop leaves over: e1 covers up to N elements, e0 the rest.
  const size_t rest = (n - i) % (2 * N);
  hn::Vec<DF> a, b, e0 = hn::Zero(df), e1 = hn::Zero(df);
  if (rest > N) {
    e0 = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, n - 2 * N, 0, s, m,
                                                  mul, add);
  }
  if (rest != 0) {
    e1 = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, n - N, 0, s, m, mul,
                                                  add);
  }
  if (i != 0) {
    const auto h0 = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, 0, 0, s,
                                                             m, mul, add);
    const auto h1 = i > N ? ResultAt<kLayerNorm, kScaled, At::kFull>(
                                df, x, w, N, 0, s, m, mul, add)
                          : h0;  // the head fits in h0
    Results2N<kLayerNorm, kScaled, DF, TX, TY>(df, x, w, i, s, m, mul, add, a,
                                               b);
    StoreHead<kQuiet>(df, h0, h1, y, i, stream);
    Store2N<kPaired, kQuiet>(df, a, b, y + i, stream);
    i += 2 * N;
  }
  for (; i + 2 * N <= n; i += 2 * N) {
    Results2N<kLayerNorm, kScaled, DF, TX, TY>(df, x, w, i, s, m, mul, add, a,
                                               b);
    Store2N<kPaired, kQuiet>(df, a, b, y + i, stream);
  }
  if (rest != 0) StoreEnd<kQuiet>(df, e0, e1, y, n, rest, stream);
}

// One vector (kAt) of two rows that share the weights' loads.
template <bool kLayerNorm, At kAt, class DF, typename TX, typename TP>
HWY_INLINE void Results2At(DF df, const TX* HWY_RESTRICT x0,
                           const TX* HWY_RESTRICT x1, const Weights<TP>& w,
                           size_t i, size_t count, hn::Vec<DF> m0,
                           hn::Vec<DF> mul0, hn::Vec<DF> add0, hn::Vec<DF> m1,
                           hn::Vec<DF> mul1, hn::Vec<DF> add1, hn::Vec<DF>& y0,
                           hn::Vec<DF>& y1) {
  const auto one = hn::Set(df, 1.0f);
  hn::Vec<DF> g, b;
  WeightsAt<kAt>(df, w, i, count, g, b);
  y0 = GammaBeta(df,
                 NormalizedAt<kLayerNorm, false, kAt>(df, x0, w.round, i, count,
                                                      one, m0, mul0, add0),
                 g, b);
  y1 = GammaBeta(df,
                 NormalizedAt<kLayerNorm, false, kAt>(df, x1, w.round, i, count,
                                                      one, m1, mul1, add1),
                 g, b);
}

// The 2N results of two rows at i (Results2N for two rows).
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_INLINE void Results2N2(DF df, const TX* HWY_RESTRICT x0,
                           const TX* HWY_RESTRICT x1, const Weights<TP>& w,
                           size_t i, hn::Vec<DF> m0, hn::Vec<DF> mul0,
                           hn::Vec<DF> add0, hn::Vec<DF> m1, hn::Vec<DF> mul1,
                           hn::Vec<DF> add1, hn::Vec<DF>& a0, hn::Vec<DF>& b0,
                           hn::Vec<DF>& a1, hn::Vec<DF>& b1) {
  if constexpr (kPairs<TX, TY, TP>) {
    Results2At<kLayerNorm, At::kPairA>(df, x0, x1, w, i, 0, m0, mul0, add0, m1,
                                       mul1, add1, a0, a1);
    Results2At<kLayerNorm, At::kPairB>(df, x0, x1, w, i, 0, m0, mul0, add0, m1,
                                       mul1, add1, b0, b1);
  } else {
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, i, 0, m0, mul0, add0, m1,
                                      mul1, add1, a0, a1);
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, i + hn::Lanes(df), 0, m0,
                                      mul0, add0, m1, mul1, add1, b0, b1);
  }
}

// ApplyRow for two unscaled rows at once: each weight vector is loaded (and
// widened) once for both, which halves the weights' share of the loads and
// conversions, and the two rows' operations are independent. Each result
// is computed exactly as ApplyRow computes it: the same bits. The caller
// makes sure both rows have the same PeelHead.
template <bool kLayerNorm, class DF, typename TX, typename TY, typename TP>
HWY_NOINLINE void ApplyRows2(DF df, const TX* x0, const TX* x1, TY* y0, TY* y1,
                             const Weights<TP> w, size_t n, const RowScale& k0,
                             const RowScale& k1, bool stream) {
  constexpr bool kQuiet = kQuietNaNs<TP>;
  constexpr bool kPaired = kPairs<TX, TY, TP>;
  const size_t N = hn::Lanes(df);
  const auto m0 = hn::Set(df, k0.m), mul0 = hn::Set(df, k0.mul);
  const auto add0 = hn::Set(df, k0.add);
  const auto m1 = hn::Set(df, k1.m), mul1 = hn::Set(df, k1.mul);
  const auto add1 = hn::Set(df, k1.add);
  hn::Vec<DF> a0, a1, b0, b1;
  if (n < 2 * N) {  // a vector and a partial one at most
    size_t i = 0;
    if (N <= n) {
      Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, 0, 0, m0, mul0, add0, m1,
                                        mul1, add1, a0, a1);
      StoreF<kQuiet>(df, a0, y0);
      StoreF<kQuiet>(df, a1, y1);
      i = N;
    }
    if (i < n) {
      Results2At<kLayerNorm, At::kTail>(df, x0, x1, w, i, n - i, m0, mul0, add0,
                                        m1, mul1, add1, a0, a1);
      StoreTailF<kQuiet>(df, a0, y0 + i, n - i);
      StoreTailF<kQuiet>(df, a1, y1 + i, n - i);
    }
    return;
  }
  size_t i = PeelHead(df, x0, y0, w, n, stream);
#if SIMDNORM_SHIFTED_STREAM
  if constexpr (kShiftedStream<TY>) {
    const size_t lag = stream ? ShiftedLag(df, x0, y0, i, n) : 0;
    if (lag != 0 && lag == ShiftedLag(df, x1, y1, i, n)) {
      const auto at = [&](size_t j, hn::Vec<DF>& r0, hn::Vec<DF>& r1) {
        Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, j, 0, m0, mul0, add0,
                                          m1, mul1, add1, r0, r1);
      };
      hn::Vec<DF> e00, e01, e10, e11, h00, h01, h10, h11;  // as in ApplyRow
      at(n - 2 * N, e00, e10);
      at(n - N, e01, e11);
      at(0, h00, h10);
      at(N, h01, h11);
      StoreHead<kQuiet>(df, h00, h01, y0, i + N - lag, true);
      StoreHead<kQuiet>(df, h10, h11, y1, i + N - lag, true);
      float* const rows[2] = {y0, y1};
      const size_t end =
          StreamShifted(rows, i, n, lag, [&](size_t j, __m512(&r)[2]) {
            hn::Vec<DF> r0, r1;
            at(j, r0, r1);
            r[0] = r0.raw;
            r[1] = r1.raw;
          });
      StoreEnd<kQuiet>(df, e00, e01, y0, n, n - end, true);
      StoreEnd<kQuiet>(df, e10, e11, y1, n, n - end, true);
      return;
    }
  }
#endif
  stream = stream && StreamAligned(df, y0 + i) && StreamAligned(df, y1 + i) &&
           StreamAligned(df, x0 + i) && StreamAligned(df, x1 + i);
  const size_t rest = (n - i) % (2 * N);  // the rows' ends, as in ApplyRow
  hn::Vec<DF> e00 = hn::Zero(df), e01 = e00, e10 = e00, e11 = e00;
  if (rest > N) {
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, n - 2 * N, 0, m0, mul0,
                                      add0, m1, mul1, add1, e00, e10);
  }
  if (rest != 0) {
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, n - N, 0, m0, mul0, add0,
                                      m1, mul1, add1, e01, e11);
  }
  if (i != 0) {  // the peeled heads, as in ApplyRow
    hn::Vec<DF> h00, h10;
    Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, 0, 0, m0, mul0, add0, m1,
                                      mul1, add1, h00, h10);
    hn::Vec<DF> h01 = h00, h11 = h10;  // the heads fit in h00, h10
    if (i > N) {
      Results2At<kLayerNorm, At::kFull>(df, x0, x1, w, N, 0, m0, mul0, add0, m1,
                                        mul1, add1, h01, h11);
    }
    Results2N2<kLayerNorm, DF, TX, TY>(df, x0, x1, w, i, m0, mul0, add0, m1,
                                       mul1, add1, a0, b0, a1, b1);
    StoreHead<kQuiet>(df, h00, h01, y0, i, stream);
    StoreHead<kQuiet>(df, h10, h11, y1, i, stream);
    Store2N<kPaired, kQuiet>(df, a0, b0, y0 + i, stream);
    Store2N<kPaired, kQuiet>(df, a1, b1, y1 + i, stream);
    i += 2 * N;
  }
  for (; i + 2 * N <= n; i += 2 * N) {
    Results2N2<kLayerNorm, DF, TX, TY>(df, x0, x1, w, i, m0, mul0, add0, m1,
                                       mul1, add1, a0, b0, a1, b1);
    Store2N<kPaired, kQuiet>(df, a0, b0, y0 + i, stream);
    Store2N<kPaired, kQuiet>(df, a1, b1, y1 + i, stream);
  }
  if (rest != 0) {
    StoreEnd<kQuiet>(df, e00, e01, y0, n, rest, stream);
    StoreEnd<kQuiet>(df, e10, e11, y1, n, rest, stream);
  }
}

// The int8 scale of a group from the bits of its max|y| (see simdnorm.h):
// q = y * pre * inv. inv = 127 / max is a float unless max is tiny; then y
// is first scaled up by 2^100 (exact), so inv stays finite. A zero, inf or
// NaN max gives inv = 0: the group is q = 0.
struct QuantScale {
  float scale, pre, inv;
};

inline QuantScale QuantScaleFor(uint32_t max_bits) {
  float m;
  std::memcpy(&m, &max_bits, sizeof(m));
  if (!(m > 0.0f) || !(m < HUGE_VALF)) return QuantScale{m, 0.0f, 0.0f};
  const double pre = m < 0x1p-100f ? 0x1p100 : 1.0;
  return QuantScale{m / 127.0f, static_cast<float>(pre),
                    static_cast<float>(127.0 / (static_cast<double>(m) * pre))};
}

// Int8 output, group by group: max|y| over the group's fp32 results, then
// the results again (recomputed from the row, which is in L1: cheaper than
// a buffer), scaled and rounded. max|y| is taken on the bits of |y|, whose
// unsigned order is the order of the values and puts NaN above inf.
template <bool kLayerNorm, bool kScaled, class DF, typename TX, typename TP>
HWY_NOINLINE void ApplyRowQuant(DF df, const TX* x, int8_t* y, float* scales,
                                size_t group, const Weights<TP> w, size_t n,
                                const RowScale& k) {
  const hn::RebindToUnsigned<DF> du;
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  for (size_t g0 = 0; g0 < n; g0 += group) {
    const size_t g1 = n - g0 > group ? g0 + group : n;
    auto max_bits = hn::Zero(du);
    size_t i = g0;
    for (; i + N <= g1; i += N) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i, 0, s,
                                                              m, mul, add);
      max_bits = hn::Max(max_bits, hn::BitCast(du, hn::Abs(v)));
    }
    if (i < g1) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kTail>(
          df, x, w, i, g1 - i, s, m, mul, add);
      const auto valid = hn::RebindMask(du, hn::FirstN(df, g1 - i));
      max_bits = hn::Max(
          max_bits, hn::IfThenElseZero(valid, hn::BitCast(du, hn::Abs(v))));
    }
    const QuantScale q =
        QuantScaleFor(hn::GetLane(hn::MaxOfLanes(du, max_bits)));
    *scales++ = q.scale;
    if (q.inv == 0.0f) {  // zeros, inf or NaN: q = 0 (y * 0 may be NaN)
      std::memset(y + g0, 0, g1 - g0);
      continue;
    }
    const auto pre = hn::Set(df, q.pre), inv = hn::Set(df, q.inv);
    for (i = g0; i + N <= g1; i += N) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kFull>(df, x, w, i, 0, s,
                                                              m, mul, add);
      StoreF(df, hn::Mul(hn::Mul(v, pre), inv), y + i);
    }
    if (i < g1) {
      const auto v = ResultAt<kLayerNorm, kScaled, At::kTail>(
          df, x, w, i, g1 - i, s, m, mul, add);
      StoreTailF(df, hn::Mul(hn::Mul(v, pre), inv), y + i, g1 - i);
    }
  }
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_ROW_WRITE_INL_H_

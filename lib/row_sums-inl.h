// Per-target fp32 sums over a row (ReduceRow: sum, sum of squares, max|x|,
// of x, x - k or x * s - k), the statistics pass of the rows whose y is
// the fp32 result rounded once (lib/fast_rows-inl.h). Part of
// lib/norm_rows-inl.h's kernels; its numerics are described there.

#if defined(SIMDNORM_LIB_ROW_SUMS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_ROW_SUMS_INL_H_
#undef SIMDNORM_LIB_ROW_SUMS_INL_H_
#else
#define SIMDNORM_LIB_ROW_SUMS_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "lib/convert-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// The power of two s with max_abs * s in [1, 2), kept a normal float.
inline float ScaleFor(float max_abs) {
  if (!(max_abs > 0.0f) || !std::isfinite(max_abs)) {
    return max_abs > 0.0f ? 0x1p-126f : 1.0f;  // inf: any; 0 or NaN: none
  }
  int e;
  std::frexp(max_abs, &e);  // max_abs = f * 2^e, f in [0.5, 1)
  e = e - 1;
  if (e > 126) e = 126;
  if (e < -126) e = -126;
  return std::ldexp(1.0f, -e);
}

// What a pass does to x before summing: nothing, x - k, or x * s - k (one
// rounding, by FMA). The cheaper forms keep the common rows off the FMA
// ports, which bound these loops.
enum class Shift { kNone, kSub, kScaleSub };

template <Shift kShift, class V>
HWY_INLINE V Shifted(V x, V s, V k) {
  if constexpr (kShift == Shift::kNone) return x;
  if constexpr (kShift == Shift::kSub) return hn::Sub(x, k);
  return hn::MulSub(x, s, k);
}

// Shifted, with x - k computed as x * 1 - k where the target has FMA: the
// same single rounding, on the multiply-add units. Reductions alternate the two
// forms, so that the subtractions share the adders' and the multiply-adders'
// ports (each loop step is 2 adds and 1 FMA per vector otherwise).
template <Shift kShift, class V>
HWY_INLINE V ShiftedOnFma(V x, V s, V k) {
#if HWY_NATIVE_FMA
  if constexpr (kShift == Shift::kSub) {
    return hn::MulSub(x, hn::Set(hn::DFromV<V>(), 1.0f), k);
  }
#endif
  return Shifted<kShift>(x, s, k);
}

struct RowSums {
  double sum = 0.0, sum_sq = 0.0;
  float max_abs = 0.0f;
};

// 512-bit f32 vectors on x86 (AVX-512 targets): where RotatedSquares and
// the shifted stream (StreamShifted) are compiled.
#undef SIMDNORM_SHIFTED_STREAM  // once per target (foreach_target.h)
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3 && HWY_MAX_BYTES == 64
#define SIMDNORM_SHIFTED_STREAM 1
#else
#define SIMDNORM_SHIFTED_STREAM 0
#endif

#if SIMDNORM_SHIFTED_STREAM
// sum(x^2) of the whole quads of a block of a row of f32 x that starts `lag`
// floats (1-15) past a 64-byte line, from aligned loads: a 512-bit load there
// would touch two lines at every vector (the cost of RMSNorm rows 16 bytes
// off, whose statistics pass is one load and one FMA a vector). The aligned
// vector t of the block holds lanes lag..15 of the row's vector t (terms of
// chain t % 4) and lanes 0..lag-1 of its vector t - 1 (chain (t - 1) % 4's).
// Summed into R[t % 4], every lane of every chain gets the same terms in the
// same order, in a lane `lag` higher (the last lag lanes in the next R): at
// the end each chain is two R's joined by one permute, so the sums have the
// same bits as ReduceRow's loop. The block's first and last aligned vectors
// are its first and last row vectors rotated, so nothing outside
// [x + i, x + end) is read. Returns the end of the quads.
HWY_INLINE size_t RotatedSquares(const float* x, size_t i, size_t end,
                                 size_t lag, hn::Vec512<float> (&sq)[4]) {
  constexpr size_t N = 16;
  const size_t last = (end - i) / N / 4 * 4;  // the last aligned vector
  const __m512i lanes =
      _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i lag_v = _mm512_set1_epi32(static_cast<int>(lag));
  const __m512i rotate = _mm512_and_si512(
      _mm512_sub_epi32(_mm512_add_epi32(lanes, _mm512_set1_epi32(N)), lag_v),
      _mm512_set1_epi32(N - 1));
  const __mmask16 low = static_cast<__mmask16>((1u << lag) - 1);
  const float* a = x + i - lag;  // 64-byte aligned
  const __m512 first = _mm512_maskz_permutexvar_ps(
      static_cast<__mmask16>(~low), rotate, _mm512_loadu_ps(x + i));
  __m512 r0 = _mm512_mul_ps(first, first), r1 = _mm512_setzero_ps();
  __m512 r2 = _mm512_setzero_ps(), r3 = _mm512_setzero_ps();
  size_t t = 1;
  for (;; t += 4) {
    const __m512 x1 = _mm512_load_ps(a + t * N);
    const __m512 x2 = _mm512_load_ps(a + (t + 1) * N);
    const __m512 x3 = _mm512_load_ps(a + (t + 2) * N);
    r1 = _mm512_fmadd_ps(x1, x1, r1);
    r2 = _mm512_fmadd_ps(x2, x2, r2);
    r3 = _mm512_fmadd_ps(x3, x3, r3);
    if (t + 3 == last) break;
    const __m512 x0 = _mm512_load_ps(a + (t + 3) * N);
    r0 = _mm512_fmadd_ps(x0, x0, r0);
  }
  const __m512 end_part = _mm512_maskz_permutexvar_ps(
      low, rotate, _mm512_loadu_ps(x + i + last * N - N));
  r0 = _mm512_fmadd_ps(end_part, end_part, r0);
  // Chain c, lane L: R[c]'s lane L + lag, or R[c + 1]'s lane L + lag - 16.
  const __m512i join = _mm512_add_epi32(lanes, lag_v);
  sq[0] = hn::Vec512<float>{_mm512_permutex2var_ps(r0, join, r1)};
  sq[1] = hn::Vec512<float>{_mm512_permutex2var_ps(r1, join, r2)};
  sq[2] = hn::Vec512<float>{_mm512_permutex2var_ps(r2, join, r3)};
  sq[3] = hn::Vec512<float>{_mm512_permutex2var_ps(r3, join, r0)};
  return i + last * N;
}
#endif

// Floats past a 64-byte line where ReduceRow sums squares with
// RotatedSquares, else 0: f32 x off a line (by whole floats) on AVX-512,
// without the fused add (whose h and r may sit elsewhere).
template <bool kAdd, class DF, typename TX>
HWY_INLINE size_t RotatedLag(DF df, const TX* x) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(x) % 64;
  if (!SIMDNORM_SHIFTED_STREAM || kAdd || !std::is_same_v<TX, float> ||
      hn::Lanes(df) != 16 || at % sizeof(float) != 0) {
    return 0;
  }
  return at / sizeof(float);
}

// The fused residual add inside a pass: x + r rounded to TX (the fp32 sum
// of two bf16 or f16 values is exact or, when it is not, far from their
// rounding ties), which is also stored to h. h may be x or r: each vector
// is loaded before it is stored.
template <bool kAdd, class DF, typename TX>
HWY_INLINE hn::Vec<DF> WithResidual(DF df, hn::Vec<DF> x, hn::Vec<DF> r) {
  if constexpr (kAdd) return RoundTo<TX>(df, hn::Add(x, r));
  return x;
}

// sum(v), sum(v^2) and max|x| over a row, v = Shifted(x), each only when
// asked for. Four independent chains hide the add/FMA latency; fp32 sums of
// at most 32 vectors are added up in float64 (a single fp32 chain of 8192
// adds would lose ~2^-11). With kAdd the row is h = x + r, stored to h on
// the way.
template <bool kSum, bool kSq, bool kMax, Shift kShift, bool kAdd = false,
          class DF, typename TX>
HWY_INLINE RowSums ReduceRow(DF df, const TX* x, size_t n, float s, float k,
                             const TX* r = nullptr, TX* h = nullptr) {
  const size_t N = hn::Lanes(df);
  const auto vs = hn::Set(df, s);
  const auto vk = hn::Set(df, k);
  auto max0 = hn::Zero(df), max1 = hn::Zero(df);
  const size_t lag = RotatedLag<kAdd>(df, x);
  RowSums out;
  size_t i = 0;
  while (i < n) {
    auto sum0 = hn::Zero(df), sum1 = hn::Zero(df);
    auto sum2 = hn::Zero(df), sum3 = hn::Zero(df);
    auto sq0 = hn::Zero(df), sq1 = hn::Zero(df);
    auto sq2 = hn::Zero(df), sq3 = hn::Zero(df);
    const size_t block_end = n - i > 32 * N ? i + 32 * N : n;
#if SIMDNORM_SHIFTED_STREAM
    if constexpr (kSq && !kSum && !kMax && kShift == Shift::kNone &&
                  std::is_same_v<TX, float> &&
                  std::is_same_v<hn::Vec<DF>, hn::Vec512<float>>) {
      if (lag != 0 && block_end - i >= 4 * N) {
        hn::Vec512<float> sq[4];  // no arrays of vectors elsewhere (SVE)
        i = RotatedSquares(x, i, block_end, lag, sq);
        sq0 = sq[0], sq1 = sq[1], sq2 = sq[2], sq3 = sq[3];
      }
    }
#else
    (void)lag;
#endif
    for (; i + 4 * N <= block_end; i += 4 * N) {
      auto x0 = LoadPairA(df, x + i);
      auto x1 = LoadPairB(df, x + i);
      auto x2 = LoadPairA(df, x + i + 2 * N);
      auto x3 = LoadPairB(df, x + i + 2 * N);
      if constexpr (kAdd) {
        x0 = WithResidual<kAdd, DF, TX>(df, x0, LoadPairA(df, r + i));
        x1 = WithResidual<kAdd, DF, TX>(df, x1, LoadPairB(df, r + i));
        x2 = WithResidual<kAdd, DF, TX>(df, x2, LoadPairA(df, r + i + 2 * N));
        x3 = WithResidual<kAdd, DF, TX>(df, x3, LoadPairB(df, r + i + 2 * N));
        StorePair(df, x0, x1, h + i);
        StorePair(df, x2, x3, h + i + 2 * N);
      }
      const auto v0 = Shifted<kShift>(x0, vs, vk);
      const auto v1 = ShiftedOnFma<kShift>(x1, vs, vk);
      const auto v2 = Shifted<kShift>(x2, vs, vk);
      const auto v3 = ShiftedOnFma<kShift>(x3, vs, vk);
      if constexpr (kSum) {
        sum0 = hn::Add(sum0, v0);
        sum1 = hn::Add(sum1, v1);
        sum2 = hn::Add(sum2, v2);
        sum3 = hn::Add(sum3, v3);
      }
      if constexpr (kSq) {
        sq0 = hn::MulAdd(v0, v0, sq0);
        sq1 = hn::MulAdd(v1, v1, sq1);
        sq2 = hn::MulAdd(v2, v2, sq2);
        sq3 = hn::MulAdd(v3, v3, sq3);
      }
      if constexpr (kMax) {
        max0 = hn::Max(max0, hn::Max(hn::Abs(x0), hn::Abs(x1)));
        max1 = hn::Max(max1, hn::Max(hn::Abs(x2), hn::Abs(x3)));
      }
    }
    for (; i + N <= block_end; i += N) {
      auto x0 = LoadF(df, x + i);
      if constexpr (kAdd) {
        x0 = WithResidual<kAdd, DF, TX>(df, x0, LoadF(df, r + i));
        StoreF(df, x0, h + i);
      }
      const auto v0 = Shifted<kShift>(x0, vs, vk);
      if constexpr (kSum) sum0 = hn::Add(sum0, v0);
      if constexpr (kSq) sq0 = hn::MulAdd(v0, v0, sq0);
      if constexpr (kMax) max0 = hn::Max(max0, hn::Abs(x0));
    }
    if (i < block_end) {  // the row's last, partial vector: zero-padded
      const size_t count = block_end - i;
      auto x1 = LoadTailF(df, x + i, count);
      if constexpr (kAdd) {
        x1 = WithResidual<kAdd, DF, TX>(df, x1, LoadTailF(df, r + i, count));
        StoreTailF(df, x1, h + i, count);
      }
      const auto v1 = hn::IfThenElseZero(hn::FirstN(df, count),
                                         Shifted<kShift>(x1, vs, vk));
      if constexpr (kSum) sum1 = hn::Add(sum1, v1);
      if constexpr (kSq) sq1 = hn::MulAdd(v1, v1, sq1);
      if constexpr (kMax) max1 = hn::Max(max1, hn::Abs(x1));
      i = block_end;
    }
    if constexpr (kSum) {
      const auto sum = hn::Add(hn::Add(sum0, sum1), hn::Add(sum2, sum3));
      out.sum += hn::GetLane(hn::SumOfLanes(df, sum));
    }
    if constexpr (kSq) {
      const auto sq = hn::Add(hn::Add(sq0, sq1), hn::Add(sq2, sq3));
      out.sum_sq += hn::GetLane(hn::SumOfLanes(df, sq));
    }
  }
  if constexpr (kMax) {
    out.max_abs = hn::GetLane(hn::MaxOfLanes(df, hn::Max(max0, max1)));
  }
  return out;
}

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_ROW_SUMS_INL_H_

// Per-target GroupNorm backward kernels (simdnorm_group_norm_backward),
// written once with Highway on the forward's statistics (group_rows-inl.h)
// and the row backward's pieces (backward_rows-inl.h).
//
// A (sample, group) is a LayerNorm row whose scale is constant per
// channel, so each unit takes three passes:
// 1. the forward's statistics: NCHW Scale<true> over the group's
//    contiguous cg * hw elements, NHWC NhwcStats over the sample, exactly
//    as the forward computes them (xhat = (x * s - m) * mul + add);
// 2. per channel, A = sum(dy) and B = sum(dy * xhat) over its positions
//    (fp32 partial sums of at most 32 vectors (NCHW) or 32 positions
//    (NHWC) added in double). These are the channel's terms of dbeta and
//    dgamma, and the group's sums of g = dy * gamma[ch] follow in double:
//    S1 = sum_ch gamma[ch] A[ch], S2 = sum_ch gamma[ch] B[ch];
// 3. dx = rf * p2 * ((g - a) - xhat * c), a = S1 / m, c = S2 / m, r =
//    1 / sqrt(var + eps) split as rf * p2 (backward_rows-inl.h's GradRow).
// dy and dx go through fp32 chunks (converted at run time), so that the
// kernels are instantiated per layout and x type only; dx is rounded once
// from fp32. dx may be dy: a chunk of dy is read before its dx is written.
// NCHW chunks hold as many whole channels as fit (one call for them all),
// else part of one channel.
//
// A group whose statistics, r or sums are not finite gets dx = the default
// quiet NaN and NaN partial dgamma for its channels (its dbeta terms are
// kept).

#if defined(SIMDNORM_LIB_GROUP_BACKWARD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef SIMDNORM_LIB_GROUP_BACKWARD_INL_H_
#undef SIMDNORM_LIB_GROUP_BACKWARD_INL_H_
#else
#define SIMDNORM_LIB_GROUP_BACKWARD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <utility>

#include "hwy/highway.h"
#include "lib/backward_rows-inl.h"
#include "lib/convert-inl.h"
#include "lib/group_backward.h"
#include "lib/group_rows-inl.h"

HWY_BEFORE_NAMESPACE();
namespace simdnorm {
namespace SIMDNORM_NAMESPACE {

// Elements per fp32 chunk of dy and dx (on the stack, NCHW).
inline constexpr size_t kGradChunk = 512;
// Floats of an NHWC block of positions (heap, per thread).
inline constexpr size_t kGradBlockFloats = 8192;

// count elements of T from p as fp32 into out.
template <typename T>
HWY_NOINLINE void WidenToF32(const T* p, float* out, size_t count) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= count; i += N) hn::StoreU(LoadF(df, p + i), df, out + i);
  if (i < count) {
    const auto v = LoadTailF(df, p + i, count - i);
    HWY_ALIGN float buf[kMaxFloatLanes];
    hn::Store(v, df, buf);
    std::copy(buf, buf + (count - i), out + i);
  }
}

// count fp32 values from in, rounded once to T, to p.
template <typename T>
HWY_NOINLINE void NarrowFromF32(const float* in, T* p, size_t count) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= count; i += N) StoreF(df, hn::LoadU(df, in + i), p + i);
  if (i < count)
    StoreTailF(df, LoadTailF(df, in + i, count - i), p + i, count - i);
}

// dy's elements [offset, offset + count) as fp32: dy itself when F32, else
// widened into buf.
inline const float* DyChunk(const internal::GroupBackwardArgs& a, size_t offset,
                            size_t count, float* buf) {
  switch (a.dy_type) {
    case SIMDNORM_BF16:
      WidenToF32(static_cast<const bf16_t*>(a.dy) + offset, buf, count);
      return buf;
    case SIMDNORM_F16:
      WidenToF32(static_cast<const f16_t*>(a.dy) + offset, buf, count);
      return buf;
    default:
      return static_cast<const float*>(a.dy) + offset;
  }
}

// Where fp32 dx of elements [offset, ...) goes: dx itself when F32, else
// buf (then DxStore).
inline float* DxChunk(const internal::GroupBackwardArgs& a, size_t offset,
                      float* buf) {
  return a.dx_type == SIMDNORM_F32 ? static_cast<float*>(a.dx) + offset : buf;
}

// Rounds a chunk made in buf (DxChunk) to dx's type.
inline void DxStore(const internal::GroupBackwardArgs& a, size_t offset,
                    size_t count, const float* buf) {
  if (a.dx_type == SIMDNORM_BF16) {
    NarrowFromF32(buf, static_cast<bf16_t*>(a.dx) + offset, count);
  } else if (a.dx_type == SIMDNORM_F16) {
    NarrowFromF32(buf, static_cast<f16_t*>(a.dx) + offset, count);
  }
}

// dx = the default quiet NaN over [offset, offset + count).
inline void DxNaN(const internal::GroupBackwardArgs& a, size_t offset,
                  size_t count) {
  const hn::ScalableTag<float> df;
  switch (a.dx_type) {
    case SIMDNORM_BF16:
      FillNaN(df, static_cast<bf16_t*>(a.dx) + offset,
              static_cast<float*>(nullptr), 0, count);
      break;
    case SIMDNORM_F16:
      FillNaN(df, static_cast<f16_t*>(a.dx) + offset,
              static_cast<float*>(nullptr), 0, count);
      break;
    default:
      FillNaN(df, static_cast<float*>(a.dx) + offset,
              static_cast<float*>(nullptr), 0, count);
  }
}

// Pass 3's constants of a group from its statistics k and the sums S1, S2
// of g and g * xhat over its m elements (LayerNorm's: a = S1 / m, c = S2
// / m, r = 1 / sqrt(second / m + eps)).
inline GradRow GroupGradRow(const RowScale& k, double sum1, double sum2,
                            size_t m, float eps) {
  const internal::Op& op = internal::kOps[SIMDNORM_LAYERNORM];
  const double md = static_cast<double>(m), e = static_cast<double>(eps);
  const double r = 1.0 / op.denominator(k.second, md, e);
  GradRow row;
  row.k = k;
  row.a = static_cast<float>(sum1 / md);
  row.c = static_cast<float>(op.sum_weight(k.second, md, e) * sum2);
  SplitMultiplier(r, row.rf, row.p2);
  row.nan = NaNRow(k) || !std::isfinite(r) || !std::isfinite(sum1) ||
            !std::isfinite(sum2) || !std::isfinite(row.a) ||
            !std::isfinite(row.c);
  return row;
}

// A sample's partial sums of one channel (null: not wanted).
inline void SetPartials(const internal::GroupBackwardArgs& a, size_t index,
                        double sum_dy, double sum_dyx, bool nan) {
  if (a.dbeta_part) a.dbeta_part[index] = static_cast<float>(sum_dy);
  if (a.dgamma_part) {
    a.dgamma_part[index] = nan ? std::nanf("") : static_cast<float>(sum_dyx);
  }
}

// NCHW pass 2 over a chunk: nch channels hw elements apart, len of each
// (whole channels, or a part of one): per channel, the sums of dy and dy *
// xhat as GradSums makes them (blocks of 32 vectors, two chains, each
// block's sums added in double), added to s1[ch] and s2[ch]. All of a
// chunk's channels in one call: GroupNorm's channels are often short (8x8:
// 4 vectors), and a call per channel cost more than its arithmetic.
template <class DF, typename TX>
HWY_NOINLINE void ChunkGradSums(DF df, const TX* x, const float* dy, size_t nch,
                                size_t len, size_t hw, const RowScale& k,
                                double* s1, double* s2) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  for (size_t ch = 0; ch < nch; ++ch) {
    const TX* xc = x + ch * hw;
    const float* dc = dy + ch * hw;
    double r1 = 0.0, r2 = 0.0;
    for (size_t i = 0; i < len;) {
      auto a1 = hn::Zero(df), b1 = hn::Zero(df);
      auto a2 = hn::Zero(df), b2 = hn::Zero(df);
      const size_t end = len - i > 32 * N ? i + 32 * N : len;
      for (; i + 2 * N <= end; i += 2 * N) {
        GradSumsAt<At::kFull>(df, xc, dc, nullptr, 1.0f, i, 0, s, m, mul, add,
                              a1, a2);
        GradSumsAt<At::kFull>(df, xc, dc, nullptr, 1.0f, i + N, 0, s, m, mul,
                              add, b1, b2);
      }
      if (i + N <= end) {
        GradSumsAt<At::kFull>(df, xc, dc, nullptr, 1.0f, i, 0, s, m, mul, add,
                              a1, a2);
        i += N;
      }
      if (i < end) {
        GradSumsAt<At::kTail>(df, xc, dc, nullptr, 1.0f, i, end - i, s, m, mul,
                              add, b1, b2);
        i = end;
      }
      r1 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a1, b1)));
      r2 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a2, b2)));
    }
    s1[ch] += r1;
    s2[ch] += r2;
  }
}

// NCHW pass 3 over a chunk (as ChunkGradSums): dx of each channel with
// its gamma, GradApply's arithmetic. dx may be dy: each vector is loaded
// before it is stored.
template <class DF, typename TX>
HWY_NOINLINE void ChunkGradApply(DF df, const TX* x, const float* dy, float* dx,
                                 size_t nch, size_t len, size_t hw,
                                 const float* gamma, const GradRow& row) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, row.k.s), m = hn::Set(df, row.k.m);
  const auto mul = hn::Set(df, row.k.mul), add = hn::Set(df, row.k.add);
  const auto va = hn::Set(df, row.a), vc = hn::Set(df, row.c);
  const auto rf = hn::Set(df, row.rf), p2 = hn::Set(df, row.p2);
  for (size_t ch = 0; ch < nch; ++ch) {
    const TX* xc = x + ch * hw;
    const float* dc = dy + ch * hw;
    float* oc = dx + ch * hw;
    size_t i = 0;
    for (; i + N <= len; i += N) {
      GradAt<At::kFull, true>(df, xc, dc, oc, nullptr, gamma[ch], nullptr,
                              nullptr, i, 0, s, m, mul, add, va, vc, rf, p2);
    }
    if (i < len) {
      GradAt<At::kTail, true>(df, xc, dc, oc, nullptr, gamma[ch], nullptr,
                              nullptr, i, len - i, s, m, mul, add, va, vc, rf,
                              p2);
    }
  }
}

template <typename TX>
HWY_NOINLINE void GroupBackwardNchw(const internal::GroupBackwardArgs& a,
                                    size_t begin, size_t end) {
  const hn::ScalableTag<float> df;
  const internal::GroupArgs& st = a.stats;
  const size_t cg = st.cg, hw = st.hw, m = cg * hw;
  HWY_ALIGN float dy_buf[kGradChunk];
  HWY_ALIGN float dx_buf[kGradChunk];
  // A chunk: whole channels when they fit (per of them), else kGradChunk
  // elements of one.
  const size_t per = hw < kGradChunk ? kGradChunk / hw : 1;
  const size_t clen = std::min(hw, kGradChunk);
  double cs1[kGradChunk], cs2[kGradChunk];  // a chunk's channels' sums
  for (size_t u = begin; u < end; ++u) {
    const TX* x = static_cast<const TX*>(st.x) + u * m;
    const size_t base = u * m;  // of the group's elements, in x, dy and dx
    const size_t c0 = u % st.groups * cg;
    const size_t part0 = u / st.groups * st.c + c0;  // its partials' index
    const float* gamma = a.gamma + c0;
    const RowScale k =
        Scale<true>(df, x, static_cast<const TX*>(nullptr),
                    static_cast<TX*>(nullptr), m, st.eps, SIMDNORM_LAYERNORM);
    double sum1 = 0.0, sum2 = 0.0;
    for (size_t ch = 0; ch < cg; ch += per) {
      const size_t nch = std::min(per, cg - ch);
      std::fill(cs1, cs1 + nch, 0.0);
      std::fill(cs2, cs2 + nch, 0.0);
      for (size_t p = 0; p < hw; p += clen) {
        const size_t len = std::min(clen, hw - p), at = ch * hw + p;
        const float* dy = DyChunk(a, base + at, (nch - 1) * hw + len, dy_buf);
        ChunkGradSums(df, x + at, dy, nch, len, hw, k, cs1, cs2);
      }
      for (size_t j = 0; j < nch; ++j) {  // in channel order
        sum1 += static_cast<double>(gamma[ch + j]) * cs1[j];
        sum2 += static_cast<double>(gamma[ch + j]) * cs2[j];
        SetPartials(a, part0 + ch + j, cs1[j], cs2[j], false);
      }
    }
    const GradRow row = GroupGradRow(k, sum1, sum2, m, st.eps);
    if (HWY_UNLIKELY(row.nan)) {
      for (size_t ch = 0; ch < cg && a.dgamma_part; ++ch) {
        a.dgamma_part[part0 + ch] = std::nanf("");
      }
      DxNaN(a, base, m);
      continue;
    }
    for (size_t ch = 0; ch < cg; ch += per) {
      const size_t nch = std::min(per, cg - ch);
      for (size_t p = 0; p < hw; p += clen) {
        const size_t len = std::min(clen, hw - p), at = ch * hw + p;
        const size_t count = (nch - 1) * hw + len;
        const float* dy = DyChunk(a, base + at, count, dy_buf);
        float* dx = DxChunk(a, base + at, dx_buf);
        ChunkGradApply(df, x + at, dy, dx, nch, len, hw, gamma + ch, row);
        DxStore(a, base + at, count, dx);
      }
    }
  }
}

// NHWC pass 2 over positions [p0, p1) of a sample (dy: fp32, c apart from
// p0 on): per channel, the fp32 sums of dy and dy * xhat into t.acc_sum
// and t.acc_sq (xhat from t's s, k, mul, add).
template <class DF, typename TX>
HWY_INLINE void NhwcGradSums(DF df, const TX* x, const float* dy, size_t c,
                             size_t p0, size_t p1, ChannelScratch& t) {
  const size_t N = hn::Lanes(df);
  for (size_t j = 0; j < c; j += N) {
    const size_t count = c - j < N ? c - j : N;
    const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.k + j);
    const auto mul = hn::LoadU(df, t.mul + j), add = hn::LoadU(df, t.add + j);
    auto sum1 = hn::Zero(df), sum2 = hn::Zero(df);
    for (size_t p = p0; p < p1; ++p) {
      const TX* xr = x + p * c + j;
      const float* dr = dy + (p - p0) * c + j;
      const auto xv = count == N ? LoadF(df, xr) : LoadTailF(df, xr, count);
      const auto dv = count == N ? LoadF(df, dr) : LoadTailF(df, dr, count);
      sum1 = hn::Add(sum1, dv);
      sum2 = hn::MulAdd(dv, XhatOf(xv, s, m, mul, add), sum2);
    }
    hn::StoreU(sum1, df, t.acc_sum + j);
    hn::StoreU(sum2, df, t.acc_sq + j);
  }
}

// NHWC pass 3 over positions [p0, p1): dx (fp32, c apart from p0 on) of
// every channel from its constants (pass 3 of the top; t.nan: NaN).
template <class DF, typename TX>
HWY_INLINE void NhwcGradApply(DF df, const TX* x, const float* dy, float* dx,
                              size_t c, size_t p0, size_t p1,
                              const ChannelScratch& t, const float* gamma,
                              const float* va, const float* vc, const float* rf,
                              const float* p2) {
  const size_t N = hn::Lanes(df);
  const auto qnan = QuietNaN(df);
  for (size_t j = 0; j < c; j += N) {
    const size_t count = c - j < N ? c - j : N;
    const auto nan = hn::Ne(hn::LoadU(df, t.nan + j), hn::Zero(df));
    const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.k + j);
    const auto mul = hn::LoadU(df, t.mul + j), add = hn::LoadU(df, t.add + j);
    const auto g = hn::LoadU(df, gamma + j), a = hn::LoadU(df, va + j);
    const auto cv = hn::LoadU(df, vc + j), r = hn::LoadU(df, rf + j);
    const auto p2v = hn::LoadU(df, p2 + j);
    for (size_t p = p0; p < p1; ++p) {
      const TX* xr = x + p * c + j;
      const size_t at = (p - p0) * c + j;
      const auto xv = count == N ? LoadF(df, xr) : LoadTailF(df, xr, count);
      const auto dv =
          count == N ? LoadF(df, dy + at) : LoadTailF(df, dy + at, count);
      const auto xhat = XhatOf(xv, s, m, mul, add);
      const auto tv = hn::NegMulAdd(xhat, cv, hn::Sub(hn::Mul(dv, g), a));
      const auto v = hn::IfThenElse(nan, qnan, hn::Mul(hn::Mul(tv, r), p2v));
      if (count == N) {
        hn::StoreU(v, df, dx + at);
      } else {
        StoreTailF(df, v, dx + at, count);
      }
    }
  }
}

template <typename TX>
HWY_NOINLINE void GroupBackwardNhwc(const internal::GroupBackwardArgs& a,
                                    size_t begin, size_t end) {
  const hn::ScalableTag<float> df;
  const internal::GroupArgs& st = a.stats;
  const size_t N = hn::Lanes(df), c = st.c, cg = st.cg, hw = st.hw;
  const size_t per_sample = c * hw;
  ChannelScratch t(c, N);
  std::unique_ptr<RowScale[]> k(new RowScale[st.groups]);
  // Positions per block: 32 (the fp32 sums' length), fewer for wide c.
  const size_t rows =
      std::max<size_t>(1, std::min<size_t>(32, kGradBlockFloats / c));
  const size_t block = rows * c;
  std::unique_ptr<float[]> f(new float[5 * t.cp + 2 * block]());
  float* gamma = f.get();
  float* va = gamma + t.cp;
  float* vc = va + t.cp;
  float* rf = vc + t.cp;
  float* p2 = rf + t.cp;
  float* dy_buf = p2 + t.cp;
  float* dx_buf = dy_buf + block;
  std::copy(a.gamma, a.gamma + c, gamma);
  for (size_t i = begin; i < end; ++i) {
    const TX* x = static_cast<const TX*>(st.x) + i * per_sample;
    const size_t base = i * per_sample;
    NhwcStats(df, st, x, c, t, k.get());
    SetChannels(t, k.get(), c, cg);
    for (size_t j = 0; j < c; ++j) t.sum[j] = t.sq[j] = 0.0;
    for (size_t p0 = 0; p0 < hw; p0 += rows) {
      const size_t p1 = std::min(hw, p0 + rows);
      const float* dy = DyChunk(a, base + p0 * c, (p1 - p0) * c, dy_buf);
      NhwcGradSums(df, x, dy, c, p0, p1, t);
      for (size_t j = 0; j < c; ++j) {
        t.sum[j] += t.acc_sum[j];
        t.sq[j] += t.acc_sq[j];
      }
    }
    bool any = false;  // a group that is not NaN
    for (size_t g = 0; g < st.groups; ++g) {
      double sum1 = 0.0, sum2 = 0.0;
      for (size_t j = g * cg; j < (g + 1) * cg; ++j) {
        sum1 += static_cast<double>(gamma[j]) * t.sum[j];
        sum2 += static_cast<double>(gamma[j]) * t.sq[j];
      }
      const GradRow row = GroupGradRow(k[g], sum1, sum2, cg * hw, st.eps);
      any = any || !row.nan;
      for (size_t j = g * cg; j < (g + 1) * cg; ++j) {
        va[j] = row.a;
        vc[j] = row.c;
        rf[j] = row.rf;
        p2[j] = row.p2;
        t.nan[j] = row.nan ? 1.0f : 0.0f;
        SetPartials(a, i * c + j, t.sum[j], t.sq[j], row.nan);
      }
    }
    if (!any) {
      DxNaN(a, base, per_sample);
      continue;
    }
    for (size_t p0 = 0; p0 < hw; p0 += rows) {
      const size_t p1 = std::min(hw, p0 + rows), at = base + p0 * c;
      const float* dy = DyChunk(a, at, (p1 - p0) * c, dy_buf);
      float* dx = DxChunk(a, at, dx_buf);
      NhwcGradApply(df, x, dy, dx, c, p0, p1, t, gamma, va, vc, rf, p2);
      DxStore(a, at, (p1 - p0) * c, dx);
    }
  }
}

// This target's table, [layout][x_type], filled at compile time.
struct GroupBackwardKernels {
  internal::GroupBackwardTable table = {};

  template <size_t... I>
  constexpr void Fill(std::index_sequence<I...>) {
    ((table[0][I] = &GroupBackwardNchw<InType<I>>), ...);
    ((table[1][I] = &GroupBackwardNhwc<InType<I>>), ...);
  }
  constexpr GroupBackwardKernels() { Fill(std::make_index_sequence<3>()); }
};

}  // namespace SIMDNORM_NAMESPACE
}  // namespace simdnorm
HWY_AFTER_NAMESPACE();

#endif  // SIMDNORM_LIB_GROUP_BACKWARD_INL_H_

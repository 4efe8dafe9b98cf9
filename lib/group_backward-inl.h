// Per-target GroupNorm backward kernels (simdnorm_group_norm_backward),
// written once with Highway on the forward's statistics (group_rows-inl.h)
// and the row backward's pieces (backward_rows-inl.h).
//
// A (sample, group) is a LayerNorm row whose scale is constant per
// channel, so each unit takes three passes (two for a group whose saved
// statistics come with the call: saved_stats-inl.h):
// 1. the forward's statistics: NCHW Scale<true> over the group's
//    contiguous cg * hw elements, NHWC NhwcStats over the sample, exactly
//    as the forward computes them (xhat = (x * s - m) * mul + add); with
//    saved statistics none: pass 2 sums d = x - mean and D = sum(d) too,
//    and xhat = (d - c) * rstd, c = D / m, follows from them;
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
#include "lib/saved_stats-inl.h"

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
  GradRow row;
  row.k = k;
  FinishGradRow(true, md, sum1, sum2, 1.0 / op.denominator(k.second, md, e),
                op.sum_weight(k.second, md, e), row);
  return row;
}

// The same from a group's saved statistics (set: xhat's constants and r).
inline GradRow SavedGroupGradRow(const SavedSet& set, double sum1, double sum2,
                                 size_t m) {
  const double md = static_cast<double>(m);
  GradRow row;
  row.k = set.k;
  FinishGradRow(true, md, sum1, sum2, set.r, 1.0 / md, row);
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
// xhat (kSum3: and of xhat, which is d there) as GradSums makes them
// (blocks of 32 vectors, two chains, each block's sums added in double),
// added to s1[ch], s2[ch] (and s3[ch]). All of a chunk's channels in one
// call: GroupNorm's channels are often short (8x8: 4 vectors), and a call
// per channel cost more than its arithmetic.
template <bool kSum3, class DF, typename TX>
HWY_NOINLINE void ChunkGradSums(DF df, const TX* x, const float* dy, size_t nch,
                                size_t len, size_t hw, const RowScale& k,
                                double* s1, double* s2, double* s3) {
  const size_t N = hn::Lanes(df);
  const auto s = hn::Set(df, k.s), m = hn::Set(df, k.m);
  const auto mul = hn::Set(df, k.mul), add = hn::Set(df, k.add);
  for (size_t ch = 0; ch < nch; ++ch) {
    const TX* xc = x + ch * hw;
    const float* dc = dy + ch * hw;
    double r1 = 0.0, r2 = 0.0, r3 = 0.0;
    for (size_t i = 0; i < len;) {
      auto a1 = hn::Zero(df), b1 = hn::Zero(df);
      auto a2 = hn::Zero(df), b2 = hn::Zero(df);
      auto a3 = hn::Zero(df), b3 = hn::Zero(df);
      const size_t end = len - i > 32 * N ? i + 32 * N : len;
      for (; i + 2 * N <= end; i += 2 * N) {
        GradSumsAt<kSum3, At::kFull>(df, xc, dc, nullptr, 1.0f, i, 0, s, m, mul,
                                     add, a1, a2, a3);
        GradSumsAt<kSum3, At::kFull>(df, xc, dc, nullptr, 1.0f, i + N, 0, s, m,
                                     mul, add, b1, b2, b3);
      }
      if (i + N <= end) {
        GradSumsAt<kSum3, At::kFull>(df, xc, dc, nullptr, 1.0f, i, 0, s, m, mul,
                                     add, a1, a2, a3);
        i += N;
      }
      if (i < end) {
        GradSumsAt<kSum3, At::kTail>(df, xc, dc, nullptr, 1.0f, i, end - i, s,
                                     m, mul, add, b1, b2, b3);
        i = end;
      }
      r1 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a1, b1)));
      r2 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a2, b2)));
      if constexpr (kSum3) {
        r3 += hn::GetLane(hn::SumOfLanes(df, hn::Add(a3, b3)));
      }
    }
    s1[ch] += r1;
    s2[ch] += r2;
    if constexpr (kSum3) s3[ch] += r3;
  }
}

// NCHW pass 2 of a group (x, and dy from element base on): per channel,
// A = sum(dy), B = sum(dy * xhat) and, kSum3, D = sum(xhat) (cg doubles
// each: sa, sb, sd), in chunks (see GroupBackwardNchw).
template <bool kSum3, class DF, typename TX>
HWY_INLINE void GroupChannelSums(DF df, const internal::GroupBackwardArgs& a,
                                 const TX* x, size_t base, const RowScale& k,
                                 double* sa, double* sb, double* sd,
                                 float* dy_buf) {
  const size_t cg = a.stats.cg, hw = a.stats.hw;
  const size_t per = hw < kGradChunk ? kGradChunk / hw : 1;
  const size_t clen = std::min(hw, kGradChunk);
  std::fill(sa, sa + cg, 0.0);
  std::fill(sb, sb + cg, 0.0);
  if constexpr (kSum3) std::fill(sd, sd + cg, 0.0);
  for (size_t ch = 0; ch < cg; ch += per) {
    const size_t nch = std::min(per, cg - ch);
    for (size_t p = 0; p < hw; p += clen) {
      const size_t len = std::min(clen, hw - p), at = ch * hw + p;
      const float* dy = DyChunk(a, base + at, (nch - 1) * hw + len, dy_buf);
      ChunkGradSums<kSum3>(df, x + at, dy, nch, len, hw, k, sa + ch, sb + ch,
                           kSum3 ? sd + ch : nullptr);
    }
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
  // A group's per-channel sums: sa = A = sum(dy), sb = B = sum(dy * xhat),
  // sd (saved statistics only) = sum(d).
  std::unique_ptr<double[]> sums(new double[(a.rstd ? 3 : 2) * cg]);
  double* sa = sums.get();
  double* sb = sa + cg;
  double* sd = a.rstd ? sb + cg : nullptr;
  for (size_t u = begin; u < end; ++u) {
    const TX* x = static_cast<const TX*>(st.x) + u * m;
    const size_t base = u * m;  // of the group's elements, in x, dy and dx
    const size_t c0 = u % st.groups * cg;
    const size_t part0 = u / st.groups * st.c + c0;  // its partials' index
    const float* gamma = a.gamma + c0;
    const bool saved = a.rstd && UsableSaved(a.mean[u], a.rstd[u]);
    SavedSet set{};
    RowScale k;
    if (saved) {
      k = DiffScale(a.mean[u]);
      GroupChannelSums<true>(df, a, x, base, k, sa, sb, sd, dy_buf);
      double sum_d = 0.0;
      for (size_t j = 0; j < cg; ++j) sum_d += sd[j];
      set = SavedSetOf(a.mean[u], a.rstd[u], sum_d, static_cast<double>(m));
      for (size_t j = 0; j < cg; ++j) sb[j] = SavedXhatSum(set, sa[j], sb[j]);
    } else {
      k = Scale<true>(df, x, static_cast<const TX*>(nullptr),
                      static_cast<TX*>(nullptr), m, st.eps, SIMDNORM_LAYERNORM);
      GroupChannelSums<false>(df, a, x, base, k, sa, sb, sd, dy_buf);
    }
    double sum1 = 0.0, sum2 = 0.0;
    for (size_t j = 0; j < cg; ++j) {  // in channel order
      sum1 += static_cast<double>(gamma[j]) * sa[j];
      sum2 += static_cast<double>(gamma[j]) * sb[j];
      SetPartials(a, part0 + j, sa[j], sb[j], false);
    }
    const GradRow row = saved ? SavedGroupGradRow(set, sum1, sum2, m)
                              : GroupGradRow(k, sum1, sum2, m, st.eps);
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
// and t.acc_sq (xhat from t's s, k, mul, add), and with kSum3 of xhat (d
// for the groups of saved statistics) into acc3 (t.cp floats).
template <bool kSum3, class DF, typename TX>
HWY_INLINE void NhwcGradSums(DF df, const TX* x, const float* dy, size_t c,
                             size_t p0, size_t p1, ChannelScratch& t,
                             float* acc3) {
  const size_t N = hn::Lanes(df);
  for (size_t j = 0; j < c; j += N) {
    const size_t count = c - j < N ? c - j : N;
    const auto s = hn::LoadU(df, t.s + j), m = hn::LoadU(df, t.k + j);
    const auto mul = hn::LoadU(df, t.mul + j), add = hn::LoadU(df, t.add + j);
    auto sum1 = hn::Zero(df), sum2 = hn::Zero(df), sum3 = hn::Zero(df);
    for (size_t p = p0; p < p1; ++p) {
      const TX* xr = x + p * c + j;
      const float* dr = dy + (p - p0) * c + j;
      const auto xv = LoadTailF(df, xr, count);
      const auto dv = LoadTailF(df, dr, count);
      const auto xhat = XhatOf(xv, s, m, mul, add);
      sum1 = hn::Add(sum1, dv);
      sum2 = hn::MulAdd(dv, xhat, sum2);
      if constexpr (kSum3) sum3 = hn::Add(sum3, xhat);
    }
    hn::StoreU(sum1, df, t.acc_sum + j);
    hn::StoreU(sum2, df, t.acc_sq + j);
    if constexpr (kSum3) hn::StoreU(sum3, df, acc3 + j);
  }
}

// NHWC pass 2 of a sample (x, and dy from element base on): per channel
// j, A = t.sum[j], B = t.sq[j] and, kSum3, D = sd[j], blocks of `rows`
// positions in fp32 added in double.
template <bool kSum3, class DF, typename TX>
HWY_INLINE void SampleGradSums(DF df, const internal::GroupBackwardArgs& a,
                               const TX* x, size_t base, size_t rows,
                               ChannelScratch& t, float* dy_buf, float* acc3,
                               double* sd) {
  const size_t c = a.stats.c, hw = a.stats.hw;
  for (size_t j = 0; j < c; ++j) t.sum[j] = t.sq[j] = 0.0;
  if constexpr (kSum3) std::fill(sd, sd + c, 0.0);
  for (size_t p0 = 0; p0 < hw; p0 += rows) {
    const size_t p1 = std::min(hw, p0 + rows);
    const float* dy = DyChunk(a, base + p0 * c, (p1 - p0) * c, dy_buf);
    NhwcGradSums<kSum3>(df, x, dy, c, p0, p1, t, acc3);
    for (size_t j = 0; j < c; ++j) {
      t.sum[j] += t.acc_sum[j];
      t.sq[j] += t.acc_sq[j];
      if constexpr (kSum3) sd[j] += acc3[j];
    }
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
      const auto xv = LoadTailF(df, xr, count);
      const auto dv = LoadTailF(df, dy + at, count);
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
  internal::Scratch scratch;
  ChannelScratch t(c, N, scratch);
  RowScale* k = scratch.Take<RowScale>(st.groups);
  // Positions per block: 32 (the fp32 sums' length), fewer for wide c.
  const size_t rows =
      std::max<size_t>(1, std::min<size_t>(32, kGradBlockFloats / c));
  const size_t block = rows * c;
  float* gamma = scratch.Take<float>(6 * t.cp + 2 * block);
  float* va = gamma + t.cp;
  float* vc = va + t.cp;
  float* rf = vc + t.cp;
  float* p2 = rf + t.cp;
  float* acc3 = p2 + t.cp;
  float* dy_buf = acc3 + t.cp;
  float* dx_buf = dy_buf + block;
  std::copy(a.gamma, a.gamma + c, gamma);
  // Saved statistics: which groups of the sample have usable ones, and
  // their channels' sums of d.
  bool* saved = a.rstd ? scratch.Take<bool>(st.groups) : nullptr;
  double* sd = a.rstd ? scratch.Take<double>(c) : nullptr;
  for (size_t i = begin; i < end; ++i) {
    const TX* x = static_cast<const TX*>(st.x) + i * per_sample;
    const size_t base = i * per_sample;
    const size_t unit0 = i * st.groups;  // its groups' saved statistics
    size_t recompute = st.groups, kept = 0;
    for (size_t g = 0; a.rstd && g < st.groups; ++g) {
      saved[g] = UsableSaved(a.mean[unit0 + g], a.rstd[unit0 + g]);
      kept += saved[g];
    }
    recompute -= kept;
    if (recompute > 0) NhwcStats(df, st, x, c, t, k);
    for (size_t g = 0; kept > 0 && g < st.groups; ++g) {
      if (saved[g]) k[g] = DiffScale(a.mean[unit0 + g]);
    }
    SetChannels(t, k, c, cg);
    if (kept > 0) {
      SampleGradSums<true>(df, a, x, base, rows, t, dy_buf, acc3, sd);
    } else {
      SampleGradSums<false>(df, a, x, base, rows, t, dy_buf, acc3, nullptr);
    }
    bool any = false;  // a group that is not NaN
    for (size_t g = 0; g < st.groups; ++g) {
      const size_t j0 = g * cg, j1 = j0 + cg;
      SavedSet set{};
      if (kept > 0 && saved[g]) {  // xhat = (d - c) rstd (saved_stats-inl.h)
        double sum_d = 0.0;
        for (size_t j = j0; j < j1; ++j) sum_d += sd[j];
        set = SavedSetOf(a.mean[unit0 + g], a.rstd[unit0 + g], sum_d,
                         static_cast<double>(cg * hw));
        for (size_t j = j0; j < j1; ++j) {
          t.sq[j] = SavedXhatSum(set, t.sum[j], t.sq[j]);
          t.mul[j] = set.k.mul;
          t.add[j] = set.k.add;
        }
      }
      double sum1 = 0.0, sum2 = 0.0;
      for (size_t j = j0; j < j1; ++j) {
        sum1 += static_cast<double>(gamma[j]) * t.sum[j];
        sum2 += static_cast<double>(gamma[j]) * t.sq[j];
      }
      const GradRow row = kept > 0 && saved[g]
                              ? SavedGroupGradRow(set, sum1, sum2, cg * hw)
                              : GroupGradRow(k[g], sum1, sum2, cg * hw, st.eps);
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

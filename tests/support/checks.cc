#include "support/checks.h"

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

#include "support/dtypes.h"
#include "support/text.h"

namespace simdnorm_test {

bool SameElement(simdnorm_dtype t, const unsigned char* a,
                 const unsigned char* b) {
  if (std::memcmp(a, b, ElemSize(t)) == 0) return true;
  if (t == SIMDNORM_I8) return false;
  if (t == SIMDNORM_F32) {
    float fa, fb;
    std::memcpy(&fa, a, 4);
    std::memcpy(&fb, b, 4);
    return std::isnan(fa) && std::isnan(fb);
  }
  uint16_t ha, hb;
  std::memcpy(&ha, a, 2);
  std::memcpy(&hb, b, 2);
  return HalfIsNaN(HalfOf(t), ha) && HalfIsNaN(HalfOf(t), hb);
}

bool LiteralBf16Rule() {
  static const bool literal = [] {
    const char* e = std::getenv("SIMDNORM_TEST_LITERAL_BF16");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return literal;
}

Stats::HalfTally Stats::Tally(Half h) {
  if (h == Half::kBf16) {
    return {bf16_checked,           bf16_exact,
            bf16_window_only,       bf16_conditioned,
            bf16_conditioned_exact, bf16_worst_ulps};
  }
  return {f16_checked,           f16_exact,
          f16_window_only,       f16_conditioned,
          f16_conditioned_exact, f16_worst_ulps};
}

bool Stats::HalfRateOk(Half h) const {
  const bool b = h == Half::kBf16;
  const double checked = static_cast<double>(b ? bf16_checked : f16_checked);
  const double exact = static_cast<double>(b ? bf16_exact : f16_exact);
  const double cond =
      static_cast<double>(b ? bf16_conditioned : f16_conditioned);
  const double cond_exact =
      static_cast<double>(b ? bf16_conditioned_exact : f16_conditioned_exact);
  if (LiteralBf16Rule() || !ties_expected) return exact >= 0.999 * checked;
  return cond_exact >= 0.999 * cond;
}

bool CheckF32(float got, double ref, double xhat, double gamma, double beta,
              Stats* st, std::string* why) {
  if (std::isnan(ref)) {
    ++st->nan_checked;
    if (std::isnan(got)) return true;
    *why = "got " + Num(got) + ", want NaN (the reference is NaN)";
    return false;
  }
  if (std::isinf(ref)) {
    if (!std::isfinite(got)) return true;
    *why = "got " + Num(got) + ", want non-finite (reference " + Num(ref) + ")";
    return false;
  }
  ++st->f32_checked;
  const double bound = F32Bound(xhat, gamma, beta);
  const double err = std::fabs(static_cast<double>(got) - ref);
  if (err <= bound) {
    st->f32_worst = std::max(st->f32_worst, err / bound);
    return true;
  }
  *why = "got " + Num(got) + " (" + Hex(FloatBits(got), 8) + "), want " +
         Num(ref) + " +- " + Num(bound) + " (error " + Num(err) + " = " +
         Num(err / bound) + " x bound; xhat " + Num(xhat) + ", gamma " +
         Num(gamma) + ", beta " + Num(beta) + ")";
  return false;
}

bool CheckHalf(Half h, uint16_t got, uint16_t want, double ref, double bound,
               Stats* st, std::string* why) {
  const char* name = FormatOf(h).name;
  auto value = [h](uint16_t b) { return Num(HalfToDouble(h, b)); };
  if (HalfIsNaN(h, want)) {
    ++st->nan_checked;
    if (HalfIsNaN(h, got)) return true;
    *why = "got " + Hex(got, 4) + " = " + value(got) +
           ", want NaN (the reference is NaN)";
    return false;
  }
  if (!HalfIsFinite(h, want)) {
    if (!HalfIsFinite(h, got)) return true;
    *why = "got " + Hex(got, 4) + ", want non-finite " + Hex(want, 4);
    return false;
  }
  Stats::HalfTally t = st->Tally(h);
  ++t.checked;
  const bool got_finite = HalfIsFinite(h, got);
  const int32_t ulps =
      got_finite ? std::abs(HalfOrdered(got) - HalfOrdered(want)) : 1 << 30;
  const uint16_t lo_bits = RoundToHalf(h, ref - bound);
  const uint16_t hi_bits = RoundToHalf(h, ref + bound);
  const int32_t lo = HalfOrdered(lo_bits);
  const int32_t hi = HalfOrdered(hi_bits);
  if (ulps == 0) ++t.exact;
  if (lo == hi) {
    ++t.conditioned;
    if (ulps == 0) ++t.conditioned_exact;
  }
  if (ulps <= 1) {
    t.worst_ulps = std::max(t.worst_ulps, ulps);
    return true;
  }
  // An infinite result is the rounding of a value within the bound only
  // where the window reaches the overflow threshold.
  const int32_t o = HalfOrdered(got);
  if (!LiteralBf16Rule() && !HalfIsNaN(h, got) && o >= lo && o <= hi &&
      (got_finite || got == lo_bits || got == hi_bits)) {
    ++t.window_only;
    if (got_finite) t.worst_ulps = std::max(t.worst_ulps, ulps);
    return true;
  }
  *why = "got " + Hex(got, 4) + " = " + value(got) + ", want " + Hex(want, 4) +
         " = " + value(want) + " (" +
         (got_finite ? std::to_string(ulps) : std::string("inf")) + " " + name +
         " ulps apart, at most 1 allowed; truth " + Num(ref) + ", fp32 bound " +
         Num(bound) + " gives [" + value(lo_bits) + ", " + value(hi_bits) +
         "])";
  return false;
}

bool CheckRoundNormalized(simdnorm_dtype x_type, simdnorm_dtype y_type,
                          uint32_t got, uint16_t want, double ref, double T,
                          double scale, double beta, Stats* st,
                          std::string* why) {
  const bool half_y = Is16(y_type);
  const Half hy = HalfOf(y_type);
  const uint16_t got16 = static_cast<uint16_t>(got);
  const float got32 = FloatFromBits(got);
  const bool got_nan = half_y ? HalfIsNaN(hy, got16) : std::isnan(got32);
  const bool got_finite =
      half_y ? HalfIsFinite(hy, got16) : std::isfinite(got32);
  const std::string got_text =
      half_y ? Hex(got16, 4) + " = " + Num(HalfToDouble(hy, got16))
             : Num(got32) + " (" + Hex(got, 8) + ")";
  if (std::isnan(ref) || std::isnan(T)) {
    ++st->nan_checked;
    if (got_nan) return true;
    *why = "got " + got_text + ", want NaN (the reference is NaN)";
    return false;
  }
  if (!std::isfinite(ref) || !std::isfinite(T) ||
      (half_y && !HalfIsFinite(hy, want))) {
    if (!got_finite) return true;
    *why = "got " + got_text + ", want non-finite (reference " + Num(ref) + ")";
    return false;
  }
  // The candidate r, as intervals [first, second].
  const double bx = F32Bound(T, 1.0, 0.0);
  std::vector<std::pair<double, double>> spans;
  if (Is16(x_type)) {
    const Half hx = HalfOf(x_type);
    const int32_t lo = HalfOrdered(RoundToHalf(hx, T - bx));
    const int32_t hi = HalfOrdered(RoundToHalf(hx, T + bx));
    if (hi - lo < 64) {
      for (int32_t o = lo; o <= hi; ++o) {
        const double r = HalfToDouble(hx, HalfFromOrdered(o));
        spans.emplace_back(r, r);
      }
    } else {
      spans.emplace_back(HalfToDouble(hx, HalfFromOrdered(lo)),
                         HalfToDouble(hx, HalfFromOrdered(hi)));
    }
  } else {
    spans.emplace_back(static_cast<float>(T - bx), static_cast<float>(T + bx));
  }
  // The normal output rule against every y in [ya, yb] (with bound b).
  const bool literal = LiteralBf16Rule();
  double best_ratio = HUGE_VAL;  // F32 y: min over spans of error / bound
  int32_t best_ulps = 1 << 30;   // 16-bit y: min ulps to a span's rounding
  bool window_only = false;
  bool pass = false;
  for (const auto& span : spans) {
    const double ya = span.first * scale + beta;
    const double yb = span.second * scale + beta;
    const double ylo = std::min(ya, yb), yhi = std::max(ya, yb);
    const double b = F32Bound(
        std::max(std::fabs(span.first), std::fabs(span.second)), scale, beta);
    if (!half_y) {
      const double g = got32;
      const double err = g < ylo ? ylo - g : g > yhi ? g - yhi : 0.0;
      if (got_finite && err <= b) {
        pass = true;
        best_ratio = std::min(best_ratio, err / b);
      }
      // +-inf where the window reaches the values that round to it.
      constexpr double kOverflow = 0x1.ffffffp127;
      if (!got_finite && !got_nan &&
          (got32 > 0 ? yhi + b >= kOverflow : ylo - b <= -kOverflow)) {
        pass = true;
      }
      continue;
    }
    const int32_t o = HalfOrdered(got16);
    const int32_t rlo = HalfOrdered(RoundToHalf(hy, ylo));
    const int32_t rhi = HalfOrdered(RoundToHalf(hy, yhi));
    const int32_t ulps = o < rlo ? rlo - o : o > rhi ? o - rhi : 0;
    if (got_finite && ulps <= 1) {
      pass = true;
      best_ulps = std::min(best_ulps, ulps);
      continue;
    }
    const uint16_t wlo = RoundToHalf(hy, ylo - b);
    const uint16_t whi = RoundToHalf(hy, yhi + b);
    if (!literal && !got_nan && o >= HalfOrdered(wlo) &&
        o <= HalfOrdered(whi) && (got_finite || got16 == whi || got16 == wlo)) {
      pass = true;
      window_only = true;
    }
  }
  if (half_y) {
    Stats::HalfTally t = st->Tally(hy);
    ++t.checked;
    const bool exact = got_finite && HalfOrdered(got16) == HalfOrdered(want);
    if (exact) ++t.exact;
    if (spans.size() == 1 && spans[0].first == spans[0].second) {
      const double y = spans[0].first * scale + beta;
      const double b = F32Bound(spans[0].first, scale, beta);
      if (RoundToHalf(hy, y - b) == RoundToHalf(hy, y + b)) {
        ++t.conditioned;
        if (exact) ++t.conditioned_exact;
      }
    }
    if (pass && best_ulps <= 1) {
      t.worst_ulps = std::max(t.worst_ulps, best_ulps);
    } else if (pass && window_only) {
      ++t.window_only;
    }
  } else {
    ++st->f32_checked;
    if (pass) st->f32_worst = std::max(st->f32_worst, best_ratio);
  }
  if (pass) return true;
  std::ostringstream os;
  os << "got " << got_text << ", want one of the outputs of round_x(v), |v - "
     << Num(T) << "| <= " << Num(bx) << ": r in";
  for (size_t i = 0; i < spans.size() && i < 4; ++i) {
    os << " [" << Num(spans[i].first) << ", " << Num(spans[i].second) << "]";
  }
  os << " (scale " << Num(scale) << ", beta " << Num(beta)
     << "); the reference's y " << Num(ref);
  if (half_y) {
    os << " rounds to " << Hex(want, 4) << " = " << Num(HalfToDouble(hy, want));
  }
  *why = os.str();
  return false;
}

bool CheckI8Group(const int8_t* got_q, float got_scale, const int8_t* ref_q,
                  float ref_scale, const double* y64, const double* terms,
                  size_t n, Stats* st, std::string* why) {
  double m = 0.0;
  double m_terms = 0.0;  // Terms of the largest |y| (the largest if tied)
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(y64[i])) {
      m = y64[i];
      break;
    }
    const double a = std::fabs(y64[i]);
    const double t = terms ? terms[i] : 0.0;
    if (a > m || (a == m && t > m_terms)) m_terms = t;
    m = std::max(m, a);
  }
  const double s64 = m / 127.0;
  auto fail = [&](const std::string& what) {
    *why = what + " (float64 scale " + Num(s64) + ", library scale " +
           Num(got_scale) + ", reference's stored scale " + Num(ref_scale) +
           ")";
    return false;
  };
  // The reference rounds the exact max|y| / 127 once to fp32: within half
  // an fp32 ulp of it where y64 is accurate, and within the scale's rule
  // below where y cancels (y64 then has a larger relative error).
  const double ref_tol =
      std::max(0x1p-24 * s64, 1e-6 * std::max(m, m_terms) / 127);
  const bool ref_ok =
      std::isnan(s64)
          ? std::isnan(ref_scale)
          : (ref_scale == static_cast<float>(s64) ||
             std::fabs(static_cast<double>(ref_scale) - s64) <= ref_tol);
  if (!ref_ok) return fail("the reference's scale is not fl32(max|y64|/127)");
  if (!std::isfinite(s64) || s64 == 0.0) {
    ++st->i8_special_groups;
    if (std::isnan(s64)) ++st->nan_checked;
    const bool scale_ok = std::isnan(s64)   ? std::isnan(got_scale)
                          : std::isinf(s64) ? got_scale == HUGE_VALF
                                            : got_scale == 0.0f;
    if (!scale_ok) return fail("wrong scale for a special group");
    for (size_t i = 0; i < n; ++i) {
      if (got_q[i] != 0 || ref_q[i] != 0) {
        return fail("element " + std::to_string(i) + ": q " +
                    std::to_string(got_q[i]) + " (reference " +
                    std::to_string(ref_q[i]) + "), want 0");
      }
    }
    return true;
  }
  ++st->i8_groups;
  const double err = std::fabs(static_cast<double>(got_scale) - s64);
  const double rel = err / s64;
  const double scaled = LiteralBf16Rule() ? s64 : std::max(m, m_terms) / 127;
  if (!(err <= 1e-6 * scaled)) {
    return fail("scale off by " + Num(rel) + " relative, at most 1e-6 (of " +
                Num(scaled) + ": " + Num(err / scaled) + ")");
  }
  if (rel > 1e-6) ++st->i8_scaled_only;
  st->i8_worst_scale = std::max(st->i8_worst_scale, rel);
  for (size_t i = 0; i < n; ++i) {
    // q = RNE(y / scale) with the fp32 scale, from the exact y, which y64
    // may not resolve next to a half-integer: that or a neighbour.
    const double v = y64[i] / static_cast<double>(ref_scale);
    const double q64 = std::min(127.0, std::max(-127.0, std::nearbyint(v)));
    if (std::fabs(static_cast<double>(ref_q[i]) - q64) > 1.0) {
      return fail("element " + std::to_string(i) + ": the reference's q " +
                  std::to_string(ref_q[i]) + " is not RNE(" + Num(y64[i]) +
                  " / scale) = " + Num(q64));
    }
    ++st->i8_q_checked;
    const int d = std::abs(static_cast<int>(got_q[i]) - ref_q[i]);
    if (d == 0) ++st->i8_q_exact;
    if (d > 1 || got_q[i] == -128) {
      return fail("element " + std::to_string(i) + ": q " +
                  std::to_string(got_q[i]) + ", want " +
                  std::to_string(ref_q[i]) + " +- 1 (y64 " + Num(y64[i]) + ")");
    }
  }
  return true;
}

}  // namespace simdnorm_test

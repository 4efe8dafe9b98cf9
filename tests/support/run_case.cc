#include "support/run_case.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/half.h"
#include "support/inputs.h"
#include "support/text.h"

namespace simdnorm_test {

void RunCaseOn(const Case& c, const std::vector<float>& values, Stats* st,
               const std::vector<float>* residual_values,
               std::vector<unsigned char>* outputs) {
  ASSERT_EQ(values.size(), c.rows * c.cols);
  ASSERT_TRUE(!c.in_place || c.t.x == c.t.y) << "bad test case";
  ASSERT_TRUE(c.sum_out != SumOut::kIsResidual || c.residual)
      << "bad test case";
  ASSERT_TRUE(c.sum_out != SumOut::kIsX || !c.in_place) << "bad test case";
  ASSERT_TRUE(residual_values == nullptr ||
              residual_values->size() == c.rows * c.cols)
      << "bad test case";
  const bool i8 = c.t.y == SIMDNORM_I8;
  const bool round_normalized = (c.flags & SIMDNORM_ROUND_NORMALIZED) != 0;
  Call call(c, values, residual_values);
  const Matrix& x = call.x;
  const Matrix& res = call.res;
  const Matrix& sum = call.sum;
  const Matrix& gamma = call.gamma;
  const Matrix& beta = call.beta;
  const Matrix& y = call.y;
  const Matrix& scales = call.scales;
  const simdnorm_desc& d = call.d;

  // The truth, on dense copies of the inputs, before the call (which may
  // overwrite x and the residual).
  const Matrix ref_x = x.DenseCopy();
  const Matrix ref_res = res.DenseCopy();
  Matrix ref_sum(c.t.x, c.sum_out != SumOut::kNone ? c.rows : 0, c.cols);
  Matrix ref_y(c.t.y, c.rows, c.cols);
  Matrix ref_scales(SIMDNORM_F32, i8 ? c.rows : 0, c.Groups());
  simdnorm_desc rd = d;
  rd.x = ref_x.data();
  rd.x_stride = 0;
  rd.residual = c.residual ? ref_res.data() : nullptr;
  rd.residual_stride = 0;
  rd.sum_out = c.sum_out != SumOut::kNone ? ref_sum.data() : nullptr;
  rd.sum_out_stride = 0;
  rd.y = ref_y.data();
  rd.y_stride = 0;
  rd.y_scale = i8 ? static_cast<float*>(ref_scales.data()) : nullptr;
  std::vector<double> ref(c.rows * c.cols), xhat(c.rows * c.cols);
  ASSERT_EQ(simdnorm::reference_f64(rd, ref.data(), xhat.data()),
            simdnorm::Status::kOk)
      << c.Describe();
  // ROUND_NORMALIZED: the unrounded xhat, from the same call without it.
  std::vector<double> true_xhat;
  if (round_normalized) {
    simdnorm_desc plain = rd;
    plain.flags &= ~static_cast<unsigned>(SIMDNORM_ROUND_NORMALIZED);
    std::vector<double> scratch(c.rows * c.cols);
    true_xhat.resize(c.rows * c.cols);
    ASSERT_EQ(simdnorm::reference_f64(plain, scratch.data(), true_xhat.data()),
              simdnorm::Status::kOk)
        << c.Describe();
  }
  ASSERT_EQ(simdnorm_normalize_reference(&rd), SIMDNORM_OK) << c.Describe();

  // The premises the checks rest on, from the contract directly: the
  // reference's h is x + residual rounded once to x_type (x without a
  // residual), and its y is xhat * EffectiveScale + beta.
  for (size_t r = 0; r < c.rows; ++r) {
    for (size_t col = 0; col < c.cols; ++col) {
      const size_t i = r * c.cols + col;
      const double g =
          EffectiveScale(c.gamma_offset, c.gamma ? gamma.Get(0, col) : 1.0);
      const double b = c.beta ? beta.Get(0, col) : 0.0;
      const double want = xhat[i] * g + b;
      if (std::isfinite(want) &&
          !(std::fabs(ref[i] - want) <= 1e-12 * Terms(xhat[i], g, b)) &&
          st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col
                      << ": the reference's y " << Num(ref[i])
                      << " is not xhat * scale + beta = " << Num(xhat[i])
                      << " * " << Num(g) << " + " << Num(b);
      }
      if (c.sum_out == SumOut::kNone) continue;
      double h = ref_x.GetF(r, col);
      if (c.residual) h += ref_res.GetF(r, col);
      unsigned char mine[4];
      if (Is16(c.t.x)) {
        const uint16_t bits = RoundToHalf(HalfOf(c.t.x), h);
        std::memcpy(mine, &bits, 2);
      } else {
        const float f = static_cast<float>(h);
        std::memcpy(mine, &f, 4);
      }
      if (!SameElement(c.t.x, mine, ref_sum.At(r, col)) && st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col
                      << ": the reference's h " << Num(ref_sum.GetF(r, col))
                      << " is not x + residual rounded once (" << Num(h) << ")";
      }
    }
  }

  const std::vector<unsigned char> x_before = x.bytes();
  const std::vector<unsigned char> res_before = res.bytes();
  const std::vector<unsigned char> gamma_before = gamma.bytes();
  const std::vector<unsigned char> beta_before = beta.bytes();

  const simdnorm_status s = simdnorm_normalize(&d);
  ASSERT_EQ(s, SIMDNORM_OK)
      << c.Describe() << ": " << simdnorm_status_string(s);

  if (outputs) *outputs = call.OutputBytes();
  const Matrix& out = call.Out();
  auto intact = [&](const Matrix& m, const char* what) {
    std::string where;
    if (!m.PaddingIntact(&where) && st->ShouldReport()) {
      ADD_FAILURE() << c.Describe() << ": " << what << ": " << where;
    }
  };
  intact(out, "y");
  if (c.sum_out == SumOut::kSeparate) intact(sum, "sum_out");
  if (c.sum_out == SumOut::kIsResidual) intact(res, "residual = sum_out");
  if (c.sum_out == SumOut::kIsX) intact(x, "x = sum_out");
  if (i8) intact(scales, "y_scale");
  const bool x_written = c.in_place || c.sum_out == SumOut::kIsX;
  if (!x_written && x.bytes() != x_before && st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": x was modified";
  }
  if (c.sum_out != SumOut::kIsResidual && res.bytes() != res_before &&
      st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": the residual was modified";
  }
  if ((gamma.bytes() != gamma_before || beta.bytes() != beta_before) &&
      st->ShouldReport()) {
    ADD_FAILURE() << c.Describe() << ": gamma or beta was modified";
  }

  auto input_text = [&](size_t r, size_t col) {
    std::string s = "x = " + Num(ref_x.GetF(r, col));
    if (c.residual) s += ", residual = " + Num(ref_res.GetF(r, col));
    return s;
  };

  // sum_out: h bit for bit (any NaN where the reference's h is NaN).
  if (c.sum_out != SumOut::kNone) {
    const Matrix& so = call.SumOutMatrix();
    for (size_t r = 0; r < c.rows; ++r) {
      for (size_t col = 0; col < c.cols; ++col) {
        if (!SameElement(c.t.x, so.At(r, col), ref_sum.At(r, col)) &&
            st->ShouldReport()) {
          ADD_FAILURE() << c.Describe() << ": sum_out row " << r << " col "
                        << col << " (" << input_text(r, col) << "): got "
                        << Num(so.GetF(r, col))
                        << ", want h = " << Num(ref_sum.GetF(r, col))
                        << " bit for bit";
        }
      }
    }
  }

  std::string why;
  if (i8) {
    const size_t group = c.Group();
    std::vector<double> terms(c.cols);
    for (size_t r = 0; r < c.rows; ++r) {
      for (size_t col = 0; col < c.cols; ++col) {
        const double g =
            EffectiveScale(c.gamma_offset, c.gamma ? gamma.Get(0, col) : 1.0);
        terms[col] =
            Terms(xhat[r * c.cols + col], g, c.beta ? beta.Get(0, col) : 0.0);
      }
      for (size_t g = 0; g < c.Groups(); ++g) {
        const size_t begin = g * group;
        const size_t n = std::min(c.cols, begin + group) - begin;
        const bool ok = CheckI8Group(
            reinterpret_cast<const int8_t*>(y.At(r, begin)), scales.GetF(r, g),
            reinterpret_cast<const int8_t*>(ref_y.At(r, begin)),
            ref_scales.GetF(r, g), &ref[r * c.cols + begin], &terms[begin], n,
            st, &why);
        if (!ok && st->ShouldReport()) {
          ADD_FAILURE() << c.Describe() << ": row " << r << " group " << g
                        << " (cols " << begin << ".." << begin + n - 1
                        << "): " << why;
        }
      }
    }
    return;
  }
  for (size_t r = 0; r < c.rows; ++r) {
    for (size_t col = 0; col < c.cols; ++col) {
      const size_t i = r * c.cols + col;
      bool ok;
      const double g =
          EffectiveScale(c.gamma_offset, c.gamma ? gamma.Get(0, col) : 1.0);
      const double b = c.beta ? beta.Get(0, col) : 0.0;
      if (round_normalized) {
        const uint32_t got = c.t.y == SIMDNORM_F32 ? FloatBits(out.GetF(r, col))
                                                   : out.Bits16(r, col);
        const uint16_t want =
            c.t.y == SIMDNORM_F32 ? uint16_t{0} : ref_y.Bits16(r, col);
        ok = CheckRoundNormalized(c.t.x, c.t.y, got, want, ref[i], true_xhat[i],
                                  g, b, st, &why);
      } else if (c.t.y == SIMDNORM_F32) {
        ok = CheckF32(out.GetF(r, col), ref[i], xhat[i], g, b, st, &why);
      } else {
        ok = CheckHalf(HalfOf(c.t.y), out.Bits16(r, col), ref_y.Bits16(r, col),
                       ref[i], F32Bound(xhat[i], g, b), st, &why);
      }
      if (!ok && st->ShouldReport()) {
        ADD_FAILURE() << c.Describe() << ": row " << r << " col " << col << " ("
                      << input_text(r, col) << "): " << why;
      }
    }
  }
}

void RunCase(const Case& c, Stats* st) {
  RunCaseOn(c, RowData(c.family, c.rows, c.cols), st);
}

void ExpectClean(const Stats& st) {
  EXPECT_GT(st.f32_checked + st.bf16_checked + st.f16_checked +
                st.i8_q_checked + st.i8_special_groups + st.nan_checked,
            0u)
      << "the test checked nothing";
  EXPECT_EQ(st.failures, 0u)
      << st.failures << " elements or buffers out of spec (first "
      << std::min<size_t>(st.failures, 8) << " reported above)";
  std::ostringstream summary;
  summary << "bf16 outputs: " << st.bf16_checked << ", equal to the "
          << "once-rounded reference: "
          << Percent(st.bf16_exact, st.bf16_checked)
          << "%; without a rounding boundary within the fp32 bound: "
          << st.bf16_conditioned << ", equal: "
          << Percent(st.bf16_conditioned_exact, st.bf16_conditioned)
          << "%; > 1 ulp but within the fp32-bound window (cancellation): "
          << st.bf16_window_only << "; worst " << st.bf16_worst_ulps
          << " ulps. fp32 outputs: " << st.f32_checked << ", worst error "
          << st.f32_worst << " x bound."
          << (LiteralBf16Rule() ? " [literal bf16 rule]" : "");
  if (st.bf16_checked > 0 || st.f32_checked > 0) {
    std::printf("%s\n", summary.str().c_str());
  }
  std::ostringstream f16;
  f16 << "f16 outputs: " << st.f16_checked << ", equal to the once-rounded "
      << "reference: " << Percent(st.f16_exact, st.f16_checked)
      << "%; without a rounding boundary within the fp32 bound: "
      << st.f16_conditioned
      << ", equal: " << Percent(st.f16_conditioned_exact, st.f16_conditioned)
      << "%; within the window only: " << st.f16_window_only << "; worst "
      << st.f16_worst_ulps << " ulps.";
  if (st.f16_checked > 0) std::printf("%s\n", f16.str().c_str());
  if (st.i8_groups + st.i8_special_groups > 0) {
    std::printf(
        "i8 groups: %zu (+%zu of zeros or non-finite), worst scale error "
        "%.3g relative (%zu groups > 1e-6, within the scaled rule); q: %zu, "
        "equal to the float64 q: %.4f%%\n",
        st.i8_groups, st.i8_special_groups, st.i8_worst_scale,
        st.i8_scaled_only, st.i8_q_checked,
        Percent(st.i8_q_exact, st.i8_q_checked));
  }
  EXPECT_TRUE(st.Bf16RateOk())
      << "bf16 rate below 99.9% (" << summary.str() << ")";
  EXPECT_TRUE(st.F16RateOk()) << "f16 rate below 99.9% (" << f16.str() << ")";
}

}  // namespace simdnorm_test

#include <cmath>

#include "accuracy.h"

namespace simdnorm_accuracy {
namespace {

// Plain loops: without -ffast-math the compiler keeps these sums sequential
// in fp32, as a hand-written kernel would compute them.
void one_pass_row(bool centered, const float* x, size_t n, const float* gamma,
                  const float* beta, float eps, float* y) {
  float sum = 0.0f;
  float sum_sq = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    sum += x[i];
    sum_sq += x[i] * x[i];
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = centered ? sum * inv_n : 0.0f;
  const float var = sum_sq * inv_n - mean * mean;  // may go negative
  const float rstd = 1.0f / std::sqrt(var + eps);
  for (size_t i = 0; i < n; ++i) {
    y[i] = (x[i] - mean) * rstd * gamma[i] + (beta ? beta[i] : 0.0f);
  }
}

void two_pass_row(const float* x, size_t n, const float* gamma,
                  const float* beta, float eps, float* y) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sum_sq = 0.0f;
  for (size_t i = 0; i < n; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) {
    y[i] = (x[i] - mean) * rstd * gamma[i] + (beta ? beta[i] : 0.0f);
  }
}

void eps_outside_row(bool centered, const float* x, size_t n,
                     const float* gamma, const float* beta, float eps,
                     float* y) {
  double mean = 0.0;
  if (centered) {
    for (size_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<double>(n);
  }
  double sum_sq = 0.0;
  for (size_t i = 0; i < n; ++i) sum_sq += (x[i] - mean) * (x[i] - mean);
  const double denom = std::sqrt(sum_sq / static_cast<double>(n)) + eps;
  for (size_t i = 0; i < n; ++i) {
    const double v = (x[i] - mean) / denom * gamma[i] + (beta ? beta[i] : 0.0);
    y[i] = static_cast<float>(v);
  }
}

}  // namespace

const char* shortcut_name(Shortcut s) {
  static const char* const kNames[] = {"onepass-f32", "twopass-f32",
                                       "eps-outside", "trunc-bf16"};
  return kNames[static_cast<int>(s)];
}

bool shortcut_applies(Shortcut s, simdnorm_kind kind, simdnorm_dtype y) {
  if (s == Shortcut::kTruncBf16) return y == SIMDNORM_BF16;
  if (y != SIMDNORM_F32) return false;
  // Without a mean, the one pass is the whole textbook method.
  return s != Shortcut::kTwoPassF32 ||
         simdnorm_tools::op_of(kind).centered != 0;
}

void run_shortcut(Shortcut s, simdnorm_kind kind, const float* x, size_t rows,
                  size_t cols, const float* gamma, const float* beta, float eps,
                  float* y) {
  const bool centered = simdnorm_tools::op_of(kind).centered != 0;
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    if (s == Shortcut::kOnePassF32) {
      one_pass_row(centered, xr, cols, gamma, beta, eps, yr);
    } else if (s == Shortcut::kTwoPassF32) {
      two_pass_row(xr, cols, gamma, beta, eps, yr);
    } else if (s == Shortcut::kEpsOutside) {
      eps_outside_row(centered, xr, cols, gamma, beta, eps, yr);
    }
  }
}

}  // namespace simdnorm_accuracy

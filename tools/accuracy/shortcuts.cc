#include "shortcuts.h"

#include <cmath>

namespace simdnorm_accuracy {
namespace {

// Plain loops: without -ffast-math the compiler keeps these sums sequential
// in fp32, as a hand-written kernel would compute them.
void one_pass_row(simdnorm_kind kind, const float* x, size_t n,
                  const float* gamma, const float* beta, float eps, float* y) {
  float sum = 0.0f;
  float sum_sq = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    sum += x[i];
    sum_sq += x[i] * x[i];
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  const float mean = kind == SIMDNORM_LAYERNORM ? sum * inv_n : 0.0f;
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
  for (size_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    sum_sq += d * d;
  }
  const float rstd = 1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) {
    y[i] = (x[i] - mean) * rstd * gamma[i] + (beta ? beta[i] : 0.0f);
  }
}

void eps_outside_row(simdnorm_kind kind, const float* x, size_t n,
                     const float* gamma, const float* beta, float eps,
                     float* y) {
  double mean = 0.0;
  if (kind == SIMDNORM_LAYERNORM) {
    for (size_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<double>(n);
  }
  double sum_sq = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    sum_sq += d * d;
  }
  const double denom = std::sqrt(sum_sq / static_cast<double>(n)) + eps;
  for (size_t i = 0; i < n; ++i) {
    const double v = (x[i] - mean) / denom * gamma[i] + (beta ? beta[i] : 0.0);
    y[i] = static_cast<float>(v);
  }
}

}  // namespace

const char* shortcut_name(Shortcut s) {
  switch (s) {
    case Shortcut::kOnePassF32:
      return "onepass-f32";
    case Shortcut::kTwoPassF32:
      return "twopass-f32";
    case Shortcut::kEpsOutside:
      return "eps-outside";
    case Shortcut::kTruncBf16:
      return "trunc-bf16";
  }
  return "?";
}

bool shortcut_applies(Shortcut s, simdnorm_kind kind, simdnorm_dtype y) {
  if (s == Shortcut::kTruncBf16) return y == SIMDNORM_BF16;
  if (y != SIMDNORM_F32) return false;
  // RMSNorm has no mean: its one pass is the whole textbook method.
  if (s == Shortcut::kTwoPassF32) return kind == SIMDNORM_LAYERNORM;
  return true;
}

void run_shortcut(Shortcut s, simdnorm_kind kind, const float* x, size_t rows,
                  size_t cols, const float* gamma, const float* beta, float eps,
                  float* y) {
  for (size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    switch (s) {
      case Shortcut::kOnePassF32:
        one_pass_row(kind, xr, cols, gamma, beta, eps, yr);
        break;
      case Shortcut::kTwoPassF32:
        two_pass_row(xr, cols, gamma, beta, eps, yr);
        break;
      case Shortcut::kEpsOutside:
        eps_outside_row(kind, xr, cols, gamma, beta, eps, yr);
        break;
      case Shortcut::kTruncBf16:
        break;  // not an fp32 method: see truncate_rows
    }
  }
}

void truncate_rows(const float* y, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = bf16_truncate(y[i]);
}

}  // namespace simdnorm_accuracy

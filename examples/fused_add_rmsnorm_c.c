/* A pre-norm transformer block's two norms the way vLLM calls them, through
 * the C API, with bf16 activations and weights:
 *   1. fused_add_rms_norm: residual += hidden, then hidden = RMSNorm(residual)
 *      * weight, both in place, in one pass over memory;
 *   2. rms_norm_dynamic_per_token_quant: the same add, with the normalized
 *      row written as symmetric int8 with one fp32 scale per token. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "simdnorm/simdnorm.h"

enum { kTokens = 4, kHidden = 896 };

static uint16_t bf16_from_float(float f) { /* inputs here are exact in bf16 */
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return (uint16_t)(u >> 16);
}

static float float_from_bf16(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static int check(simdnorm_status s, const char* what) {
  if (s == SIMDNORM_OK) return 1;
  fprintf(stderr, "%s: %s\n", what, simdnorm_status_string(s));
  return 0;
}

int main(void) {
  static uint16_t hidden[kTokens][kHidden], residual[kTokens][kHidden];
  static uint16_t weight[kHidden];
  static int8_t q[kTokens][kHidden];
  static float scales[kTokens];
  simdnorm_desc d;
  int r, c, ok = 1;

  for (r = 0; r < kTokens; ++r) {
    for (c = 0; c < kHidden; ++c) {
      hidden[r][c] = bf16_from_float((float)((c % 7) - 3) * 0.5f);
      residual[r][c] = bf16_from_float((float)((c % 5) + r));
    }
  }
  for (c = 0; c < kHidden; ++c) weight[c] = bf16_from_float(1.0f);

  /* 1. vLLM fused_add_rms_norm(input=hidden, residual, weight, eps). */
  memset(&d, 0, sizeof(d)); /* all-zero: every new field off */
  d.kind = SIMDNORM_RMSNORM;
  d.rows = kTokens;
  d.cols = kHidden;
  d.x = hidden;
  d.x_type = SIMDNORM_BF16;
  d.residual = residual; /* h = hidden + residual, rounded to bf16 */
  d.sum_out = residual;  /* residual = h (in place) */
  d.y = hidden;          /* hidden = RMSNorm(h) * weight (in place) */
  d.y_type = SIMDNORM_BF16;
  d.gamma = weight;
  d.param_type = SIMDNORM_BF16;
  d.eps = 1e-6f;
  d.flags =
      SIMDNORM_ROUND_NORMALIZED; /* as vLLM CUDA, HF Llama: xhat to bf16 */
  if (!check(simdnorm_normalize(&d), "fused add + RMSNorm")) return 1;
  /* Row 1, column 3: hidden 0 + residual 4 = 4. */
  ok &= float_from_bf16(residual[1][3]) == 4.0f;
  printf(
      "ISA %s: residual[1][0..3] = %g %g %g %g, normed[1][0..3] = %g %g %g "
      "%g\n",
      simdnorm_active_isa(), float_from_bf16(residual[1][0]),
      float_from_bf16(residual[1][1]), float_from_bf16(residual[1][2]),
      float_from_bf16(residual[1][3]), float_from_bf16(hidden[1][0]),
      float_from_bf16(hidden[1][1]), float_from_bf16(hidden[1][2]),
      float_from_bf16(hidden[1][3]));

  /* 2. The next sublayer's output (reusing `hidden`) goes through vLLM's
   * rms_norm_dynamic_per_token_quant(hidden, weight, eps, int8, residual):
   * residual += hidden, q = int8(RMSNorm(residual) * weight / scale). */
  d.y = q;
  d.y_type = SIMDNORM_I8;
  d.y_scale = scales; /* one float per token: quant_group 0 = the row */
  d.quant_group = 0;
  d.flags = 0; /* quantize the fp32 result, unrounded */
  if (!check(simdnorm_normalize(&d), "fused add + RMSNorm -> int8")) return 1;
  for (r = 0; r < kTokens; ++r) {
    int max_q = 0;
    for (c = 0; c < kHidden; ++c) {
      const int a = q[r][c] < 0 ? -q[r][c] : q[r][c];
      if (a > max_q) max_q = a;
    }
    ok &= max_q == 127; /* the row's largest |y| maps to 127 */
    printf("token %d: scale %.6g, q[0..3] = %d %d %d %d\n", r, scales[r],
           q[r][0], q[r][1], q[r][2], q[r][3]);
  }
  if (!ok) fprintf(stderr, "unexpected result\n");
  return ok ? 0 : 1;
}

/* LayerNorm of a batch of bf16 hidden states with fp32 weights, through the
 * C API: bf16 in, bf16 out, in place. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "simdnorm/simdnorm.h"

enum { kRows = 4, kCols = 896 };

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

int main(void) {
  static uint16_t hidden[kRows][kCols];
  static float gamma[kCols], beta[kCols];
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c)
      hidden[r][c] = bf16_from_float((float)((c % 7) - 3 + r));
  for (int c = 0; c < kCols; ++c) {
    gamma[c] = 1.0f;
    beta[c] = 0.5f;
  }

  simdnorm_desc d;
  memset(&d, 0,
         sizeof(d)); /* all-zero: LayerNorm, F32, dense, default threads */
  d.kind = SIMDNORM_LAYERNORM;
  d.rows = kRows;
  d.cols = kCols;
  d.x = hidden;
  d.x_type = SIMDNORM_BF16;
  d.y = hidden; /* in place */
  d.y_type = SIMDNORM_BF16;
  d.gamma = gamma;
  d.beta = beta;
  d.param_type = SIMDNORM_F32;
  d.eps = 1e-5f;

  simdnorm_status s = simdnorm_normalize(&d);
  if (s != SIMDNORM_OK) {
    fprintf(stderr, "simdnorm_normalize: %s\n", simdnorm_status_string(s));
    return 1;
  }
  printf("ISA %s: y[0][0..3] = %g %g %g %g\n", simdnorm_active_isa(),
         float_from_bf16(hidden[0][0]), float_from_bf16(hidden[0][1]),
         float_from_bf16(hidden[0][2]), float_from_bf16(hidden[0][3]));

  d.y = gamma; /* a bad call: y overlaps gamma; nothing is written */
  s = simdnorm_normalize(&d);
  printf("overlapping call: %s\n", simdnorm_status_string(s));
  return s == SIMDNORM_OVERLAP ? 0 : 1;
}

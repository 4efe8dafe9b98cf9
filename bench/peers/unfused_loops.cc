// The loops an engine runs around a plain norm call when it has no fused
// kernel: the residual add before it and the int8 quantization after it,
// written the straightforward way (see unfused_loops.h); and a dot product
// over y, the next layer reading it. GCC vectorizes them at -O3
// -march=native; the float max is taken on the integer bits of |y| and the
// dot product keeps 64 partial sums, so that they vectorize without
// -ffast-math.
//
// Like naive_loops.cc, nothing here is inline code shared with other
// translation units, so -march=native cannot leak into them.
#include "unfused_loops.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace simdnorm_peers {
namespace detail {
namespace {

float Bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// Round to nearest even; NaN stays a (quiet) NaN. Branch-free, so that the
// add loop vectorizes.
uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

size_t Stride(size_t s, size_t cols) { return s ? s : cols; }

void AddF32(const simdnorm_desc& d, size_t r0, size_t r1) {
  const size_t n = d.cols;
  for (size_t r = r0; r < r1; ++r) {
    const float* x = static_cast<const float*>(d.x) + r * Stride(d.x_stride, n);
    const float* res = static_cast<const float*>(d.residual) +
                       r * Stride(d.residual_stride, n);
    float* s = static_cast<float*>(d.sum_out) + r * Stride(d.sum_out_stride, n);
    for (size_t i = 0; i < n; ++i) s[i] = x[i] + res[i];
  }
}

void AddBf16(const simdnorm_desc& d, size_t r0, size_t r1) {
  const size_t n = d.cols;
  for (size_t r = r0; r < r1; ++r) {
    const uint16_t* x =
        static_cast<const uint16_t*>(d.x) + r * Stride(d.x_stride, n);
    const uint16_t* res = static_cast<const uint16_t*>(d.residual) +
                          r * Stride(d.residual_stride, n);
    uint16_t* s =
        static_cast<uint16_t*>(d.sum_out) + r * Stride(d.sum_out_stride, n);
    for (size_t i = 0; i < n; ++i) {
      s[i] = FloatToBf16(Bf16ToFloat(x[i]) + Bf16ToFloat(res[i]));
    }
  }
}

void QuantizeGroup(const float* y, size_t n, int8_t* q, float* scale) {
  uint32_t max_bits = 0;  // of |y|: NaN bits order above inf's
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &y[i], sizeof(u));
    u &= 0x7FFFFFFFu;
    max_bits = u > max_bits ? u : max_bits;
  }
  float m;
  std::memcpy(&m, &max_bits, sizeof(m));
  if (m == 0.0f || !std::isfinite(m)) {
    *scale = m;
    std::memset(q, 0, n);
    return;
  }
  *scale = m / 127.0f;
  const float inv = 127.0f / m;
  for (size_t i = 0; i < n; ++i) {
    float v = std::nearbyint(y[i] * inv);  // the default mode: ties to even
    v = v < -127.0f ? -127.0f : v;
    v = v > 127.0f ? 127.0f : v;
    q[i] = static_cast<int8_t>(static_cast<int>(v));
  }
}

// dot(load(0..n), w), in kLanes independent partial sums.
template <class Load>
float DotRow(Load load, const float* w, size_t n) {
  constexpr size_t kLanes = 64;
  float acc[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) acc[j] += load(i + j) * w[i + j];
  }
  float sum = 0.0f;
  for (; i < n; ++i) sum += load(i) * w[i];
  for (float a : acc) sum += a;
  return sum;
}

}  // namespace

bool add_rows(const simdnorm_desc& d, size_t r0, size_t r1) {
  switch (d.x_type) {
    case SIMDNORM_F32:
      AddF32(d, r0, r1);
      return true;
    case SIMDNORM_BF16:
      AddBf16(d, r0, r1);
      return true;
    default:
      return false;
  }
}

void quantize_rows(const simdnorm_desc& d, const float* y, size_t r0,
                   size_t r1) {
  const size_t n = d.cols;
  const size_t g = d.quant_group ? d.quant_group : n;
  const size_t groups = (n + g - 1) / g;
  for (size_t r = r0; r < r1; ++r) {
    const float* row = y + r * n;
    int8_t* q = static_cast<int8_t*>(d.y) + r * Stride(d.y_stride, n);
    for (size_t k = 0; k < groups; ++k) {
      const size_t begin = k * g;
      const size_t len = n - begin < g ? n - begin : g;
      QuantizeGroup(row + begin, len, q + begin, d.y_scale + r * groups + k);
    }
  }
}

float dot_rows(const simdnorm_desc& d, const float* w) {
  const size_t n = d.cols;
  const size_t ys = Stride(d.y_stride, n);
  float sum = 0.0f;
  for (size_t r = 0; r < d.rows; ++r) {
    if (d.y_type == SIMDNORM_F32) {
      const float* y = static_cast<const float*>(d.y) + r * ys;
      sum += DotRow([y](size_t i) { return y[i]; }, w, n);
    } else if (d.y_type == SIMDNORM_BF16) {
      const uint16_t* y = static_cast<const uint16_t*>(d.y) + r * ys;
      sum += DotRow([y](size_t i) { return Bf16ToFloat(y[i]); }, w, n);
    } else {
      return NAN;
    }
  }
  return sum;
}

}  // namespace detail
}  // namespace simdnorm_peers
